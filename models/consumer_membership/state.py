"""The consumer-membership model's state: the member's state and epoch, the target assignment as the
client holds it (by topic id), the topics its metadata has resolved, the reconciliation in progress,
and the heartbeat in flight."""

from __future__ import annotations

from typing import NamedTuple

TopicIdPartition = tuple[int, int]
"""(topic id, partition): the client keys its assignment by topic id, resolved to a name from metadata."""

Assignment = frozenset[TopicIdPartition]

# MemberState
JOINING = "JOINING"
RECONCILING = "RECONCILING"
ACKNOWLEDGING = "ACKNOWLEDGING"
STABLE = "STABLE"

JOIN_GROUP_MEMBER_EPOCH = 0
"""A heartbeat at epoch 0 joins the group; the coordinator answers with the member's first epoch."""


class HeartbeatRequest(NamedTuple):
    """A ConsumerGroupHeartbeat in flight to the group coordinator."""

    memberEpoch: int
    topicPartitions: Assignment | None
    """The owned partitions, sent only when they changed since the last heartbeat (``sentFields``)."""


class Reconciliation(NamedTuple):
    """The reconciliation in progress (``reconciliationInProgress``): first the commit and
    ``onPartitionsRevoked``, then the assignment applied to the subscription and
    ``onPartitionsAssigned`` (``revokeAndAssign``)."""

    assigned: Assignment
    """The copy of the assignment being reconciled: what the member will own when it completes."""
    revoked: Assignment
    """Owned partitions that the reconciliation revokes (owned minus assigned)."""
    applied: bool = False
    """The commit and the revocation completed and the assignment is applied (``assignPartitions``):
    ``onPartitionsAssigned`` is running."""


class MembershipState(NamedTuple):
    state: str
    memberEpoch: int
    metadataTopics: frozenset[int]
    """Topic ids whose names the client's metadata cache has."""
    currentTargetAssignment: Assignment
    """KAFKA-16198 fixed: the latest target assignment received, by topic id."""
    assignmentUnresolved: Assignment
    """Before KAFKA-16198: partitions of the target whose topic names were not yet found."""
    assignmentReadyToReconcile: Assignment
    """Before KAFKA-16198: partitions resolved and waiting to be reconciled."""
    currentAssignment: Assignment
    """The partitions the member owns: the last reconciliation's (``subscriptions.assignedPartitions``)."""
    reconciliation: Reconciliation | None
    sentTopicPartitions: Assignment | None
    """The owned partitions the last heartbeat reported (``sentFields.topicPartitions``); none before the first."""
    heartbeat: HeartbeatRequest | None
