"""The share-group-membership model's config: the bounds, every fix named after its JIRA, the presets
named after the releases and the bugs, and every action's arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kmc.checker import Preset, param

ACTION_ARGS = {
    "Subscribe": ("consumer",),
    "ChangeSubscription": ("consumer", "topics"),
    "SendHeartbeat": ("consumer",),
    "HandleHeartbeat": ("consumer", "error"),
    "ReceiveHeartbeat": ("consumer", "error"),
    "HeartbeatResponseLost": ("consumer",),
    "ConsumerCrash": ("consumer",),
    "Unsubscribe": ("consumer",),
    "SessionTimeout": ("memberId",),
    "InitializeShareGroupState": ("partitions", "error"),
    "InitializeRetryIntervalElapses": (),
    "AssignmentIntervalElapses": (),
    "CreatePartitions": ("topic",),
}


@dataclass(frozen=True)
class ShareGroupMembershipConfig:
    consumers: int = param(2, "share consumers, each with its own member id", min=1, max=3)
    topics: int = param(2, "topics t0, t1, ...", min=1, max=2)
    partitions: int = param(1, "partitions of each topic at the start", min=1, max=2)
    subscriptions: Literal["all", "one-each"] = param(
        "all", "what each consumer subscribes to first: every topic, or topic t(c mod topics)"
    )
    kafka_19468: bool = param(
        True,
        "KAFKA-19468 (4.2.0): a heartbeat recomputes the assignment for initialized partitions only when a "
        "subscribed topic's initialized partitions are not all assigned; before, whenever the initialized "
        "partitions of any topic, subscribed or not, differed from the assigned ones",
    )
    kafka_19233: bool = param(
        True,
        "KAFKA-19233 (4.2.0): a member that rejoins with epoch 0 is accepted whatever its epochs; before, it "
        "was fenced unless its previous epoch was 0",
    )
    kafka_20291: bool = param(
        False,
        "KAFKA-20291 (4.3.0), assignment batching: a new target is computed at most once per "
        "group.share.assignment.interval.ms (1 s by default), a heartbeat within it keeps the last target, and "
        "initialized partitions waiting bump the group epoch only while the target is as new as the group; "
        "before, targets were computed at once and the check ran at every heartbeat",
    )
    max_group_epoch: int = param(8, "bound on the group epoch (within_bounds)", min=2, max=12)
    max_subscription_changes: int = param(1, "times a consumer's application changes its subscription", min=0, max=3)
    max_partitions_added: int = param(0, "CreatePartitions: partitions added to topics in all", min=0, max=2)
    max_faults: int = param(0, "share consumers that crash or close (leave the group) in all", min=0, max=3)
    crashes: bool = param(True, "a fault may be a crash (its member left to a session timeout)")
    max_lost_responses: int = param(
        0, "ShareGroupHeartbeat responses lost after the coordinator handled the request", min=0, max=3
    )
    max_initialize_failures: int = param(
        1, "InitializeShareGroupState requests that fail or whose answer is lost", min=0, max=3
    )
    timeouts: Literal["crashed", "any"] = param(
        "crashed",
        "session timeouts: only of crashed consumers' members, or of any member at any moment (a member "
        "fenced at every heartbeat also times out in Kafka, after group.share.session.timeout.ms)",
    )


PROPERTIES = (
    "AssignedPartitionsAreInitialized",
    "AssignmentsFollowSubscriptions",
    "MemberEpochBounded",
    "NoRebalanceWithoutCause",
    "EveryMemberJoins",
    "EveryRebalanceCompletes",
    "EverySubscribedPartitionAssigned",
)


def _expect(**verdicts: str) -> dict[str, str]:
    """Every property holds but those named."""
    return {name: verdicts.get(name, "holds") for name in PROPERTIES}


_KAFKA_4_1 = {"kafka_19468": False, "kafka_19233": False}

PRESETS = {
    "kafka-4.3": Preset.of(
        "Kafka 4.3 (4.3.1 is the pinned release): targets computed at most once per assignment interval",
        _expect(),
        kafka_20291=True,
    ),
    "kafka-4.2": Preset.of("Kafka 4.2: KAFKA-19468 and KAFKA-19233 fixed, no assignment interval", _expect()),
    "kafka-4.1": Preset.of(
        "Kafka 4.1 (preview), with two lost heartbeat responses: before KAFKA-19468 and KAFKA-19233",
        _expect(NoRebalanceWithoutCause="violated", EveryMemberJoins="violated", EveryRebalanceCompletes="violated"),
        **_KAFKA_4_1,
        max_lost_responses=2,
    ),
    "pre-kafka-19468": Preset.of(
        "before KAFKA-19468: once a member stops subscribing to a topic whose partitions are initialized, every "
        "heartbeat of the group bumps its epoch and computes the same assignment again",
        _expect(NoRebalanceWithoutCause="violated"),
        kafka_19468=False,
    ),
    "pre-kafka-19233": Preset.of(
        "before KAFKA-19233, one topic, two lost heartbeat responses: a consumer whose answers were lost rejoins "
        "with epoch 0 and is fenced at every rejoin until its session times out",
        _expect(EveryMemberJoins="violated", EveryRebalanceCompletes="violated"),
        kafka_19233=False,
        topics=1,
        max_lost_responses=2,
    ),
    "lost-responses": Preset.of(
        "Kafka 4.2 on one topic with two lost heartbeat responses: the member rejoins with epoch 0 and is accepted",
        _expect(),
        topics=1,
        max_lost_responses=2,
    ),
    "faults": Preset.of(
        "Kafka 4.3 on one topic with a crash or a close, a partition added and a failed initialization",
        _expect(),
        kafka_20291=True,
        topics=1,
        max_faults=1,
        max_partitions_added=1,
        max_subscription_changes=0,
    ),
}
