"""The group-kip848 driver: the model's consumers played against a real group coordinator with
ConsumerGroupHeartbeat, and the coordinator's state read back with ConsumerGroupDescribe.

The driver is the model's client: its consumers do exactly what the model's consumers do (subscribe,
reconcile, leave), and each HandleHeartbeat step sends the heartbeat the trace's consumer holds at
that moment -- a request travels from the consumer to the coordinator when the trace says the
coordinator handles it, so the broker sees the requests in the trace's order. The model's member ids
(``c0-0``) are mapped to the ids the driver generates (ConsumerGroupHeartbeat v1, KIP-1082) or, on
3.7 to 3.9 (v0), the coordinator does; its partitions are the partitions of one topic of the
driver's own (consumer_group.py).

Sessions and revocations last longer than any drive (``group.consumer.session.timeout.ms``, the
heartbeat's rebalance timeout), and the assignor runs at once on the coordinator's thread
(``group.consumer.assignment.interval.ms=0``, no offload), so the broker moves only when a request
reaches it.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kmc.checker.model import Action, Model
from kmc.cluster.drive.base import EpochNames, Performed
from kmc.cluster.drive.consumer_group import SESSION_TIMEOUT_MS, ConsumerGroup, Kip848Protocol
from kmc.cluster.drive.session import Session
from kmc.cluster.drive.wire import error_name, message
from kmc.models.group_kip848.state import JOIN_EPOCH, Heartbeat


class Kip848Driver(Kip848Protocol):
    model_name = "group-kip848"
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

    def __init__(self, session: Session, model: Model, initial: Any) -> None:
        self.session = session
        self.partitions: int = model.config.partitions
        self.group = ConsumerGroup(session, "kmc-drive")
        self.epochs = EpochNames()

    # -- setup -------------------------------------------------------------------------------------
    def setup(self) -> None:
        self.group.create(self.partitions)

    # -- steps -------------------------------------------------------------------------------------
    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        args = action.args
        if action.name == "HandleHeartbeat":
            return self._heartbeat(args["consumer"], before, after)
        if action.name == "OffsetCommit":
            return self._offset_commit(args["consumer"], before, args)
        if action.name == "ConsumerCrash":
            self.session.close_connection(f"consumer-{args['consumer']}")
            return Performed(requests=["(the consumer's connection closed; it sends nothing more)"])
        return Performed()

    def _heartbeat(self, consumer: int, before: Any, after: Any) -> Performed:
        heartbeat: Heartbeat = before.consumers[consumer].request
        epoch = self.epochs.broker(heartbeat.memberEpoch)
        owned = heartbeat.ownedPartitions
        answer = self.group.heartbeat(
            consumer, heartbeat.memberId, epoch, None if owned is None else [(0, p) for p in owned]
        )
        error = error_name(answer.errorCode())
        expected_response = after.consumers[consumer].response
        if expected_response is not None and error == "NONE" and heartbeat.memberEpoch == JOIN_EPOCH:
            self.group.learn(expected_response.memberId, str(answer.memberId()))
        shown = self._response(answer, error)
        expected = self._expected_response(expected_response, after.consumers[consumer].phase)
        owned = "null" if heartbeat.ownedPartitions is None else sorted(heartbeat.ownedPartitions)
        sent = f"ConsumerGroupHeartbeat(memberEpoch={heartbeat.memberEpoch}, topicPartitions={owned})"
        return Performed(requests=[sent], answered=shown if expected else {}, expected=expected)

    def _response(self, answer: Any, error: str) -> dict[str, Any]:
        if error != "NONE":
            return {"error": error}
        assignment = answer.assignment()
        partitions = self.group.partitions(assignment.topicPartitions()) if assignment is not None else set()
        return {
            "error": error,
            "memberId": self.group.model_id(str(answer.memberId())),
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
        group = self.group
        request = message("OffsetCommitRequestData").setGroupId(group.group)
        request.setMemberId(group.real_ids.get(me.memberId, me.memberId)).setGenerationIdOrMemberEpoch(
            self.epochs.broker(me.memberEpoch)
        )
        topic = group.offset_commit_topic()
        for p in sorted(me.owned):
            topic.partitions().add(
                message("OffsetCommitRequestData$OffsetCommitRequestPartition")
                .setPartitionIndex(p)
                .setCommittedOffset(0)
            )
        request.topics().add(topic)
        answer = group.connection(consumer).call("OFFSET_COMMIT", request)
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
        error, described = self.group.describe()
        if error == "GROUP_ID_NOT_FOUND":
            return {"groupEpoch": 0, "targetAssignmentEpoch": 0, "members": {}}
        if error != "NONE":
            return {"error": error}
        group = self.group
        members = {
            group.model_id(str(m.memberId())): {
                "memberEpoch": int(m.memberEpoch()),
                "assignment": sorted(group.partitions(m.assignment().topicPartitions())),
                "targetAssignment": sorted(group.partitions(m.targetAssignment().topicPartitions())),
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
