"""The share-group-membership model's state: the group coordinator's share group (its epochs, target
assignment and members), its record of which share partitions have their state initialized
(``ShareGroupStatePartitionMetadata``), the InitializeShareGroupState requests on their way to the
share coordinator, the topics' partition counts, and the share consumers with their
ShareGroupHeartbeat requests and responses in flight."""

from __future__ import annotations

from typing import NamedTuple

from kmc.checker import Action

NONE = "NONE"
FENCED_MEMBER_EPOCH = "FENCED_MEMBER_EPOCH"
UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"

JOIN_EPOCH = 0
LEAVE_EPOCH = -1

# client phases (the share consumer's MemberState, folded: RECONCILING, ACKNOWLEDGING and STABLE are "member")
UNSUBSCRIBED = "unsubscribed"
JOINING = "joining"
MEMBER = "member"
LEAVING = "leaving"
STOPPED = "stopped"

# how an InitializeShareGroupState request ends (GroupCoordinatorService.persisterInitialize)
INITIALIZED = "NONE"
"""the share coordinator wrote the initial state: ``initializeShareGroupState`` marks the partitions initialized"""
PERSISTER_ERROR = "COORDINATOR_NOT_AVAILABLE"
"""the persister failed: ``uninitializeShareGroupState`` takes them out of initializing, for the next heartbeat"""
ANSWER_LOST = "lost"
"""the group coordinator moved before the answer came: they stay initializing until the retry interval"""

TopicPartition = tuple[str, int]
Partitions = frozenset[TopicPartition]


class ShareGroupMember(NamedTuple):
    memberId: str
    memberEpoch: int
    previousMemberEpoch: int
    subscribedTopicNames: frozenset[str]
    assignedPartitions: Partitions


class ShareGroup(NamedTuple):
    """The coordinator's record of the group; group epoch 0 means it does not exist yet."""

    groupEpoch: int
    assignmentEpoch: int
    targetAssignment: tuple[tuple[str, Partitions], ...]
    members: tuple[ShareGroupMember, ...]
    metadataHash: tuple[tuple[str, int], ...]
    """The partition counts of the subscribed topics when the epoch was last bumped (what Kafka hashes)."""
    assignmentDue: bool
    """``group.share.assignment.interval.ms`` has passed since the target was last computed (or none was)."""


class ShareGroupStatePartitionMetadata(NamedTuple):
    """Which share partitions of the group have their state in the share coordinator."""

    initializingTopics: Partitions
    """Sent to the share coordinator within ``group.share.initialize.retry.interval.ms``: not sent again."""
    staleInitializingTopics: Partitions
    """Sent longer ago than the retry interval with no answer: the next heartbeat sends them again."""
    initializedTopics: Partitions


class Heartbeat(NamedTuple):
    memberId: str
    memberEpoch: int
    subscribedTopicNames: frozenset[str] | None
    """Sent on a join, after a failed request, or when the subscription changed; None otherwise."""


class HeartbeatResponse(NamedTuple):
    error: str
    memberEpoch: int
    assignment: Partitions | None
    """The member's partitions, sent on a join, a full request, or when they changed (None: unchanged)."""


class ShareConsumer(NamedTuple):
    """One share consumer: ``ShareMembershipManager`` and its heartbeat state."""

    phase: str
    memberEpoch: int
    subscription: frozenset[str]
    """The topics the application subscribed to."""
    sentSubscription: frozenset[str] | None
    """The subscription last sent (None: send it with the next heartbeat; reset when a request fails)."""
    assignment: Partitions
    request: Heartbeat | None
    response: HeartbeatResponse | None


class ShareGroupMembershipState(NamedTuple):
    group: ShareGroup
    shareGroupStatePartitionMetadata: ShareGroupStatePartitionMetadata
    initializeRequests: tuple[Partitions, ...]
    """InitializeShareGroupState requests sent to the share coordinator, unanswered."""
    partitionCounts: tuple[tuple[str, int], ...]
    """Every topic's partition count in the metadata image."""
    consumers: tuple[ShareConsumer, ...]
    faults: int
    lostResponses: int
    subscriptionChanges: int
    initializeFailures: int


Step = tuple[Action, ShareGroupMembershipState]


def member_of(group: ShareGroup, member_id: str) -> ShareGroupMember | None:
    for m in group.members:
        if m.memberId == member_id:
            return m
    return None


def target_of(group: ShareGroup, member_id: str) -> Partitions:
    for m, partitions in group.targetAssignment:
        if m == member_id:
            return partitions
    return frozenset()


def subscribed_topics(group: ShareGroup) -> frozenset[str]:
    """``ShareGroup.subscribedTopicNames``: every topic some member subscribes to."""
    return frozenset(t for m in group.members for t in m.subscribedTopicNames)


def assigned_anywhere(group: ShareGroup) -> Partitions:
    """Every partition in some member's target."""
    return frozenset(tp for _, partitions in group.targetAssignment for tp in partitions)


def is_stable(group: ShareGroup) -> bool:
    """``ShareGroup`` EMPTY, or STABLE: the target is computed for the group epoch and every member has it."""
    return not group.members or (
        group.assignmentEpoch == group.groupEpoch and all(m.memberEpoch == group.assignmentEpoch for m in group.members)
    )
