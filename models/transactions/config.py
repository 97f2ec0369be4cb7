"""The transactions model's config: every flag named after the KIP or JIRA that changed the
behaviour, the presets that bundle them, and the names of every action's arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kmc.checker import Preset, param

ACTION_ARGS = {
    "InitProducerId": ("client",),
    "BeginTransaction": ("client",),
    "AddPartitionsToTxn": ("client", "partition"),
    "Produce": ("client", "partition"),
    "AddOffsetsToTxn": ("client", "partition"),
    "TxnOffsetCommit": ("client", "partition"),
    "BeginCommit": ("client",),
    "EndTxn": ("client", "commit"),
    "AbortLocally": ("client",),
    "RequestTimeout": ("client", "api", "partition"),
    "HandleInitProducerIdResponse": ("client",),
    "HandleAddPartitionsToTxnResponse": ("client", "partition"),
    "HandleProduceResponse": ("client", "partition"),
    "HandleEndTxnResponse": ("client",),
    "HandleInitProducerId": ("client",),
    "FenceAppendFails": ("client",),
    "HandleAddPartitionsToTxn": ("client", "partition"),
    "HandleEndTxn": ("client", "commit", "producerEpoch"),
    "HandleVerifyPartition": ("partition",),
    "HandleWriteTxnMarkersResponse": ("partition",),
    "WriteTxnCompletion": (),
    "TxnTimeout": (),
    "AbortTimedOutTransaction": (),
    "CoordinatorFailover": (),
    "LoadTxnStatePartition": ("partition",),
    "HandleProduce": ("partition", "client", "producerEpoch", "txn"),
    "HandleVerifyResponse": ("partition",),
    "HandleWriteTxnMarkers": ("partition", "commit", "coordinatorEpoch"),
    "ExpireProducer": ("partition",),
    "ConsumerFetch": ("partition",),
    "DelayFetch": ("partition",),
    "CompleteDelayedFetch": ("partition",),
}
"""Every action of the model and the names of its arguments."""


FAULTS = (
    "RequestTimeout",
    "TxnTimeout",
    "CoordinatorFailover",
    "LoadTxnStatePartition",
    "ExpireProducer",
    "FenceAppendFails",
)


Delivery = Literal["fifo", "any"]


@dataclass(frozen=True)
class TransactionsConfig:
    producers: int = param(
        1, "producer incarnations with the transactional id (the second fences the first)", min=1, max=2
    )
    partitions: int = param(2, "data partitions", min=1, max=3)
    offsets: bool = param(False, "sendOffsetsToTransaction: the consumer-offsets partition joins as one more partition")
    max_transactions: int = param(2, "transactions the applications begin in all", min=1, max=4)
    max_request_timeouts: int = param(1, "times a producer gives up on a request in flight", min=0, max=3)
    delivery_timeouts: bool = param(
        True,
        "a batch may expire (delivery.timeout.ms) with its produce in flight or not yet sent; False: only "
        "request.timeout.ms, which resends an EndTxn",
    )
    max_txn_timeouts: int = param(0, "times the coordinator aborts a transaction that timed out", min=0, max=2)
    max_failovers: int = param(
        0, "coordinator failovers (a new leader of the __transaction_state partition)", min=0, max=2
    )
    max_expirations: int = param(
        0,
        "times a partition leader expires the producer's state (ProducerStateManager.removeExpiredProducers)",
        min=0,
        max=2,
    )
    kafka_9144: bool = param(
        True,
        "KAFKA-9144 (2.4.1): a leader times the producer's state from its last write, markers included (before: "
        "from its last data batch, which a marker that bumped the epoch clears, so the state expired at once)",
    )
    max_state_loads: int = param(
        0,
        "times the coordinator's broker loads or unloads another __transaction_state partition, holding the "
        "state lock, just as a transaction's last marker is acknowledged",
        min=0,
        max=2,
    )
    max_fence_append_failures: int = param(
        0,
        "times the append of an epoch fence (InitProducerId on an open transaction) to __transaction_state fails: "
        "fewer in-sync replicas than min.insync.replicas, the client told COORDINATOR_NOT_AVAILABLE",
        min=0,
        max=3,
    )
    kafka_9666: bool = param(
        True,
        "KAFKA-9666 (2.6.0): a fence whose append failed keeps its epoch in memory and the retry does not bump it "
        "again (hasFailedEpochFence; before: every retry bumped it, towards exhaustion)",
    )
    kafka_9777: bool = param(
        True,
        "KAFKA-9777 (2.6.0): the completion after the last marker is checked under the transaction's own lock "
        "(before: a DelayedTxnMarker that found the state lock held gave up, and the transaction stayed prepared)",
    )
    delivery: Delivery = param("any", "fifo: each connection delivers in order; any: any message may be delayed")
    verification: bool = param(True, "KIP-890 part 1 (KAFKA-14561): leaders verify a partition is in the transaction")
    verification_guard: bool = param(True, "KAFKA-14884: a verification races no marker (unique guard)")
    transaction_version: int = param(2, "2: KIP-890 part 2 (KAFKA-14562), epoch bump per transaction", min=0, max=2)
    kafka_18464: bool = param(
        True, "KAFKA-18464 (4.0): TV 2's EndTxn answers a pending completion before it checks the epoch"
    )
    kip_360: bool = param(
        True,
        "KIP-360 (KAFKA-8805, 2.5): after a batch's abortable error a transaction-version-0/1 client aborts, "
        "then bumps its own epoch (InitProducerId with its producer id and epoch)",
    )
    kafka_6119: bool = param(
        True,
        "KAFKA-6119 (0.11.0.2): the coordinator fences the producer's epoch before it aborts a timed-out transaction",
    )
    kafka_18575: bool = param(
        True,
        "KAFKA-18575 (4.0.0): under transaction version 2 a marker keeps a verification guard made at its own "
        "epoch (before: every marker cleared the guard, and the next transaction's first record, verified while "
        "the previous markers were written, was refused INVALID_TXN_STATE)",
    )
    kafka_19367: bool = param(
        True,
        "KAFKA-19367 (4.0.1): under transaction version 2 the fence of an open transaction and its abort share "
        "one epoch bump (before: the fenced epoch was installed, then the abort bumped it again)",
    )
    initial_producer_epoch: int = param(
        -1,
        "the epoch the transactional id's producer id has reached before the model starts (-1: a new "
        "transactional id); 32764, Short.MaxValue - 3, brings epoch exhaustion within two transactions",
        min=-1,
        max=32766,
    )
    kafka_18660: bool = param(
        True,
        "KAFKA-18660 (4.0.0): under transaction version 2 an EndTxn that exhausts the epoch is answered with the "
        "rotated producer id at epoch 0, and a pending completion is answered before the producer id is checked "
        "(before: the answer carried the old id at Short.MaxValue, and the producer's next request was refused "
        "INVALID_PRODUCER_ID_MAPPING)",
    )
    kafka_20090: bool = param(
        True,
        "KAFKA-20090 (4.3.0): the coordinator's abort of a fenced transaction rotates an exhausted producer id "
        "too, and an abort or fence at Short.MaxValue keeps it (before: a timeout at Short.MaxValue - 1 left the "
        "producer id at Short.MaxValue, where the next transaction could neither commit nor be aborted)",
    )
    consumer: bool = param(False, "a read_committed consumer fetches up to the LSO")
    kafka_5355: bool = param(
        True,
        "KAFKA-5355 (0.11.0.0): a fetch that waited in the purgatory completes read_committed (before: read "
        "uncommitted, up to the high watermark)",
    )
    kafka_5376: bool = param(
        True,
        "KAFKA-5376 (0.11.0.0): a fetch that waited in the purgatory keeps the aborted-transaction list in its "
        "answer (before: dropped, and the consumer returns aborted records)",
    )

    def __post_init__(self) -> None:
        if self.transaction_version >= 2 and not self.verification:
            raise ValueError("transaction_version 2 adds partitions through the leader's verification")
        if self.initial_producer_epoch != -1 and not self.verification:
            raise ValueError(
                "initial_producer_epoch needs verification: without it a late record of a rotated producer id "
                "could open a transaction beside the new id's, and the model reads a log one producer id at a time"
            )


_PROPS = (
    "AtomicVisibility",
    "AbortedNeverVisible",
    "ReadCommittedBoundedByLso",
    "ReadCommittedSeesOnlyCommitted",
    "OpenTransactionKnownToCoordinator",
    "CoordinatorEpochNeverRegresses",
    "LegalCoordinatorTransition",
    "UniqueLiveProducerIdentity",
    "TransactionFailsOnlyByAFault",
    "TransactionCompletes",
    "LastStableOffsetAdvances",
    "FencedOnlyByANewerProducer",
)


_ALL_HOLD = {name: "holds" for name in _PROPS}


_TV1 = {"transaction_version": 1}
_EXHAUSTION = {"partitions": 1, "initial_producer_epoch": 32764, "max_transactions": 3, "max_txn_timeouts": 1}
_TWO_INCARNATIONS = {"producers": 2, "partitions": 1, "max_transactions": 1, "max_request_timeouts": 0}
"""Two incarnations of the transactional id, one partition, one transaction each, no request timeout:
the bounds of the bugs where the second one's InitProducerId fences the first one's transaction."""
_EPOCH_FENCE_AT_THE_LIMIT = {
    **_TWO_INCARNATIONS,
    "max_txn_timeouts": 1,
    "initial_producer_epoch": 32765,
    "kafka_20090": False,
}
"""The first one's transaction open at Short.MaxValue - 1, before KAFKA-20090 (4.0.x)."""

PRESETS = {
    "kip-890-part-2": Preset.of(
        "Kafka 4.x with transaction version 2: leaders verify and add partitions, every transaction bumps the epoch",
        _ALL_HOLD,
    ),
    "kip-890-part-1": Preset.of(
        "Kafka 3.6-3.9 (transaction version 1 with verification): a batch that expires after commitTransaction() "
        "aborts without an epoch bump, and its delayed produce joins the next transaction of the same epoch",
        {
            **_ALL_HOLD,
            "AbortedNeverVisible": "violated",
            "AtomicVisibility": "violated",
            "FencedOnlyByANewerProducer": "violated",
        },
        **_TV1,
    ),
    "kafka-17754": Preset.of(
        "kip-890-part-1 where only an EndTxn is resent (request.timeout.ms), no batch expires: the late copy of "
        "a commit ends the next transaction of the same epoch early, which is then torn or aborted with data visible "
        "(Jepsen, 2024)",
        {
            **_ALL_HOLD,
            "AbortedNeverVisible": "violated",
            "AtomicVisibility": "violated",
            "FencedOnlyByANewerProducer": "violated",
        },
        **_TV1,
        delivery_timeouts=False,
    ),
    "pre-kafka-14884": Preset.of(
        "kip-890-part-1 without the verification guard: an answer that raced the abort marker opens a hanging "
        "transaction",
        {
            "OpenTransactionKnownToCoordinator": "violated",
            "LastStableOffsetAdvances": "violated",
            "AbortedNeverVisible": "violated",
            "AtomicVisibility": "violated",
            "FencedOnlyByANewerProducer": "violated",
        },
        **_TV1,
        verification_guard=False,
    ),
    "pre-kip-890": Preset.of(
        "Kafka before 3.6 (KIP-98 as built): a produce delayed past the abort marker opens a transaction the "
        "coordinator never heard of, and the LSO hangs",
        {
            "OpenTransactionKnownToCoordinator": "violated",
            "LastStableOffsetAdvances": "violated",
            "AbortedNeverVisible": "violated",
            "AtomicVisibility": "violated",
        },
        **_TV1,
        verification=False,
    ),
    "pre-kafka-6119": Preset.of(
        "Kafka 0.11.0.0-0.11.0.1: the coordinator aborts a timed-out transaction at the producer's epoch; the "
        "producer is not fenced and its later records open a transaction the coordinator does not know",
        {
            **_ALL_HOLD,
            "OpenTransactionKnownToCoordinator": "violated",
            "AtomicVisibility": "violated",
            "LastStableOffsetAdvances": "violated",
        },
        **_TV1,
        verification=False,
        kip_360=False,
        kafka_6119=False,
        max_txn_timeouts=1,
        max_request_timeouts=0,
    ),
    "pre-kafka-9144": Preset.of(
        "Kafka 2.4.0, one transaction, a coordinator timeout and failover: the timeout's abort marker bumps the "
        "producer's epoch, the leader expires the producer's state at once, and then takes a record of the "
        "fenced epoch (a hanging transaction) or the old coordinator's late marker (the coordinator epoch regresses)",
        {
            **_ALL_HOLD,
            "CoordinatorEpochNeverRegresses": "violated",
            "OpenTransactionKnownToCoordinator": "violated",
            "AtomicVisibility": "violated",
            "LastStableOffsetAdvances": "violated",
        },
        **_TV1,
        verification=False,
        kip_360=False,
        max_transactions=1,
        max_request_timeouts=0,
        max_txn_timeouts=1,
        max_failovers=1,
        max_expirations=1,
        kafka_9144=False,
    ),
    "pre-kafka-9777": Preset.of(
        "Kafka 2.5, no fault but a load of another __transaction_state partition as the last marker is "
        "acknowledged: the DelayedTxnMarker cannot take the state lock and gives up, and the transaction stays "
        "prepared (every request of the producer is answered CONCURRENT_TRANSACTIONS) until a reload",
        {**_ALL_HOLD, "TransactionCompletes": "violated"},
        **_TV1,
        verification=False,
        max_request_timeouts=0,
        max_state_loads=1,
        kafka_9777=False,
    ),
    "pre-kafka-18464": Preset.of(
        "kip-890-part-2 as first written: an EndTxn at the bumped epoch during the previous transaction's "
        "markers is told PRODUCER_FENCED, and the producer fences itself",
        {**_ALL_HOLD, "FencedOnlyByANewerProducer": "violated"},
        kafka_18464=False,
        kafka_18660=False,
    ),
    "pre-kafka-18575": Preset.of(
        "kip-890-part-2 as first written, with no fault: the next transaction's first record is verified while "
        "the previous commit's marker is written, the marker clears the guard, and the leader refuses the record "
        "the coordinator has just added (INVALID_TXN_STATE)",
        {**_ALL_HOLD, "TransactionFailsOnlyByAFault": "violated"},
        max_request_timeouts=0,
        kafka_18575=False,
        kafka_18660=False,
    ),
    "failover": Preset.of(
        "kip-890-part-2 with one coordinator failover (one transaction): the new coordinator reloads "
        "__transaction_state and resends the markers of a prepared transaction",
        _ALL_HOLD,
        max_transactions=1,
        max_failovers=1,
    ),
    "read-committed": Preset.of(
        "kip-890-part-2 on one partition with a read_committed consumer fetching up to the LSO, through a "
        "coordinator failover",
        _ALL_HOLD,
        partitions=1,
        consumer=True,
        max_failovers=1,
    ),
    "pre-kafka-5355": Preset.of(
        "read-committed without KAFKA-5355 (0.11.0.0) and its failover: a read_committed fetch that waited in the "
        "purgatory completes as read_uncommitted, and the consumer is given records of an open transaction",
        {
            **_ALL_HOLD,
            "ReadCommittedBoundedByLso": "violated",
            "ReadCommittedSeesOnlyCommitted": "violated",
            "AbortedNeverVisible": "violated",
        },
        partitions=1,
        consumer=True,
        kafka_5355=False,
    ),
    "pre-kafka-5376": Preset.of(
        "read-committed without KAFKA-5376 (0.11.0.0) and its failover: a fetch that waited in the purgatory loses "
        "the aborted-transaction list, and the consumer is given the records of an aborted transaction",
        {**_ALL_HOLD, "ReadCommittedSeesOnlyCommitted": "violated", "AbortedNeverVisible": "violated"},
        partitions=1,
        consumer=True,
        kafka_5376=False,
    ),
    "zombie": Preset.of(
        "kip-890-part-2 with a second producer incarnation that fences the first (InitProducerId)",
        _ALL_HOLD,
        producers=2,
        max_transactions=1,
        max_request_timeouts=0,
    ),
    "offsets": Preset.of(
        "kip-890-part-2 with sendOffsetsToTransaction: the consumer-offsets partition is one of the transaction's, "
        "through a coordinator failover",
        _ALL_HOLD,
        partitions=1,
        offsets=True,
        max_transactions=1,
        max_failovers=1,
    ),
    "epoch-exhaustion": Preset.of(
        "kip-890-part-2 on one partition, its transactional id two epochs from Short.MaxValue, with a coordinator "
        "timeout: the epoch is exhausted and the producer id rotated by an EndTxn or by the timeout's abort",
        _ALL_HOLD,
        **_EXHAUSTION,
    ),
    "pre-kafka-20090": Preset.of(
        "epoch-exhaustion before KAFKA-20090 (4.0.0-4.2): the timeout's abort at Short.MaxValue - 1 does not rotate "
        "the producer id, the producer's late abort is answered as a retry at Short.MaxValue, and its next "
        "transaction can neither commit (the epoch would overflow) nor be aborted (the fence throws): the LSO hangs",
        {**_ALL_HOLD, "LastStableOffsetAdvances": "violated"},
        **_EXHAUSTION,
        kafka_20090=False,
    ),
    "pre-kafka-18660": Preset.of(
        "epoch-exhaustion as first written for transaction version 2 (fixed by KAFKA-18660 before 4.0.0 shipped): "
        "the EndTxn that exhausts the epoch answers with the old producer id at Short.MaxValue, and the producer's "
        "next transaction is refused INVALID_PRODUCER_ID_MAPPING",
        {**_ALL_HOLD, "FencedOnlyByANewerProducer": "violated", "TransactionFailsOnlyByAFault": "violated"},
        **_EXHAUSTION,
        kafka_18660=False,
    ),
    "pre-kafka-9666": Preset.of(
        "Kafka 2.5 under transaction version 1 (the leaders' verification on, which the fence does not use): a "
        "second producer's InitProducerId fences the first one's open transaction two epochs from Short.MaxValue, "
        "the fence's append fails twice, and each retry bumps the epoch again, to Short.MaxValue, where the fence "
        "throws: the open transaction can never be aborted and the LSO hangs",
        {**_ALL_HOLD, "LastStableOffsetAdvances": "violated"},
        **_TV1,
        **_TWO_INCARNATIONS,
        initial_producer_epoch=32764,
        max_fence_append_failures=2,
        kafka_9666=False,
        kafka_20090=False,
    ),
    "pre-kafka-19367": Preset.of(
        "Kafka 4.0.0 under transaction version 2: a second producer's InitProducerId finds the first one's "
        "transaction open at Short.MaxValue - 1; the fence sets Short.MaxValue and the abort bumps once more, past "
        "it: the request fails UNKNOWN_SERVER_ERROR (fatal), the fenced epoch stays in memory and fences the first "
        "producer's commit, and the coordinator's timeout cannot fence it again: the LSO hangs",
        {**_ALL_HOLD, "LastStableOffsetAdvances": "violated"},
        **_EPOCH_FENCE_AT_THE_LIMIT,
        kafka_19367=False,
    ),
    "kafka-19367": Preset.of(
        "Kafka 4.0.1 (KAFKA-19367): the abort's own bump is the fence, to Short.MaxValue; the second producer "
        "gets a new producer id once the abort completes, and every property holds at the same bounds",
        _ALL_HOLD,
        **_EPOCH_FENCE_AT_THE_LIMIT,
    ),
    "txn-timeout": Preset.of(
        "kip-890-part-2 where the coordinator times out and aborts an open transaction",
        _ALL_HOLD,
        max_txn_timeouts=1,
        max_request_timeouts=0,
    ),
}
