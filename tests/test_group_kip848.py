"""The KIP-848 model: exact counts, the release rule, reconciliation and its invariants."""

from __future__ import annotations

from conftest import walk_checking_kept_steps
from kmc.checker import Check, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.models.group_kip848.config import ACTION_ARGS
from kmc.models.group_kip848.model import Kip848Model
from kmc.models.group_kip848.state import (
    FREE,
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    Coordinator,
    GroupMember,
)


def test_kip_848_holds_completely_but_for_double_ownership() -> None:
    props = [
        "ValidPartitionEpoch",
        "LegalTargetAssignment",
        "ValidMemberEpoch",
        "ClientSideMemberEpochIsMonotonic",
        "CommitFencedByMemberEpoch",
        "EventuallyConverges",
    ]
    result = Check("group-kip848", property_names=props).run()
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert result.stats.distinct_states == 49665


def test_a_stale_owned_report_gives_two_owners() -> None:
    """A joining consumer's empty reconciliation completes while its first heartbeat is in flight; the response
    brings both partitions, and its next heartbeat reports the completed (empty) set while it reconciles them.
    A member that joins meanwhile makes the target revoke one: the builder (since KAFKA-16615) drops the
    unlisted partition at once and gives it to the newcomer, while the consumer goes on to take it."""
    result = Check("group-kip848", property_names=["NoDoubleClientAssignment"]).run()
    [violation] = result.violations
    assert violation.trace_length == 30
    trace = violation.trace
    stale = next(
        s.consumers[1].request
        for s in trace.states
        if s.consumers[1].request
        and s.consumers[1].request.ownedPartitions == frozenset()
        and s.consumers[1].memberEpoch > 0
    )
    assert stale.memberEpoch == 3
    last = trace.states[-1]
    assert last.consumers[0].owned & last.consumers[1].owned == {1}
    assert last.consumers[1].response is not None and last.consumers[1].response.assignment == {0}  # not yet heard
    waiting = Check("group-kip848", preset="pre-kafka-16615").run()  # every revocation waits: holds with one fault
    assert waiting.status is Status.HOLDS_COMPLETE and waiting.stats.distinct_states == 45077


def test_assigning_before_release_gives_two_owners() -> None:
    model = Kip848Model.build("no-release-wait")
    result = bfs(model, select_properties(Kip848Model, names=["NoDoubleClientAssignment"]))
    [violation] = result.violations
    assert violation.trace_length == 13
    last = violation.trace.states[-1]
    assert last.consumers[0].owned & last.consumers[1].owned == {1}


def test_kafka_16147_needs_both_the_reclaim_and_the_set_by_set_bookkeeping() -> None:
    """The partition taken back from pending revocation loses its epoch, then a new member gets it."""
    props = ["ValidPartitionEpoch", "NoDoubleClientAssignment"]
    before = Check("group-kip848", preset="pre-kafka-16147", property_names=props, settings={"keep_going": True}).run()
    assert {(v.property, v.trace_length) for v in before.violations} == {
        ("ValidPartitionEpoch", 15),
        ("NoDoubleClientAssignment", 26),
    }
    lost = before.violation("ValidPartitionEpoch").trace  # type: ignore[union-attr]
    taken_back = lost.states[-2].coordinator.members[0]
    assert taken_back.state == UNREVOKED_PARTITIONS and taken_back.pendingRevocation
    alone = Check(
        "group-kip848", preset="pre-kafka-16147", overrides={"reclaim_pending_revocation": False}, property_names=props
    ).run()
    assert alone.status is Status.HOLDS_COMPLETE and alone.stats.distinct_states == 45597
    # the fixed bookkeeping keeps the epoch, but the reclaim lets a stale owned report end a revocation (37 states)
    fixed = Check(
        "group-kip848", preset="pre-kafka-16147", overrides={"partition_epoch_bookkeeping": True}, property_names=props
    ).run()
    assert [(v.property, v.trace_length) for v in fixed.violations] == [("NoDoubleClientAssignment", 37)]


def test_slow_member_is_fenced_but_cannot_commit() -> None:
    dup = Check("group-kip848", preset="slow-member", property_names=["NoDoubleClientAssignment"]).run()
    assert dup.status is Status.VIOLATED and dup.violations[0].trace_length == 14
    commits = Check(
        "group-kip848",
        preset="slow-member",
        overrides={"max_group_epoch": 4},
        property_names=["CommitFencedByMemberEpoch"],
    ).run()
    assert commits.status is Status.HOLDS_BOUNDED and commits.stats.distinct_states == 20955


def _coordinator(target: dict[str, frozenset[int]], epochs: tuple[int, ...], members: tuple) -> Coordinator:
    return Coordinator(3, 3, tuple(sorted(target.items())), members, epochs)


def test_current_assignment_builder_revokes_before_it_moves() -> None:
    """A member that must give up partition 1 stays in its epoch until it reports it revoked."""
    model = Kip848Model.build()
    a = GroupMember("a", 2, 1, STABLE, frozenset({0, 1}), frozenset(), 0)
    b = GroupMember("b", 2, 1, STABLE, frozenset(), frozenset(), 1)
    coord = _coordinator({"a": frozenset({0}), "b": frozenset({1})}, (2, 2), (a, b))
    revoking = model._reconcile(coord, a, frozenset({0, 1}))
    assert (revoking.state, revoking.memberEpoch) == (UNREVOKED_PARTITIONS, 2)
    assert (revoking.assigned, revoking.pendingRevocation) == ({0}, {1})
    still = model._reconcile(coord, revoking, frozenset({0, 1}))
    assert still == revoking
    done = model._reconcile(coord, revoking, frozenset({0}))
    assert (done.state, done.memberEpoch, done.assigned) == (STABLE, 3, {0})


def test_current_assignment_builder_waits_for_release() -> None:
    model = Kip848Model.build()
    b = GroupMember("b", 2, 1, STABLE, frozenset(), frozenset(), 1)
    held = _coordinator({"b": frozenset({1})}, (FREE, 2), (b,))
    waiting = model._reconcile(held, b, frozenset())
    assert (waiting.state, waiting.memberEpoch, waiting.assigned) == (UNRELEASED_PARTITIONS, 3, frozenset())
    free = _coordinator({"b": frozenset({1})}, (FREE, FREE), (waiting,))
    assert model._reconcile(free, waiting, frozenset()).assigned == {1}


def test_kept_steps_are_the_steps_computed_afresh() -> None:
    """The successors a model computes from what it has kept (a consumer's own steps, heartbeat outcomes,
    removals, assignor targets) equal, in order, those of a model that has kept nothing, across a whole
    search with timeouts at any moment, so that every kind of step is taken."""
    warm = Kip848Model.build("slow-member", {"max_faults": 1, "max_group_epoch": 3})
    seen, taken = walk_checking_kept_steps(warm, lambda: Kip848Model(warm.config))
    assert len(seen) == 16125
    assert taken == set(ACTION_ARGS)
    assert len(warm._sticky_targets) < len(warm._heartbeat_outcomes) < len(seen)
