"""The share-group model's config: the bounds, every fix named after its JIRA, the presets named after
the releases and the bugs, and the names of every action's arguments."""

from __future__ import annotations

from dataclasses import dataclass

from kmc.checker import Preset, param

ACTION_ARGS = {
    "ShareFetch": ("consumer", "first", "last"),
    "ShareAcknowledge": ("consumer", "offset", "acknowledgeType", "error"),
    "WriteShareGroupStateResponse": ("kind", "error"),
    "AcquisitionLockExpire": ("timer",),
    "AcquisitionLockTimeout": ("timer",),
    "LogStartOffsetMove": ("logStartOffset",),
    "LeaderChange": ("writesLanded",),
    "ShareSessionRelease": ("consumer",),
}


@dataclass(frozen=True)
class ShareGroupConfig:
    records: int = param(1, "records in the partition's log (offsets 0 to records - 1)", min=1, max=4)
    consumers: int = param(2, "share consumers of the group (members)", min=1, max=3)
    max_fetch_records: int = param(
        1, "records one ShareFetch acquires at most, under one acquisition lock (maxFetchRecords)", min=1, max=3
    )
    delivery_count_limit: int = param(
        2,
        "group.share.delivery.count.limit: deliveries before a record is archived (Kafka's minimum is 2)",
        min=2,
        max=4,
    )
    max_write_failures: int = param(
        1, "writeShareGroupState answered with an error (the share coordinator unavailable)", min=0, max=3
    )
    max_leader_changes: int = param(
        0,
        "the share partition's leadership moves: the new leader loads what the share coordinator holds "
        "(SharePartition.maybeInitialize)",
        min=0,
        max=2,
    )
    max_session_releases: int = param(
        0,
        "share sessions released (a consumer closes, disconnects or sends the final epoch): the leader "
        "releases what the consumer holds (releaseAcquiredRecords)",
        min=0,
        max=3,
    )
    kafka_19972: bool = param(
        True,
        "KAFKA-19972 (#21092, 4.2.0): a released session's records keep their delivery count, and one at the "
        "limit is archived; before, the release decreased the count and skipped the limit",
    )
    max_log_start_moves: int = param(0, "retention moves the log start offset (one record each)", min=0, max=3)
    kafka_18084: bool = param(True, "KAFKA-18084 (4.0): acquire skips a record whose state transition is in flight")
    kafka_19476_terminal: bool = param(
        True,
        "KAFKA-19476 (#20286, 4.2): a record archived by a log-start move stays archived when the write of its "
        "transition fails",
    )
    kafka_19476_expired_lock: bool = param(
        True,
        "KAFKA-19476 (#20286, #20310, 4.2): a failed write releases a record whose lock expired meanwhile (archived "
        "at the delivery limit) instead of giving it back to its old owner",
    )
    kafka_19476_cancelled_lock: bool = param(
        True,
        "KAFKA-19476 (#20286, 4.2): a lock cancelled before its timeout handler took the partition's lock does nothing",
    )


PROPERTIES = (
    "NoRecordUnderTwoLocks",
    "AcquiredRecordHasLock",
    "AcceptedNeverRedelivered",
    "DeliveryCountBounded",
    "FinishedStaysFinished",
    "PersistedNotOlderThanAccepted",
    "StartOffsetNeverMovesBack",
    "DeliveriesWithinTheLimit",
    "EveryRecordFinished",
)

_ALL_HOLD = {name: "holds" for name in PROPERTIES}

_KAFKA_4_1 = {"kafka_19476_terminal": False, "kafka_19476_expired_lock": False, "kafka_19476_cancelled_lock": False}

PRESETS = {
    "kafka-4.2": Preset.of(
        "Kafka 4.2 and later (4.3.1 is the pinned release): two consumers, one record, one failed write",
        _ALL_HOLD,
    ),
    "kafka-4.2-two-records": Preset.of(
        "Kafka 4.2 and later with two records, whose locks and writes interleave; no failed write",
        _ALL_HOLD,
        records=2,
        max_write_failures=0,
    ),
    "kafka-4.2-log-start": Preset.of(
        "kafka-4.2 with retention moving the log start offset once",
        _ALL_HOLD,
        max_log_start_moves=1,
    ),
    "kafka-4.2-stale-available": Preset.of(
        "kafka-4.2-log-start with two records and one consumer: an acceptance whose write fails after its lock ran "
        "out and the log start passed it leaves the record AVAILABLE below the SPSO, where every later fetch "
        "starts (found in the model; Kafka's SharePartition takes every step, oracle share-partition)",
        {"EveryRecordFinished": "violated"},
        records=2,
        consumers=1,
        max_log_start_moves=1,
    ),
    "kafka-4.2-start-offset-back": Preset.of(
        "Kafka 4.2 and later, two records, one consumer, no failed write, the log start moving twice: the write "
        "of an acceptance completes after the log start passed the whole cache, and the SPSO moves back to just "
        "after the cache (found in the model; Kafka's SharePartition takes every step, oracle share-partition)",
        {"StartOffsetNeverMovesBack": "violated"},
        records=2,
        consumers=1,
        max_log_start_moves=2,
        max_write_failures=0,
    ),
    "kafka-4.2-leader-change": Preset.of(
        "Kafka 4.2 and later, one record, one consumer, the partition's leader crashing once: the new leader "
        "loads the delivery count last written, and an acquisition is never written, so the record is "
        "delivered more times than the limit (confirmed on brokers 4.2.1 to 4.4.0)",
        {
            "DeliveriesWithinTheLimit": "violated",
            "FinishedStaysFinished": "violated",
            "StartOffsetNeverMovesBack": "violated",
        },
        consumers=1,
        max_leader_changes=1,
    ),
    "kafka-4.2-session-release": Preset.of(
        "Kafka 4.2 and later, one record, one consumer whose share session is released twice: each release "
        "keeps the record's delivery count, and the limit archives it",
        _ALL_HOLD,
        consumers=1,
        max_write_failures=0,
        max_session_releases=2,
    ),
    "pre-kafka-19972": Preset.of(
        "before KAFKA-19972 (4.1): releasing a consumer's share session decreases the delivery count of what "
        "it held, so a record whose consumer keeps closing is delivered past the limit",
        {"DeliveriesWithinTheLimit": "violated"},
        consumers=1,
        max_write_failures=0,
        max_session_releases=2,
        kafka_19972=False,
    ),
    "kafka-4.1": Preset.of(
        "Kafka 4.1.0 to 4.1.2: before the three fixes of KAFKA-19476; one failed write, one log-start move",
        {"AcquiredRecordHasLock": "violated", "FinishedStaysFinished": "violated", "EveryRecordFinished": "violated"},
        **_KAFKA_4_1,
        max_log_start_moves=1,
    ),
    "pre-kafka-19476-terminal": Preset.of(
        "only the first race of KAFKA-19476: a failed write gives back a record a log-start move archived",
        {"FinishedStaysFinished": "violated"},
        kafka_19476_terminal=False,
        max_log_start_moves=1,
    ),
    "pre-kafka-19476-expired-lock": Preset.of(
        "only the second race of KAFKA-19476: a lock that expires during a transition whose write fails",
        {"AcquiredRecordHasLock": "violated", "EveryRecordFinished": "violated"},
        kafka_19476_expired_lock=False,
    ),
    "pre-kafka-19476-cancelled-lock": Preset.of(
        "only the third race of KAFKA-19476: a cancelled lock's timeout handler runs after all",
        {"NoRecordUnderTwoLocks": "violated"},
        kafka_19476_cancelled_lock=False,
        max_write_failures=0,
        delivery_count_limit=3,
    ),
    "pre-kafka-18084": Preset.of(
        "before KAFKA-18084 (fixed before 4.0 shipped): a fetch acquires a record whose release is still being "
        "written, and the write's completion cancels the new lock",
        {"AcquiredRecordHasLock": "violated"},
        kafka_18084=False,
        **_KAFKA_4_1,
        max_write_failures=0,
    ),
}
