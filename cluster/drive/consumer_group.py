"""A KIP-848 consumer group as the drivers speak to it: ConsumerGroupHeartbeat, ConsumerGroupDescribe
and the partitions of its topics named by their ids, with the model's member ids mapped to the real ones.

Shared by the drivers of ``group-kip848``, ``consumer-membership`` and ``consumer-delivery``'s KIP-848
traces. A partition is (topic index, partition): the models' topics are numbered from 0.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.cluster.drive.session import Session
from kmc.cluster.drive.wire import Connection, error_name, java_ints, java_list, message
from kmc.cluster.release import FIRST_4X, Release

REBALANCE_TIMEOUT_MS = 300_000
SESSION_TIMEOUT_MS = 60_000
FIRST_KIP848 = Release(3, 7, 0)
KIP848_SETTINGS = {
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "false",
    "group.consumer.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "group.consumer.max.session.timeout.ms": str(SESSION_TIMEOUT_MS),
}
"""Sessions and revocations longer than any drive, and the assignor run at once on the coordinator's
thread (no offload): the broker moves only when a request reaches it."""


def kip848_settings(release: Release) -> dict[str, str]:
    """Before 4.0 the KIP-848 protocol is switched on (3.7 and 3.8: early access; 3.7 also marks
    ConsumerGroupDescribe unstable)."""
    if release >= FIRST_4X:
        return dict(KIP848_SETTINGS)
    extra = {"group.coordinator.rebalance.protocols": "classic,consumer"}
    if release < Release(3, 8, 0):
        extra["unstable.api.versions.enable"] = "true"
    return {**KIP848_SETTINGS, **extra}


class Kip848Protocol:
    """What a driver speaking the KIP-848 protocol needs of a release: 3.7 or later, with the
    protocol switched on before 4.0 (``kip848_settings``)."""

    settings: ClassVar[dict[str, str]] = KIP848_SETTINGS

    @classmethod
    def check_release(cls, release: Release, model: Any) -> None:
        release.require(FIRST_KIP848, "the KIP-848 protocol (ConsumerGroupHeartbeat, early access in 3.7) needs")

    @classmethod
    def settings_for(cls, release: Release) -> dict[str, str]:
        return kip848_settings(release)


class ConsumerGroup:
    """One group of the driver's own, subscribed to topics of its own, on its coordinator."""

    def __init__(self, session: Session, prefix: str, topics: int = 1) -> None:
        self.session = session
        self.group = f"{prefix}-{uuid.uuid4().hex[:12]}"
        self.topics = [f"{self.group}-topic"] + [f"{self.group}-topic-{t + 1}" for t in range(1, topics)]
        self.topic = self.topics[0]
        self.topic_ids: list[Any] = []
        self.coordinator = -1
        self.real_ids: dict[str, str] = {}
        """model member id -> the member id the broker knows"""
        self.model_ids: dict[str, str] = {}

    @property
    def topic_id(self) -> Any:
        return self.topic_ids[0]

    def create(self, partitions: int) -> None:
        """The topics (one replica per partition) and the group's coordinator, loaded."""
        for topic in self.topics:
            self.session.create_topic(topic, max(partitions, 1), 1)
            described = self.session.describe_topic(topic)
            if described is None:
                raise UserError(f"topic {topic} has no id in the metadata")
            self.topic_ids.append(described.topicId())
        self.coordinator = self.session.find_coordinator(self.group, 0)
        loaded = ("NONE", "GROUP_ID_NOT_FOUND")
        self.session.until("load the group's coordinator", lambda: True if self.describe()[0] in loaded else None)

    def connection(self, consumer: int) -> Connection:
        return self.session.connection(f"consumer-{consumer}", self.coordinator)

    # -- requests ------------------------------------------------------------------------------------
    def heartbeat(
        self, consumer: int, member_id: str, member_epoch: int, owned: Iterable[tuple[int, int]] | None
    ) -> Any:
        """ConsumerGroupHeartbeat of the model's member (``""`` and epoch 0 to join, subscribing to every
        topic) with its owned partitions (None: not sent); the answer's member id is learnt for a join."""
        joining = member_epoch == 0
        real = self._member_id_to_join(consumer) if joining and member_id == "" else self.real_id(member_id)
        request = message("ConsumerGroupHeartbeatRequestData").setGroupId(self.group).setMemberId(real)
        request.setMemberEpoch(member_epoch)
        if joining:
            request.setRebalanceTimeoutMs(REBALANCE_TIMEOUT_MS).setSubscribedTopicNames(java_list(self.topics))
        if owned is not None:
            request.setTopicPartitions(java_list(self.topic_partitions(owned)))
        return self.connection(consumer).call("CONSUMER_GROUP_HEARTBEAT", request)

    def learn(self, model_id: str, real: str) -> None:
        self.real_ids[model_id] = real
        self.model_ids[real] = model_id

    def _member_id_to_join(self, consumer: int) -> str:
        # v1 (Kafka 4.0, KIP-1082): the client makes its member id; v0: the coordinator does
        generated = self.connection(consumer).version("CONSUMER_GROUP_HEARTBEAT") >= 1
        return str(uuid.uuid4()) if generated else ""

    def real_id(self, model_id: str) -> str:
        real = self.real_ids.get(model_id)
        if real is None:
            # a member id the broker never gave: one the broker cannot know
            real = str(uuid.uuid4())
            self.learn(model_id, real)
        return real

    def model_id(self, real: str) -> str:
        return self.model_ids.get(real, f"(unknown member {real})")

    def describe(self) -> tuple[str, Any]:
        """ConsumerGroupDescribe's error for the group and, when it is NONE, the group."""
        request = message("ConsumerGroupDescribeRequestData").setGroupIds(java_list([self.group]))
        answer = self.session.connection("describe", self.coordinator).call("CONSUMER_GROUP_DESCRIBE", request)
        described = answer.groups().get(0)
        error = error_name(described.errorCode())
        return error, described if error == "NONE" else None

    def offset_commit_topic(self) -> Any:
        """OffsetCommit's entry for the group's topic: by name, and by id too from 4.1 (version 10)."""
        topic = message("OffsetCommitRequestData$OffsetCommitRequestTopic").setName(self.topic)
        if hasattr(topic, "setTopicId"):
            topic.setTopicId(self.topic_id)
        return topic

    # -- partitions ----------------------------------------------------------------------------------
    def topic_partitions(self, partitions: Iterable[tuple[int, int]]) -> list[Any]:
        by_topic: dict[int, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        entries = []
        for topic, numbers in sorted(by_topic.items()):
            entry = message("ConsumerGroupHeartbeatRequestData$TopicPartitions").setTopicId(self.topic_ids[topic])
            entries.append(entry.setPartitions(java_ints(sorted(numbers))))
        return entries

    def assignment(self, topic_partitions: Any) -> set[tuple[int, int]]:
        """(topic index, partition) of each partition named; a topic not the group's is index -1."""
        found: set[tuple[int, int]] = set()
        for entry in topic_partitions:
            topic = next((t for t, known in enumerate(self.topic_ids) if entry.topicId().equals(known)), -1)
            found.update((topic, int(p)) for p in entry.partitions())
        return found

    def partitions(self, topic_partitions: Any) -> set[int]:
        """The partitions of the group's first topic (-1 for any of another topic)."""
        return {partition if topic == 0 else -1 for topic, partition in self.assignment(topic_partitions)}
