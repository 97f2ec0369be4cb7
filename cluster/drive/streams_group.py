"""The streams-group driver: the model's stream threads played against a real group coordinator with
StreamsGroupHeartbeat, and the group read back with StreamsGroupDescribe.

The driver is the model's client: each HandleHeartbeat step sends the heartbeat the trace's thread
holds at that moment (its member epoch, the tasks it reports or null, the topology and its process on
a join, -1 to leave), and compares the coordinator's answer -- its error, the member epoch, and the
tasks or their absence (null: unchanged) -- with the answer the model's coordinator gave. A lost
response is an answer the driver does not pass on; the thread's next heartbeat is the trace's.

Each subtopology of the model is a stateless subtopology reading one source topic of the driver's own
with the model's partitions, so the topology is ready at once and needs no internal topics; standby
tasks (which need a stateful topology and its changelog topics) are not driven. Sessions last
longer than any drive, and the assignment runs at once on the coordinator's thread (no initial delay,
no assignment interval, no offload), so the broker moves only when a request reaches it.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model
from kmc.cluster.drive.base import EpochNames, Performed
from kmc.cluster.drive.session import Session
from kmc.cluster.drive.wire import Connection, error_name, java_ints, java_list, message
from kmc.cluster.release import Release
from kmc.models.streams_group.assignor import by_subtopology, task_name
from kmc.models.streams_group.drawing import tasks_text
from kmc.models.streams_group.model import member_id
from kmc.models.streams_group.state import JOIN_EPOCH, LEAVE_EPOCH, LEAVE_STATIC_EPOCH, Heartbeat, TasksTuple

SESSION_TIMEOUT_MS = 60_000
REBALANCE_TIMEOUT_MS = 300_000
FIRST_STREAMS_GROUPS = Release(4, 1, 0)
STATIC_STREAMS_MEMBERS = Release(4, 4, 0)
"""Static members (``group.instance.id``, KAFKA-20169) are refused before 4.4."""
PRODUCTION_STREAMS_GROUPS = Release(4, 2, 0)
"""Streams groups are early access in 4.1 (unstable APIs, and ``streams.version=1`` formatted with
unstable feature versions allowed) and production-ready, on by default, from 4.2."""
STREAMS_SETTINGS = {
    "group.streams.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "group.streams.max.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
    "group.streams.assignor.offload.enable": "false",
}
"""Sessions longer than any drive, and the assignment run at once on the coordinator's thread."""


class StreamsGroupDriver:
    model_name = "streams-group"
    settings: ClassVar[dict[str, str]] = STREAMS_SETTINGS
    not_driven: ClassVar[dict[str, str]] = {
        "SessionTimeout": "expiring one member while the others stay as they are needs heartbeats from them, "
        "which move a member that is reconciling; not driven yet",
        "RebalanceTimeout": "as SessionTimeout: the revocation timer of one member, the others held still",
    }
    unseen = (
        "group.members[].state, previousMemberEpoch, tasksPendingRevocation: StreamsGroupDescribe does not show them",
        "clients: the threads' own state, held by the driver (it is the model's client)",
        "faults, lostResponses: the model's fault counters",
    )
    unseen_properties: ClassVar[dict[str, str]] = {
        "NoRevocationSkipped": "it reads the tasks pending revocation, which the coordinator keeps to itself",
        "SingleActiveOwner": "it reads the tasks pending revocation, which the coordinator keeps to itself",
    }
    max_drive_s = SESSION_TIMEOUT_MS / 2000
    settle_s = 0.0

    @classmethod
    def check_release(cls, release: Release, model: Any) -> None:
        release.require(FIRST_STREAMS_GROUPS, "streams groups (StreamsGroupHeartbeat, early access in 4.1) need")
        if model.config.static_members:
            release.require(STATIC_STREAMS_MEMBERS, "static streams members (group.instance.id, KAFKA-20169) need")
        if model.config.num_standby_replicas:
            raise UserError(
                "standby tasks are not driven: they need a stateful topology, whose changelog topics the "
                "coordinator must create before the group is ready"
            )

    @classmethod
    def settings_for(cls, release: Release) -> dict[str, str]:
        if release >= PRODUCTION_STREAMS_GROUPS:
            return dict(STREAMS_SETTINGS)
        unstable = {"unstable.api.versions.enable": "true", "unstable.feature.versions.enable": "true"}
        return {**STREAMS_SETTINGS, **unstable}

    @classmethod
    def features_for(cls, release: Release) -> dict[str, str]:
        return {} if release >= PRODUCTION_STREAMS_GROUPS else {"streams.version": "1"}

    def __init__(self, session: Session, model: Model, initial: Any) -> None:
        self.session = session
        self.model = model
        self.group = f"kmc-drive-streams-{uuid.uuid4().hex[:12]}"
        self.topics = [f"{self.group}-source-{s}" for s in range(model.config.subtopologies)]
        self.coordinator = -1
        self.real_ids = {
            member_id(c, k): str(uuid.uuid4())
            for c in range(model.config.consumers)
            for k in range(model.config.max_restarts + 1)
        }
        """The member id each thread's consumer generates and keeps (KIP-1071); a restarted one, another."""
        self.model_ids = {real: model_id for model_id, real in self.real_ids.items()}
        self.epochs = EpochNames()

    # -- setup -------------------------------------------------------------------------------------
    def setup(self) -> None:
        for topic in self.topics:
            self.session.create_topic(topic, self.model.config.partitions, 1)
        self.coordinator = self.session.find_coordinator(self.group, 0)
        loaded = ("NONE", "GROUP_ID_NOT_FOUND")
        self.session.until("load the group's coordinator", lambda: True if self._describe()[0] in loaded else None)

    def _connection(self, consumer: int, incarnation: int = 0) -> Connection:
        return self.session.connection(f"thread-{consumer}-{incarnation}", self.coordinator)

    # -- steps -------------------------------------------------------------------------------------
    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        args = action.args
        if action.name == "HandleHeartbeat":
            return self._heartbeat(args["consumer"], before, after)
        if action.name == "HeartbeatResponseLost":
            return Performed(requests=["(the answer is dropped: the thread never reads it)"])
        if action.name == "ConsumerCrash":
            incarnation = before.clients[args["consumer"]].incarnation
            self.session.close_connection(f"thread-{args['consumer']}-{incarnation}")
            return Performed(requests=["(the thread's connection closed; it sends nothing more)"])
        return Performed()

    def _heartbeat(self, consumer: int, before: Any, after: Any) -> Performed:
        heartbeat: Heartbeat = before.clients[consumer].request
        connection = self._connection(consumer, before.clients[consumer].incarnation)
        answer = connection.call("STREAMS_GROUP_HEARTBEAT", self._request(heartbeat))
        error = error_name(answer.errorCode())
        shown: dict[str, Any] = {"error": error}
        if error == "NONE":
            shown["memberEpoch"] = int(answer.memberEpoch())
            shown["tasks"] = self._answered_tasks(answer)
        response = after.clients[consumer].response
        expected: dict[str, Any] = {}
        if response is not None:  # a stopped thread's heartbeat: the model does not say what it is answered
            expected = {"error": response.error}
            if response.error == "NONE":
                expected["memberEpoch"] = response.memberEpoch
                expected["tasks"] = tasks_text(response.assignment)
        owned = "null" if heartbeat.ownedTasks is None else tasks_text(heartbeat.ownedTasks)
        sent = f"StreamsGroupHeartbeat(memberEpoch={heartbeat.memberEpoch}, tasks={owned})"
        return Performed(requests=[sent], answered=shown if expected else {}, expected=expected)

    def _request(self, heartbeat: Heartbeat) -> Any:
        request = message("StreamsGroupHeartbeatRequestData").setGroupId(self.group)
        request.setMemberId(self.real_ids[heartbeat.memberId]).setMemberEpoch(self.epochs.broker(heartbeat.memberEpoch))
        if heartbeat.instanceId is not None:
            request.setInstanceId(f"{self.group}-{heartbeat.instanceId}")
        if heartbeat.memberEpoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
            return request
        if heartbeat.memberEpoch == JOIN_EPOCH:
            topology = message("StreamsGroupHeartbeatRequestData$Topology").setEpoch(0)
            subtopologies = []
            for s, topic in enumerate(self.topics):
                sub = message("StreamsGroupHeartbeatRequestData$Subtopology").setSubtopologyId(str(s))
                subtopologies.append(sub.setSourceTopics(java_list([topic])))
            topology.setSubtopologies(java_list(subtopologies))
            request.setTopology(topology).setRebalanceTimeoutMs(REBALANCE_TIMEOUT_MS)
            request.setProcessId(f"{self.group}-{heartbeat.processId}").setClientTags(java_list([]))
        if heartbeat.ownedTasks is not None:
            request.setActiveTasks(self._task_ids(heartbeat.ownedTasks.activeTasks))
            request.setStandbyTasks(self._task_ids(heartbeat.ownedTasks.standbyTasks))
            request.setWarmupTasks(java_list([]))
        return request

    def _task_ids(self, tasks: frozenset[str]) -> Any:
        return java_list(
            [
                message("StreamsGroupHeartbeatRequestData$TaskIds").setSubtopologyId(s).setPartitions(java_ints(ps))
                for s, ps in by_subtopology(tasks).items()
            ]
        )

    def _answered_tasks(self, answer: Any) -> str:
        if answer.activeTasks() is None:
            return "unchanged"
        return tasks_text(TasksTuple(_names(answer.activeTasks()), _names(answer.standbyTasks())))

    # -- projections -------------------------------------------------------------------------------
    def expected(self, state: Any) -> dict[str, Any]:
        group = state.group
        targets = dict(group.targetAssignment)
        members = {
            m.memberId: {
                "memberEpoch": m.memberEpoch,
                "assignment": tasks_text(m.assignedTasks),
                "targetAssignment": tasks_text(targets.get(m.memberId, TasksTuple(frozenset(), frozenset()))),
            }
            for m in group.members
        }
        return {"groupEpoch": group.groupEpoch, "assignmentEpoch": group.assignmentEpoch, "members": members}

    def observed(self) -> dict[str, Any]:
        error, described = self._describe()
        if error == "GROUP_ID_NOT_FOUND":
            return {"groupEpoch": 0, "assignmentEpoch": 0, "members": {}}
        if error != "NONE":
            return {"error": error}
        members = {
            self.model_ids.get(str(m.memberId()), f"(unknown member {m.memberId()})"): {
                "memberEpoch": int(m.memberEpoch()),
                "assignment": tasks_text(_described_tasks(m.assignment())),
                "targetAssignment": tasks_text(_described_tasks(m.targetAssignment())),
            }
            for m in described.members()
        }
        return {
            "groupEpoch": int(described.groupEpoch()),
            "assignmentEpoch": int(described.assignmentEpoch()),
            "members": members,
        }

    def _describe(self) -> tuple[str, Any]:
        request = message("StreamsGroupDescribeRequestData").setGroupIds(java_list([self.group]))
        answer = self.session.connection("describe", self.coordinator).call("STREAMS_GROUP_DESCRIBE", request)
        described = answer.groups().get(0)
        error = error_name(described.errorCode())
        return error, described if error == "NONE" else None

    def close(self) -> None:
        self.session.close()


def _names(task_ids: Any) -> frozenset[str]:
    return frozenset(task_name(int(str(t.subtopologyId())), int(p)) for t in task_ids for p in t.partitions())


def _described_tasks(assignment: Any) -> TasksTuple:
    return TasksTuple(_names(assignment.activeTasks()), _names(assignment.standbyTasks()))
