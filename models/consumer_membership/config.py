"""The consumer-membership model's config: the topics the member is assigned, the fix named after its
JIRA, the presets, and the names of every action's arguments."""

from __future__ import annotations

from dataclasses import dataclass

from kmc.checker import Preset, param

ACTION_ARGS = {
    "Heartbeat": ("memberEpoch", "topicPartitions"),
    "HeartbeatResponse": ("memberEpoch", "assignment"),
    "MetadataUpdate": ("topicIds",),
    "PartitionsRevoked": ("revoked",),
    "PartitionsAssigned": ("assigned",),
    "Poll": (),
}


@dataclass(frozen=True)
class ConsumerMembershipConfig:
    topics: int = param(
        2,
        "topics the member subscribes to; the group coordinator assigns it every partition of each, by topic id",
        min=1,
        max=3,
    )
    partitions: int = param(1, "partitions of each topic", min=1, max=2)
    kafka_16198: bool = param(
        True,
        "KAFKA-16198 (3.8.0): the client keeps the whole target assignment by topic id and reconciles the part "
        "its metadata resolves; before, it kept the unresolved and the resolved parts apart, and a metadata update "
        "made the newly resolved part alone the assignment to reconcile, revoking what it owned",
    )
    kafka_15832: bool = param(
        True,
        "KAFKA-15832 (3.8.0): the membership manager reconciles on its poll, in every iteration of the background "
        "thread while RECONCILING; before, only a new assignment or a metadata update started a reconciliation",
    )
    kafka_16367: bool = param(
        True,
        "KAFKA-16367 (3.8.0): the group coordinator sends the assignment to a joining member, on a full request, or "
        "when it changed; before, also to every heartbeat that reported the member's owned partitions",
    )


PROPERTIES = ("RevokesOnlyWhatTheTargetDrops", "EventuallyOwnsTheTarget")

_CLIENT_3_7 = {"kafka_16198": False, "kafka_15832": False}
"""The KIP-848 consumer of Kafka 3.7 (preview), before both client fixes."""
_COORDINATOR_3_7 = {"kafka_16367": False}

PRESETS = {
    "kafka-15832": Preset.of(
        "the KIP-848 consumer with KAFKA-16198 and KAFKA-15832 (apache/kafka trunk of February and March 2024, before "
        "3.8.0's local epochs) and a coordinator with KAFKA-16367 (3.8.0 and later): two topics whose names the "
        "metadata learns late and in any order; the member reconciles on its poll the part of the target it can "
        "resolve, then the rest",
        {name: "holds" for name in PROPERTIES},
    ),
    "kafka-16198": Preset.of(
        "the KAFKA-16198 fix alone, on Kafka 3.7's client and coordinator: the target kept by topic id, a "
        "reconciliation started by a new assignment or a metadata update, the assignment resent when the member "
        "reports what it owns",
        {name: "holds" for name in PROPERTIES},
        kafka_15832=False,
        **_COORDINATOR_3_7,
    ),
    "pre-kafka-16198": Preset.of(
        "the KIP-848 consumer of Kafka 3.7 (preview): a topic name resolved after the member reconciled the other "
        "topic becomes the whole assignment to reconcile, and the member revokes the partition it owns "
        "(KAFKA-16198)",
        {name: "violated" for name in PROPERTIES},
        **_CLIENT_3_7,
        **_COORDINATOR_3_7,
    ),
    "pre-kafka-16198-newer-coordinator": Preset.of(
        "the KIP-848 consumer of Kafka 3.7 against a group coordinator of 3.8 or later (KAFKA-16367), which sends the "
        "assignment only to a join: the acknowledgement that reports a partial reconciliation is not answered with "
        "the target, and a topic resolved while the reconciliation runs is never taken",
        {name: "violated" for name in PROPERTIES},
        **_CLIENT_3_7,
    ),
}
