"""Properties of the `streams-group` model: one owner per active task, revocation before
re-assignment, the epochs' order, and that rebalances, joins and assignments complete."""

from __future__ import annotations

from functools import lru_cache

from kmc.checker import Action, invariant, leads_to, step
from kmc.models.streams_group.model import member_id
from kmc.models.streams_group.state import (
    ASSIGNING,
    EMPTY,
    JOIN_EPOCH,
    JOINING,
    MEMBER,
    RECONCILING,
    STABLE,
    UNRELEASED_INSTANCE_ID,
    StreamsGroup,
    StreamsGroupState,
    group_state,
    member_of,
    static_member,
)

# The coordinator's invariants read only the group, and a search meets a few thousand groups in
# hundreds of thousands of states: each verdict is kept by the group it was computed for.
GROUP_VERDICTS = 1 << 16
"""How many groups each group invariant keeps its verdict for."""


@invariant
def NoTaskActiveOnTwoMembers(s: StreamsGroupState) -> bool:
    """No two stream threads run the same active task (two writers of one task's state and output)."""
    seen: set[str] = set()
    for client in s.clients:
        active = client.owned.activeTasks
        if active:
            if not seen.isdisjoint(active):
                return False
            seen |= active
    return True


@invariant
def NoTaskTwiceOnOneProcess(s: StreamsGroupState) -> bool:
    """No process runs a task twice, as active and standby or on two threads (one state directory)."""
    seen: set[tuple[str, str]] = set()
    for client in s.clients:
        for task in client.owned.all():
            if (client.processId, task) in seen:
                return False
            seen.add((client.processId, task))
    return True


@invariant
def SingleActiveOwner(s: StreamsGroupState) -> bool:
    """The coordinator gives each task as active to at most one member (assigned or pending
    revocation), and never to two members of one process, nor to one member in two roles."""
    return _single_active_owner(s.group)


@lru_cache(maxsize=GROUP_VERDICTS)
def _single_active_owner(group: StreamsGroup) -> bool:
    active: set[str] = set()
    held: set[tuple[str, str]] = set()
    for m in group.members:
        for tasks in (m.assignedTasks, m.tasksPendingRevocation):
            if not active.isdisjoint(tasks.activeTasks):
                return False
            active |= tasks.activeTasks
        if not m.assignedTasks.activeTasks.isdisjoint(m.assignedTasks.standbyTasks):
            return False
        # a member's own task may be pending revocation as active and assigned as standby: since KAFKA-20665
        # it changes role in place
        for task in m.assignedTasks.all() | m.tasksPendingRevocation.all():
            if (m.processId, task) in held:
                return False
            held.add((m.processId, task))
    return True


@invariant
def MemberEpochBounded(s: StreamsGroupState) -> bool:
    """Every member's epoch is at most the assignment epoch, itself at most the group epoch."""
    group = s.group
    return group.assignmentEpoch <= group.groupEpoch and all(
        m.memberEpoch <= group.assignmentEpoch for m in group.members
    )


@invariant
def LegalTargetAssignment(s: StreamsGroupState) -> bool:
    """A target computed for the current group epoch gives each task as active to at most one current
    member, and no standby to the process of its active or twice to one process."""
    return _legal_target_assignment(s.group)


@lru_cache(maxsize=GROUP_VERDICTS)
def _legal_target_assignment(group: StreamsGroup) -> bool:
    if group.assignmentEpoch != group.groupEpoch or not group.members:
        return True
    process = {m.memberId: m.processId for m in group.members}
    actives = [t for _, tasks in group.targetAssignment for t in tasks.activeTasks]
    held = [(process.get(m), t) for m, tasks in group.targetAssignment for t in tasks.all()]
    return (
        len(actives) == len(set(actives))
        and len(held) == len(set(held))
        and all(m in process for m, _ in group.targetAssignment)
    )


@invariant
def EmptyGroupAtAssignmentEpoch(s: StreamsGroupState) -> bool:
    """An empty group's assignment epoch is its group epoch (KAFKA-20442): the next member starts from
    a target as new as the group."""
    group = s.group
    return bool(group.members) or group.assignmentEpoch == group.groupEpoch


@step
def NoRevocationSkipped(s: StreamsGroupState, action: Action, t: StreamsGroupState) -> bool:
    """A heartbeat's handling takes no task from a member whose thread still runs it: the member
    revokes first."""
    if action.name != "HandleHeartbeat":
        return True
    client = s.clients[action.args["consumer"]]
    if client.owned.is_empty() or client.request is None:
        return True
    before = member_of(s.group, client.request.memberId)
    after = member_of(t.group, client.request.memberId)
    if before is None:
        return True
    kept = frozenset() if after is None else after.assignedTasks.all() | after.tasksPendingRevocation.all()
    dropped = before.assignedTasks.all() | before.tasksPendingRevocation.all()
    return (dropped - kept).isdisjoint(client.owned.all())


def _join_handled(s: StreamsGroupState, action: Action, t: StreamsGroupState) -> bool:
    if action.name != "HandleHeartbeat":
        return False
    hb = s.clients[action.args["consumer"]].request
    return hb is not None and hb.memberEpoch == JOIN_EPOCH


@step(trigger=_join_handled)
def NoMemberFencedByItsOwnInstanceId(s: StreamsGroupState, action: Action, t: StreamsGroupState) -> bool:
    """A join is refused UNRELEASED_INSTANCE_ID (fatal for the thread) only when another member holds its
    instance id, never when the holder is the joining member itself."""
    if not _join_handled(s, action, t) or action.args["error"] != UNRELEASED_INSTANCE_ID:
        return True
    hb = s.clients[action.args["consumer"]].request
    assert hb is not None and hb.instanceId is not None
    holder = static_member(s.group, hb.instanceId)
    return holder is None or holder.memberId != hb.memberId


@leads_to(lambda s: group_state(s.group) in (ASSIGNING, RECONCILING))
def EveryRebalanceCompletes(s: StreamsGroupState) -> bool:
    """Every rebalance ends with every member reconciled to the target (or no members)."""
    return group_state(s.group) in (STABLE, EMPTY)


@leads_to(lambda s: any(c.phase == JOINING for c in s.clients))
def EveryMemberJoins(s: StreamsGroupState) -> bool:
    """A thread that joins is eventually a member of the group (or stops)."""
    return all(c.phase != JOINING for c in s.clients)


def _reached(s: StreamsGroupState) -> bool:
    for c, client in enumerate(s.clients):
        if client.phase != MEMBER:
            continue
        member = member_of(s.group, member_id(c, client.incarnation))
        if member is not None and client.owned != member.assignedTasks:
            return False
    return True


@leads_to(lambda s: group_state(s.group) == STABLE and not _reached(s))
def ClientsReachTheirAssignment(s: StreamsGroupState) -> bool:
    """Once the group is stable, every thread eventually runs the tasks the coordinator gave its member."""
    return _reached(s)
