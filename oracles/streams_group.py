"""The `streams-group` coordinator held to Kafka's streams-group classes.

At every ``HandleHeartbeat`` the model's coordinator takes four decisions, and each is asked of Kafka:

- **the epoch check**: whether the heartbeat's member epoch is accepted, asked of
  ``GroupMetadataManager.throwIfStreamsGroupMemberEpochIsInvalid`` (private: called by reflection)
  with the member as the coordinator held it and the task lists the heartbeat carried;
- **the target**: when the step computed a new target assignment, ``StickyTaskAssignor.assign`` with
  the same members, processes and previous targets (a ``TopologyDescriber`` of the model's stateful
  subtopologies, ``num.standby.replicas``) must return the same tasks for every member;
- **the reconciliation**: ``streams.CurrentAssignmentBuilder`` is given the member before the step (a
  new member: ``withDefaults``, its process set), the target and its epoch the step reconciled to, the
  task owners as the coordinator held them, and the owned tasks the heartbeat carried; the member
  ``build()`` returns is compared field by field with the model's;
- **the task owners**: a real ``StreamsGroup`` is filled with the members before the step, then the
  step's ``updateMember`` (or ``removeMember``: a leave, a session or rebalance timeout) is applied;
  its ``currentActiveTaskProcessId`` and ``currentStandbyTaskProcessIds`` of every task must equal the
  model's after the step.

The model does not keep the per-task epochs of active tasks (KAFKA-19779), which only validate
offset commits: every active task is given its member's epoch, and they are never compared.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from kmc.checker import Action
from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.checker.errors import UserError
from kmc.models.streams_group.assignor import by_subtopology, task_key, task_name
from kmc.models.streams_group.model import StreamsGroupModel, assignor_inputs
from kmc.models.streams_group.state import (
    FENCED_MEMBER_EPOCH,
    LEAVE_EPOCH,
    NO_TASKS,
    NONE,
    STABLE,
    StreamsGroup,
    StreamsGroupMember,
    StreamsGroupState,
    TasksTuple,
    active_task_owner,
    member_of,
    standby_task_owners,
)

from . import jvm

GROUP_PACKAGE = "org.apache.kafka.coordinator.group."
STREAMS = GROUP_PACKAGE + "streams."
ASSIGNOR = STREAMS + "assignor."
BUILDER = STREAMS + "CurrentAssignmentBuilder"
MEMBER = STREAMS + "StreamsGroupMember"
GROUP = STREAMS + "StreamsGroup"
MANAGER = GROUP_PACKAGE + "GroupMetadataManager"
TASK_IDS = "org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData$TaskIds"

MEMBER_QUESTIONS = ("state", "memberEpoch", "previousMemberEpoch", "assignedTasks", "tasksPendingRevocation")
"""The fields of ``StreamsGroupMember`` the model keeps, compared after every reconciliation."""

REMOVALS = ("SessionTimeout", "RebalanceTimeout")

MIN_RELEASE = (4, 2)
"""Per-task epochs of active tasks (KAFKA-19779, 4.2) changed ``StreamsGroupMember``: the calls here use
that API."""


class MemberView(NamedTuple):
    """A member as both sides keep it."""

    processId: str
    state: str
    memberEpoch: int
    previousMemberEpoch: int
    assignedTasks: TasksTuple
    tasksPendingRevocation: TasksTuple


class BuildCall(NamedTuple):
    """Everything ``CurrentAssignmentBuilder`` is given; also the key of the cache of Kafka's answers."""

    memberId: str
    member: MemberView
    targetAssignmentEpoch: int
    targetAssignment: TasksTuple
    owners: tuple[tuple[str, str | None, frozenset[str]], ...]
    """Each task with its active owner's process and its standby processes, before the step."""
    ownedTasks: TasksTuple | None


class EpochCall(NamedTuple):
    member: MemberView
    memberEpoch: int
    ownedTasks: TasksTuple | None


class AssignCall(NamedTuple):
    members: tuple[tuple[str, str, TasksTuple], ...]
    """Each member with its process and previous target."""


class OwnersCall(NamedTuple):
    members: tuple[tuple[str, MemberView], ...]
    update: tuple[str, MemberView] | None
    remove: str | None


def _view(m: StreamsGroupMember) -> MemberView:
    return MemberView(
        m.processId, m.state, m.memberEpoch, m.previousMemberEpoch, m.assignedTasks, m.tasksPendingRevocation
    )


class StreamsGroupOracle(Oracle):
    name = "streams-group"
    model_name = "streams-group"
    reference = (BUILDER, MEMBER, GROUP, ASSIGNOR + "StickyTaskAssignor", MANAGER)
    description = (
        "each heartbeat's epoch check, target, reconciliation and task owners are what GroupMetadataManager, "
        "StickyTaskAssignor, streams.CurrentAssignmentBuilder and StreamsGroup decide"
    )

    model: StreamsGroupModel

    def __init__(self, model: StreamsGroupModel, release: str | None = None) -> None:  # type: ignore[override]
        super().__init__(model, release)
        self._version = self.release = jvm.start(self.release)
        if jvm.release_tuple(self._version) < MIN_RELEASE:
            return  # unsupported() says why
        j = jvm.jclass
        self._integer = j("java.lang.Integer")
        self._hash_map = j("java.util.HashMap")
        self._hash_set = j("java.util.HashSet")
        self._array_list = j("java.util.ArrayList")
        self._optional = j("java.util.Optional")
        self._builder = j(BUILDER)
        self._member_builder = j(MEMBER + "$Builder")
        self._group = j(GROUP)
        self._tasks_tuple = j(STREAMS + "TasksTuple")
        self._tasks_with_epochs = j(STREAMS + "TasksTupleWithEpochs")
        self._member_state = j(STREAMS + "MemberState")
        self._task_ids_message = j(TASK_IDS)
        self._log_context = j("org.apache.kafka.common.utils.LogContext")()
        self._snapshot_registry = j("org.apache.kafka.timeline.SnapshotRegistry")
        self._assignor = j(ASSIGNOR + "StickyTaskAssignor")()
        self._group_spec = j(ASSIGNOR + "GroupSpecImpl")
        self._assignor_api_4_4 = _has_class(ASSIGNOR + "MemberMetadataAndStateImpl")
        """4.4 moved the assignor's interfaces to kafka-group-coordinator-api and changed its member spec."""
        self._topology = _topology_describer(model.config.subtopologies, model.config.partitions)
        self._epoch_check = _private_epoch_check()
        self._members: dict[tuple[str, MemberView], Any] = {}
        self._answers: dict[tuple[object, ...], Any] = {}
        """Kafka's answers by call: the same decision recurs in many states."""

    def unsupported(self) -> str | None:
        if jvm.release_tuple(self._version) < MIN_RELEASE:
            return (
                f"this adapter calls the StreamsGroupMember of Kafka 4.2+ (per-task epochs of active tasks, "
                f"KAFKA-19779); Kafka {self._version} has another API"
            )
        config = self.model.config
        if config.static_members:
            return (
                "static members (Kafka 4.4): the static paths of GroupMetadataManager (the -2 leave, a member "
                "replaced by its instance id) are not asked here; they are held to a real 4.4.0 broker instead"
            )
        if not config.wait_for_release or not config.wait_for_revocation:
            return (
                "wait_for_release=false and wait_for_revocation=false are what-ifs no Kafka release implements: "
                "CurrentAssignmentBuilder always withholds an unreleased task and waits for a revocation"
            )
        return None

    # -- the step ------------------------------------------------------------------------------
    def compare_step(
        self, state: StreamsGroupState, action: Action, next_state: StreamsGroupState
    ) -> Iterable[Comparison]:
        if action.name in REMOVALS:
            return self._compare_removal(state, next_state, action.args["memberId"])
        if action.name != "HandleHeartbeat":
            return ()
        hb = state.clients[action.args["consumer"]].request
        assert hb is not None
        if hb.memberEpoch == LEAVE_EPOCH:
            return self._compare_removal(state, next_state, hb.memberId)
        before = member_of(state.group, hb.memberId)
        if before is None:
            if action.args["error"] != NONE:
                return ()  # an unknown member: no decision of the classes compared here
            # a join creates the member as getOrCreateDefaultMember does, with the process it sent
            assert hb.processId is not None
            before = StreamsGroupMember(hb.memberId, 0, 0, STABLE, hb.processId, NO_TASKS, NO_TASKS)
            return self._compare_heartbeat(state, next_state, before, hb.ownedTasks)
        out = [self._compare_epoch_check(before, hb.memberEpoch, hb.ownedTasks, action.args["error"])]
        if action.args["error"] == FENCED_MEMBER_EPOCH:
            return out
        return out + self._compare_heartbeat(state, next_state, before, hb.ownedTasks)

    def _compare_epoch_check(
        self, member: StreamsGroupMember, epoch: int, owned: TasksTuple | None, error: str
    ) -> Comparison:
        call = EpochCall(_view(member), epoch, owned)
        theirs = self._ask(call, self._ask_epoch_check)
        return Comparison("memberEpochAccepted", error != FENCED_MEMBER_EPOCH, theirs, call._asdict())

    def _compare_heartbeat(
        self,
        state: StreamsGroupState,
        next_state: StreamsGroupState,
        member: StreamsGroupMember,
        owned: TasksTuple | None,
    ) -> list[Comparison]:
        out: list[Comparison] = []
        group, after_group = state.group, next_state.group
        member_id = member.memberId
        if after_group.assignmentEpoch != group.assignmentEpoch and after_group.members:
            # the members the new target was computed for (a joining member included), with their previous targets
            call = AssignCall(assignor_inputs(after_group.members, group.targetAssignment))
            target = tuple(sorted(after_group.targetAssignment))
            out.append(Comparison("targetAssignment", target, self._ask(call, self._ask_assignor), call._asdict()))
        after = member_of(after_group, member_id)
        assert after is not None
        call_b = BuildCall(
            memberId=member_id,
            member=_view(member),
            targetAssignmentEpoch=after_group.assignmentEpoch,
            targetAssignment=dict(after_group.targetAssignment).get(member_id, NO_TASKS),
            owners=tuple((t, active_task_owner(group, t), standby_task_owners(group, t)) for t in self.model.tasks),
            ownedTasks=owned,
        )
        theirs = self._ask(call_b, self._ask_builder)
        ours = _view(after)
        for question in MEMBER_QUESTIONS:
            answer = theirs if isinstance(theirs, str) else getattr(theirs, question)
            out.append(Comparison(question, getattr(ours, question), answer, call_b._asdict()))
        members = tuple(sorted((m.memberId, _view(m)) for m in group.members))
        owners = OwnersCall(members, (member_id, ours), None)
        out.append(self._compare_owners(owners, after_group))
        return out

    def _compare_removal(
        self, state: StreamsGroupState, next_state: StreamsGroupState, member_id: str
    ) -> list[Comparison]:
        if member_of(state.group, member_id) is None:
            return []  # a leave of a member already gone: nothing is removed
        members = tuple(sorted((m.memberId, _view(m)) for m in state.group.members))
        return [self._compare_owners(OwnersCall(members, None, member_id), next_state.group)]

    def _compare_owners(self, call: OwnersCall, after: StreamsGroup) -> Comparison:
        ours = tuple((t, active_task_owner(after, t), standby_task_owners(after, t)) for t in self.model.tasks)
        return Comparison("taskOwners", ours, self._ask(call, self._ask_group), call._asdict())

    def _ask(self, call: tuple[object, ...], ask: Any) -> Any:
        key = (type(call).__name__, *call)
        answer = self._answers.get(key)
        if answer is None:
            try:
                answer = ask(call)
            except Exception as exc:  # a Kafka exception is Kafka's answer
                if not jvm.is_java_exception(exc):
                    raise
                answer = jvm.java_exception_text(exc)
            self._answers[key] = answer
        return answer

    # -- Kafka ---------------------------------------------------------------------------------
    def _task_map(self, tasks: frozenset[str]) -> Any:
        """``{subtopologyId: {partition}}``."""
        out = self._hash_map()
        for subtopology, partitions in by_subtopology(tasks).items():
            out.put(subtopology, self._hash_set([self._integer(p) for p in partitions]))
        return out

    def _tuple(self, tasks: TasksTuple) -> Any:
        return self._tasks_tuple(
            self._task_map(tasks.activeTasks), self._task_map(tasks.standbyTasks), self._hash_map()
        )

    def _with_epochs(self, tasks: TasksTuple, epoch: int) -> Any:
        active = self._hash_map()
        for subtopology, partitions in by_subtopology(tasks.activeTasks).items():
            epochs = self._hash_map()
            for p in partitions:
                epochs.put(self._integer(p), self._integer(epoch))
            active.put(subtopology, epochs)
        return self._tasks_with_epochs(active, self._task_map(tasks.standbyTasks), self._hash_map())

    def _from_java(self, active: Any, standby: Any) -> TasksTuple:
        def names(tasks: Any) -> frozenset[str]:
            return frozenset(
                task_name(int(str(s)), int(p)) for s in tasks.keySet() for p in _partitions_of(tasks.get(s))
            )

        return TasksTuple(names(active), names(standby))

    def _task_ids(self, tasks: frozenset[str]) -> Any:
        out = self._array_list()
        for subtopology, partitions in by_subtopology(tasks).items():
            ids = self._array_list([self._integer(p) for p in partitions])
            out.add(self._task_ids_message().setSubtopologyId(subtopology).setPartitions(ids))
        return out

    def _member(self, member_id: str, m: MemberView) -> Any:
        key = (member_id, m)
        member = self._members.get(key)
        if member is None:
            member = self._members[key] = (
                self._member_builder.withDefaults(member_id)
                .setProcessId(m.processId)
                .setMemberEpoch(m.memberEpoch)
                .setPreviousMemberEpoch(m.previousMemberEpoch)
                .setState(getattr(self._member_state, m.state))
                .setAssignedTasks(self._with_epochs(m.assignedTasks, m.memberEpoch))
                .setTasksPendingRevocation(self._with_epochs(m.tasksPendingRevocation, m.memberEpoch))
                .build()
            )
        return member

    def _ask_epoch_check(self, call: EpochCall) -> bool | str:
        owned = call.ownedTasks
        lists = (None, None, None)
        if owned is not None:
            lists = (self._task_ids(owned.activeTasks), self._task_ids(owned.standbyTasks), self._array_list())
        member = self._member("m", call.member)
        try:
            self._epoch_check.invoke(None, member, self._integer(call.memberEpoch), *lists)
        except Exception as exc:
            cause = getattr(exc, "getCause", lambda: None)()
            if cause is not None and "FencedMemberEpochException" in str(cause.getClass().getName()):
                return False
            raise
        return True

    def _ask_assignor(self, call: AssignCall) -> tuple[tuple[str, TasksTuple], ...]:
        members = self._hash_map()
        empty = self._hash_map()
        none = self._optional.empty()
        standbys = self.model.config.num_standby_replicas
        for member_id, process, previous in call.members:
            active, standby = self._task_map(previous.activeTasks), self._task_map(previous.standbyTasks)
            if self._assignor_api_4_4:
                spec = jvm.jclass(ASSIGNOR + "MemberMetadataAndStateImpl")(
                    none, none, process, empty, active, standby, self._hash_map(), empty, empty
                )
            else:
                spec = jvm.jclass(ASSIGNOR + "AssignmentMemberSpec")(
                    none, none, active, standby, self._hash_map(), process, empty, empty, empty
                )
            members.put(member_id, spec)
        if self._assignor_api_4_4:
            configs = jvm.jclass(ASSIGNOR + "AssignmentConfigsImpl")(standbys, jvm.jclass("java.util.List").of())
        else:
            configs = self._hash_map()
            configs.put("num.standby.replicas", str(standbys))
        result = self._assignor.assign(self._group_spec(members, configs), self._topology).members()
        return tuple(
            sorted(
                (str(m), self._from_java(result.get(m).activeTasks(), result.get(m).standbyTasks()))
                for m in result.keySet()
            )
        )

    def _ask_builder(self, call: BuildCall) -> MemberView | str:
        owners = {t: (active, standby) for t, active, standby in call.owners}
        hash_set = self._hash_set

        def active_owner(subtopology: Any, partition: Any) -> Any:
            return owners[task_name(int(str(subtopology)), int(partition))][0]

        def standby_owners(subtopology: Any, partition: Any) -> Any:
            return hash_set(sorted(owners[task_name(int(str(subtopology)), int(partition))][1]))

        def no_warmups(subtopology: Any, partition: Any) -> Any:
            return hash_set()

        built = (
            self._builder(self._member(call.memberId, call.member))
            .withTargetAssignment(call.targetAssignmentEpoch, self._tuple(call.targetAssignment))
            .withCurrentActiveTaskProcessId(active_owner)
            .withCurrentStandbyTaskProcessIds(standby_owners)
            .withCurrentWarmupTaskProcessIds(no_warmups)
            .withOwnedAssignment(None if call.ownedTasks is None else self._tuple(call.ownedTasks))
            .build()
        )
        assigned, pending = built.assignedTasks(), built.tasksPendingRevocation()
        return MemberView(
            processId=str(built.processId()),
            state=str(built.state().name()),
            memberEpoch=int(built.memberEpoch()),
            previousMemberEpoch=int(built.previousMemberEpoch()),
            assignedTasks=self._from_java(assigned.activeTasksWithEpochs(), assigned.standbyTasks()),
            tasksPendingRevocation=self._from_java(pending.activeTasksWithEpochs(), pending.standbyTasks()),
        )

    def _ask_group(self, call: OwnersCall) -> tuple[tuple[str, str | None, frozenset[str]], ...]:
        group = self._group(self._log_context, self._snapshot_registry(self._log_context), "g")
        for member_id, m in call.members:
            group.updateMember(self._member(member_id, m))
        if call.update is not None:
            group.updateMember(self._member(*call.update))
        if call.remove is not None:
            group.removeMember(call.remove)
        out = []
        for t in self.model.tasks:
            subtopology, partition = task_key(t)
            active = group.currentActiveTaskProcessId(str(subtopology), partition)
            standby = group.currentStandbyTaskProcessIds(str(subtopology), partition)
            out.append((t, None if active is None else str(active), frozenset(str(p) for p in standby)))
        return tuple(out)


def _partitions_of(tasks: Any) -> list[int]:
    """The partitions of a ``Set<Integer>`` or the keys of a ``Map<Integer, Integer>`` (active tasks with epochs)."""
    keys = tasks.keySet() if hasattr(tasks, "keySet") else tasks
    return [int(p) for p in keys]


def _has_class(name: str) -> bool:
    try:
        jvm.jclass(name)
    except UserError:
        return False
    return True


def _private_epoch_check() -> Any:
    """``GroupMetadataManager.throwIfStreamsGroupMemberEpochIsInvalid``, made callable."""
    j = jvm.jclass
    task_list = j("java.util.List").class_
    method = j(MANAGER).class_.getDeclaredMethod(
        "throwIfStreamsGroupMemberEpochIsInvalid",
        j(MEMBER).class_,
        j("java.lang.Integer").TYPE,
        task_list,
        task_list,
        task_list,
    )
    method.setAccessible(True)
    return method


def _topology_describer(subtopologies: int, partitions: int) -> Any:
    """The model's topology: ``subtopologies`` stateful subtopologies of ``partitions`` input partitions each."""
    import jpype

    @jpype.JImplements(jvm.jclass(ASSIGNOR + "TopologyDescriber"))  # the interface's name in this release
    class Topology:
        @jpype.JOverride
        def subtopologies(self) -> Any:
            return jvm.jclass("java.util.ArrayList")([str(s) for s in range(subtopologies)])

        @jpype.JOverride
        def maxNumInputPartitions(self, subtopology: Any) -> int:
            return partitions

        @jpype.JOverride
        def isStateful(self, subtopology: Any) -> bool:
            return True

    return Topology()
