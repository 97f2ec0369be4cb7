"""The Kafka bugs the consumer-membership presets reproduce: the 3.7 KIP-848 consumer's
reconciliation of a target whose topic names arrive late (KAFKA-16198), against the coordinator of
3.7 and against the one of 3.8 and later."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-16198",
        "A topic id resolved after the member reconciled the other topic makes the newly resolved partitions "
        "alone the assignment to reconcile: the member revokes a partition its target keeps, or never takes one.",
        component="consumer client",
        since="3.7.0",
        fixed_in="3.8.0",
        preset="pre-kafka-16198",
        violates=("RevokesOnlyWhatTheTargetDrops", "EventuallyOwnsTheTarget"),
        fixed_preset="kafka-16198",
    ),
    kafka_bug(
        "KAFKA-16198",
        "Against a coordinator that no longer resends the assignment when owned partitions are reported, "
        "a topic resolved during a reconciliation is never taken: the member owns one topic's partition for good.",
        also=("KAFKA-15832", "KAFKA-16367"),
        component="consumer client",
        since="3.7.0",
        fixed_in="3.8.0",
        preset="pre-kafka-16198-newer-coordinator",
        violates="EventuallyOwnsTheTarget",
        fixed_preset="kafka-15832",
    ),
)
