"""The Kafka bugs the transactions presets reproduce: the late produce and the late EndTxn that KIP-890
was written for, the coordinator's fences and locks, and transaction version 2 at Short.MaxValue."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-6119",
        "The coordinator aborts a timed-out transaction at the producer's own producerEpoch, so the "
        "producer is not fenced and its late records open a transaction the coordinator never heard of.",
        component="transaction coordinator",
        since="0.11.0",
        fixed_in="0.11.0.2",
        preset="pre-kafka-6119",
        violates=("OpenTransactionKnownToCoordinator", "AtomicVisibility"),
        fixed_preset="pre-kafka-6119",
        fixed_settings={"kafka_6119": True},
    ),
    kafka_bug(
        "KAFKA-9666",
        "Each retry of an InitProducerId whose fence failed to append to __transaction_state bumps "
        "producerEpoch again; at Short.MaxValue the fence throws and the open transaction can never be "
        "aborted.",
        component="transaction coordinator",
        since="0.11.0",
        fixed_in="2.6.0",
        preset="pre-kafka-9666",
        violates="LastStableOffsetAdvances",
        fixed_preset="pre-kafka-9666",
        fixed_settings={"kafka_9666": True},
    ),
    kafka_bug(
        "KIP-890",
        "A produce delayed past its transaction's abort marker opens a transaction the coordinator does "
        "not know: no marker will ever close it, and the partition's lastStableOffset stays behind for good.",
        also=("KAFKA-14402", "KAFKA-14561"),
        component="producer state",
        since="0.11.0",
        fixed_in="3.6.0",
        preset="pre-kip-890",
        violates=("OpenTransactionKnownToCoordinator", "LastStableOffsetAdvances"),
        fixed_preset="kip-890-part-1",
    ),
    kafka_bug(
        "KIP-890",
        "A delayed produce of an ended transaction is appended into the next transaction of the same "
        "producerEpoch and decided with it: a torn transaction, or aborted data read by read_committed.",
        also=("KAFKA-14562",),
        component="transaction coordinator",
        since="0.11.0",
        fixed_in="4.0.0",
        preset="pre-kip-890",
        violates=("AtomicVisibility", "AbortedNeverVisible"),
        fixed_preset="kip-890-part-2",
    ),
    kafka_bug(
        "KAFKA-17754",
        "The late first copy of a resent EndTxn commits the next transaction of the same producerEpoch "
        "early; the rest of that transaction is then torn off, or aborted while read_committed reads its "
        "start.",
        component="transaction coordinator",
        since="0.11.0",
        fixed_in="4.0.0",
        preset="kafka-17754",
        violates=("AtomicVisibility", "AbortedNeverVisible"),
        fixed_preset="kafka-17754",
        fixed_settings={"transaction_version": 2},
    ),
    kafka_bug(
        "KAFKA-9777",
        "The DelayedTxnMarker of a transaction's last marker cannot take the state lock while another "
        "__transaction_state partition loads, gives up, and the transaction stays in PrepareCommit or "
        "PrepareAbort.",
        component="transaction coordinator",
        since="0.11.0.2",
        fixed_in="2.6.0",
        preset="pre-kafka-9777",
        violates="TransactionCompletes",
        fixed_preset="pre-kafka-9777",
        fixed_settings={"kafka_9777": True},
    ),
    kafka_bug(
        "KAFKA-9144",
        "A marker at a bumped producerEpoch clears the producer's batches and their timestamp, so the "
        "leader expires the producer at once; a late produce of the fenced epoch, or an older coordinator's "
        "marker, then gets in.",
        component="producer state",
        since="1.0.0",
        fixed_in="2.4.1",
        preset="pre-kafka-9144",
        violates=("OpenTransactionKnownToCoordinator", "CoordinatorEpochNeverRegresses"),
        fixed_preset="pre-kafka-9144",
        fixed_settings={"kafka_9144": True},
    ),
    kafka_bug(
        "finding",
        "Under transaction version 1, a batch that expires after commitTransaction() turns the commit into "
        "an abort with no producerEpoch bump; its late produce is verified into the next transaction and "
        "committed.",
        component="producer client",
        since="3.6.0",
        fixed_in="4.0.0",
        preset="kip-890-part-1",
        violates=("AbortedNeverVisible", "AtomicVisibility"),
        fixed_preset="kip-890-part-2",
    ),
    kafka_bug(
        "KAFKA-19367",
        "Under transaction version 2, fencing a transaction open at Short.MaxValue - 1 installs the fenced "
        "producerEpoch and the abort bumps it again, past Short.MaxValue: the request fails and nothing can "
        "abort the transaction.",
        component="transaction coordinator",
        since="4.0.0",
        fixed_in="4.0.1",
        preset="pre-kafka-19367",
        violates="LastStableOffsetAdvances",
        fixed_preset="kafka-19367",
    ),
    kafka_bug(
        "KAFKA-20090",
        "Under transaction version 2, the coordinator's timeout abort at Short.MaxValue - 1 keeps the "
        "producerId, and the producer's next transaction, at Short.MaxValue, can neither commit nor be "
        "aborted.",
        component="transaction coordinator",
        since="4.0.0",
        fixed_in="4.3.0",
        preset="pre-kafka-20090",
        violates="LastStableOffsetAdvances",
        fixed_preset="epoch-exhaustion",
    ),
    kafka_bug(
        "KAFKA-5355",
        "A read_committed fetch that waited in the purgatory completes as read_uncommitted, up to the high "
        "watermark, and hands the consumer records of a transaction still open.",
        component="replication",
        since=None,
        fixed_in="0.11.0",
        preset="pre-kafka-5355",
        violates="ReadCommittedSeesOnlyCommitted",
        fixed_preset="pre-kafka-5376",
        fixed_settings={"kafka_5376": True},
    ),
    kafka_bug(
        "KAFKA-5376",
        "A fetch that waited in the purgatory drops the aborted-transaction list from its answer, so a "
        "read_committed consumer returns records of an aborted transaction.",
        component="replication",
        since=None,
        fixed_in="0.11.0",
        preset="pre-kafka-5376",
        violates="AbortedNeverVisible",
        fixed_preset="pre-kafka-5376",
        fixed_settings={"kafka_5376": True},
    ),
    kafka_bug(
        "KAFKA-14884",
        "A produce verified while its transaction was still ongoing is appended after the abort marker "
        "that landed in between: the verification carries no guard, and a hanging transaction opens.",
        component="producer state",
        since=None,
        fixed_in="3.6.0",
        preset="pre-kafka-14884",
        violates="OpenTransactionKnownToCoordinator",
        fixed_preset="kip-890-part-1",
    ),
    kafka_bug(
        "KAFKA-18464",
        "Under transaction version 2, an EndTxn at the bumped producerEpoch that arrives while the previous "
        "commit's markers are written is answered PRODUCER_FENCED, and the producer fences itself.",
        component="transaction coordinator",
        since=None,
        fixed_in="4.0.0",
        preset="pre-kafka-18464",
        violates="FencedOnlyByANewerProducer",
        fixed_preset="kip-890-part-2",
    ),
    kafka_bug(
        "KAFKA-18575",
        "Under transaction version 2, the previous commit's marker clears the verification guard of the "
        "next transaction's first record, and the leader refuses that record INVALID_TXN_STATE with no "
        "fault.",
        also=("KAFKA-18654",),
        component="producer state",
        since=None,
        fixed_in="4.0.0",
        preset="pre-kafka-18575",
        violates="TransactionFailsOnlyByAFault",
        fixed_preset="pre-kafka-18575",
        fixed_settings={"kafka_18575": True},
    ),
    kafka_bug(
        "KAFKA-18660",
        "Under transaction version 2, the EndTxn that exhausts producerEpoch is answered with the old "
        "producerId at Short.MaxValue, and the producer's next transaction is refused "
        "INVALID_PRODUCER_ID_MAPPING.",
        component="transaction coordinator",
        since=None,
        fixed_in="4.0.0",
        preset="pre-kafka-18660",
        violates="FencedOnlyByANewerProducer",
        fixed_preset="epoch-exhaustion",
    ),
)
