"""The Kafka bugs the share-group presets reproduce: races inside a share partition's leader between
the acquisition-lock timer, the share coordinator's answers and log-start moves (KAFKA-18084, the
three of KAFKA-19476), the delivery count a session release took back (KAFKA-19972), and the model's
own findings."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-19476",
        "A log-start move archives a record whose RELEASE is being written; the write fails and its rollback "
        "hands the archived record, gone from the log, back to its consumer as ACQUIRED.",
        component="share partition",
        since="4.0.0",
        fixed_in="4.2.0",
        preset="pre-kafka-19476-terminal",
        violates="FinishedStaysFinished",
        fixed_preset="kafka-4.2-log-start",
    ),
    kafka_bug(
        "KAFKA-19476",
        "The acquisition lock runs out while an ACCEPT is being written; the write fails and the rollback makes "
        "the record ACQUIRED again under the expired lock, so no timeout ever releases it.",
        component="share partition",
        since="4.0.0",
        fixed_in="4.2.0",
        preset="pre-kafka-19476-expired-lock",
        violates=("AcquiredRecordHasLock", "EveryRecordFinished"),
        fixed_preset="kafka-4.2",
    ),
    kafka_bug(
        "KAFKA-19476",
        "An acquisition lock cancelled after its timer fired still runs its handler, which releases the record's "
        "next acquisition, so two consumers hold the record under live locks.",
        component="share partition",
        since="4.0.0",
        fixed_in="4.2.0",
        preset="pre-kafka-19476-cancelled-lock",
        violates="NoRecordUnderTwoLocks",
        fixed_preset="kafka-4.2",
        fixed_settings={"delivery_count_limit": 3, "max_write_failures": 0},
    ),
    kafka_bug(
        "finding",
        "Acquisitions are never written to the share coordinator, so a new leader after a crash loads the "
        "deliveryCount last written and hands a record out once more than the delivery limit allows.",
        component="share partition",
        since="4.0.0",
        fixed_in=None,
        preset="kafka-4.2-leader-change",
        violates="DeliveriesWithinTheLimit",
    ),
    kafka_bug(
        "finding",
        "An ACCEPT whose write completes after the log start passed the whole cache sets the share-partition "
        "start offset to just after the cache, moving it back.",
        component="share partition",
        since="4.0.0",
        fixed_in=None,
        preset="kafka-4.2-start-offset-back",
        violates="StartOffsetNeverMovesBack",
    ),
    kafka_bug(
        "KAFKA-19972",
        "Releasing a share session takes one delivery off the deliveryCount of each record its consumer held and "
        "skips the limit check, so a record whose consumer keeps closing is delivered past the limit.",
        component="share partition",
        since="4.1.0",
        fixed_in="4.2.0",
        preset="pre-kafka-19972",
        violates="DeliveriesWithinTheLimit",
        fixed_preset="pre-kafka-19972",
        fixed_settings={"kafka_19972": True},
    ),
    kafka_bug(
        "finding",
        "A failed write of an ACCEPT whose lock ran out, after the log start passed the record, leaves it "
        "AVAILABLE below the start offset: every later fetch starts there and the start offset never moves.",
        component="share partition",
        since="4.2.0",
        fixed_in=None,
        preset="kafka-4.2-stale-available",
        violates="EveryRecordFinished",
    ),
    kafka_bug(
        "KAFKA-18084",
        "A fetch acquires a record whose RELEASE is still being written, and the write's completion cancels the "
        "new acquisition lock, leaving the record ACQUIRED with no lock: caught before 4.0 shipped.",
        component="share partition",
        since=None,
        fixed_in="4.0.0",
        preset="pre-kafka-18084",
        violates="AcquiredRecordHasLock",
        fixed_preset="kafka-4.2",
        fixed_settings={"max_write_failures": 0},
    ),
)
