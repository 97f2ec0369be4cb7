"""The share-group driver: the model's share consumers played against a real share-partition leader
with ShareFetch and ShareAcknowledge, and the share coordinator's start offset read back with
DescribeShareGroupOffsets.

The driver writes the model's records to a topic of its own, sets the group's configs
(``share.auto.offset.reset=earliest``, the model's delivery limit, the longest lock duration) and
joins every consumer with ShareGroupHeartbeat before the first step. Each ShareFetch and
ShareAcknowledge goes on the consumer's share session (epoch 0 first, then the session's next
epoch). The broker writes an acknowledgement's new state to the share coordinator before it
answers, so the model's ``ShareAcknowledge`` and the answer of its write are one broker step
(``glued``); the answer is the broker's, and a failed write, a lock that runs out and a log-start
move are not driven: each is inside one broker, or needs the share coordinator down or a lock of
at least 15 s, and the races the model's bugs need are orderings of them against a write in flight.
A leader change is a crash of the partition's leader (SIGKILL; its replicas are on every node):
another replica takes over, loads the share partition's state from the share coordinator, and each
consumer opens a new share session there; the node is started again when the drive ends.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model
from kmc.cluster.drive.base import EpochNames, Performed
from kmc.cluster.drive.records import NAMES_UP_TO, batch, produce_answer, produce_request
from kmc.cluster.drive.session import GROUP_RESOURCE, RETRIABLE, Session
from kmc.cluster.drive.wire import Connection, error_name, java_list, message
from kmc.cluster.release import Release
from kmc.models.share_group.model import member_id

PARTITION = 0
LOCK_DURATION_MS = 60_000
"""The longest lock a group may set: no lock runs out during a drive."""
FIRST_SHARE_GROUPS = Release(4, 2, 0)
"""Share groups are production-ready, and on by default, from 4.2 (4.1's preview, switched on by
``group.share.enable``, answered every first ShareFetch of a drive with UNKNOWN_SERVER_ERROR)."""
GROUP_DELIVERY_LIMIT = Release(4, 3, 0)
"""``share.delivery.count.limit`` is a group config from 4.3; before, only the broker's
``group.share.delivery.count.limit`` sets it."""
BROKER_DELIVERY_LIMIT = 2
"""The broker-wide limit a drive on 4.2 starts its cluster with (Kafka's minimum)."""
ACKNOWLEDGE_TYPE = {"ACCEPT": 1, "RELEASE": 2, "REJECT": 3}
JOIN_TIMEOUT_S = 30.0
FINAL_EPOCH = -1
SHARE_COORDINATOR_KEY = 2
"""FindCoordinator's key type of a share partition's state (``groupId:topicId:partition``)."""
FETCH_ATTEMPTS = 4
"""ShareFetches (each waiting up to 5 s) before an empty answer is the broker's."""
REPLICAS = 3
"""The topic's replicas: a leader change needs another replica to take over."""


class ShareGroupDriver:
    model_name = "share-group"
    settings: ClassVar[dict[str, str]] = {"group.share.max.record.lock.duration.ms": str(LOCK_DURATION_MS)}
    not_driven: ClassVar[dict[str, str]] = {
        "AcquisitionLockExpire": "a lock lasts at least 15 s (group.share.min.record.lock.duration.ms), and its "
        "timer runs inside the broker: a race with it cannot be ordered by requests",
        "AcquisitionLockTimeout": "as AcquisitionLockExpire: the lock's timeout handler runs inside the broker",
        "LogStartOffsetMove": "the leader archives on its next fetch, inside the broker: not driven yet",
    }
    unseen = (
        "records, timers, writes: the share-partition leader keeps them to itself (ShareFetch shows each "
        "acquisition's records and delivery counts, compared in the step's answer)",
        "startOffset, cacheStart: the leader's; persistedStartOffset is compared (DescribeShareGroupOffsets)",
        "persisted: the share coordinator's record states are not shown",
        "consumers, accepted, archivedByLogStart: the driver's client and the model's ghosts",
        "writeFailures, logStartMoves: the model's counters",
    )
    unseen_properties: ClassVar[dict[str, str]] = {}
    max_drive_s = LOCK_DURATION_MS / 2000
    settle_s = 0.0

    @classmethod
    def check_release(cls, release: Release, model: Any) -> None:
        release.require(FIRST_SHARE_GROUPS, "share groups (ShareFetch, production-ready in 4.2) need")
        limit = model.config.delivery_count_limit
        if release < GROUP_DELIVERY_LIMIT and limit != BROKER_DELIVERY_LIMIT:
            raise UserError(
                f"Kafka {release} sets the delivery limit for the whole broker (a group config from 4.3): its drives "
                f"run with {BROKER_DELIVERY_LIMIT}, the trace's is {limit}"
            )

    @classmethod
    def settings_for(cls, release: Release) -> dict[str, str]:
        if release >= GROUP_DELIVERY_LIMIT:
            return dict(cls.settings)
        return {**cls.settings, "group.share.delivery.count.limit": str(BROKER_DELIVERY_LIMIT)}

    @classmethod
    def glued(cls, actions: Sequence[Action | None]) -> int | None:
        """An acknowledgement's (or a session release's) write is answered before the broker answers it."""
        last = actions[-1]
        if last is None or last.name != "WriteShareGroupStateResponse":
            return None
        return next((i for i in range(len(actions) - 2, 0, -1) if _writes(actions[i])), None)

    @classmethod
    def check_trace(cls, actions: list[Action]) -> None:
        for i, action in enumerate(actions):
            if _named(action, "LeaderChange") and not action.args["writesLanded"]:
                raise UserError(
                    f"step {i}: a leader change that fences the old leader's writes needs a write in flight, "
                    "which the broker never leaves between requests"
                )
            if action is None or action.name != "WriteShareGroupStateResponse":
                continue
            if action.args["error"] != "NONE":
                raise UserError(
                    f"step {i}: a failed write to the share coordinator needs the share coordinator unavailable "
                    "while the leader writes: not driven"
                )
            if not _writes(actions[i - 1]):
                raise UserError(
                    f"step {i}: the write's answer does not directly follow its acknowledgement: the broker "
                    "answers the acknowledgement only once the write is answered"
                )

    def __init__(self, session: Session, model: Model, initial: Any) -> None:
        self.session = session
        self.model = model
        self.group = f"kmc-drive-share-{uuid.uuid4().hex[:12]}"
        self.topic = f"{self.group}-topic"
        self.topic_id: Any = None
        self.leader = -1
        self.coordinator = -1
        self.real_ids = {member_id(c): str(uuid.uuid4()) for c in range(model.config.consumers)}
        self.stopped_nodes: list[int] = []
        self.session_epochs: dict[int, int] = {}
        """consumer -> the epoch its next request on its share session carries"""
        self.epochs = EpochNames()

    # -- setup -------------------------------------------------------------------------------------
    def setup(self) -> None:
        session = self.session
        session.create_topic(self.topic, 1, REPLICAS)
        described = session.describe_topic(self.topic)
        if described is None:
            raise UserError(f"topic {self.topic} has no id in the metadata")
        self.topic_id = described.topicId()
        self.leader = session.until("elect the topic's leader", lambda: session.leaders(self.topic, 1))[PARTITION]
        producer = session.connection("producer", self.leader)
        for record in range(self.model.config.records):
            data = produce_request(self.topic, PARTITION, batch(record, -1, -1, -1), -1)
            answer = producer.call("PRODUCE", data, min(NAMES_UP_TO, producer.version("PRODUCE")))
            if produce_answer(answer) != ("NONE", record):
                raise UserError(f"writing record {record} failed: {produce_answer(answer)}")
        configs = {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": str(LOCK_DURATION_MS)}
        if Release.parse(session.release) >= GROUP_DELIVERY_LIMIT:
            configs["share.delivery.count.limit"] = str(self.model.config.delivery_count_limit)
        session.set_configs(GROUP_RESOURCE, self.group, configs)
        self.coordinator = session.find_coordinator(self.group, 0)
        # the share coordinator of the partition's state, loaded (its topic is made on first use)
        session.find_coordinator(f"{self.group}:{self.topic_id}:{PARTITION}", SHARE_COORDINATOR_KEY)
        for c in range(self.model.config.consumers):
            self._join(c)

    def _join(self, consumer: int) -> None:
        """ShareGroupHeartbeat until the consumer's member is assigned the partition."""
        real = self.real_ids[member_id(consumer)]
        epoch = [0]

        def attempt() -> bool | None:
            request = message("ShareGroupHeartbeatRequestData").setGroupId(self.group).setMemberId(real)
            request.setMemberEpoch(epoch[0])
            if epoch[0] == 0:
                request.setSubscribedTopicNames(java_list([self.topic]))
            conn = self.session.connection(f"heartbeat-{consumer}", self.coordinator)
            answer = conn.call("SHARE_GROUP_HEARTBEAT", request)
            error = error_name(answer.errorCode())
            if error in RETRIABLE:  # the coordinator moved or is loading: ask again
                self.coordinator = self.session.find_coordinator(self.group, 0)
                return None
            if error != "NONE":
                raise UserError(f"consumer {consumer} could not join the share group: {error}")
            epoch[0] = int(answer.memberEpoch())
            assignment = answer.assignment()
            if assignment is None:
                return None
            return True if any(t.topicId().equals(self.topic_id) for t in assignment.topicPartitions()) else None

        self.session.until(f"assign the partition to consumer {consumer}", attempt, JOIN_TIMEOUT_S)

    def _connection(self, consumer: int) -> Connection:
        return self.session.connection(f"consumer-{consumer}", self.leader)

    def _session_epoch(self, consumer: int) -> int:
        epoch = self.session_epochs.get(consumer, 0)
        self.session_epochs[consumer] = 1 if epoch == 0 else epoch + 1
        return epoch

    # -- steps -------------------------------------------------------------------------------------
    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        args = action.args
        if action.name == "ShareFetch":
            return self._share_fetch(args["consumer"], args["first"], args["last"], after)
        if action.name == "ShareAcknowledge":
            return self._acknowledge(args["consumer"], args["offset"], args["acknowledgeType"], args["error"])
        if action.name == "WriteShareGroupStateResponse":
            return Performed(requests=["(answered inside the broker before its acknowledgement)"])
        if action.name == "LeaderChange":
            return self._leader_change()
        if action.name == "ShareSessionRelease":
            return self._release_session(args["consumer"])
        raise UserError(f"the share-group driver has no mapping for {action.name}")

    def _share_fetch(self, consumer: int, first: int, last: int, after: Any) -> Performed:
        """ShareFetch until it acquires something or ``FETCH_ATTEMPTS`` answers came back empty: an empty
        answer (a share partition still loading on a new leader) is no step of the model's, and a client
        fetches again."""
        for _attempt in range(FETCH_ATTEMPTS):
            performed = self._share_fetch_once(consumer, first, last, after)
            if performed.answered["acquired"] or performed.answered["error"] != "NONE" or first < 0:
                break
        return performed

    def _share_fetch_once(self, consumer: int, first: int, last: int, after: Any) -> Performed:
        epoch = self._session_epoch(consumer)
        request = message("ShareFetchRequestData").setGroupId(self.group)
        request.setMemberId(self.real_ids[member_id(consumer)]).setShareSessionEpoch(epoch)
        fetch_records = self.model.config.max_fetch_records
        request.setMaxWaitMs(5_000).setMinBytes(1).setMaxBytes(1 << 20)
        request.setMaxRecords(fetch_records).setBatchSize(fetch_records)
        partition = message("ShareFetchRequestData$FetchPartition").setPartitionIndex(PARTITION)
        topic = message("ShareFetchRequestData$FetchTopic").setTopicId(self.topic_id)
        topic.partitions().add(partition)
        request.topics().add(topic)
        answer = self._connection(consumer).call("SHARE_FETCH", request)
        acquired: list[list[int]] = []
        error = error_name(answer.errorCode())
        for topic_answer in answer.responses():
            for p in topic_answer.partitions():
                if p.errorCode() != 0:
                    error = error_name(p.errorCode())
                for r in p.acquiredRecords():
                    acquired.extend(
                        [o, int(r.deliveryCount())] for o in range(int(r.firstOffset()), int(r.lastOffset()) + 1)
                    )
        expected = [] if first < 0 else [[o, after.records[o].deliveryCount] for o in range(first, last + 1)]
        sent = f"ShareFetch(shareSessionEpoch={epoch}, maxRecords={fetch_records})"
        return Performed(
            requests=[sent],
            answered={"error": error, "acquired": acquired},
            expected={"error": "NONE", "acquired": expected},
        )

    def _acknowledge(self, consumer: int, offset: int, ack_type: str, error: str) -> Performed:
        epoch = self._session_epoch(consumer)
        request = message("ShareAcknowledgeRequestData").setGroupId(self.group)
        request.setMemberId(self.real_ids[member_id(consumer)]).setShareSessionEpoch(epoch)
        ack = message("ShareAcknowledgeRequestData$AcknowledgementBatch").setFirstOffset(offset).setLastOffset(offset)
        ack.setAcknowledgeTypes(_bytes([ACKNOWLEDGE_TYPE[ack_type]]))
        partition = message("ShareAcknowledgeRequestData$AcknowledgePartition").setPartitionIndex(PARTITION)
        partition.acknowledgementBatches().add(ack)
        topic = message("ShareAcknowledgeRequestData$AcknowledgeTopic").setTopicId(self.topic_id)
        topic.partitions().add(partition)
        request.topics().add(topic)
        answer = self._connection(consumer).call("SHARE_ACKNOWLEDGE", request)
        answered = error_name(answer.errorCode())
        for topic_answer in answer.responses():
            for p in topic_answer.partitions():
                if p.errorCode() != 0:
                    answered = error_name(p.errorCode())
        sent = f"ShareAcknowledge(shareSessionEpoch={epoch}, offset={offset}, {ack_type})"
        return Performed(requests=[sent], answered={"error": answered}, expected={"error": error}, deferred=True)

    def _release_session(self, consumer: int) -> Performed:
        """ShareFetch with the final epoch (-1): the leader closes the share session and releases what the
        consumer holds; the consumer's next ShareFetch opens a new session."""
        request = message("ShareFetchRequestData").setGroupId(self.group)
        request.setMemberId(self.real_ids[member_id(consumer)]).setShareSessionEpoch(FINAL_EPOCH)
        request.setMaxWaitMs(0).setMinBytes(0).setMaxBytes(0).setMaxRecords(0).setBatchSize(0)
        answer = self._connection(consumer).call("SHARE_FETCH", request)
        self.session_epochs[consumer] = 0
        sent = "ShareFetch(shareSessionEpoch=-1)"
        error = error_name(answer.errorCode())
        return Performed(requests=[sent], answered={"error": error}, expected={"error": "NONE"}, deferred=True)

    def _leader_change(self) -> Performed:
        old = self.leader
        # a crash: a controlled shutdown would first release each share session, writing the acquired
        # records back with their delivery counts, which the model's leader change does not do
        self.session.stop_node(old, signal.SIGKILL, "a leader change")
        self.stopped_nodes.append(old)
        self.session.down = set(self.stopped_nodes)
        for c in list(self.session_epochs):
            self.session.close_connection(f"consumer-{c}")
        self.session_epochs.clear()  # the new leader has no share session: each consumer opens one

        def moved() -> int | None:
            leaders = self.session.leaders(self.topic, 1)
            return None if leaders is None or leaders[PARTITION] in (old, -1) else leaders[PARTITION]

        self.leader = self.session.until("elect a new leader for the partition", moved)
        if self.coordinator == old:
            self.coordinator = self.session.find_coordinator(self.group, 0)
        return Performed(requests=[f"(node {old}, the partition's leader, killed; node {self.leader} leads it)"])

    # -- projections -------------------------------------------------------------------------------
    def expected(self, state: Any) -> dict[str, Any]:
        return {"persistedStartOffset": state.persistedStartOffset}

    def observed(self) -> dict[str, Any]:
        request = message("DescribeShareGroupOffsetsRequestData")
        group = message("DescribeShareGroupOffsetsRequestData$DescribeShareGroupOffsetsRequestGroup")
        group.setGroupId(self.group)
        topic = message("DescribeShareGroupOffsetsRequestData$DescribeShareGroupOffsetsRequestTopic")
        topic.setTopicName(self.topic).setPartitions(_ints([PARTITION]))
        group.setTopics(java_list([topic]))
        request.setGroups(java_list([group]))
        answer = self.session.connection("describe", self.coordinator).call("DESCRIBE_SHARE_GROUP_OFFSETS", request)
        for g in answer.groups():
            for t in g.topics():
                for p in t.partitions():
                    if p.errorCode() != 0:
                        return {"error": error_name(p.errorCode())}
                    # -1: the share coordinator has no state for it yet (no fetch has initialised it)
                    return {"persistedStartOffset": max(int(p.startOffset()), 0)}
        return {"persistedStartOffset": 0}

    def close(self) -> None:
        self.session.close()
        self.session.start_nodes(self.stopped_nodes)
        self.stopped_nodes.clear()


def _named(action: Action | None, name: str) -> bool:
    return action is not None and action.name == name


def _writes(action: Action | None) -> bool:
    """Whether the step sends the write whose answer the broker waits for before it answers."""
    return _named(action, "ShareAcknowledge") or _named(action, "ShareSessionRelease")


def _bytes(values: list[int]) -> Any:
    from kmc.cluster.drive.wire import java

    return java("java.util.ArrayList")([java("java.lang.Byte")(v) for v in values])


def _ints(values: list[int]) -> Any:
    from kmc.cluster.drive.wire import java_ints

    return java_ints(values)
