"""The group-kip848 driver: the model's consumers played against a real group coordinator with
ConsumerGroupHeartbeat, and the coordinator's state read back with ConsumerGroupDescribe.

The driver is the model's client: its consumers do exactly what the model's consumers do (subscribe,
reconcile, leave), and each HandleHeartbeat step sends the heartbeat the trace's consumer holds at
that moment -- a request travels from the consumer to the coordinator when the trace says the
coordinator handles it, so the broker sees the requests in the trace's order. The model's member ids
(``c0-0``) are the ids the driver generates (ConsumerGroupHeartbeat v1, KIP-1082); its partitions
are the partitions of one topic of the driver's own.

Sessions and revocations last longer than any drive (``group.consumer.session.timeout.ms``, the
heartbeat's rebalance timeout), and the assignor runs at once on the coordinator's thread
(``group.consumer.assignment.interval.ms=0``, no offload), so the broker moves only when a request
reaches it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model
from kmc.cluster.drive.base import EpochNames, Performed
from kmc.cluster.drive.session import Session
from kmc.cluster.drive.wire import Connection, error_name, java_ints, java_list, message
from kmc.cluster.release import FIRST_4X, Release
from kmc.models.group_kip848.state import JOIN_EPOCH, Heartbeat

SESSION_TIMEOUT_MS = 60_000
REBALANCE_TIMEOUT_MS = 300_000


class Kip848Driver:
    model_name = "group-kip848"
    settings: ClassVar[dict[str, str]] = {
        "group.consumer.assignment.interval.ms": "0",
        "group.consumer.assignor.offload.enable": "false",
        "group.consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "group.consumer.max.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    }
    not_driven: ClassVar[dict[str, str]] = {
        "SessionTimeout": "expiring one member while the others stay as they are needs heartbeats from them, "
        "which move a member that is reconciling; not driven yet",
        "RebalanceTimeout": "as SessionTimeout: the revocation timer of one member, the others held still",
    }
    unseen = (
        "coordinator.members[].state, previousMemberEpoch, pendingRevocation: ConsumerGroupDescribe does not show them",
        "coordinator.partitionEpochs: kept inside the coordinator",
        "consumers: the client's own state, held by the driver (it is the model's client)",
        "faults: the model's fault counter",
    )
    max_drive_s = SESSION_TIMEOUT_MS / 2000
    settle_s = 0.0
    unseen_properties: ClassVar[dict[str, str]] = {
        "ValidPartitionEpoch": "it reads the partition epochs, which the coordinator keeps to itself",
    }

    @classmethod
    def check_release(cls, release: Release, model: Model) -> None:
        release.require(
            FIRST_4X, "the driver's ConsumerGroupHeartbeat v1 (member ids the client makes, KIP-1082) needs"
        )

    def __init__(self, session: Session, model: Model, initial: Any) -> None:
        self.session = session
        self.partitions: int = model.config.partitions
        self.group = f"kmc-drive-{uuid.uuid4().hex[:12]}"
        self.topic = f"{self.group}-topic"
        self.topic_id: Any = None
        self.real_ids: dict[str, str] = {}
        """model member id -> the member id the driver sent"""
        self.joining: dict[int, str] = {}
        """consumer -> the member id it joins with (generated when its join heartbeat is sent)"""
        self.coordinator = -1
        self.epochs = EpochNames()

    # -- setup -------------------------------------------------------------------------------------
    def setup(self) -> None:
        self.session.create_topic(self.topic, max(self.partitions, 1), 1)
        self.topic_id = self._topic_id()
        self.coordinator = self.session.find_coordinator(self.group, 0)
        self.session.until("load the group's coordinator", lambda: None if "error" in self.observed() else True)

    def _topic_id(self) -> Any:
        described = self.session.describe_topic(self.topic)
        if described is None:
            raise UserError(f"topic {self.topic} has no id in the metadata")
        return described.topicId()

    def _connection(self, consumer: int) -> Connection:
        return self.session.connection(f"consumer-{consumer}", self.coordinator)

    # -- steps -------------------------------------------------------------------------------------
    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        args = action.args
        if action.name == "HandleHeartbeat":
            return self._heartbeat(args["consumer"], before, after)
        if action.name == "OffsetCommit":
            return self._offset_commit(args["consumer"], before, args)
        if action.name == "ConsumerCrash":
            conn = self.session.connections.pop(f"consumer-{args['consumer']}", None)
            if conn is not None:
                conn.close()
            return Performed(requests=["(the consumer's connection closed; it sends nothing more)"])
        return Performed()

    def _heartbeat(self, consumer: int, before: Any, after: Any) -> Performed:
        heartbeat: Heartbeat = before.consumers[consumer].request
        real_id = self._real_member_id(consumer, heartbeat)
        request = message("ConsumerGroupHeartbeatRequestData").setGroupId(self.group).setMemberId(real_id)
        request.setMemberEpoch(self.epochs.broker(heartbeat.memberEpoch))
        if heartbeat.memberEpoch == JOIN_EPOCH:
            request.setRebalanceTimeoutMs(REBALANCE_TIMEOUT_MS).setSubscribedTopicNames(java_list([self.topic]))
        if heartbeat.ownedPartitions is not None:
            request.setTopicPartitions(java_list(self._topic_partitions(heartbeat.ownedPartitions)))
        answer = self._connection(consumer).call("CONSUMER_GROUP_HEARTBEAT", request)
        error = error_name(answer.errorCode())
        expected_response = after.consumers[consumer].response
        if expected_response is not None and error == "NONE" and heartbeat.memberEpoch == JOIN_EPOCH:
            self.real_ids[expected_response.memberId] = str(answer.memberId())
        shown = self._response(answer, error)
        expected = self._expected_response(expected_response, after.consumers[consumer].phase)
        owned = "null" if heartbeat.ownedPartitions is None else sorted(heartbeat.ownedPartitions)
        sent = f"ConsumerGroupHeartbeat(memberEpoch={heartbeat.memberEpoch}, topicPartitions={owned})"
        return Performed(requests=[sent], answered=shown if expected else {}, expected=expected)

    def _real_member_id(self, consumer: int, heartbeat: Heartbeat) -> str:
        if heartbeat.memberEpoch == JOIN_EPOCH and heartbeat.memberId == "":
            self.joining[consumer] = str(uuid.uuid4())
            return self.joining[consumer]
        real = self.real_ids.get(heartbeat.memberId)
        if real is None:
            # a member id the broker never gave: the driver invents one the broker cannot know
            real = self.real_ids[heartbeat.memberId] = str(uuid.uuid4())
        return real

    def _response(self, answer: Any, error: str) -> dict[str, Any]:
        if error != "NONE":
            return {"error": error}
        assignment = answer.assignment()
        partitions = self._partitions(assignment.topicPartitions()) if assignment is not None else set()
        return {
            "error": error,
            "memberId": self._model_id(str(answer.memberId())),
            "memberEpoch": int(answer.memberEpoch()),
            "assignment": sorted(partitions),
        }

    @staticmethod
    def _expected_response(response: Any, phase: str) -> dict[str, Any]:
        if response is None:
            # a stopped consumer's heartbeat: the model does not say what it is answered
            return {}
        if response.error != "NONE":
            return {"error": response.error}
        shown = {"error": response.error, "memberId": response.memberId, "memberEpoch": response.memberEpoch}
        return {**shown, "assignment": sorted(response.assignment)}

    def _offset_commit(self, consumer: int, before: Any, args: dict[str, Any]) -> Performed:
        me = before.consumers[consumer]
        request = message("OffsetCommitRequestData").setGroupId(self.group)
        request.setMemberId(self.real_ids.get(me.memberId, me.memberId)).setGenerationIdOrMemberEpoch(
            self.epochs.broker(me.memberEpoch)
        )
        topic = (
            message("OffsetCommitRequestData$OffsetCommitRequestTopic").setName(self.topic).setTopicId(self.topic_id)
        )
        for p in sorted(me.owned):
            topic.partitions().add(
                message("OffsetCommitRequestData$OffsetCommitRequestPartition")
                .setPartitionIndex(p)
                .setCommittedOffset(0)
            )
        request.topics().add(topic)
        answer = self._connection(consumer).call("OFFSET_COMMIT", request)
        errors = {error_name(p.errorCode()) for t in answer.topics() for p in t.partitions()}
        shown = errors.pop() if len(errors) == 1 else sorted(errors)
        sent = f"OffsetCommit(memberEpoch={me.memberEpoch}, partitions={sorted(me.owned)})"
        return Performed(requests=[sent], answered={"error": shown}, expected={"error": args["error"]})

    # -- projections -------------------------------------------------------------------------------
    def expected(self, state: Any) -> dict[str, Any]:
        coord = state.coordinator
        targets = dict(coord.targetAssignment)
        members = {
            m.memberId: {
                "memberEpoch": m.memberEpoch,
                "assignment": sorted(m.assigned),
                "targetAssignment": sorted(targets.get(m.memberId, ())),
            }
            for m in coord.members
        }
        return {
            "groupEpoch": coord.groupEpoch,
            "targetAssignmentEpoch": coord.targetAssignmentEpoch,
            "members": members,
        }

    def observed(self) -> dict[str, Any]:
        request = message("ConsumerGroupDescribeRequestData").setGroupIds(java_list([self.group]))
        answer = self.session.connection("describe", self.coordinator).call("CONSUMER_GROUP_DESCRIBE", request)
        described = answer.groups().get(0)
        error = error_name(described.errorCode())
        if error == "GROUP_ID_NOT_FOUND":
            return {"groupEpoch": 0, "targetAssignmentEpoch": 0, "members": {}}
        if error != "NONE":
            return {"error": error}
        members = {
            self._model_id(str(m.memberId())): {
                "memberEpoch": int(m.memberEpoch()),
                "assignment": sorted(self._partitions(m.assignment().topicPartitions())),
                "targetAssignment": sorted(self._partitions(m.targetAssignment().topicPartitions())),
            }
            for m in described.members()
        }
        return {
            "groupEpoch": int(described.groupEpoch()),
            "targetAssignmentEpoch": int(described.assignmentEpoch()),
            "members": members,
        }

    def close(self) -> None:
        self.session.close()

    # -- ids and partitions ------------------------------------------------------------------------
    def _model_id(self, real: str) -> str:
        for model_id, known in self.real_ids.items():
            if known == real:
                return model_id
        return f"(unknown member {real})"

    def _topic_partitions(self, partitions: Iterable[int]) -> list[Any]:
        owned = message("ConsumerGroupHeartbeatRequestData$TopicPartitions").setTopicId(self.topic_id)
        owned.setPartitions(java_ints(sorted(partitions)))
        return [owned] if owned.partitions().size() else []

    def _partitions(self, topic_partitions: Any) -> set[int]:
        found: set[int] = set()
        for entry in topic_partitions:
            if entry.topicId().equals(self.topic_id):
                found.update(int(p) for p in entry.partitions())
            else:
                found.add(-1)
        return found
