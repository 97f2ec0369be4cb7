"""The KIP-848 model: exact counts, the release rule, reconciliation and its invariants."""

from __future__ import annotations

from kmc.checker import BfsOptions, Check, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.models.group_kip848 import (
    FREE,
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    Coordinator,
    GroupMember,
    Kip848Model,
)


def test_kip_848_holds_completely() -> None:
    result = Check("group-kip848").run()
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert result.stats.distinct_states == 11293
    assert "EventuallyConverges" in result.properties


def test_two_faults_still_hold() -> None:
    result = Check("group-kip848", overrides={"max_faults": 2}, property_names=["NoDoubleClientAssignment"]).run()
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == 159014


def test_assigning_before_release_gives_two_owners() -> None:
    model = Kip848Model.build("no-release-wait")
    result = bfs(model, select_properties(Kip848Model, names=["NoDoubleClientAssignment"]))
    [violation] = result.violations
    assert violation.trace_length == 11
    last = violation.trace.states[-1]
    assert last.consumers[0].owned & last.consumers[1].owned == {1}


def test_kafka_16147_needs_both_the_reclaim_and_the_set_by_set_bookkeeping() -> None:
    """The partition taken back from pending revocation loses its epoch, then a new member gets it."""
    props = ["ValidPartitionEpoch", "NoDoubleClientAssignment"]
    before = Check("group-kip848", preset="pre-kafka-16147", property_names=props,
                   bfs_options=BfsOptions(keep_going=True)).run()  # fmt: skip
    assert {(v.property, v.trace_length) for v in before.violations} == {
        ("ValidPartitionEpoch", 15),
        ("NoDoubleClientAssignment", 24),
    }
    lost = before.violation("ValidPartitionEpoch").trace  # type: ignore[union-attr]
    taken_back = lost.states[-2].coordinator.members[0]
    assert taken_back.state == UNREVOKED_PARTITIONS and taken_back.pendingRevocation
    for flag, value, distinct in (("partition_epoch_bookkeeping", False, 11293), ("reclaim_pending_revocation", True,
                                                                                10569)):  # fmt: skip
        alone = Check("group-kip848", overrides={flag: value}, property_names=props).run()
        assert alone.status is Status.HOLDS_COMPLETE and alone.stats.distinct_states == distinct


def test_slow_member_is_fenced_but_cannot_commit() -> None:
    dup = Check("group-kip848", preset="slow-member", property_names=["NoDoubleClientAssignment"]).run()
    assert dup.status is Status.VIOLATED and dup.violations[0].trace_length == 12
    commits = Check("group-kip848", preset="slow-member", property_names=["CommitFencedByMemberEpoch"]).run()
    assert commits.status is Status.HOLDS_BOUNDED


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
