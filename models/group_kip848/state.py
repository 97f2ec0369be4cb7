"""The group-kip848 model's state: the coordinator with its members, epochs and target assignment,
the consumers, and the heartbeats in flight; the member, group and client states and error codes."""

from __future__ import annotations

from typing import NamedTuple

from kmc.checker import Action

# member states (MemberState)
STABLE = "STABLE"
UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"

# group states (ConsumerGroup.ConsumerGroupState)
EMPTY = "EMPTY"
ASSIGNING = "ASSIGNING"
RECONCILING = "RECONCILING"

NONE = "NONE"
FENCED_MEMBER_EPOCH = "FENCED_MEMBER_EPOCH"
UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
STALE_MEMBER_EPOCH = "STALE_MEMBER_EPOCH"

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
FREE = -1
"""A partition's epoch when no member holds it (assigned or pending revocation)."""


# client phases
UNSUBSCRIBED = "unsubscribed"
RUNNING = "running"
LEAVING = "leaving"
STOPPED = "stopped"


class GroupMember(NamedTuple):
    memberId: str
    memberEpoch: int
    previousMemberEpoch: int
    state: str
    assigned: frozenset[int]
    pendingRevocation: frozenset[int]
    consumer: int


class Coordinator(NamedTuple):
    groupEpoch: int
    targetAssignmentEpoch: int
    targetAssignment: tuple[tuple[str, frozenset[int]], ...]
    members: tuple[GroupMember, ...]
    partitionEpochs: tuple[int, ...]
    """The member epoch of each partition's current owner, or FREE."""


class Heartbeat(NamedTuple):
    memberId: str
    memberEpoch: int
    ownedPartitions: frozenset[int] | None
    """None (the request's field left null) unless joining or a reconciliation completed since the last one."""


class HeartbeatResponse(NamedTuple):
    error: str
    memberId: str
    memberEpoch: int
    assignment: frozenset[int]


class Consumer(NamedTuple):
    phase: str
    memberId: str
    memberEpoch: int
    owned: frozenset[int]
    assignment: frozenset[int]
    """The last assignment the coordinator sent: what the client reconciles towards."""
    request: Heartbeat | None
    response: HeartbeatResponse | None
    reconciled: frozenset[int] | None = None
    """The partitions of the last reconciliation the consumer completed and has not reported yet (None:
    nothing to report): like the consumer's local assignment, sent once in the next heartbeat."""
    reconciling: frozenset[int] | None = None
    """The assignment of the reconciliation in progress (None: none): fixed when it starts."""
    synced: bool = True
    """Whether the assignment in hand (the one being reconciled, else the last completed) is the latest
    received; an assignment that differs from the previous one received makes it False."""


class Kip848State(NamedTuple):
    coordinator: Coordinator
    consumers: tuple[Consumer, ...]
    faults: int


Step = tuple[Action, Kip848State]


class OwnSteps(NamedTuple):
    """A consumer's steps that read nothing but the consumer: the steps and the consumer after each."""

    first: tuple[tuple[Action, Consumer], ...]
    """Subscribe or SendHeartbeat: listed before the heartbeat's handling."""
    then: tuple[tuple[Action, Consumer], ...]
    """ReceiveHeartbeat, StartReconciliation, RevokePartitions or AssignPartitions."""
    commits: bool
    """Whether it sends an OffsetCommit (its error depends on the coordinator)."""
    faults: tuple[tuple[Action, Consumer], ...]
    """ConsumerCrash and Unsubscribe: each costs a fault."""


def group_state(coord: Coordinator) -> str:
    """``ConsumerGroup.maybeUpdateGroupState``."""
    if not coord.members:
        return EMPTY
    if coord.groupEpoch > coord.targetAssignmentEpoch:
        return ASSIGNING
    if any(m.memberEpoch != coord.targetAssignmentEpoch or m.state != STABLE for m in coord.members):
        return RECONCILING
    return STABLE
