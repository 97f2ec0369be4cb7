"""The consumer-delivery driver: the model's KIP-848 consumers and their poll loop played against a real
group coordinator and partition leader -- ConsumerGroupHeartbeat, OffsetFetch, Fetch and OffsetCommit
with the member's epoch -- read back with ConsumerGroupDescribe and the group's committed offset.

The model's one input partition is partition 0 of a topic of the driver's own, holding its records
(produced at setup, offsets 0 to records - 1). The consumers are the driver's: processing a record
and the output partition are theirs (the model's ghost counters), so the broker is asked only what a
consumer asks it. The classic protocol's traces (the model's rebalance is one abstract step for the
whole group) and the transactional loop are not driven.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model
from kmc.cluster.drive.base import EpochNames, Performed
from kmc.cluster.drive.consumer_group import SESSION_TIMEOUT_MS, ConsumerGroup, Kip848Protocol
from kmc.cluster.drive.records import NAMES_UP_TO, batch, produce_answer, produce_request, read_log
from kmc.cluster.drive.session import Session
from kmc.cluster.drive.wire import error_name, java_ints, java_list, message
from kmc.models.consumer_delivery.state import NO_OFFSET, UNJOINED

PARTITION = 0
OFFSET_FETCH_BY_NAME = 9
"""OffsetFetch names topics up to version 9 (10 names them by id)."""
CLIENT_ONLY = ("ReceiveHeartbeat", "Process")
CLASSIC = "the classic protocol's rebalance is one abstract step for the whole group in this model: not driven"
TRANSACTIONAL = "the consume-transform-produce transaction: not driven yet"


class DeliveryDriver(Kip848Protocol):
    model_name = "consumer-delivery"
    not_driven: ClassVar[dict[str, str]] = {
        "JoinGroup": CLASSIC,
        "SyncGroup": CLASSIC,
        "CompleteRebalance": CLASSIC,
        "InitProducerId": TRANSACTIONAL,
        "SendOffsetsToTransaction": TRANSACTIONAL,
        "CommitTransaction": TRANSACTIONAL,
        "TransactionTimeout": TRANSACTIONAL,
        "SessionTimeout": "the expiry of one member while the others stay as they are: not driven yet",
        "ConsumerCrash": "a crashed consumer's member expires only by its session timeout: not driven yet",
        "ConsumerStart": "as ConsumerCrash",
    }
    unseen = (
        "coordinator.holder while the partition is pending revocation, assignmentEpoch: inside the coordinator "
        "(ConsumerGroupDescribe shows the assigned and the target partitions)",
        "coordinator.pendingOffsets, producerEpochs, ongoing: the transactional loop (not driven)",
        "consumers, processed, output: the consumers' own state and the model's ghost counters, held by the driver",
    )
    unseen_properties: ClassVar[dict[str, str]] = {}
    max_drive_s = SESSION_TIMEOUT_MS / 2000
    settle_s = 0.0

    @classmethod
    def check_trace(cls, actions: list[Action]) -> None:
        for index, action in enumerate(actions):
            if action is not None and action.name == "Poll" and action.args["autoCommit"]:
                raise UserError(f"step {index}: an auto-commit inside a poll is not driven yet")

    def __init__(self, session: Session, model: Model, initial: Any) -> None:
        if model.config.group_protocol != "consumer":
            raise UserError(f"consumer-delivery traces of the {model.config.group_protocol} protocol: {CLASSIC}")
        self.session = session
        self.records: int = model.config.records
        self.group = ConsumerGroup(session, "kmc-drive-delivery")
        self.epochs = EpochNames()
        self.leader = -1
        self.assigned: dict[int, bool] = {}
        """consumer -> whether its last heartbeat answer with an assignment gave it the partition"""

    # -- setup -------------------------------------------------------------------------------------
    def setup(self) -> None:
        self.group.create(1)
        leaders = self.session.until("elect the topic's leader", lambda: self.session.leaders(self.group.topic, 1))
        self.leader = leaders[PARTITION]
        conn = self.session.connection("producer", self.leader)
        for record in range(self.records):
            data = produce_request(self.group.topic, PARTITION, batch(record, -1, -1, -1), -1)
            error, offset = produce_answer(conn.call("PRODUCE", data, min(NAMES_UP_TO, conn.version("PRODUCE"))))
            if (error, offset) != ("NONE", record):
                raise UserError(f"writing the input record {record} failed: {error} at offset {offset}")

    # -- steps -------------------------------------------------------------------------------------
    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        args = action.args
        consumer = args.get("consumer", -1)
        if action.name == "Heartbeat":
            return self._heartbeat(consumer, before, after)
        if action.name == "OffsetFetch":
            return self._offset_fetch(consumer, args["offset"])
        if action.name == "Poll":
            return self._poll(args["offset"])
        if action.name == "OffsetCommit":
            return self._offset_commit(consumer, args)
        if action.name in CLIENT_ONLY:
            return Performed()
        raise UserError(f"the consumer-delivery driver has no mapping for {action.name}")

    def _heartbeat(self, consumer: int, before: Any, after: Any) -> Performed:
        me = before.consumers[consumer]
        joining = me.phase == UNJOINED
        epoch = 0 if joining else self.epochs.broker(me.generationId)
        owned = [PARTITION] if me.owned else []
        answer = self.group.heartbeat(consumer, "" if joining else me.memberId, epoch, [(0, p) for p in owned])
        error = error_name(answer.errorCode())
        if error == "NONE" and joining:
            self.group.learn(after.consumers[consumer].memberId, str(answer.memberId()))
        if answer.assignment() is not None:  # null: the assignment did not change
            self.assigned[consumer] = PARTITION in self.group.partitions(answer.assignment().topicPartitions())
        shown: dict[str, Any] = {"error": error}
        if error == "NONE":
            shown |= {"memberEpoch": int(answer.memberEpoch()), "assigned": self.assigned.get(consumer, False)}
        wanted = after.consumers[consumer].response
        expected = {"error": wanted[0]} | (
            {"memberEpoch": wanted[1], "assigned": wanted[2]} if wanted[0] == "NONE" else {}
        )
        sent = f"ConsumerGroupHeartbeat(memberEpoch={0 if joining else me.generationId}, topicPartitions={owned})"
        return Performed([sent], shown, expected)

    def _offset_fetch(self, consumer: int, offset: int) -> Performed:
        committed = self._committed_offset(f"consumer-{consumer}")
        # auto.offset.reset=earliest: no committed offset starts the consumer at 0
        return Performed(["OffsetFetch(requireStable=true)"], {"position": max(committed, 0)}, {"position": offset})

    def _poll(self, offset: int) -> Performed:
        logged = [b.baseOffset for b in read_log(self.session, self.leader, self.group.topic, PARTITION)]
        shown = {"record": offset if offset in logged else None}
        return Performed([f"Fetch(fetchOffset={offset})"], shown, {"record": offset})

    def _offset_commit(self, consumer: int, args: dict[str, Any]) -> Performed:
        group = self.group
        request = message("OffsetCommitRequestData").setGroupId(group.group)
        request.setMemberId(group.real_id(args["memberId"]))
        request.setGenerationIdOrMemberEpoch(self.epochs.broker(args["generationId"]))
        topic = group.offset_commit_topic()
        entry = message("OffsetCommitRequestData$OffsetCommitRequestPartition").setPartitionIndex(PARTITION)
        topic.partitions().add(entry.setCommittedOffset(args["offset"]))
        request.topics().add(topic)
        answer = group.connection(consumer).call("OFFSET_COMMIT", request)
        errors = {error_name(p.errorCode()) for t in answer.topics() for p in t.partitions()}
        shown = errors.pop() if len(errors) == 1 else sorted(errors)
        sent = f"OffsetCommit(memberEpoch={args['generationId']}, offset={args['offset']})"
        return Performed([sent], {"error": shown}, {"error": args["error"]})

    def _committed_offset(self, connection: str) -> int:
        request = message("OffsetFetchRequestData").setRequireStable(True)
        topic = message("OffsetFetchRequestData$OffsetFetchRequestTopics").setName(self.group.topic)
        topic.setPartitionIndexes(java_ints([PARTITION]))
        wanted = message("OffsetFetchRequestData$OffsetFetchRequestGroup").setGroupId(self.group.group)
        request.setGroups(java_list([wanted.setTopics(java_list([topic]))]))
        conn = self.session.connection(connection, self.group.coordinator)
        answer = conn.call("OFFSET_FETCH", request, version=min(OFFSET_FETCH_BY_NAME, conn.version("OFFSET_FETCH")))
        for group in answer.groups():
            for t in group.topics():
                for p in t.partitions():
                    return int(p.committedOffset())
        return NO_OFFSET

    # -- projections -------------------------------------------------------------------------------
    def expected(self, state: Any) -> dict[str, Any]:
        coord = state.coordinator
        members = {m.memberId: {"memberEpoch": m.memberEpoch} for m in coord.members}
        return {
            "groupEpoch": coord.generationId,
            "members": members,
            "owner": coord.owner if coord.members else "",
            "assigned": coord.holder if coord.holder == coord.owner else "",
            "committedOffset": coord.committedOffset,
        }

    def observed(self) -> dict[str, Any]:
        error, described = self.group.describe()
        committed = self._committed_offset("describe")
        if error == "GROUP_ID_NOT_FOUND":
            return {"groupEpoch": 0, "members": {}, "owner": "", "assigned": "", "committedOffset": committed}
        if error != "NONE":
            return {"error": error}
        group = self.group
        members, owner, assigned = {}, "", ""
        for m in described.members():
            model_id = group.model_id(str(m.memberId()))
            members[model_id] = {"memberEpoch": int(m.memberEpoch())}
            if PARTITION in group.partitions(m.targetAssignment().topicPartitions()):
                owner = model_id
            if PARTITION in group.partitions(m.assignment().topicPartitions()):
                assigned = model_id
        return {
            "groupEpoch": int(described.groupEpoch()),
            "members": members,
            "owner": owner,
            "assigned": assigned,
            "committedOffset": committed,
        }

    def close(self) -> None:
        self.session.close()
