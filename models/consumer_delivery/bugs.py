"""The Kafka bugs the consumer-delivery presets reproduce: zombie transactions before KIP-447 and its
two halves, the classic coordinator's late transactional offsets, the consumer clients' auto-commit
and revocation races, and commits refused for an epoch the member has not heard of yet."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KIP-447",
        "With a producer per consumer, TxnOffsetCommit carries no member id or generation and OffsetFetch "
        "ignores pending offsets, so an expelled consumer's transaction commits after the handover.",
        component="group coordinator",
        since="0.11.0",
        fixed_in="2.5.0",
        preset="eos-pre-kip-447-zombie",
        violates="ExactlyOnce",
        fixed_preset="eos-v2",
    ),
    kafka_bug(
        "KAFKA-17507",
        "The classic group coordinator answers WriteTxnMarkers before it materialises the transaction's "
        "offsets, so the scheduled completion commits offsets the producer's next, still open, transaction sent.",
        component="group coordinator",
        since="2.0.0",
        fixed_in="3.9.1",
        preset="eos-v2-pre-kafka-17507",
        violates="ExactlyOnce",
        fixed_preset="eos-v2-pre-kafka-17507",
        fixed_settings={"kafka_17507": True},
    ),
    kafka_bug(
        "KAFKA-14196",
        "With auto-commit, onJoinPrepare's commit before an eager revocation is asynchronous and poll() keeps "
        "fetching meanwhile; records processed then are not committed and the next owner processes them again.",
        also=("KAFKA-13310",),
        component="consumer client",
        since="3.2.0",
        fixed_in="3.2.3",
        preset="auto-commit-pre-kafka-14196",
        violates="ProcessedAtMostOnce",
        fixed_preset="auto-commit-pre-kafka-14196",
        fixed_settings={"kafka_14196": True},
    ),
    kafka_bug(
        "KIP-1251",
        "A commit sent with the memberEpoch held before a heartbeat response that bumped it is refused "
        "STALE_MEMBER_EPOCH although the member still holds the partition, and the record is processed again.",
        also=("KAFKA-20066",),
        component="group coordinator",
        since="3.7.0",
        fixed_in="4.3.0",
        preset="commit-after-processing-kip-848-pre-kip-1251",
        violates=("AtMostOnce", "NoFalseCommitFencing"),
        fixed_preset="commit-after-processing-kip-848",
    ),
    kafka_bug(
        "KAFKA-18641",
        "The KIP-848 consumer's background thread auto-commits the consumed position at any moment, past "
        "records poll() returned but the application has not processed; a crash then loses them.",
        component="consumer client",
        since="3.7.0",
        fixed_in="4.0.0",
        preset="auto-commit-kip-848-pre-kafka-18641",
        violates="AtLeastOnce",
        fixed_preset="auto-commit-kip-848-pre-kafka-18641",
        fixed_settings={"kafka_18641": True},
    ),
    kafka_bug(
        "KAFKA-20332",
        "The KIP-848 consumer's background thread revokes a partition while poll() returns its buffered "
        "records, so the record is processed by the old member and again by the new one, with no fault.",
        component="consumer client",
        since="4.2.0",
        fixed_in="4.2.1",
        preset="commit-after-processing-kip-848-pre-kafka-20332",
        violates="ProcessedAtMostOnce",
        fixed_preset="commit-after-processing-kip-848-pre-kafka-20332",
        fixed_settings={"kafka_20332": True},
    ),
    kafka_bug(
        "KAFKA-9346",
        "KIP-447 without requireStable: the new owner's OffsetFetch returns the committed offset while the "
        "zombie's transactional offset is pending, and both process the record; no release shipped this half.",
        also=("KIP-447",),
        component="group coordinator",
        since=None,
        fixed_in="2.5.0",
        preset="eos-v2-pre-kafka-9346",
        violates="ExactlyOnce",
        fixed_preset="eos-v2",
    ),
    kafka_bug(
        "KAFKA-9365",
        "KIP-447 without the group metadata in TxnOffsetCommit: the zombie's offsets, sent after the handover, "
        "are accepted from anyone and committed; no release shipped this half.",
        also=("KIP-447",),
        component="group coordinator",
        since=None,
        fixed_in="2.5.0",
        preset="eos-v2-pre-kafka-9365",
        violates="ExactlyOnce",
        fixed_preset="eos-v2",
    ),
)
