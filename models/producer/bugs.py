"""The Kafka bugs the producer presets reproduce: producer state lost to retention and expiry before
KIP-360, and what a leader without state for the producer still lets through since KIP-360."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-5793",
        "A leader that lost an idempotent producer's state to retention answers its next batch "
        "OUT_OF_ORDER_SEQUENCE_NUMBER, so the client fails a healthy send and resets its producerId.",
        component="producer state",
        since="0.11.0",
        fixed_in="1.0.0",
        preset="pre-kafka-5793",
        violates="SendFailsOnlyByTimeout",
        fixed_preset="pre-kafka-5793",
        fixed_settings={"kafka_5793": True},
    ),
    kafka_bug(
        "KAFKA-7190",
        "Retention deletes a written batch together with its producer's state; the retry of that batch, "
        "whose answer was lost, finds no state and is appended a second time.",
        component="producer state",
        since="0.11.0",
        fixed_in="2.4.0",
        preset="pre-kafka-7190",
        violates="NoDuplicates",
        fixed_preset="kafka-7190",
    ),
    kafka_bug(
        "KIP-360",
        "After retention drops the producer state, UNKNOWN_PRODUCER_ID makes the client restart at "
        "sequence 0 in the same producerEpoch; a new leader caching the old batch answers it as a "
        "duplicate: the record is lost.",
        also=("KAFKA-7190", "KAFKA-8710", "KAFKA-8805"),
        component="producer state",
        since="1.0.0",
        fixed_in="2.4.0",
        preset="pre-kip-360",
        violates="AcknowledgedSendNeverLost",
        fixed_preset="kip-360",
    ),
    kafka_bug(
        "KIP-360",
        "A leader that expired an idle transactional producer's state answers its next batch "
        "UNKNOWN_PRODUCER_ID, which the client cannot retry: the producer goes fatal and every pending "
        "send fails.",
        also=("KAFKA-8710", "KAFKA-8805"),
        component="producer client",
        since="1.0.0",
        fixed_in="2.5.0",
        preset="pre-kip-360-transactional",
        violates="ProducerNeverFatal",
        fixed_preset="kip-360-transactional",
    ),
    kafka_bug(
        "KAFKA-14359",
        "A leader without state for the producer appends a later batch at any sequence; the earlier batch, "
        "refused OUT_OF_ORDER_SEQUENCE_NUMBER behind the acknowledged one, is retried until "
        "delivery.timeout.ms.",
        also=("KAFKA-15591",),
        component="producer state",
        since="2.5.0",
        fixed_in="4.5.0",
        preset="kip-360",
        violates="EverySendCompletes",
        fixed_preset="kip-360",
        fixed_settings={"kafka_15591": True},
    ),
    kafka_bug(
        "KAFKA-15591",
        "NOT_ENOUGH_REPLICAS refuses the producer's first batch, the leader, with no state for the "
        "producer, appends the second at sequence 1, and the epoch bump after OUT_OF_ORDER_SEQUENCE_NUMBER "
        "writes the first after it.",
        also=("KAFKA-14312", "KAFKA-19880"),
        component="producer state",
        since="2.5.0",
        fixed_in="4.5.0",
        preset="not-enough-replicas",
        violates="PerProducerOrder",
        fixed_preset="not-enough-replicas",
        fixed_settings={"kafka_15591": True},
    ),
    kafka_bug(
        "finding",
        "A new leader with no state for the producer takes its second batch as its first; "
        "OUT_OF_ORDER_SEQUENCE_NUMBER on the first bumps producerEpoch and renumbers both: reordered, and "
        "the second written twice.",
        also=("KAFKA-15591",),
        component="producer state",
        since="2.5.0",
        fixed_in="4.5.0",
        preset="leader-change",
        violates=("PerProducerOrder", "NoDuplicates"),
        fixed_preset="kafka-15591",
    ),
    kafka_bug(
        "finding",
        "A batch expired at delivery.timeout.ms leaves its sequence unresolved; the next batch, refused "
        "OUT_OF_ORDER_SEQUENCE_NUMBER, is resent under a bumped producerEpoch and its copy on a closed "
        "connection is appended too.",
        component="producer client",
        since="2.5.0",
        fixed_in=None,
        preset="delivery-timeout",
        violates="NoDuplicates",
    ),
    kafka_bug(
        "KAFKA-5494",
        "With one batch cached per producer and two requests in flight, the retry of an older written "
        "batch is refused OUT_OF_ORDER_SEQUENCE_NUMBER and, resent under a bumped producerEpoch, is written "
        "twice.",
        component="producer state",
        since=None,
        fixed_in="1.0.0",
        preset="cache-1",
        violates="NoDuplicates",
        fixed_preset="idempotent",
    ),
    kafka_bug(
        "KAFKA-7190",
        "Once retention drops the state of a newer producerEpoch, a request of the older epoch left on a "
        "closed connection is appended after it: nothing fences the old epoch any more.",
        also=("KIP-360",),
        component="producer state",
        since=None,
        fixed_in="2.4.0",
        preset="zombie",
        violates="EpochFencing",
        fixed_preset="zombie",
        fixed_settings={"kafka_7190": True},
    ),
)
