"""The share-group-membership driver: the model's share consumers played against a real group
coordinator with ShareGroupHeartbeat, the group read back with ShareGroupDescribe, and the share
partitions whose state is initialized read back with DescribeShareGroupOffsets.

The driver is the model's client: each HandleHeartbeat step sends the heartbeat the trace's consumer
holds at that moment (its member epoch, its subscription or null, -1 to leave) and compares the
coordinator's answer -- its error, the member epoch, and the partitions or their absence (null:
unchanged) -- with the model's. A lost response is an answer the driver does not pass on.

A heartbeat that finds subscribed partitions not initialized has the group coordinator ask the
share coordinator to initialize them at once, inside the broker (``persisterInitialize``). So the
model's ``InitializeShareGroupState`` step is taken right after the heartbeat that sent it
(``glued``): the heartbeat's answer is compared at once and the broker's state after the
initialization, once DescribeShareGroupOffsets lists the partitions (a trace that takes no initialization
right after such a heartbeat is compared at its next step, where the broker has initialized: it diverges
there). Kafka's assignor walks
partitions in the hash order of their topics' ids, which the broker draws at random: the driver
creates its topics again (new names) until their ids give every target of the trace the model's
answer, computed with the model's ids. A failed or
unanswered initialization, the retry and assignment intervals, session timeouts and added partitions
are timers or faults inside the broker, and are not driven. Sessions last longer than any drive,
and from 4.3 the assignment interval is 0, so the coordinator moves only when a request reaches it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model
from kmc.cluster.drive.base import EpochNames, Performed
from kmc.cluster.drive.session import Session
from kmc.cluster.drive.wire import Connection, error_name, java_list, message
from kmc.cluster.release import Release
from kmc.models.common.java_order import Uuid
from kmc.models.share_group_membership.assignor import SimpleAssignorError, assign
from kmc.models.share_group_membership.drawing import partitions_text
from kmc.models.share_group_membership.model import member_id
from kmc.models.share_group_membership.state import INITIALIZED, LEAVE_EPOCH, Heartbeat, Partitions

SESSION_TIMEOUT_MS = 60_000
INITIALIZE_RETRY_INTERVAL_MS = 600_000
TOPIC_ATTEMPTS = 40
"""Sets of topics created before one whose ids walk as the model's do (about half do, for two topics)."""
FIRST_SHARE_GROUPS = Release(4, 1, 0)
PRODUCTION_SHARE_GROUPS = Release(4, 2, 0)
"""Share groups are a preview in 4.1 (switched on by ``group.share.enable``) and production-ready,
on by default, from 4.2."""
ASSIGNMENT_INTERVAL = Release(4, 3, 0)
"""``group.share.assignment.interval.ms`` (KAFKA-20291) exists from 4.3."""
RETRY_INTERVAL = Release(4, 2, 0)
"""``group.share.initialize.retry.interval.ms`` (KAFKA-19457) exists from 4.2."""


class ShareGroupMembershipDriver:
    model_name = "share-group-membership"
    settings: ClassVar[dict[str, str]] = {
        "group.share.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "group.share.max.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    }
    not_driven: ClassVar[dict[str, str]] = {
        "SessionTimeout": "expiring one member while the others stay as they are needs their heartbeats, which "
        "move the group; not driven yet",
        "InitializeRetryIntervalElapses": "the retry interval is a timer inside the group coordinator",
        "AssignmentIntervalElapses": "the assignment interval is a timer inside the group coordinator",
        "CreatePartitions": "not driven yet",
    }
    unseen = (
        "group.targetAssignment, metadataHash, assignmentDue, previousMemberEpoch: ShareGroupDescribe does "
        "not show them",
        "shareGroupStatePartitionMetadata.initializingTopics, staleInitializingTopics, initializeRequests: kept "
        "inside the coordinators (the initialized partitions are compared)",
        "consumers: the consumers' own state, held by the driver (it is the model's client)",
        "faults, lostResponses, subscriptionChanges, initializeFailures: the model's counters",
    )
    unseen_properties: ClassVar[dict[str, str]] = {}
    max_drive_s = SESSION_TIMEOUT_MS / 2000
    settle_s = 0.0

    @classmethod
    def check_release(cls, release: Release, model: Any) -> None:
        release.require(FIRST_SHARE_GROUPS, "share groups (ShareGroupHeartbeat, a preview in 4.1) need")
        if model.config.kafka_20291:
            raise UserError(
                "the trace's coordinator computes a target at most once per assignment interval, a timer inside "
                "the broker: drives run with the interval 0 (a trace with kafka_20291=False)"
            )

    @classmethod
    def settings_for(cls, release: Release) -> dict[str, str]:
        settings = dict(cls.settings)
        if release < PRODUCTION_SHARE_GROUPS:
            settings["group.share.enable"] = "true"
        if release >= RETRY_INTERVAL:
            settings["group.share.initialize.retry.interval.ms"] = str(INITIALIZE_RETRY_INTERVAL_MS)
        if release >= ASSIGNMENT_INTERVAL:
            settings["group.share.assignment.interval.ms"] = "0"
        return settings

    @classmethod
    def glued(cls, actions: Sequence[Action | None]) -> int | None:
        """An initialization is taken by the broker right after the heartbeat that asked for it."""
        last = actions[-1]
        if last is None or last.name != "InitializeShareGroupState":
            return None
        return next((i for i in range(len(actions) - 2, 0, -1) if _heartbeat_handled(actions[i])), None)

    @classmethod
    def check_trace(cls, actions: list[Action]) -> None:
        for i, action in enumerate(actions):
            if action is None or action.name != "InitializeShareGroupState":
                continue
            if action.args["error"] != INITIALIZED:
                raise UserError(
                    f"step {i}: a failed or unanswered initialization needs the share coordinator unavailable: "
                    "not driven"
                )
            if not _heartbeat_handled(actions[i - 1]):
                raise UserError(
                    f"step {i}: the initialization does not directly follow a heartbeat: the broker initializes "
                    "the partitions as soon as the heartbeat that found them is handled"
                )

    def __init__(self, session: Session, model: Model, initial: Any) -> None:
        self.session = session
        self.model = model
        self.group = f"kmc-drive-share-membership-{uuid.uuid4().hex[:12]}"
        self.topics = {t: f"{self.group}-{t}" for t, _ in initial.partitionCounts}
        self.model_topics = {real: t for t, real in self.topics.items()}
        self.topic_ids: dict[str, str] = {}
        """Each real topic's id, as the answers name it, by the real topic's name."""
        self.partition_counts = dict(initial.partitionCounts)
        self.coordinator = -1
        self.real_ids = {member_id(c): member_id(c) for c in range(model.config.consumers)}
        """The member id each consumer keeps (KAFKA-18392): the model's own, in a group of the drive's own. The
        assignor walks the members in Java's hash order of their ids, which the model reproduces for its ids
        (a random UUID per member would give another order, and another assignment, on each drive)."""
        self.model_ids = {real: model_id for model_id, real in self.real_ids.items()}
        self.epochs = EpochNames()

    # -- setup -------------------------------------------------------------------------------------
    def setup(self) -> None:
        for attempt in range(TOPIC_ATTEMPTS):
            self.topics = {t: f"{self.group}-{t}-{attempt}" for t in self.partition_counts}
            self.model_topics = {real: t for t, real in self.topics.items()}
            ids: dict[str, Uuid] = {}
            for topic, real in self.topics.items():
                self.session.create_topic(real, self.partition_counts[topic], 1)
                topic_id = self.session.describe_topic(real).topicId()
                self.topic_ids[real] = str(topic_id)
                ids[topic] = Uuid(int(topic_id.getMostSignificantBits()), int(topic_id.getLeastSignificantBits()))
            if self._walks_as_the_model(ids):
                break
        else:
            raise UserError(
                f"no topics in {TOPIC_ATTEMPTS} attempts had ids that Kafka's assignor walks as the model's"
            )
        self.coordinator = self.session.find_coordinator(self.group, 0)
        loaded = ("NONE", "GROUP_ID_NOT_FOUND")
        self.session.until("load the group's coordinator", lambda: True if self._describe()[0] in loaded else None)

    def _walks_as_the_model(self, ids: dict[str, Uuid]) -> bool:
        """Whether these topic ids give every target the trace computed the model's answer."""
        for (members, counts, assignable), target in self.model.assignor_calls().items():  # type: ignore[attr-defined]
            try:
                answer = assign(members, dict(counts), assignable, topic_ids=ids)
            except SimpleAssignorError:
                return False
            if tuple(sorted(answer.items())) != target:
                return False
        return True

    def _connection(self, consumer: int) -> Connection:
        return self.session.connection(f"consumer-{consumer}", self.coordinator)

    # -- steps -------------------------------------------------------------------------------------
    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        args = action.args
        if action.name == "HandleHeartbeat":
            return self._heartbeat(args["consumer"], before, after)
        if action.name == "InitializeShareGroupState":
            wanted = after.shareGroupStatePartitionMetadata.initializedTopics
            self.session.until(
                f"the share coordinator initializes {args['partitions']}",
                lambda: True if wanted <= self._initialized() else None,
            )
            return Performed(requests=["(InitializeShareGroupState, sent by the group coordinator itself)"])
        if action.name == "HeartbeatResponseLost":
            return Performed(requests=["(the answer is dropped: the consumer never reads it)"])
        if action.name == "ConsumerCrash":
            self.session.close_connection(f"consumer-{args['consumer']}")
            return Performed(requests=["(the consumer's connection closed; it sends nothing more)"])
        return Performed()

    def _heartbeat(self, consumer: int, before: Any, after: Any) -> Performed:
        heartbeat: Heartbeat = before.consumers[consumer].request
        answer = self._connection(consumer).call("SHARE_GROUP_HEARTBEAT", self._request(heartbeat))
        error = error_name(answer.errorCode())
        shown: dict[str, Any] = {"error": error}
        if error == "NONE" and heartbeat.memberEpoch != LEAVE_EPOCH:
            shown["memberEpoch"] = int(answer.memberEpoch())
            assignment = answer.assignment()
            shown["partitions"] = "unchanged" if assignment is None else partitions_text(self._named(assignment))
        response = after.consumers[consumer].response
        expected: dict[str, Any] = {}
        if response is not None:  # a stopped consumer's heartbeat: the model does not say what it is answered
            expected = {"error": response.error}
            if response.error == "NONE" and heartbeat.memberEpoch != LEAVE_EPOCH:
                expected["memberEpoch"] = response.memberEpoch
                expected["partitions"] = partitions_text(response.assignment)
        topics = "null" if heartbeat.subscribedTopicNames is None else ",".join(sorted(heartbeat.subscribedTopicNames))
        sent = f"ShareGroupHeartbeat(memberEpoch={heartbeat.memberEpoch}, subscribedTopicNames={topics})"
        # a heartbeat that asks for an initialization: the broker goes on to initialize at once, so its state is
        # compared after the initialization the trace takes next (glued)
        initializes = len(after.initializeRequests) > len(before.initializeRequests)
        return Performed(requests=[sent], answered=shown if expected else {}, expected=expected, deferred=initializes)

    def _request(self, heartbeat: Heartbeat) -> Any:
        request = message("ShareGroupHeartbeatRequestData").setGroupId(self.group)
        request.setMemberId(self.real_ids[heartbeat.memberId]).setMemberEpoch(self.epochs.broker(heartbeat.memberEpoch))
        if heartbeat.subscribedTopicNames is not None:
            request.setSubscribedTopicNames(java_list([self.topics[t] for t in sorted(heartbeat.subscribedTopicNames)]))
        return request

    def _named(self, assignment: Any) -> Partitions:
        """The partitions of a heartbeat's assignment, by the model's topic names (the answer names topic ids)."""
        names = {topic_id: real for real, topic_id in self.topic_ids.items()}
        return frozenset(
            (self.model_topics[names[str(t.topicId())]], int(p))
            for t in assignment.topicPartitions()
            for p in t.partitions()
        )

    # -- projections -------------------------------------------------------------------------------
    def expected(self, state: Any) -> dict[str, Any]:
        group = state.group
        members = {
            m.memberId: {
                "memberEpoch": m.memberEpoch,
                "subscribedTopicNames": ",".join(sorted(m.subscribedTopicNames)),
                "assignment": partitions_text(m.assignedPartitions),
            }
            for m in group.members
        }
        shown: dict[str, Any] = {"groupEpoch": group.groupEpoch, "members": members}
        if group.groupEpoch:
            shown["assignmentEpoch"] = group.assignmentEpoch
        shown["initialized"] = partitions_text(state.shareGroupStatePartitionMetadata.initializedTopics)
        return shown

    def observed(self) -> dict[str, Any]:
        error, described = self._describe()
        if error == "GROUP_ID_NOT_FOUND":
            return {"groupEpoch": 0, "members": {}, "initialized": partitions_text(self._initialized())}
        if error != "NONE":
            return {"error": error}
        members = {
            self.model_ids.get(str(m.memberId()), f"(unknown member {m.memberId()})"): {
                "memberEpoch": int(m.memberEpoch()),
                "subscribedTopicNames": ",".join(sorted(self.model_topics[str(t)] for t in m.subscribedTopicNames())),
                "assignment": partitions_text(self._described(m.assignment())),
            }
            for m in described.members()
        }
        return {
            "groupEpoch": int(described.groupEpoch()),
            "assignmentEpoch": int(described.assignmentEpoch()),
            "members": members,
            "initialized": partitions_text(self._initialized()),
        }

    def _described(self, assignment: Any) -> Partitions:
        return frozenset(
            (self.model_topics[str(t.topicName())], int(p))
            for t in assignment.topicPartitions()
            for p in t.partitions()
        )

    def _describe(self) -> tuple[str, Any]:
        request = message("ShareGroupDescribeRequestData").setGroupIds(java_list([self.group]))
        answer = self.session.connection("describe", self.coordinator).call("SHARE_GROUP_DESCRIBE", request)
        described = answer.groups().get(0)
        error = error_name(described.errorCode())
        return error, described if error == "NONE" else None

    def _initialized(self) -> Partitions:
        """The partitions DescribeShareGroupOffsets lists when asked for all: those whose state is initialized."""
        group = message("DescribeShareGroupOffsetsRequestData$DescribeShareGroupOffsetsRequestGroup")
        group.setGroupId(self.group).setTopics(None)
        request = message("DescribeShareGroupOffsetsRequestData").setGroups(java_list([group]))
        answer = self.session.connection("describe", self.coordinator).call("DESCRIBE_SHARE_GROUP_OFFSETS", request)
        found: set[tuple[str, int]] = set()
        for g in answer.groups():
            for t in g.topics():
                topic = self.model_topics.get(str(t.topicName()))
                if topic is None:
                    continue
                found |= {(topic, int(p.partitionIndex())) for p in t.partitions() if p.errorCode() == 0}
        return frozenset(found)

    def close(self) -> None:
        self.session.close()


def _heartbeat_handled(action: Action | None) -> bool:
    return action is not None and action.name == "HandleHeartbeat" and action.args["error"] == "NONE"
