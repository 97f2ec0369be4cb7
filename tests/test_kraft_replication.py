"""The KRaft-era replication model: exact counts, every pre-fix counterexample, the rules underneath."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import Action, Check, UserError, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import Replayed, confirm_violation, replay
from kmc.models.kraft_replication.model import KraftReplicationModel
from kmc.models.kraft_replication.state import (
    AWAITING_METADATA,
    DIVERGING_EPOCH,
    FENCED_LEADER_EPOCH,
    FETCHING,
    NO_LEADER,
    TRUNCATING,
    UNDEFINED,
    Controller,
    KraftReplicationState,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
    Record,
    dense_partition_epochs,
    end_offset_for_epoch,
)
from suite_entries import searched_by_suite

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
        (
            "v3.5",
            "AcknowledgedWriteNeverLost",
            12,
            [
                "Produce",
                "FenceBroker",
                "SendFetch",
                "HandleFetch",
                "HandleFetchResponse",
                "SendFetch",
                "HandleFetch",
                "BrokerCrash",
                "FenceBroker",
                "BrokerRestart",
                "UnfenceBroker",
            ],
        ),
        ("pre-kip-966", "AcknowledgedWriteNeverLost", 12, None),
        ("unclean", "AcknowledgedWriteNeverLost", 12, None),
        ("pre-kafka-7128", "LeaderCandidateCompleteness", 16, None),
        ("pre-kip-903", "LeaderCandidateCompleteness", 14, None),
        ("pre-kip-101", "LogMatching", 21, None),
        (
            "pre-kafka-13141",
            "LeaderCandidateCompleteness",
            11,
            [
                "Produce",
                "FenceBroker",
                "ApplyMetadata",
                "SendFetch",
                "UnfenceBroker",
                "ApplyMetadata",
                "HandleFetch",
                "ExpandIsr",
                "HandleAlterPartition",
                "Produce",
            ],
        ),
        ("pre-kafka-13141", "AcknowledgedWriteNeverLost", 13, None),
        (
            "drop-pending-on-error",
            "ReplicationQuorumSuperset",
            9,
            [
                "ShrinkIsr",
                "HandleAlterPartition",
                "SendFetch",
                "HandleFetch",
                "ExpandIsr",
                "ControllerFailover",
                "HandleAlterPartition",
                "HandleAlterPartition",
            ],
        ),
        ("drop-pending-on-error", "LeaderCandidateCompleteness", 15, None),
    ],
)
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
    result = Check(
        "kraft-replication",
        preset="pre-kip-101",
        overrides={"truncation": "diverging_epoch"},
        property_names=["LogMatching"],
    ).run()
    assert result.status is Status.HOLDS_COMPLETE


def test_kip_320_fencing_is_redundant_with_diverging_epoch_at_two_brokers() -> None:
    result = Check("kraft-replication", preset="kip-966", overrides={"fetch_fencing": False}).run()
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == 164231


PRE_KIP_320_TRACE = ROOT / "counterexamples" / "kraft-replication" / "pre-kip-320-LeaderCandidateCompleteness.itf.json"


def _replay_all_but_the_last_step(doc: dict, **config: object) -> Replayed:
    """Replay the stored trace, but for its last step, on the model with other config values."""
    meta = {**doc["#meta"], "config": {**doc["#meta"]["config"], **config}}
    return replay({**doc, "#meta": meta, "states": doc["states"][:-1]})


def test_pre_kip_320_zombie_fetch_and_the_fixes_that_stop_it() -> None:
    """Before KIP-320 the last fetch -- from a follower still in epoch 0, by offset alone -- is taken by
    the leader of epoch 2 and counted for its HW. KIP-320 fences it; KAFKA-10554's lastFetchedEpoch
    would have answered it with a diverging epoch instead."""
    doc = read_trace(PRE_KIP_320_TRACE)
    done = replay(doc)
    assert confirm_violation(done) == "LeaderCandidateCompleteness"
    last_action = done.trace.actions[-1]
    assert last_action.name == "HandleFetch"
    follower = done.trace.states[-2].replicas[last_action.args["follower"]]
    assert (follower.leaderEpoch, done.trace.states[-2].controller.leaderEpoch) == (0, 2)
    fixes = [("offsets_for_leader_epoch", True, FENCED_LEADER_EPOCH), ("diverging_epoch", False, DIVERGING_EPOCH)]
    for truncation, fencing, error in fixes:
        fixed = _replay_all_but_the_last_step(doc, truncation=truncation, fetch_fencing=fencing)
        [after] = [t for a, t in fixed.model.successors(fixed.trace.states[-1]) if a == last_action]
        assert after.fetches[last_action.args["follower"]].error == error


PRE_KAFKA_13141_TRACE = (
    ROOT / "counterexamples" / "kraft-replication" / "pre-kafka-13141-LeaderCandidateCompleteness.itf.json"
)


def test_pre_kafka_13141_a_diverging_fetch_counts_as_the_followers_leo() -> None:
    """Broker 0 fetches from offset 1 in epoch 0; the new leader, with an empty log, answers with a
    diverging epoch. Before KAFKA-13141 it records offset 1 as the follower's LEO all the same, which
    lets the follower into the ISR and, after the next write, the HW past a record the follower lacks.
    With the fix the follower stays unknown until a fetch that matches the leader's log."""
    doc = read_trace(PRE_KAFKA_13141_TRACE)
    done = replay(doc)
    assert confirm_violation(done) == "LeaderCandidateCompleteness"
    fetch = done.trace.actions[7]
    assert fetch == Action("HandleFetch", leader=1, follower=0)
    counted = done.trace.states[7]
    assert counted.fetches[0].error == DIVERGING_EPOCH
    assert counted.replicas[1].followerState[0] == (1, counted.replicas[0].brokerEpoch)
    fixed = replay(
        {
            **doc,
            "#meta": {**doc["#meta"], "config": {**doc["#meta"]["config"], "diverging_fetch_not_counted": True}},
            "states": doc["states"][:7],
        }
    )
    [after] = [t for a, t in fixed.model.successors(fixed.trace.states[-1]) if a == fetch]
    assert after.fetches[0].error == DIVERGING_EPOCH
    assert after.replicas[1].followerState[0] == (UNDEFINED, UNDEFINED)
    assert not [a for a, _ in fixed.model.successors(after) if a.name == "ExpandIsr"]


def test_controller_failover_holds_and_every_pending_isr_change_is_resolved() -> None:
    """A controller that commits an AlterPartition and fails over unanswered: the leader's retry gets
    NOT_CONTROLLER, then INVALID_UPDATE_VERSION, keeps its maximal ISR and waits for metadata."""
    result = Check("kraft-replication", preset="controller-failover").run()
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert result.stats.distinct_states == 82480


DROP_PENDING_TRACE = (
    ROOT / "counterexamples" / "kraft-replication" / "drop-pending-on-error-LeaderCandidateCompleteness.itf.json"
)


def test_a_stale_epoch_error_keeps_the_pending_isr_until_metadata_arrives() -> None:
    """In the stored trace the expansion to {0, 1, 2} is committed by a controller that fails over
    unanswered. Retried, it is sent again on NOT_CONTROLLER and then fails on the partition epoch.
    Dropped at once, the leader's HW quorum loses broker 1; kept (Kafka), it does not, and the
    broker's next ApplyMetadata resolves it with the committed ISR."""
    doc = read_trace(DROP_PENDING_TRACE)
    assert confirm_violation(replay(doc)) == "LeaderCandidateCompleteness"
    meta = {**doc["#meta"], "config": {**doc["#meta"]["config"], "alter_partition_awaits_metadata": True}}
    kept = replay({**doc, "#meta": meta, "states": doc["states"][:10]})
    model, retried = kept.model, kept.trace.states[-1]
    assert kept.trace.actions[-1] == Action("HandleAlterPartition", leader=0)
    assert retried.replicas[0].pendingAlterPartition.sentTo == retried.failovers == 1
    [(_, failed)] = [(a, t) for a, t in model.successors(retried) if a.name == "HandleAlterPartition"]
    pending = failed.replicas[0].pendingAlterPartition
    assert (pending.isr, pending.sentTo) == ({0, 1, 2}, AWAITING_METADATA)
    assert model.hw_quorum(failed.replicas[0]) == {0, 1, 2}
    assert not [a for a, _ in model.successors(failed) if a.name in ("HandleAlterPartition", "ShrinkIsr", "ExpandIsr")]
    [resolved] = [t for a, t in model.successors(failed) if a == Action("ApplyMetadata", broker=0)]
    assert (resolved.replicas[0].pendingAlterPartition, resolved.replicas[0].isr) == (None, {0, 1, 2})


PRE_KAFKA_14154_TRACE = (
    ROOT / "counterexamples" / "kraft-replication" / "pre-kafka-14154-PendingIsrChangeResolved.itf.json"
)


def test_before_kafka_14154_a_stale_controller_answers_from_its_image() -> None:
    """In the stored lasso leader 0 proposes broker 1 back into the ISR to the controller that failed
    over, whose image is a partition epoch behind. It may answer INVALID_UPDATE_VERSION, and the
    leader then waits for metadata that never comes; or NOT_CONTROLLER, and the leader finds the
    active controller. With the fix the request is only ever sent again."""
    done = replay(read_trace(PRE_KAFKA_14154_TRACE))
    assert confirm_violation(done) == "PendingIsrChangeResolved"
    model, sent = done.model, done.trace.states[6]
    assert done.trace.actions[6] == Action("ExpandIsr", leader=0, replica=1)
    request = sent.replicas[0].pendingAlterPartition
    assert (request.isr, request.sentTo, sent.failovers, sent.cachedActiveControllers) == ({0, 1}, 0, 1, (0, 0))
    assert sent.staleControllers[0].partitionEpoch < sent.replicas[0].partitionEpoch == sent.controller.partitionEpoch
    answers = [t for a, t in model.successors(sent) if a == Action("HandleAlterPartition", leader=0)]
    assert [t.replicas[0].pendingAlterPartition.sentTo for t in answers] == [1, AWAITING_METADATA]
    assert [t.cachedActiveControllers for t in answers] == [(1, 0), (0, 0)]
    assert answers[0].staleControllers == (None,)  # NOT_CONTROLLER: it has learned, for good
    stuck = answers[1]
    assert stuck == done.trace.states[7]
    assert not [a for a, t in model.successors(stuck) if t.replicas[0] != stuck.replicas[0]]

    fixed = KraftReplicationModel.build("kafka-14154")
    as_fixed = sent._replace(staleControllers=(), cachedActiveControllers=())
    [resent] = [t for a, t in fixed.successors(as_fixed) if a == Action("HandleAlterPartition", leader=0)]
    assert resent.replicas[0].pendingAlterPartition.sentTo == 1


def test_partition_epoch_ranks_cover_the_stale_controllers_image() -> None:
    """A stale controller's partition epoch is ranked with the others, keeping their order."""
    [start] = KraftReplicationModel.build("pre-kafka-14154").init_states()
    c = start.controller
    replicas = tuple(r._replace(partitionEpoch=7) if b == 0 else r for b, r in enumerate(start.replicas))
    s = start._replace(
        controller=c._replace(partitionEpoch=7), replicas=replicas, staleControllers=(c._replace(partitionEpoch=4),)
    )
    ranked = dense_partition_epochs(s)
    assert (ranked.controller.partitionEpoch, ranked.replicas[0].partitionEpoch) == (1, 1)
    assert ranked.staleControllers[0].partitionEpoch == 0


@pytest.mark.parametrize(("fetch_in_leader_epoch", "states"), [(True, 35176), (False, 39250)])
def test_a_re_elected_leader_keeping_its_followers_fetch_state_loses_nothing(
    fetch_in_leader_epoch: bool, states: int
) -> None:
    """The ablation of resetReplicaState: with every ISR shrink bumping the leader epoch (before
    KAFKA-15021) the leader is re-elected often, and keeping what its followers fetched in the
    earlier epoch reaches more states -- but breaks no safety property: the leader's log only grew,
    a follower's recorded LEO is still a prefix of it, and a follower that lost part of its log
    since has a new broker epoch, which KIP-903 refuses."""
    model = KraftReplicationModel.build(
        "kip-966",
        {
            "max_records": 1,
            "max_leader_epoch": 2,
            "shrink_keeps_leader_epoch": False,
            "isr_fetch_in_leader_epoch": fetch_in_leader_epoch,
        },
    )
    names = ["AcknowledgedWriteNeverLost", "LeaderCompleteness", "LeaderCandidateCompleteness", "LogMatching"]
    result = bfs(model, select_properties(KraftReplicationModel, names=names))
    assert result.complete and not result.violations
    assert result.stats.distinct_states == states


def test_one_alter_partition_takes_every_lagging_follower_out() -> None:
    """Partition.maybeShrinkIsr proposes every out-of-sync follower out at once: with both followers
    behind a leader's new record, the leader may shrink the ISR by either one or by both, in one
    AlterPartition (a real cluster's metadata log showed ISR [1,2,3] -> [2] in one record)."""
    model = KraftReplicationModel.build("kip-966", {"brokers": 3, "max_records": 1})
    [start] = model.init_states()
    [(_, written)] = [(a, t) for a, t in model.successors(start) if a.name == "Produce"]
    shrinks = {a.args["replicas"]: t for a, t in model.successors(written) if a.name == "ShrinkIsr"}
    assert list(shrinks) == [(1,), (2,), (1, 2)]
    assert shrinks[(1, 2)].replicas[0].pendingAlterPartition.isr == {0}
    [(_, committed)] = [(a, t) for a, t in model.successors(shrinks[(1, 2)]) if a.name == "HandleAlterPartition"]
    assert (committed.controller.isr, committed.controller.elr) == ({0}, {1, 2})


def test_min_isr_one_tolerates_no_power_loss() -> None:
    """KIP-966 tolerates min.insync.replicas - 1 unclean shutdowns: with min ISR 1, none."""
    result = Check(
        "kraft-replication",
        preset="kip-966",
        overrides={"min_insync_replicas": 1},
        property_names=["NoCommittedRecordLostGlobally"],
    ).run()
    [violation] = result.violations
    assert [a.name for a in violation.trace.actions[1:]] == [
        "Produce",
        "ShrinkIsr",
        "HandleAlterPartition",
        "BrokerCrash",
    ]


@pytest.mark.parametrize("trace", TRACES, ids=[t.name for t in TRACES])
def test_checked_in_counterexamples_replay(trace: Path) -> None:
    doc = read_trace(trace)
    done = replay(doc)
    prop = doc["#meta"]["property"]
    if doc["#meta"]["kind"] != "invariant":  # a lasso: the loop is checked again as well
        assert confirm_violation(done) == prop
        return
    check = select_properties(KraftReplicationModel, names=[prop]).invariants[0].bind(done.model)
    assert not check(done.trace.states[-1])
    assert all(check(s) for s in done.trace.states[:-1])


def test_every_checked_in_counterexample_is_in_the_ci_suite() -> None:
    suite = (ROOT / "counterexamples" / "suite.toml").read_text()
    assert len(TRACES) == 17
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
    assert model.truncation_offset(follower, (0, 1)) == (1, True)  # same epoch 0: min of both ends
    assert model.truncation_offset(follower, (0, 2)) == (1, True)
    assert model.truncation_offset(follower, (UNDEFINED, UNDEFINED)) == (1, True)  # unknown: its high watermark
    # Asked about epoch 2, the leader's largest epoch up to it is 1, which this follower never had:
    # it truncates to where its own epochs up to 1 end (epoch 0, at offset 1) and must ask again.
    other = follower._replace(log=(Record(1, 0), Record(4, 2)), highWatermark=0)
    assert model.truncation_offset(other, (1, 3)) == (1, False)


def test_truncation_by_offsets_for_leader_epoch() -> None:
    """KIP-279 as 2.0-2.6 ran it: a new follower is Truncating; it asks the leader where its last
    epoch ends, truncates there, and only then fetches."""
    model = KraftReplicationModel.build("kip-320")
    [init] = model.init_states()
    leader = init.replicas[0]._replace(log=(Record(1, 0), Record(3, 2)), leaderEpoch=2)
    follower = init.replicas[1]._replace(
        log=(Record(1, 0), Record(2, 0)), highWatermark=1, leaderEpoch=2, fetchState=TRUNCATING
    )
    state = init._replace(replicas=(leader, follower))
    [asked] = [t for a, t in model.successors(state) if a.name == "SendOffsetsForLeaderEpoch"]
    assert asked.fetches[1] == OffsetsForLeaderEpochRequest(0, 2, 0)
    [answered] = [t for a, t in model.successors(asked) if a.name == "HandleOffsetsForLeaderEpoch"]
    assert answered.fetches[1] == OffsetsForLeaderEpochResponse(0, 2, "NONE", (0, 1))
    [done] = [t for a, t in model.successors(answered) if a.name == "HandleOffsetsForLeaderEpochResponse"]
    assert (done.replicas[1].log, done.replicas[1].fetchState) == ((Record(1, 0),), FETCHING)
    stale = answered._replace(replicas=(leader, follower._replace(leaderEpoch=3)))
    [dropped] = [t for a, t in model.successors(stale) if a.name == "HandleOffsetsForLeaderEpochResponse"]
    assert dropped.replicas[1].log == follower.log  # KIP-320: an answer from an earlier epoch is dropped


def test_elections_try_the_isr_then_the_elr_then_unclean() -> None:
    strict = KraftReplicationModel.build("kip-966", {"brokers": 3})
    unclean = KraftReplicationModel.build("unclean", {"brokers": 3})
    c = Controller((1, 2, 3), frozenset({0}), NO_LEADER, 1, 1, frozenset({0}), frozenset({2}), 4, (0, 1, 2))
    assert strict.elect_leader(c, c.isr, c.elr) == (2, frozenset({0, 2}), frozenset())
    nobody = c._replace(elr=frozenset())
    assert strict.elect_leader(nobody, nobody.isr, nobody.elr) == (NO_LEADER, frozenset({0}), frozenset())
    assert unclean.elect_leader(nobody, nobody.isr, nobody.elr) == (1, frozenset({1}), frozenset())
    # In the order of the replicas, not of the broker ids.
    reordered = nobody._replace(replicas=(2, 1, 0))
    assert unclean.elect_leader(reordered, reordered.isr, reordered.elr) == (2, frozenset({2}), frozenset())


def test_min_isr_above_the_replication_factor_is_bad_config() -> None:
    with pytest.raises(UserError, match="min_insync_replicas=3 exceeds brokers=2"):
        KraftReplicationModel.build("kip-966", {"min_insync_replicas": 3})


@pytest.mark.slow
@pytest.mark.parametrize("preset", sorted(KraftReplicationModel.presets))
def test_presets_verdicts_are_what_kmc_list_says(preset: str) -> None:
    """Each preset's documented verdicts (shown by `kmc list`) are what a complete search finds --
    or, for pre-kip-320 (3 brokers, too large to search here), what its stored shortest trace shows."""
    expected = KraftReplicationModel.presets[preset].expected
    if preset == "pre-kip-320":
        done = replay(read_trace(PRE_KIP_320_TRACE))
        assert done.model.config_dict() == KraftReplicationModel.build(preset).config_dict()
        assert expected == {confirm_violation(done): "violated"}
        return
    if searched_by_suite("kraft-replication", preset, expected):
        return
    result = Check("kraft-replication", preset=preset, property_names=list(expected), settings={"keep_going": True})
    result = result.run()  # with liveness, which a preset may expect violated
    assert result.complete
    violated = {v.property for v in result.violations}
    assert violated == {name for name, verdict in expected.items() if verdict == "violated"}


# -- partition reassignment ----------------------------------------------------------------------
def _take(model: KraftReplicationModel, state: KraftReplicationState, action: Action) -> KraftReplicationState:
    [after] = [t for a, t in model.successors(state) if a == action]
    return after


def test_a_reassignment_completes_once_the_target_is_in_the_isr_and_the_leader_moves_off() -> None:
    """Move broker 0's replica to broker 2: the registration lists the target then the removed
    replica, broker 2 fetches from leader 0 and joins the ISR, and that AlterPartition completes the
    reassignment -- broker 0 leaves the replicas and the ISR, broker 1 leads in a new epoch, leader 0
    keeps its maximal ISR until the metadata arrives, and then deletes its log."""
    model = KraftReplicationModel.build("reassignment", {"max_records": 1})
    [s] = model.init_states()
    assert (s.controller.replicas, s.replicas[2].hosted) == ((0, 1), False)
    s = _take(model, s, Action("Produce", leader=0, id=1))
    s = _take(model, s, Action("AlterPartitionReassignments", adding=2, removing=0))
    c = s.controller
    assert (c.replicas, c.addingReplicas, c.removingReplicas, c.leader, c.leaderEpoch) == ((1, 2, 0), {2}, {0}, 0, 0)
    # Broker 2 is not yet a replica the leader knows: NOT_LEADER_OR_FOLLOWER.
    s = _take(model, s, Action("ApplyMetadata", broker=2))
    s = _take(model, s, Action("SendFetch", follower=2, leader=0))
    s = _take(model, s, Action("HandleFetch", leader=0, follower=2))
    assert s.fetches[2].error == "NOT_LEADER_OR_FOLLOWER"
    s = _take(model, s, Action("HandleFetchResponse", follower=2, leader=0))
    s = _take(model, s, Action("ApplyMetadata", broker=0))
    assert s.replicas[0].assignment == (1, 2, 0)
    fetch = Action("SendFetch", follower=2, leader=0)
    answer = Action("HandleFetch", leader=0, follower=2)
    for step in (fetch, answer, Action("HandleFetchResponse", follower=2, leader=0), fetch, answer):
        s = _take(model, s, step)
    assert (s.replicas[0].highWatermark, len(s.replicas[2].log)) == (0, 1)  # broker 1 has not fetched yet
    s = _take(model, s, Action("ExpandIsr", leader=0, replica=2))
    s = _take(model, s, Action("HandleAlterPartition", leader=0))
    c = s.controller
    assert (c.replicas, c.addingReplicas, c.removingReplicas, c.isr) == ((1, 2), frozenset(), frozenset(), {1, 2})
    assert (c.leader, c.leaderEpoch) == (1, 1)
    assert s.replicas[0].pendingAlterPartition.sentTo == AWAITING_METADATA
    s = _take(model, s, Action("ApplyMetadata", broker=0))
    assert (s.replicas[0].hosted, s.replicas[0].log) == (False, ())
    s = _take(model, s, Action("ApplyMetadata", broker=1))
    assert (s.replicas[1].leader, s.replicas[1].assignment, s.replicas[1].isr) == (1, (1, 2), {1, 2})


SAFETY = [
    "AcknowledgedWriteNeverLost",
    "LeaderCompleteness",
    "LeaderCandidateCompleteness",
    "LogMatching",
    "ReplicationQuorumSuperset",
    "NoCommittedRecordLostGlobally",
    "ConsistentRead",
    "ValidIsrAndElr",
    "ValidAssignment",
    "HighWatermarkMonotonic",
]


@pytest.mark.parametrize(("isr_expand_leso", "states"), [(True, 21674), (False, 22214)])
def test_a_reassignment_keeps_every_record_with_or_without_kafka_7128(isr_expand_leso: bool, states: int) -> None:
    """One move of one replica, one record: nothing is lost, and without KAFKA-7128 neither (the
    added replica starts empty in the current epoch, so its LEO is never above the epoch start)."""
    overrides = {"max_records": 1, "isr_expand_leso": isr_expand_leso}
    result = Check("kraft-replication", preset="reassignment", overrides=overrides, property_names=SAFETY).run()
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert result.stats.distinct_states == states


def test_kafka_leaves_a_removed_replica_in_the_elr() -> None:
    """Completing a reassignment whose ISR is below min ISR: PartitionChangeBuilder's ELR takes the
    old ISR minus the new one, the removed replica included (the oracle agrees with Kafka 4.3.1)."""
    result = Check("kraft-replication", preset="reassignment", property_names=["ElrWithinReplicas"]).run()
    [violation] = result.violations
    assert [a.name for a in violation.trace.actions[1:]] == [
        "ShrinkIsr",
        "HandleAlterPartition",
        "AlterPartitionReassignments",
        "ApplyMetadata",
        "ApplyMetadata",
        "SendFetch",
        "HandleFetch",
        "ExpandIsr",
        "HandleAlterPartition",
    ]
    c = violation.trace.states[-1].controller
    assert (c.replicas, c.isr, c.elr, c.leader) == ((1, 2), {2}, {0, 1}, 2)


def test_no_reassignment_leaves_the_default_state_space_alone() -> None:
    model = KraftReplicationModel()
    [s] = model.init_states()
    assert s.controller.replicas == (0, 1) and "AlterPartitionReassignments" in model.inactive_actions()
