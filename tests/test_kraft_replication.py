"""The KRaft-era replication model: exact counts, every pre-fix counterexample, the rules underneath."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import BfsOptions, Check, UserError, bfs
from kmc.checker.itf import read_trace
from kmc.checker.properties import select_properties
from kmc.checker.replay import replay
from kmc.checker.result import Status
from kmc.models.kraft_replication import (
    NO_LEADER,
    UNDEFINED,
    Controller,
    KraftReplicationModel,
    Record,
    end_offset_for_epoch,
)

ROOT = Path(__file__).resolve().parents[1]
TRACES = sorted((ROOT / "counterexamples" / "kraft-replication").glob("*.itf.json"))


def test_kip_966_holds_completely() -> None:
    result = Check("kraft-replication", preset="kip-966").run()
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert (result.stats.distinct_states, result.stats.depth) == (151969, 43)


@pytest.mark.parametrize(
    ("preset", "prop", "length", "actions"),
    [
        ("acks-1", "AcknowledgedWriteNeverLost", 3, ["Produce", "FenceBroker"]),
        ("pre-kafka-15583", "LeaderCandidateCompleteness", 4, ["Produce", "ShrinkIsr", "HandleAlterPartition"]),
        ("pre-kip-497", "ReplicationQuorumSuperset", 2, ["ShrinkIsr"]),
        ("pre-kip-497", "LeaderCompleteness", 4, ["Produce", "ShrinkIsr", "FenceBroker"]),
        ("v3.5", "AcknowledgedWriteNeverLost", 12,
         ["Produce", "FenceBroker", "SendFetch", "HandleFetch", "HandleFetchResponse", "SendFetch", "HandleFetch",
          "BrokerCrash", "FenceBroker", "BrokerRestart", "UnfenceBroker"]),
        ("pre-kip-966", "AcknowledgedWriteNeverLost", 12, None),
        ("unclean", "AcknowledgedWriteNeverLost", 12, None),
        ("pre-kafka-7128", "LeaderCandidateCompleteness", 16, None),
        ("pre-kip-903", "LeaderCandidateCompleteness", 14, None),
        ("pre-kip-101", "LogMatching", 21, None),
    ],
)  # fmt: skip
def test_each_bug_before_its_fix(preset: str, prop: str, length: int, actions: list[str] | None) -> None:
    result = bfs(KraftReplicationModel.build(preset), select_properties(KraftReplicationModel, names=[prop]))
    [violation] = result.violations
    assert (violation.property, violation.trace_length) == (prop, length)
    if actions is not None:
        assert [a.name for a in violation.trace.actions[1:]] == actions


def test_kip_101_scenario_two_is_two_power_losses() -> None:
    """The shortest divergence before KIP-101 is the KIP's own second scenario: both brokers lose
    power, the one that comes back first is elected without the record and writes another."""
    result = bfs(
        KraftReplicationModel.build("pre-kip-101"), select_properties(KraftReplicationModel, names=["LogMatching"])
    )
    trace = result.violations[0].trace
    crashes = [a.args for a in trace.actions[1:] if a.name == "BrokerCrash"]
    assert crashes == [{"broker": 0, "logEndOffset": 1}, {"broker": 1, "logEndOffset": 0}]
    last = trace.states[-1]
    assert [r.id for r in last.replicas[0].log] == [1] and [r.id for r in last.replicas[1].log] == [2]
    assert last.controller.isr == {0, 1}  # both in the ISR: nothing will ever truncate the difference


@pytest.mark.parametrize(
    ("overrides", "states"),
    [({"crash": "disk"}, 106_795), ({"crash": "process"}, 105_512), ({"unclean_election": False}, 151_969)],
)
def test_kip_966_variants_hold(overrides: dict, states: int) -> None:
    result = Check("kraft-replication", preset="kip-966", overrides=overrides).run()
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == states


def test_diverging_epoch_is_what_keeps_logs_matching() -> None:
    """KIP-101's setting (unclean election, acks=1, two power losses) with today's truncation."""
    result = Check("kraft-replication", preset="pre-kip-101", overrides={"truncation": "diverging_epoch"},
                   property_names=["LogMatching"]).run()  # fmt: skip
    assert result.status is Status.HOLDS_COMPLETE


def test_kip_320_fencing_is_redundant_with_diverging_epoch_at_two_brokers() -> None:
    result = Check("kraft-replication", preset="pre-kip-320").run()
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == 164231


def test_min_isr_one_tolerates_no_power_loss() -> None:
    """KIP-966 tolerates min.insync.replicas - 1 unclean shutdowns: with min ISR 1, none."""
    result = Check("kraft-replication", preset="kip-966", overrides={"min_insync_replicas": 1},
                   property_names=["NoCommittedRecordLostGlobally"]).run()  # fmt: skip
    [violation] = result.violations
    assert [a.name for a in violation.trace.actions[1:]] == ["Produce", "ShrinkIsr", "HandleAlterPartition",
                                                             "BrokerCrash"]  # fmt: skip


@pytest.mark.parametrize("trace", TRACES, ids=[t.name for t in TRACES])
def test_checked_in_counterexamples_replay(trace: Path) -> None:
    doc = read_trace(trace)
    done = replay(doc)
    prop = doc["#meta"]["property"]
    check = select_properties(KraftReplicationModel, names=[prop]).invariants[0].bind(done.model)
    assert not check(done.trace.states[-1])
    assert all(check(s) for s in done.trace.states[:-1])


def test_every_checked_in_counterexample_is_in_the_ci_suite() -> None:
    suite = (ROOT / "counterexamples" / "suite.toml").read_text()
    assert len(TRACES) == 10
    for trace in TRACES:
        assert f'replay = "kraft-replication/{trace.name}"' in suite


# -- the rules underneath ------------------------------------------------------------------------
LOG = (Record(1, 0), Record(2, 0), Record(3, 2))


@pytest.mark.parametrize(
    ("requested", "latest", "answer"),
    [
        (2, 2, (2, 3)),  # the latest epoch ends at the LEO
        (0, 2, (0, 2)),  # epoch 0 ends where epoch 2 starts
        (1, 2, (0, 2)),  # no epoch 1: the largest epoch below it, with its end
        (0, 3, (0, 2)),
        (2, 3, (2, 3)),  # a leader of epoch 3 that has not written yet: epoch 2 ends at its LEO
        (4, 3, (UNDEFINED, UNDEFINED)),  # newer than anything the leader knows
        (UNDEFINED, 2, (UNDEFINED, UNDEFINED)),
    ],
)
def test_end_offset_for_epoch(requested: int, latest: int, answer: tuple[int, int]) -> None:
    assert end_offset_for_epoch(LOG, requested, latest) == answer


def test_a_follower_truncates_to_the_diverging_epoch() -> None:
    model = KraftReplicationModel.build("kip-966")
    [init] = model.init_states()
    follower = init.replicas[1]._replace(log=(Record(1, 0), Record(4, 1)), highWatermark=1)
    assert model.truncation_offset(follower, (0, 1)) == 1  # same epoch 0: min of both ends
    assert model.truncation_offset(follower, (0, 2)) == 1
    assert model.truncation_offset(follower, (UNDEFINED, UNDEFINED)) == 1  # unknown: its high watermark


def test_elections_try_the_isr_then_the_elr_then_unclean() -> None:
    strict = KraftReplicationModel.build("kip-966", {"brokers": 3})
    unclean = KraftReplicationModel.build("unclean", {"brokers": 3})
    c = Controller((1, 2, 3), frozenset({0}), NO_LEADER, 1, 1, frozenset({0}), frozenset({2}), 4)
    assert strict.elect_leader(c, c.isr, c.elr) == (2, frozenset({0, 2}), frozenset())
    nobody = c._replace(elr=frozenset())
    assert strict.elect_leader(nobody, nobody.isr, nobody.elr) == (NO_LEADER, frozenset({0}), frozenset())
    assert unclean.elect_leader(nobody, nobody.isr, nobody.elr) == (1, frozenset({1}), frozenset())


def test_min_isr_above_the_replication_factor_is_bad_config() -> None:
    with pytest.raises(UserError, match="min_insync_replicas=3 exceeds brokers=2"):
        KraftReplicationModel.build("kip-966", {"min_insync_replicas": 3})


@pytest.mark.slow
@pytest.mark.parametrize("preset", sorted(KraftReplicationModel.presets))
def test_presets_verdicts_are_what_kmc_list_says(preset: str) -> None:
    """Each preset's documented verdicts (shown by `kmc list`) are what a complete search finds."""
    expected = KraftReplicationModel.presets[preset].expected
    result = bfs(
        KraftReplicationModel.build(preset),
        select_properties(KraftReplicationModel, names=list(expected)),
        BfsOptions(keep_going=True),
    )
    assert result.complete
    violated = {v.property for v in result.violations}
    assert violated == {name for name, verdict in expected.items() if verdict == "violated"}
