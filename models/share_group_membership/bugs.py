"""The Kafka bugs the share-group-membership presets reproduce: a share group rejoin fenced by its
own epochs (KAFKA-19233) and rebalances computed again for unsubscribed topics (KAFKA-19468)."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-19233",
        "A share consumer whose heartbeat responses were lost rejoins with memberEpoch 0, which is neither its "
        "epoch nor its previous one, and is fenced at every rejoin until its session times out.",
        component="share group coordinator",
        since="4.0.0",
        fixed_in="4.2.0",
        preset="pre-kafka-19233",
        violates="EveryMemberJoins",
        fixed_preset="lost-responses",
    ),
    kafka_bug(
        "KAFKA-19468",
        "Once a member stops subscribing to a topic whose partitions are initialized, every heartbeat of the "
        "group bumps the group epoch and computes the same target assignment again.",
        component="share group coordinator",
        since="4.1.0",
        fixed_in="4.2.0",
        preset="pre-kafka-19468",
        violates="NoRebalanceWithoutCause",
        fixed_preset="kafka-4.2",
    ),
)
