"""Properties of the `share-group-membership` model: what the group coordinator assigns (initialized,
subscribed partitions), when it rebalances, and that joins, rebalances and assignments complete."""

from __future__ import annotations

from kmc.checker import Action, invariant, leads_to, step
from kmc.models.share_group_membership.state import (
    JOINING,
    ShareGroupMembershipState,
    assigned_anywhere,
    is_stable,
    member_of,
    subscribed_topics,
)


@invariant
def AssignedPartitionsAreInitialized(s: ShareGroupMembershipState) -> bool:
    """No member, and no consumer, is given a share partition whose share-group state the share
    coordinator has not initialized (its share-partition leader would have no state to load)."""
    initialized = s.shareGroupStatePartitionMetadata.initializedTopics
    return all(m.assignedPartitions <= initialized for m in s.group.members) and all(
        c.assignment <= initialized for c in s.consumers
    )


@invariant
def AssignmentsFollowSubscriptions(s: ShareGroupMembershipState) -> bool:
    """Every member is assigned only partitions of topics it subscribes to."""
    return all(tp[0] in m.subscribedTopicNames for m in s.group.members for tp in m.assignedPartitions)


@invariant
def MemberEpochBounded(s: ShareGroupMembershipState) -> bool:
    """Every member's epoch is at most the assignment epoch, itself at most the group epoch."""
    group = s.group
    return group.assignmentEpoch <= group.groupEpoch and all(
        m.memberEpoch <= group.assignmentEpoch for m in group.members
    )


def _rebalanced(s: ShareGroupMembershipState, action: Action, t: ShareGroupMembershipState) -> bool:
    return action.name == "HandleHeartbeat" and t.group.groupEpoch > s.group.groupEpoch and s.group.groupEpoch > 0


@step(trigger=_rebalanced)
def NoRebalanceWithoutCause(s: ShareGroupMembershipState, action: Action, t: ShareGroupMembershipState) -> bool:
    """A heartbeat bumps the group epoch only for a cause: a member joined, a subscription changed, a
    subscribed topic's partitions changed, or an initialized partition of a subscribed topic is in no
    member's target."""
    if not _rebalanced(s, action, t):
        return True
    before, after = s.group, t.group
    if {m.memberId for m in before.members} != {m.memberId for m in after.members}:
        return True
    for m in after.members:
        old = member_of(before, m.memberId)
        if old is None or old.subscribedTopicNames != m.subscribedTopicNames:
            return True
    if after.metadataHash != before.metadataHash:
        return True
    subscribed = subscribed_topics(before)
    waiting = {tp for tp in s.shareGroupStatePartitionMetadata.initializedTopics if tp[0] in subscribed}
    return not waiting <= assigned_anywhere(before)


@leads_to(lambda s: not is_stable(s.group))
def EveryRebalanceCompletes(s: ShareGroupMembershipState) -> bool:
    """Every rebalance ends with a target for the group epoch that every member has."""
    return is_stable(s.group)


@leads_to(lambda s: any(c.phase == JOINING for c in s.consumers))
def EveryMemberJoins(s: ShareGroupMembershipState) -> bool:
    """A consumer that joins is eventually a member of the group (or stops), without waiting for a
    session timeout."""
    return all(c.phase != JOINING for c in s.consumers)


def _unassigned(s: ShareGroupMembershipState) -> bool:
    """A partition of a topic some member subscribes to is in no member's target."""
    subscribed = subscribed_topics(s.group)
    assigned = assigned_anywhere(s.group)
    return any((t, p) not in assigned for t, n in s.partitionCounts if t in subscribed for p in range(n))


@leads_to(_unassigned)
def EverySubscribedPartitionAssigned(s: ShareGroupMembershipState) -> bool:
    """Every partition of a subscribed topic is eventually initialized and in some member's target."""
    return not _unassigned(s)
