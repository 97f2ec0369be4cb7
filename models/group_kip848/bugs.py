"""The Kafka bugs the group-kip848 presets reproduce: KIP-848's early-access reconciliation of 3.7,
and the race of a stale owned report that the model found and real brokers from 3.8 on confirm."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-16147",
        "A revoking member whose new target gives back partitions it is revoking takes them back at once, "
        "and their partition epochs are lost: a joining member is given a partition its owner still holds.",
        also=("KAFKA-16249",),
        component="group coordinator",
        since="3.7.0",
        fixed_in="3.8.0",
        preset="pre-kafka-16147",
        violates="NoDoubleClientAssignment",
        fixed_preset="pre-kafka-16615",
    ),
    kafka_bug(
        "finding",
        "A ConsumerGroupHeartbeat listing the owned partitions of the last completed reconciliation, sent "
        "while the consumer takes more, lets the coordinator give one of those to another member.",
        also=("KAFKA-16615", "KAFKA-19449", "KAFKA-19974"),
        component="group coordinator",
        since="3.8.0",
        fixed_in=None,
        preset="kip-848",
        violates="NoDoubleClientAssignment",
    ),
)
