"""KIP-1071: the streams rebalance protocol, in which the group coordinator assigns the tasks of a
Kafka Streams topology and reconciles each member.

One streams group runs one topology of stateful subtopologies, one task per input partition. The
coordinator keeps a group epoch (bumped when a member joins or is removed), a target assignment and
its epoch, and per member an epoch, a previous epoch, a state (STABLE, UNREVOKED_TASKS,
UNRELEASED_TASKS), its process, its assigned tasks and those pending revocation. A task is given to a
member only once no process holds it as active and the member's own process holds it in no other
role; a member moves to a new epoch only after it has revoked what it must give up (from epoch + 1,
as Kafka 4.3's builder does). (``StreamsGroup``, ``streams.CurrentAssignmentBuilder``,
``StickyTaskAssignor``, ``GroupMetadataManager.streamsGroupHeartbeat``.)

Each stream thread's consumer (``StreamsMembershipManager``) keeps its member id for life, sends
StreamsGroupHeartbeat requests one at a time, and reconciles as the client does: a reconciliation
runs to the assignment it started from; active tasks are revoked first, then the new active and
standby tasks are taken. A heartbeat reports the last completed reconciliation when it changed since
the last report, or after a failed request (the heartbeat state is reset); the coordinator sends
the member's tasks only on a join or when they changed.
"""

from __future__ import annotations

from kmc.checker import Action, Model
from kmc.checker.search.liveness import WF
from kmc.models.streams_group.assignor import assign, task_name
from kmc.models.streams_group.bugs import BUGS
from kmc.models.streams_group.config import ACTION_ARGS, PRESETS, StreamsGroupConfig
from kmc.models.streams_group.drawing import StreamsGroupDrawing
from kmc.models.streams_group.state import (
    FAILED,
    FATAL_ERRORS,
    FENCED_MEMBER_EPOCH,
    JOIN_EPOCH,
    JOINING,
    LEAVE_EPOCH,
    LEAVE_STATIC_EPOCH,
    LEAVING,
    MEMBER,
    NO_TASKS,
    NONE,
    STABLE,
    STOPPED,
    UNKNOWN_MEMBER_ID,
    UNRELEASED_INSTANCE_ID,
    UNRELEASED_TASKS,
    UNREVOKED_TASKS,
    UNSUBSCRIBED,
    Heartbeat,
    HeartbeatResponse,
    Step,
    StreamsClient,
    StreamsGroup,
    StreamsGroupMember,
    StreamsGroupState,
    TasksTuple,
    active_task_owner,
    member_of,
    standby_task_owners,
    static_member,
)


def fresh_client(processId: str, phase: str, incarnation: int = 0) -> StreamsClient:
    """A thread's consumer with no tasks and epoch 0: before it subscribes, rejoining, or stopped."""
    return StreamsClient(
        processId, phase, JOIN_EPOCH, NO_TASKS, NO_TASKS, None, True, NO_TASKS, None, None, None, incarnation
    )


def member_id(consumer: int, incarnation: int = 0) -> str:
    """The member id a thread's consumer generates and keeps for its whole life (a restarted consumer, a
    new one: ``m0-1``)."""
    return f"m{consumer}" if incarnation == 0 else f"m{consumer}-{incarnation}"


def consumer_of(memberId: str) -> int:
    return int(memberId[1:].split("-")[0])


def instance_id(consumer: int) -> str:
    """The thread's ``group.instance.id`` when members are static."""
    return f"i{consumer}"


class StreamsGroupModel(Model):
    name = "streams-group"
    description = "streams groups (KIP-1071): tasks, member epochs and server-side reconciliation"
    Config = StreamsGroupConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "kafka-4.3"
    spec_modules = ("kmc.specs.streams_group",)
    actions = tuple(ACTION_ARGS)
    fairness = (
        WF("Subscribe", each=True),
        WF("SendHeartbeat", each=True),
        WF("HandleHeartbeat", each=True),
        WF("ReceiveHeartbeat", each=True),
        WF("StartReconciliation", each=True),
        WF("RevokeTasks", each=True),
        WF("AssignTasks", each=True),
        WF("SessionTimeout", each=True),
        WF("RebalanceTimeout", each=True),
    )
    """Threads heartbeat and reconcile, the coordinator answers, and a crashed thread's member times
    out; crashes, leaves and lost responses need not happen at all."""

    config: StreamsGroupConfig

    def __init__(self, config: StreamsGroupConfig | None = None) -> None:
        super().__init__(config)
        c = self.config
        self.tasks = [task_name(st, p) for st in range(c.subtopologies) for p in range(c.partitions)]
        self._targets: dict[tuple[tuple[str, str, TasksTuple], ...], tuple[tuple[str, TasksTuple], ...]] = {}
        """The assignor's target by its inputs: the members in order, each with its process and previous target."""
        self._handled: dict[tuple[StreamsGroup, StreamsClient, int], tuple[Action, StreamsGroup, StreamsClient]] = {}
        """A heartbeat's outcome by what it reads: the group and the sending client."""
        self._actions: dict[tuple[str, tuple[object, ...]], Action] = {}

    def inactive_actions(self) -> tuple[str, ...]:
        c = self.config
        off: list[str] = []
        if c.max_lost_responses == 0:
            off.append("HeartbeatResponseLost")
        no_crash = c.max_faults == 0 or not c.crashes
        if no_crash:
            off.append("ConsumerCrash")
        if c.max_faults == 0:
            off.append("Unsubscribe")
        if no_crash and c.timeouts == "crashed" and not c.static_members:  # only a crashed thread's member times out
            off += ["SessionTimeout", "RebalanceTimeout"]
        if not c.static_members or c.max_restarts == 0 or c.max_faults == 0:
            off.append("RestartConsumer")
        return tuple(off)

    def process_of(self, consumer: int) -> str:
        return f"p{consumer % self.config.processes}"

    def init_states(self) -> list[StreamsGroupState]:
        clients = tuple(fresh_client(self.process_of(c), UNSUBSCRIBED) for c in range(self.config.consumers))
        return [StreamsGroupState(StreamsGroup(0, 0, (), ()), clients, 0, 0)]

    def within_bounds(self, s: StreamsGroupState) -> bool:
        return s.group.groupEpoch < self.config.max_group_epoch

    # -- next ------------------------------------------------------------------------------------
    def successors(self, s: StreamsGroupState) -> list[Step]:
        group, clients, faults, lost = s
        c_ = self.config
        out: list[Step] = []

        def with_client(c: int, client: StreamsClient, **counts: int) -> StreamsGroupState:
            return s._replace(clients=(*clients[:c], client, *clients[c + 1 :]), **counts)

        for c, me in enumerate(clients):
            if me.phase == UNSUBSCRIBED:
                out.append((self._act("Subscribe", c), with_client(c, fresh_client(me.processId, JOINING))))
                continue
            if (
                me.request is None
                and me.response is None
                and me.phase not in (STOPPED, FAILED)
                and self._may_heartbeat(me)
            ):
                out.append((self._act("SendHeartbeat", c), with_client(c, _with_heartbeat(c, me, self._instance(c)))))
            if me.request is not None:
                action, group_after, after = self._heartbeat_outcome(group, c, me)
                out.append((action, s._replace(group=group_after, clients=(*clients[:c], after, *clients[c + 1 :]))))
            if me.response is not None:
                out.append((self._act("ReceiveHeartbeat", c, me.response.error), with_client(c, _received(me))))
                if lost < c_.max_lost_responses:
                    after = me._replace(response=None, lastSentAssignment=None)
                    out.append((self._act("HeartbeatResponseLost", c), with_client(c, after, lostResponses=lost + 1)))
            if me.phase == MEMBER:
                for name, after in _reconciliation_steps(me):
                    out.append((self._act(name, c), with_client(c, after)))
            if faults < c_.max_faults and me.phase in (JOINING, MEMBER):
                if c_.crashes:
                    crashed = fresh_client(me.processId, STOPPED, me.incarnation)._replace(request=me.request)
                    out.append((self._act("ConsumerCrash", c), with_client(c, crashed, faults=faults + 1)))
                if me.phase == MEMBER and me.request is None and me.response is None:
                    leaving = fresh_client(me.processId, LEAVING, me.incarnation)._replace(memberEpoch=me.memberEpoch)
                    out.append((self._act("Unsubscribe", c), with_client(c, leaving, faults=faults + 1)))
            if c_.static_members and me.phase == STOPPED and me.request is None and me.incarnation < c_.max_restarts:
                restarted = fresh_client(me.processId, JOINING, me.incarnation + 1)
                out.append((self._act("RestartConsumer", c), with_client(c, restarted)))
        any_moment = c_.timeouts == "any"
        for m in group.members:
            if any_moment or _left_behind(clients, m):
                removed = s._replace(group=self._fence(group, m))
                out.append((self._act("SessionTimeout", m.memberId), removed))
                if m.state == UNREVOKED_TASKS:
                    out.append((self._act("RebalanceTimeout", m.memberId), removed))
        return out

    def _instance(self, consumer: int) -> str | None:
        return instance_id(consumer) if self.config.static_members else None

    def _may_heartbeat(self, me: StreamsClient) -> bool:
        return self.config.heartbeat_while_reconciling or (me.synced and me.reconciling is None)

    def _act(self, name: str, *values: object) -> Action:
        action = self._actions.get((name, values))
        if action is None:
            action = self._actions[(name, values)] = Action.of(name, zip(ACTION_ARGS[name], values, strict=True))
        return action

    # -- the coordinator: StreamsGroupHeartbeat ----------------------------------------------------
    def _heartbeat_outcome(
        self, group: StreamsGroup, c: int, me: StreamsClient
    ) -> tuple[Action, StreamsGroup, StreamsClient]:
        key = (group, me, c)
        outcome = self._handled.get(key)
        if outcome is None:
            assert me.request is not None
            error, group_after, response = self._handle_heartbeat(group, me.request)
            after = me._replace(request=None, response=None if me.phase == STOPPED else response)
            outcome = self._handled[key] = (self._act("HandleHeartbeat", c, error), group_after, after)
        return outcome

    def _handle_heartbeat(self, group: StreamsGroup, hb: Heartbeat) -> tuple[str, StreamsGroup, HeartbeatResponse]:
        """``GroupMetadataManager.streamsGroupHeartbeat``."""
        if hb.memberEpoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
            return self._leave(group, hb)
        joining = hb.memberEpoch == JOIN_EPOCH
        if hb.instanceId is None:
            member = member_of(group, hb.memberId)
            error = UNKNOWN_MEMBER_ID if member is None and not joining else NONE
        else:
            error, group, member = self._static_member(group, hb)
        if error == NONE and member is not None and not self._epoch_valid(member, hb):
            error = FENCED_MEMBER_EPOCH
        if error != NONE:
            return error, group, HeartbeatResponse(error, hb.memberEpoch, None)
        if group.groupEpoch == 0:  # getOrCreateStreamsGroup: a new group starts at epoch 1 (KAFKA-20268)
            group = group._replace(groupEpoch=1, assignmentEpoch=1)
        if member is None:  # a new member's metadata bumps the group epoch
            assert hb.processId is not None
            member = StreamsGroupMember(hb.memberId, 0, 0, STABLE, hb.processId, NO_TASKS, NO_TASKS, hb.instanceId)
            group = group._replace(groupEpoch=group.groupEpoch + 1, members=_sorted((*group.members, member)))
        if group.groupEpoch > group.assignmentEpoch:
            group = self._compute_target_assignment(group)
        updated = self._reconcile(group, member, hb.ownedTasks)
        group = group._replace(members=_sorted((*(m for m in group.members if m.memberId != hb.memberId), updated)))
        changed = updated.assignedTasks != member.assignedTasks
        full = self.config.full_assignment_on_full_request and hb.ownedTasks is not None
        tasks = updated.assignedTasks if joining or changed or full else None
        return NONE, group, HeartbeatResponse(NONE, updated.memberEpoch, tasks)

    def _leave(self, group: StreamsGroup, hb: Heartbeat) -> tuple[str, StreamsGroup, HeartbeatResponse]:
        """``streamsGroupLeave``: a dynamic member is fenced; a static member leaves with -2 (the client's
        ``leaveGroupEpoch``) and stays, at epoch -2 with its tasks, for its session timeout
        (``streamsGroupStaticMemberGroupLeave``). A static leave for good (-1) is not modelled."""
        if hb.instanceId is None:
            member = member_of(group, hb.memberId)
            if member is not None:
                group = self._fence(group, member)
            return NONE, group, HeartbeatResponse(NONE, LEAVE_EPOCH, None)
        member = static_member(group, hb.instanceId)
        if member is None:  # its session timed out: the leave finds no member (throwIfStaticMemberIsUnknown)
            return UNKNOWN_MEMBER_ID, group, HeartbeatResponse(UNKNOWN_MEMBER_ID, hb.memberEpoch, None)
        left = member._replace(memberEpoch=LEAVE_STATIC_EPOCH, tasksPendingRevocation=NO_TASKS)
        members = _sorted((*(m for m in group.members if m.memberId != member.memberId), left))
        return NONE, group._replace(members=members), HeartbeatResponse(NONE, LEAVE_STATIC_EPOCH, None)

    def _static_member(self, group: StreamsGroup, hb: Heartbeat) -> tuple[str, StreamsGroup, StreamsGroupMember | None]:
        """``getOrMaybeCreateStaticStreamsGroupMember``: a join of a new instance id is a new member; a join of
        one held by a member that left with -2 replaces it (a copy with the new member id at epoch 0, its
        target relabelled, no rebalance); any other join of a held instance id is UNRELEASED_INSTANCE_ID -- in
        Kafka 4.4 even the holder's own rejoin, which apache/kafka#23542 handles in place."""
        assert hb.instanceId is not None
        existing = static_member(group, hb.instanceId)
        if hb.memberEpoch != JOIN_EPOCH:
            # throwIfStaticMemberIsUnknown; FENCED_INSTANCE_ID (another member id) needs a restart while the old
            # consumer still talks, which the model's restart waits out
            return (UNKNOWN_MEMBER_ID, group, None) if existing is None else (NONE, group, existing)
        if existing is None:
            return NONE, group, None
        if existing.memberId == hb.memberId and self.config.static_rejoin_in_place:
            if existing.memberEpoch == LEAVE_STATIC_EPOCH:
                existing = existing._replace(memberEpoch=0, previousMemberEpoch=0)
            return NONE, group, existing
        if existing.memberEpoch != LEAVE_STATIC_EPOCH:
            return UNRELEASED_INSTANCE_ID, group, None
        replacement = existing._replace(memberId=hb.memberId, memberEpoch=0, previousMemberEpoch=0)
        members = _sorted((*(m for m in group.members if m.memberId != existing.memberId), replacement))
        target = tuple(sorted((hb.memberId if m == existing.memberId else m, t) for m, t in group.targetAssignment))
        return NONE, group._replace(members=members, targetAssignment=target), replacement

    def _epoch_valid(self, member: StreamsGroupMember, hb: Heartbeat) -> bool:
        """``throwIfStreamsGroupMemberEpochIsInvalid``: the member's epoch, or its previous one with owned
        tasks it was assigned (the response that moved it on may have been lost); since KAFKA-19233,
        epoch 0 too (a rejoin)."""
        if hb.memberEpoch == JOIN_EPOCH and self.config.kafka_19233:
            return True
        if hb.memberEpoch == member.memberEpoch:
            return True
        return (
            hb.memberEpoch < member.memberEpoch
            and hb.memberEpoch == member.previousMemberEpoch
            and hb.ownedTasks is not None
            and hb.ownedTasks.contained_in(member.assignedTasks)
        )

    def _compute_target_assignment(self, group: StreamsGroup) -> StreamsGroup:
        inputs = assignor_inputs(group.members, group.targetAssignment)
        target = self._targets.get(inputs)
        if target is None:
            result = assign(list(inputs), self.tasks, self.config.num_standby_replicas)
            target = self._targets[inputs] = tuple(sorted(result.items()))
        return group._replace(targetAssignment=target, assignmentEpoch=group.groupEpoch)

    def _reconcile(
        self, group: StreamsGroup, member: StreamsGroupMember, owned: TasksTuple | None
    ) -> StreamsGroupMember:
        """``CurrentAssignmentBuilder.build()``; ``owned`` None when the heartbeat did not report them."""
        if member.state == STABLE:
            if member.memberEpoch != group.assignmentEpoch:
                return self._compute_next(group, member, member.memberEpoch, owned)
            return member
        if member.state == UNREVOKED_TASKS:
            if owned is None or owned.contains_any(member.tasksPendingRevocation):
                return member
            return self._compute_next(group, member, member.memberEpoch + 1, owned)
        return self._compute_next(group, member, member.memberEpoch, owned)

    def _compute_next(
        self, group: StreamsGroup, member: StreamsGroupMember, epoch: int, owned: TasksTuple | None
    ) -> StreamsGroupMember:
        """``computeNextAssignment`` and ``buildNewMember``: keep what the target keeps, revoke the rest, and
        grant what is released; since KAFKA-20665 the member's own tasks change role in place."""
        target = dict(group.targetAssignment).get(member.memberId, NO_TASKS)
        current = member.assignedTasks
        kept_active = current.activeTasks & target.activeTasks
        kept_standby = current.standbyTasks & target.standbyTasks
        revoke_active = current.activeTasks - kept_active
        revoke_standby = current.standbyTasks - kept_standby
        new_active = target.activeTasks - kept_active
        new_standby = target.standbyTasks - kept_standby
        unreleased_active, unreleased_standby = self._unreleased(group, member, new_active, new_standby)
        pending_active = new_active - unreleased_active
        pending_standby = new_standby - unreleased_standby
        if self.config.kafka_20665:
            demoted = current.activeTasks & pending_standby  # granted as standby now, the active still revoked
            pending_standby -= demoted
            kept_standby |= demoted
            promoted = current.standbyTasks & target.activeTasks  # never revoked: replaced by the active
            revoke_standby -= promoted
        revoke = TasksTuple(revoke_active, revoke_standby)
        must_revoke = not revoke.is_empty() and (owned is None or owned.contains_any(revoke))
        if self.config.kafka_20665:
            # a promoted standby stays until its active is granted in this very step
            kept_standby |= frozenset(t for t in promoted if must_revoke or t not in pending_active)
        unreleased = bool(unreleased_active or unreleased_standby)
        moved = member._replace(previousMemberEpoch=member.memberEpoch)
        kept = TasksTuple(kept_active, kept_standby)
        if must_revoke and self.config.wait_for_revocation:
            return moved._replace(
                state=UNREVOKED_TASKS, memberEpoch=epoch, assignedTasks=kept, tasksPendingRevocation=revoke
            )
        assigned = TasksTuple(kept_active | pending_active, kept_standby | pending_standby)
        return moved._replace(
            state=UNRELEASED_TASKS if unreleased else STABLE,
            memberEpoch=group.assignmentEpoch,
            assignedTasks=assigned,
            tasksPendingRevocation=NO_TASKS,
        )

    def _unreleased(
        self, group: StreamsGroup, member: StreamsGroupMember, new_active: frozenset[str], new_standby: frozenset[str]
    ) -> tuple[frozenset[str], frozenset[str]]:
        """The tasks still held elsewhere: an active task by any process, or by this process in another role;
        since KAFKA-20665 the member's own task in another role does not block (it changes role in place)."""
        if not self.config.wait_for_release:
            return frozenset(), frozenset()
        process = member.processId
        own = member.assignedTasks if self.config.kafka_20665 else NO_TASKS
        active = frozenset(
            t
            for t in new_active
            if active_task_owner(group, t) is not None
            or (process in standby_task_owners(group, t) and t not in own.standbyTasks)
        )
        standby = frozenset(
            t
            for t in new_standby
            if (active_task_owner(group, t) == process and t not in own.activeTasks)
            or process in standby_task_owners(group, t)
        )
        return active, standby

    def _fence(self, group: StreamsGroup, member: StreamsGroupMember) -> StreamsGroup:
        """``streamsGroupFenceMember``: the member and its target go, the group epoch is bumped; since
        KAFKA-20442 the last member's removal also moves the assignment epoch to the group epoch."""
        members = tuple(m for m in group.members if m.memberId != member.memberId)
        target = tuple((m, t) for m, t in group.targetAssignment if m != member.memberId)
        epoch = group.groupEpoch + 1
        assignment_epoch = epoch if self.config.kafka_20442 and not members else group.assignmentEpoch
        return StreamsGroup(epoch, assignment_epoch, target, members)

    def drawing(self) -> StreamsGroupDrawing:
        return StreamsGroupDrawing(self.config.consumers)


def assignor_inputs(
    members: tuple[StreamsGroupMember, ...], previous_target: tuple[tuple[str, TasksTuple], ...]
) -> tuple[tuple[str, str, TasksTuple], ...]:
    """What the assignor is given: each member with its process and its previous target."""
    previous = dict(previous_target)
    return tuple((m.memberId, m.processId, previous.get(m.memberId, NO_TASKS)) for m in members)


def _sorted(members: tuple[StreamsGroupMember, ...]) -> tuple[StreamsGroupMember, ...]:
    return tuple(sorted(members))


# -- the client (StreamsMembershipManager, StreamsGroupHeartbeatRequestManager) ------------------
def _with_heartbeat(c: int, me: StreamsClient, instance: str | None) -> StreamsClient:
    """The thread's next StreamsGroupHeartbeat, with its instance id when static: a leave (-2 for a static
    member, ``leaveGroupEpoch``), a join with the topology and no tasks, or its member epoch with the last
    reconciled assignment when that changed since it was last reported."""
    memberId = member_id(c, me.incarnation)
    if me.phase == LEAVING:
        epoch = LEAVE_EPOCH if instance is None else LEAVE_STATIC_EPOCH
        return me._replace(request=Heartbeat(memberId, epoch, None, None, instance))
    if me.phase == JOINING:
        return me._replace(request=Heartbeat(memberId, JOIN_EPOCH, NO_TASKS, me.processId, instance))
    if me.reconciledAssignment != me.lastSentAssignment:
        report = me.reconciledAssignment
        heartbeat = Heartbeat(memberId, me.memberEpoch, report, None, instance)
        return me._replace(request=heartbeat, lastSentAssignment=report)
    return me._replace(request=Heartbeat(memberId, me.memberEpoch, None, None, instance))


def _received(me: StreamsClient) -> StreamsClient:
    """The thread after it handles its heartbeat's response."""
    response = me.response
    assert response is not None
    me = me._replace(response=None)
    if me.phase == LEAVING:
        return fresh_client(me.processId, STOPPED, me.incarnation)
    if response.error in FATAL_ERRORS:  # handleFatalFailure: the thread dies
        return fresh_client(me.processId, FAILED, me.incarnation)
    if response.error != NONE:  # onFenced: every task is lost, rejoin with the same member id
        return fresh_client(me.processId, JOINING, me.incarnation)
    joined = me.phase == JOINING
    me = me._replace(phase=MEMBER, memberEpoch=response.memberEpoch)
    if response.assignment is not None and (joined or response.assignment != me.assignment):
        me = me._replace(assignment=response.assignment, synced=False)
    return me


def _left_behind(clients: tuple[StreamsClient, ...], m: StreamsGroupMember) -> bool:
    """A member whose thread no longer heartbeats for it (stopped, failed, or restarted as a new member):
    its session times out."""
    c = consumer_of(m.memberId)
    client = clients[c]
    return client.phase in (STOPPED, FAILED) or member_id(c, client.incarnation) != m.memberId


def _reconciliation_steps(me: StreamsClient) -> list[tuple[str, StreamsClient]]:
    """``maybeReconcile``: start towards the latest assignment, revoke the active tasks it drops
    (``onTasksRevoked``), then take the new active and standby tasks (``onTasksAssigned``)."""
    target = me.reconciling
    if target is None:
        if me.synced:
            return []
        if me.assignment == me.owned:
            return [("StartReconciliation", me._replace(synced=True, reconciledAssignment=me.owned))]
        return [("StartReconciliation", me._replace(synced=True, reconciling=me.assignment))]
    if me.owned.activeTasks - target.activeTasks:
        kept = TasksTuple(me.owned.activeTasks & target.activeTasks, me.owned.standbyTasks)
        return [("RevokeTasks", me._replace(owned=kept))]
    return [("AssignTasks", me._replace(owned=target, reconciling=None, reconciledAssignment=target))]
