"""Properties of the `group-kip848` model: the invariants of KIP-848's reconciliation."""

from __future__ import annotations

from functools import lru_cache

from kmc.checker import Action, invariant, leads_to, step
from kmc.models.group_kip848.state import (
    ASSIGNING,
    EMPTY,
    FREE,
    NONE,
    RECONCILING,
    STABLE,
    STOPPED,
    Coordinator,
    Kip848State,
    group_state,
)

# The coordinator's invariants read only the coordinator, and a search meets a few hundred coordinators
# in tens of thousands of states: each verdict is kept by the coordinator it was computed for.
COORDINATOR_VERDICTS = 1 << 16
"""How many coordinators each coordinator invariant keeps its verdict for."""


@invariant
def NoDoubleClientAssignment(s: Kip848State) -> bool:
    """No two consumers believe they own the same partition (the most important property)."""
    seen: frozenset[int] = frozenset()
    for consumer in s.consumers:
        owned = consumer.owned
        if owned and consumer.phase != STOPPED:
            if not seen.isdisjoint(owned):
                return False
            seen |= owned
    return True


@invariant
def ValidPartitionEpoch(s: Kip848State) -> bool:
    """A partition's epoch is its holder's member epoch; a free partition is held by no member,
    and no partition is held (assigned or pending revocation) by two members."""
    return _valid_partition_epoch(s.coordinator)


@lru_cache(maxsize=COORDINATOR_VERDICTS)
def _valid_partition_epoch(coord: Coordinator) -> bool:
    holders: dict[int, list[int]] = {}
    for m in coord.members:
        for p in m.assigned | m.pendingRevocation:
            holders.setdefault(p, []).append(m.memberEpoch)
    for p, epoch in enumerate(coord.partitionEpochs):
        held = holders.get(p, [])
        if epoch == FREE and held:
            return False
        if epoch != FREE and held != [epoch]:
            return False
    return True


@invariant
def LegalTargetAssignment(s: Kip848State) -> bool:
    """Once computed for the current group epoch, the target gives every partition to exactly one
    current member."""
    return _legal_target_assignment(s.coordinator)


@lru_cache(maxsize=COORDINATOR_VERDICTS)
def _legal_target_assignment(coord: Coordinator) -> bool:
    if coord.targetAssignmentEpoch != coord.groupEpoch or not coord.members:
        return True
    parts = [p for _, ps in coord.targetAssignment for p in ps]
    members = {m.memberId for m in coord.members}
    return (
        len(parts) == len(set(parts))
        and set(parts) == set(range(len(coord.partitionEpochs)))  # one epoch per partition of the topic
        and {m for m, _ in coord.targetAssignment} <= members
    )


@invariant
def ValidMemberEpoch(s: Kip848State) -> bool:
    """A member at the target epoch holds no partition the target gives to another member."""
    return _valid_member_epoch(s.coordinator)


@lru_cache(maxsize=COORDINATOR_VERDICTS)
def _valid_member_epoch(coord: Coordinator) -> bool:
    target = dict(coord.targetAssignment)
    for m in coord.members:
        if m.memberEpoch != coord.targetAssignmentEpoch:
            continue
        others = set().union(*(ps for mid, ps in target.items() if mid != m.memberId))
        if m.assigned & others:
            return False
    return True


@step
def ClientSideMemberEpochIsMonotonic(s: Kip848State, action: Action, t: Kip848State) -> bool:
    """A consumer's member epoch never decreases while it keeps its member id."""
    # a step keeps the number of consumers; zip's keyword (strict=) would double this check's cost
    for before, after in zip(s.consumers, t.consumers):  # noqa: B905
        if before is not after and after.memberEpoch < before.memberEpoch and before.memberId == after.memberId != "":
            return False
    return True


@step
def CommitFencedByMemberEpoch(s: Kip848State, action: Action, t: Kip848State) -> bool:
    """An accepted OffsetCommit carries the member's current epoch."""
    if action.name != "OffsetCommit":
        return True
    args = action.args
    if args["error"] != NONE:
        return True
    consumer = s.consumers[args["consumer"]]
    member = next((m for m in s.coordinator.members if m.memberId == consumer.memberId), None)
    return member is not None and member.memberEpoch == args["memberEpoch"]


@leads_to(lambda s: group_state(s.coordinator) in (ASSIGNING, RECONCILING))
def EventuallyConverges(s: Kip848State) -> bool:
    """Every rebalance ends with every member reconciled to the target (or no members)."""
    return group_state(s.coordinator) in (STABLE, EMPTY)
