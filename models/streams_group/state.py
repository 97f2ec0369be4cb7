"""The streams-group model's state: the group coordinator's streams group (its epochs, target
assignment and members), the Kafka Streams clients (one consumer per stream thread), and the
StreamsGroupHeartbeat requests and responses in flight."""

from __future__ import annotations

from typing import NamedTuple

from kmc.checker import Action

# member states (streams.MemberState)
STABLE = "STABLE"
UNREVOKED_TASKS = "UNREVOKED_TASKS"
UNRELEASED_TASKS = "UNRELEASED_TASKS"

# group states (StreamsGroup.StreamsGroupState); NOT_READY is left out: the topology is always ready
EMPTY = "EMPTY"
ASSIGNING = "ASSIGNING"
RECONCILING = "RECONCILING"

NONE = "NONE"
FENCED_MEMBER_EPOCH = "FENCED_MEMBER_EPOCH"
UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
UNRELEASED_INSTANCE_ID = "UNRELEASED_INSTANCE_ID"
FATAL_ERRORS = (UNRELEASED_INSTANCE_ID,)
"""Errors a stream thread's consumer does not recover from (``handleFatalFailure``): the thread dies."""

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2
"""A static member's leave: it keeps its instance id and tasks for its session timeout (KAFKA-20169)."""

# client phases (the consumer's MemberState, folded: RECONCILING, ACKNOWLEDGING and STABLE are "member")
UNSUBSCRIBED = "unsubscribed"
JOINING = "joining"
MEMBER = "member"
LEAVING = "leaving"
STOPPED = "stopped"
FAILED = "failed"
"""A fatal error ended the thread."""


class TasksTuple(NamedTuple):
    """Active and standby tasks, each named ``subtopologyId_partition`` as Kafka Streams names a task
    (warm-up tasks are not assigned before Kafka 4.4)."""

    activeTasks: frozenset[str]
    standbyTasks: frozenset[str]

    def all(self) -> frozenset[str]:
        return self.activeTasks | self.standbyTasks

    def is_empty(self) -> bool:
        return not self.activeTasks and not self.standbyTasks

    def contains_any(self, other: TasksTuple) -> bool:
        return not self.activeTasks.isdisjoint(other.activeTasks) or not self.standbyTasks.isdisjoint(
            other.standbyTasks
        )

    def contained_in(self, other: TasksTuple) -> bool:
        return self.activeTasks <= other.activeTasks and self.standbyTasks <= other.standbyTasks


NO_TASKS = TasksTuple(frozenset(), frozenset())


class StreamsGroupMember(NamedTuple):
    memberId: str
    memberEpoch: int
    previousMemberEpoch: int
    state: str
    processId: str
    assignedTasks: TasksTuple
    tasksPendingRevocation: TasksTuple
    instanceId: str | None = None
    """``group.instance.id`` of a static member (Kafka 4.4); None for a dynamic one."""


class StreamsGroup(NamedTuple):
    """The coordinator's record of the group; group epoch 0 means it does not exist yet."""

    groupEpoch: int
    assignmentEpoch: int
    targetAssignment: tuple[tuple[str, TasksTuple], ...]
    members: tuple[StreamsGroupMember, ...]


class Heartbeat(NamedTuple):
    memberId: str
    memberEpoch: int
    ownedTasks: TasksTuple | None
    """The tasks the client reports (all three lists); None when unchanged since the last report."""
    processId: str | None = None
    """Sent on a join (with the topology); None otherwise."""
    instanceId: str | None = None
    """A static member's ``group.instance.id``, sent with every heartbeat."""


class HeartbeatResponse(NamedTuple):
    error: str
    memberEpoch: int
    assignment: TasksTuple | None
    """The member's tasks, sent only on a join or when they changed (None: unchanged)."""


class StreamsClient(NamedTuple):
    """One stream thread's consumer: ``StreamsMembershipManager`` and its heartbeat state."""

    processId: str
    """The Kafka Streams process the thread runs in."""
    phase: str
    memberEpoch: int
    owned: TasksTuple
    """The tasks the thread runs now."""
    assignment: TasksTuple
    """The last assignment received: what the client reconciles towards."""
    reconciling: TasksTuple | None
    """The assignment of the reconciliation in progress (None: none), fixed when it starts."""
    synced: bool
    """Whether the assignment in hand (being reconciled, else the last reconciled) is the latest received."""
    reconciledAssignment: TasksTuple
    """The assignment of the last completed reconciliation: what the heartbeat reports."""
    lastSentAssignment: TasksTuple | None
    """The reconciled assignment last reported (None: reset, report it again)."""
    request: Heartbeat | None
    response: HeartbeatResponse | None
    incarnation: int = 0
    """How many times the thread's consumer was made anew (a restart): each has a member id of its own."""


class StreamsGroupState(NamedTuple):
    group: StreamsGroup
    clients: tuple[StreamsClient, ...]
    faults: int
    lostResponses: int


Step = tuple[Action, StreamsGroupState]


def static_member(group: StreamsGroup, instance_id: str) -> StreamsGroupMember | None:
    """``StreamsGroup.staticMember``: the member holding this instance id."""
    for m in group.members:
        if m.instanceId == instance_id:
            return m
    return None


def member_of(group: StreamsGroup, member_id: str) -> StreamsGroupMember | None:
    for m in group.members:
        if m.memberId == member_id:
            return m
    return None


def group_state(group: StreamsGroup) -> str:
    """``StreamsGroup.maybeUpdateGroupState``."""
    if not group.members:
        return EMPTY
    if group.groupEpoch > group.assignmentEpoch:
        return ASSIGNING
    if any(m.memberEpoch != group.assignmentEpoch or m.state != STABLE for m in group.members):
        return RECONCILING
    return STABLE


def active_task_owner(group: StreamsGroup, task: str) -> str | None:
    """``currentActiveTaskProcessId``: the process of the member holding the task as active, assigned
    or pending revocation."""
    for m in group.members:
        if task in m.assignedTasks.activeTasks or task in m.tasksPendingRevocation.activeTasks:
            return m.processId
    return None


def standby_task_owners(group: StreamsGroup, task: str) -> frozenset[str]:
    """``currentStandbyTaskProcessIds``."""
    return frozenset(
        m.processId
        for m in group.members
        if task in m.assignedTasks.standbyTasks or task in m.tasksPendingRevocation.standbyTasks
    )
