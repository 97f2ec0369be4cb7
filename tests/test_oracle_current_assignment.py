"""The `group-kip848` coordinator against Kafka's CurrentAssignmentBuilder and ConsumerGroup: exact counts,
the model fixes the oracle led to (each a regression test), the release flags, and a broken model caught."""

from __future__ import annotations

import os

import pytest
from kmc.checker import BfsOptions
from kmc.checker.conformance.run import conform
from kmc.models.group_kip848.model import Kip848Model
from kmc.models.group_kip848.state import (
    FREE,
    JOIN_EPOCH,
    NONE,
    RUNNING,
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    Consumer,
    Coordinator,
    GroupMember,
    HeartbeatResponse,
    Kip848State,
)

needs_kafka = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="needs Kafka's jars and a JDK")

QUESTIONS = {
    "state",
    "memberEpoch",
    "previousMemberEpoch",
    "assignedPartitions",
    "partitionsPendingRevocation",
    "partitionEpochs",
}


def _oracle(model: Kip848Model):  # type: ignore[no-untyped-def]
    from kmc.oracles.current_assignment import CurrentAssignmentOracle

    return CurrentAssignmentOracle(model)


def _coordinator(target_epoch: int, target: dict[str, frozenset[int]], epochs: tuple[int, ...], *members: GroupMember):
    return Coordinator(target_epoch, target_epoch, tuple(sorted(target.items())), members, epochs)


# -- the model's reconciliation, as Kafka 4.3.1 does it (no JVM) --------------------------------------
def test_a_partition_the_heartbeat_does_not_list_is_dropped_without_waiting() -> None:
    """KAFKA-16249 (3.8): only partitions the member reports as owned wait for their revocation; a
    heartbeat that leaves the field null counts as owning them all."""
    model = Kip848Model.build()
    a = GroupMember("a", 1, 0, STABLE, frozenset({0, 1}), frozenset(), 0)
    coord = _coordinator(2, {"a": frozenset({0}), "b": frozenset({1})}, (1, 1), a)
    dropped = model._reconcile(coord, a, frozenset({0}))
    assert (dropped.state, dropped.memberEpoch, dropped.assigned, dropped.pendingRevocation) == (STABLE, 2, {0}, set())
    waiting = model._reconcile(coord, a, None)
    assert (waiting.state, waiting.memberEpoch, waiting.pendingRevocation) == (UNREVOKED_PARTITIONS, 1, {1})
    before = Kip848Model.build(None, {"revoke_only_owned": False})
    assert before._reconcile(coord, a, frozenset({0})).state == UNREVOKED_PARTITIONS


def test_a_partition_pending_revocation_given_back_is_not_unreleased() -> None:
    """KAFKA-19449 (4.2): the member's own partition pending revocation is not withheld when its target
    returns it; before 4.2 the member waited one heartbeat in UNRELEASED_PARTITIONS."""
    a = GroupMember("a", 1, 1, UNREVOKED_PARTITIONS, frozenset({0}), frozenset({1}), 0)
    coord = _coordinator(3, {"a": frozenset({0, 1})}, (1, 1), a)
    now = Kip848Model.build()._reconcile(coord, a, frozenset({0}))
    assert (now.state, now.memberEpoch, now.assigned) == (STABLE, 3, {0, 1})
    older = Kip848Model.build("kafka-4.0")._reconcile(coord, a, frozenset({0}))
    assert (older.state, older.memberEpoch, older.assigned) == (UNRELEASED_PARTITIONS, 3, {0})


def test_leaving_unrevoked_partitions_keeps_the_epoch() -> None:
    """KAFKA-19974 (4.2): a member that must revoke again after revoking stays at its epoch (4.0: epoch + 1)."""
    a = GroupMember("a", 2, 1, UNREVOKED_PARTITIONS, frozenset({0, 1}), frozenset({2}), 0)
    coord = _coordinator(4, {"a": frozenset({0})}, (2, 2, 2), a)
    now = Kip848Model.build(None, {"partitions": 3})._reconcile(coord, a, frozenset({0, 1}))
    assert (now.state, now.memberEpoch, now.pendingRevocation) == (UNREVOKED_PARTITIONS, 2, {1})
    older = Kip848Model.build("kafka-4.0", {"partitions": 3})._reconcile(coord, a, frozenset({0, 1}))
    assert older.memberEpoch == 3


def _step(model: Kip848Model, state: Kip848State, name: str) -> Kip848State:
    return next(t for a, t in model.successors(state) if a.name == name)


def test_the_heartbeat_reports_owned_partitions_once_per_completed_reconciliation() -> None:
    """As the consumer's heartbeat state does: owned partitions when joining and in the first heartbeat
    after a reconciliation completed; null otherwise (not the set it happens to own mid-reconciliation)."""
    model = Kip848Model.build()
    coord = Coordinator(
        1,
        1,
        (("c0-0", frozenset({0, 1})),),
        (GroupMember("c0-0", 1, 0, STABLE, frozenset({0, 1}), frozenset(), 0),),
        (1, 1),
    )
    me = Consumer(RUNNING, "c0-0", 1, frozenset(), frozenset({0, 1}), None, None, synced=False)
    s = Kip848State(coord, (me,), 0)
    sent = _step(model, s, "SendHeartbeat")
    assert sent.consumers[0].request.ownedPartitions is None  # type: ignore[union-attr]
    started = _step(model, s, "StartReconciliation")
    assert started.consumers[0].reconciling == {0, 1} and started.consumers[0].reconciled is None
    assigned = _step(model, started, "AssignPartitions")
    assert assigned.consumers[0].reconciled == {0, 1} and assigned.consumers[0].reconciling is None
    reported = _step(model, assigned, "SendHeartbeat").consumers[0]
    assert reported.request.ownedPartitions == {0, 1} and reported.reconciled is None  # type: ignore[union-attr]
    joining = Kip848State(
        Coordinator(0, 0, (), (), (FREE, FREE)),
        (Consumer(RUNNING, "", JOIN_EPOCH, frozenset(), frozenset(), None, None),),
        0,
    )
    assert _step(model, joining, "SendHeartbeat").consumers[0].request.ownedPartitions == frozenset()  # type: ignore[union-attr]


def test_a_joining_member_acknowledges_an_empty_assignment() -> None:
    """The first assignment after joining is always new to the consumer (its target was none): an empty one
    is reconciled at once and reported in the next heartbeat, as the consumer's empty reconciliation is."""
    model = Kip848Model.build()
    me = Consumer(
        RUNNING, "", JOIN_EPOCH, frozenset(), frozenset(), None, HeartbeatResponse(NONE, "c0-0", 2, frozenset())
    )
    s = Kip848State(Coordinator(2, 2, (), (), (1, 1)), (me,), 0)
    received = _step(model, s, "ReceiveHeartbeat")
    assert received.consumers[0].synced is False
    acked = _step(model, received, "StartReconciliation").consumers[0]
    assert acked.reconciled == frozenset() and acked.reconciling is None and acked.synced


def test_a_reconciliation_overtaken_by_a_newer_assignment_runs_to_its_own() -> None:
    """``AbstractMembershipManager``: a reconciliation in progress is not discarded when a newer assignment
    arrives; it completes (and its partitions are reported), then the newer one is reconciled."""
    model = Kip848Model.build()
    me = Consumer(
        RUNNING,
        "c0-0",
        1,
        frozenset(),
        frozenset({0, 1}),
        None,
        HeartbeatResponse(NONE, "c0-0", 2, frozenset({0})),
        reconciling=frozenset({0, 1}),
    )
    s = Kip848State(Coordinator(2, 2, (), (), (2, FREE)), (me,), 0)
    received = _step(model, s, "ReceiveHeartbeat").consumers[0]
    assert (received.assignment, received.reconciling, received.synced) == ({0}, {0, 1}, False)
    done = _step(model, _set_consumer(s, received), "AssignPartitions").consumers[0]
    assert (done.owned, done.reconciled, done.reconciling) == ({0, 1}, {0, 1}, None)
    again = _step(model, _set_consumer(s, done), "StartReconciliation").consumers[0]
    revoked = _step(model, _set_consumer(s, again), "RevokePartitions").consumers[0]
    assert (revoked.owned, revoked.reconciled, revoked.reconciling) == ({0}, {0}, None)


def _set_consumer(s: Kip848State, me: Consumer) -> Kip848State:
    return s._replace(consumers=(me,))


# -- against Kafka ------------------------------------------------------------------------------------
@needs_kafka
def test_the_kip_848_model_conforms_to_current_assignment_builder() -> None:
    model = Kip848Model.build()
    result = conform(model, [_oracle(model)], BfsOptions())
    [tally] = result.tallies
    assert result.check.stats.distinct_states == 49665
    assert (tally.steps, tally.comparisons, tally.mismatches) == (44970, 229890, 0)
    assert set(tally.by_question) == QUESTIONS
    assert dict(tally.by_action) == {"HandleHeartbeat": 37654, "SessionTimeout": 6396, "RebalanceTimeout": 920}


@needs_kafka
@pytest.mark.parametrize(
    ("preset", "overrides", "reason"),
    [
        ("pre-kafka-16147", {}, "early-2024"),
        ("kip-848", {"partition_epoch_bookkeeping": False}, "KAFKA-16147"),
        ("kafka-4.0", {}, "KAFKA-19449 (4.2), KAFKA-19974 (4.2)"),
        ("pre-kafka-16615", {}, "KAFKA-16615 (3.8)"),
        ("no-release-wait", {}, "what-if"),
    ],
)
def test_configs_of_older_releases_say_why_they_are_not_compared(preset: str, overrides: dict, reason: str) -> None:
    why = _oracle(Kip848Model.build(preset, overrides)).unsupported()
    assert why is not None and reason in why


@needs_kafka
def test_kafka_4_3_1_disagrees_with_the_kafka_4_0_reconciliation() -> None:
    """The kafka-4.0 preset's KAFKA-19449 rule, asked of 4.3.1's builder directly: a real release difference."""
    from kmc.oracles.current_assignment import BuildCall, MemberView

    oracle = _oracle(Kip848Model.build())
    revoking = MemberView(UNREVOKED_PARTITIONS, 1, 1, frozenset({0}), frozenset({1}))
    call = BuildCall("a", revoking, 3, frozenset({0, 1}), (1, 1), frozenset({0}))
    assert oracle._ask_builder(call) == MemberView(STABLE, 3, 1, frozenset({0, 1}), frozenset())
    null_owned = oracle._ask_builder(call._replace(ownedPartitions=None))
    assert null_owned == revoking  # a null owned field: still revoking


class MovesBeforeRevoking(Kip848Model):
    """Broken on purpose: a member that must revoke moves to the target epoch at once."""

    def _compute_next(self, coord, member, epoch, current, owned):  # type: ignore[no-untyped-def]
        after = super()._compute_next(coord, member, epoch, current, owned)
        if after.state == UNREVOKED_PARTITIONS:
            return after._replace(memberEpoch=coord.targetAssignmentEpoch)
        return after


@needs_kafka
def test_a_member_that_moves_before_revoking_is_caught_with_the_shortest_trace() -> None:
    model = MovesBeforeRevoking(Kip848Model.make_config())
    oracle = _oracle(model)
    result = conform(model, [oracle], BfsOptions())
    [tally] = result.tallies
    assert tally.mismatches == 1
    mismatch = tally.first_mismatch
    assert mismatch is not None and (mismatch.question, mismatch.ours, mismatch.theirs) == ("memberEpoch", 2, 1)
    [violation] = result.check.violations
    trace = violation.trace
    # c0 joins and gets both partitions, heartbeats before taking them (owned: null); c1 joins; c0 must revoke one
    assert violation.trace_length == 10
    assert [a.name for a in trace.actions[1:]] == [
        "Subscribe",
        "SendHeartbeat",
        "HandleHeartbeat",
        "ReceiveHeartbeat",
        "SendHeartbeat",
        "Subscribe",
        "SendHeartbeat",
        "HandleHeartbeat",
        "HandleHeartbeat",
    ]
    for before, action, after in zip(trace.states[:-1], trace.actions[1:], trace.states[1:], strict=True):
        assert (action, after) in model.successors(before)
    last = list(oracle.compare_step(trace.states[-2], trace.actions[-1], trace.states[-1]))
    assert [c.question for c in last if not c.agree] == ["memberEpoch"]
