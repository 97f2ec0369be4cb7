"""The metadata log of real campaigns, read back and validated against kraft-replication and
kraft-quorum (stored decoder output: no cluster is started here)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from cluster_fixtures import decoded, observed
from kmc.checker.cli.app import main
from kmc.checker.errors import UserError
from kmc.cluster.mappings import MAPPINGS
from kmc.cluster.mappings.kraft_replication import KraftReplicationMapping
from kmc.cluster.metadata import MetadataLog, MetadataRecord, most_up_to_date, parse
from kmc.cluster.observed import Observations, observations
from kmc.cluster.validation import validate_run, validate_trace

REPLICATION = KraftReplicationMapping()


class OneAtATime(KraftReplicationMapping):
    """kraft-replication as it was: an AlterPartition took one lagging follower out of the ISR."""

    def model(self, name, trace, observations):  # type: ignore[no-untyped-def]
        model = super().model(name, trace, observations)
        model._twin_ctx = None  # the Python definition, whose shrink this breaks
        model.out_of_sync_sets = lambda lagging: [m for m in (1, 2, 4) if m & lagging]  # type: ignore[method-assign]
        return model


def test_every_node_holds_the_same_log_and_the_partitions_replay_from_it() -> None:
    logs = decoded("unclean")
    assert {node: (log.start_offset, log.end_offset) for node, log in logs.items()} == {
        1: (0, 171),
        2: (0, 171),
        3: (0, 171),
    }
    obs = observed("unclean")
    trace = obs.partitions["kmc-0"]
    assert trace[0].replicas == (1, 2, 3)
    assert [REPLICATION.describe(REPLICATION.observe(v, trace), trace) for v in trace] == [
        {"leader": 1, "leaderEpoch": 0, "isr": [1, 2, 3], "elr": [], "fenced": []},
        {"leader": 1, "leaderEpoch": 0, "isr": [1], "elr": [], "fenced": []},  # both followers cut off at once
        {"leader": 2, "leaderEpoch": 1, "isr": [2], "elr": [], "fenced": [1]},  # the unclean election
        {"leader": 2, "leaderEpoch": 1, "isr": [2, 3], "elr": [], "fenced": [1]},
        {"leader": 2, "leaderEpoch": 1, "isr": [2, 3], "elr": [], "fenced": []},
        {"leader": 2, "leaderEpoch": 1, "isr": [1, 2, 3], "elr": [], "fenced": []},
        {"leader": -1, "leaderEpoch": 3, "isr": [], "elr": [1], "fenced": [1, 2, 3]},  # the stop
    ]
    assert [(v.epoch, v.leader) for v in obs.quorum] == [(1, 3)]


def test_the_most_up_to_date_log_is_raft_s_choice() -> None:
    def log(node: int, epochs: list[int]) -> MetadataLog:
        records = [MetadataRecord(i, e, i, "NO_OP_RECORD", {}, False) for i, e in enumerate(epochs)]
        return MetadataLog(node, 0, records)

    logs = {1: log(1, [1, 1, 1, 2]), 2: log(2, [1, 1, 3]), 3: log(3, [1, 1])}
    assert most_up_to_date(logs).node == 2  # the higher last epoch wins over the longer log


def test_a_file_the_decoder_was_not_asked_for_is_an_error() -> None:
    with pytest.raises(UserError, match="not asked for"):
        parse("Dumping /elsewhere/0.log\n", {"node-1/x.log": 1})


@pytest.mark.parametrize(
    ("name", "models"),
    [
        (
            "unclean",
            {
                "kraft-replication": {"traces": 4, "observed": 24, "transitions": 20, "validated": 20},
                "kraft-quorum": {"traces": 1, "observed": 1, "transitions": 1, "validated": 1},
            },
        ),
        (
            "faults",
            {
                "kraft-replication": {"traces": 4, "observed": 46, "transitions": 42, "validated": 42},
                "kraft-quorum": {"traces": 1, "observed": 2, "transitions": 2, "validated": 2},
            },
        ),
    ],
)
def test_a_real_campaign_s_metadata_log_is_a_behaviour_of_the_models(name: str, models: dict) -> None:
    run = validate_run(observed(name), MAPPINGS)
    assert run.ok
    assert run.per_model() == models
    assert not run.snapshot_violations and not run.files


def test_a_model_that_shrinks_the_isr_one_follower_at_a_time_cannot_explain_it(tmp_path: Path) -> None:
    """The model gap the unclean campaign found: both followers left the ISR in one record."""
    obs = observed("unclean")
    run = validate_run(obs, {"kraft-replication": OneAtATime()}, tmp_path)
    failed = {t.trace: t for t in run.traces if not t.ok}
    assert set(failed) == {"kmc-0", "__consumer_offsets-2"}
    unexplained = failed["kmc-0"].unexplained
    assert unexplained is not None and (unexplained.index, unexplained.undecided) == (1, False)
    assert failed["kmc-0"].full  # decided by the full frontier, not the pruned one
    [written] = [f for f in run.files if "kmc-0" in f.name]
    doc = json.loads(written.read_text())
    assert doc["#meta"]["observed"] is True and doc["#meta"]["property"] == "ObservedTransitionExplained"
    assert [s["isr"] for s in doc["states"]] == [[1, 2, 3], [1]]
    assert doc["states"][1]["#meta"]["action"] == {
        "name": "Observed",
        "args": {"offset": 61, "records": "PARTITION_CHANGE_RECORD"},
    }


def test_an_observed_trace_is_shown_and_drawn_but_never_replayed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = validate_run(observed("unclean"), {"kraft-replication": OneAtATime()}, tmp_path)
    trace = next(f for f in run.files if "kmc-0" in f.name)
    assert main(["show", str(trace)]) == 0
    shown = capsys.readouterr().out
    assert "OBSERVED on a real cluster (kraft-replication, kmc-0)" in shown
    assert "State 1: Observed(offset=61, records=PARTITION_CHANGE_RECORD)  <- not explained by the model" in shown
    assert main(["render", str(trace), "-o", str(tmp_path / "observed.svg")]) == 0
    assert "OBSERVED (kraft-replication, kmc-0)" in (tmp_path / "observed.svg").read_text().replace("&#45;", "-")
    assert main(["replay", str(trace)]) == 2
    assert "an observed trace" in capsys.readouterr().err


def test_the_run_s_settings_configure_the_model() -> None:
    """Unclean election is a static broker setting in that campaign: without it, the election that
    followed the leader's crash is no behaviour of the model."""
    obs = observed("unclean")
    without = dataclasses.replace(obs, settings={**obs.settings, "unclean.leader.election.enable": "false"})
    trace = obs.partitions["__consumer_offsets-2"]
    assert validate_trace(REPLICATION, "__consumer_offsets-2", trace, obs, depth=6).ok
    result = validate_trace(REPLICATION, "__consumer_offsets-2", trace, without, depth=6)
    assert result.unexplained is not None and result.unexplained.index == 2


def test_an_observed_state_that_breaks_an_invariant_is_reported() -> None:
    obs = observed("faults")
    trace = list(obs.partitions["kmc-0"])
    fenced = trace[1].fenced
    trace[1] = dataclasses.replace(trace[1], isr=trace[1].isr | fenced)  # a fenced broker in the ISR
    result = validate_trace(REPLICATION, "kmc-0", trace, obs, depth=6)
    assert result.invariant_violations == [(1, "ValidIsrAndElr")]


def test_a_leader_epoch_that_jumps_is_unexplained() -> None:
    obs = observed("faults")
    trace = list(obs.partitions["kmc-0"])
    index = next(i for i, v in enumerate(trace) if v.leaderEpoch == 1)
    trace[index:] = [dataclasses.replace(v, leaderEpoch=v.leaderEpoch + 1) for v in trace[index:]]
    result = validate_trace(REPLICATION, "kmc-0", trace, obs, depth=6)
    assert result.unexplained is not None and result.unexplained.index == index


def test_the_search_depth_bounds_what_is_explained() -> None:
    obs = observed("faults")
    trace = obs.partitions["kmc-0"]
    explained = {depth: validate_trace(REPLICATION, "kmc-0", trace, obs, depth=depth).validated for depth in (1, 2, 6)}
    assert explained == {1: 2, 2: 2, 6: 11}


def test_the_nodes_logs_match_as_raft_s_log_matching_says() -> None:
    """kraft-quorum's LogMatching, on the three logs lifted into the model: a record of the same
    epoch at the same offset means the same log up to it."""
    obs = observed("faults")
    assert not validate_run(obs, {"kraft-quorum": MAPPINGS["kraft-quorum"]}).snapshot_violations
    logs = {node: MetadataLog(node, log.start_offset, list(log.records)) for node, log in obs.logs.items()}
    bent = logs[2].records
    bent[5] = dataclasses.replace(bent[5], type="LeaderChange", data={"leaderId": 2})  # a different record
    broken = observations(logs, obs.bootstrap, obs.settings)
    run = validate_run(broken, {"kraft-quorum": MAPPINGS["kraft-quorum"]})
    assert run.snapshot_violations == [("kraft-quorum", "the nodes' metadata logs at the end", "LogMatching")]


def test_observations_carry_the_topic_and_cluster_settings() -> None:
    obs: Observations = observed("unclean")
    assert obs.features["eligible.leader.replicas.version"] == 1
    assert obs.topic_config("kmc", "min.insync.replicas", "x") == "1"
    assert obs.topic_config("kmc", "unclean.leader.election.enable", "x") == "true"
    assert obs.topic_config("__consumer_offsets", "unclean.leader.election.enable", "x") == "true"  # static


def test_a_decoder_that_hides_the_leaders_leaves_the_quorum_unvalidated_and_says_so(tmp_path: Path) -> None:
    """Kafka 4.0's decoder prints a LeaderChange as its control type alone: the quorum's leaders are
    not shown, so kraft-quorum is reported as not exercised, never as explained."""
    text = "\n".join(
        [
            "Dumping node-1/00000000000000000000.log",
            "Log starting offset: 0",
            "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
            "partitionLeaderEpoch: 1 isTransactional: false isControl: true deleteHorizonMs: OptionalLong.empty "
            "position: 0 CreateTime: 1 size: 292 magic: 2 compresscodec: none crc: 1 isvalid: true",
            "| offset: 0 CreateTime: 1 keySize: 4 valueSize: 34 sequence: -1 headerKeys: [] "
            "controlType: LEADER_CHANGE(2)",
            "| offset: 1 CreateTime: 1 keySize: 4 valueSize: 5 sequence: -1 headerKeys: [] "
            'KRaftVersion {"version":0,"kRaftVersion":1}',
        ]
    )
    logs = parse(text, {"node-1/00000000000000000000.log": 1})
    assert [(r.offset, r.type, r.data, r.control) for r in logs[1].records] == [
        (0, "LeaderChange", {}, True),
        (1, "KRaftVersion", {"version": 0, "kRaftVersion": 1}, True),
    ]
    run = validate_run(observations(logs, ((1, "a"),)), MAPPINGS, tmp_path)
    assert run.per_model()["kraft-quorum"] == {"traces": 0, "observed": 0, "transitions": 0, "validated": 0}
    assert run.ok
