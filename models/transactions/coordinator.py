"""The transaction coordinator's decisions, as pure functions of one transactional id's metadata.

Kafka splits the coordinator in two: ``TransactionMetadata`` and ``TransactionState``
(kafka-transaction-coordinator, Java) hold the states, their legal predecessors and the epoch
arithmetic of each transition, and ``TransactionCoordinator`` (core, Scala) validates each request
(producer id, producer epoch, pending transition, state) before it asks the metadata for a
transition. Both halves are written here in our own words, so the ``transactions`` model can use
them and the ``transaction-state`` oracle can compare the first half with Kafka's classes.

A transition is applied atomically: Kafka prepares it (``pendingState``), appends the record to
``__transaction_state`` and completes it once the append is replicated; the model folds the three
into one step, so ``CONCURRENT_TRANSACTIONS`` answers only the states that are pending for the
length of a protocol round (PrepareCommit and PrepareAbort, while markers are written).
"""

from __future__ import annotations

from typing import NamedTuple

EMPTY = "Empty"
ONGOING = "Ongoing"
PREPARE_COMMIT = "PrepareCommit"
PREPARE_ABORT = "PrepareAbort"
COMPLETE_COMMIT = "CompleteCommit"
COMPLETE_ABORT = "CompleteAbort"
DEAD = "Dead"
PREPARE_EPOCH_FENCE = "PrepareEpochFence"
STATES = (EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD, PREPARE_EPOCH_FENCE)

VALID_PREVIOUS_STATES: dict[str, frozenset[str]] = {
    EMPTY: frozenset({EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
    ONGOING: frozenset({ONGOING, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
    PREPARE_COMMIT: frozenset({ONGOING}),
    # Transaction version 2 lets a client abort when it is unsure whether a transaction is open.
    PREPARE_ABORT: frozenset({ONGOING, PREPARE_EPOCH_FENCE, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT}),
    COMPLETE_COMMIT: frozenset({PREPARE_COMMIT}),
    COMPLETE_ABORT: frozenset({PREPARE_ABORT}),
    DEAD: frozenset({EMPTY, COMPLETE_ABORT, COMPLETE_COMMIT}),
    PREPARE_EPOCH_FENCE: frozenset({ONGOING}),
}
"""TransactionState.validPreviousStates: target state -> the states it may be entered from."""
EXPIRATION_ALLOWED = frozenset({EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT})
"""TransactionState.isExpirationAllowed: the transactional id may expire only with no transaction open."""

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
PRODUCER_ID = 0
"""The producer id the coordinator allocates for the model's one transactional id (no epoch exhaustion)."""

NONE = "NONE"
CONCURRENT_TRANSACTIONS = "CONCURRENT_TRANSACTIONS"
PRODUCER_FENCED = "PRODUCER_FENCED"
INVALID_PRODUCER_ID_MAPPING = "INVALID_PRODUCER_ID_MAPPING"
INVALID_TXN_STATE = "INVALID_TXN_STATE"
TRANSACTION_ABORTABLE = "TRANSACTION_ABORTABLE"
INVALID_PRODUCER_EPOCH = "INVALID_PRODUCER_EPOCH"
TRANSACTION_COORDINATOR_FENCED = "TRANSACTION_COORDINATOR_FENCED"


class TxnMeta(NamedTuple):
    """TransactionMetadata of the one transactional id (the fields the protocol's decisions read)."""

    producerId: int
    producerEpoch: int
    lastProducerEpoch: int
    state: str
    topicPartitions: frozenset[int]


class Transit(NamedTuple):
    """What a request did to the metadata: Kafka's error code, the new metadata (None: unchanged),
    the epoch the coordinator answers with, and the prepare method that made it (for the oracle)."""

    error: str
    meta: TxnMeta | None = None
    producerEpoch: int = NO_PRODUCER_EPOCH
    method: str = ""


def is_valid_transition(current: str, target: str) -> bool:
    return current in VALID_PREVIOUS_STATES[target]


def _prepare(meta: TxnMeta, target: str, **changes: object) -> TxnMeta:
    """prepareTransitionTo: refuse a target whose valid predecessors do not include the state."""
    if not is_valid_transition(meta.state, target):
        raise ValueError(f"illegal transition {meta.state} -> {target}")
    return meta._replace(state=target, **changes)


def increment_epoch(meta: TxnMeta, expected_epoch: int = NO_PRODUCER_EPOCH) -> TxnMeta | None:
    """prepareIncrementProducerEpoch. Without an expected epoch: a new incarnation of the producer
    (epoch + 1, no last epoch). With one (KIP-360, a producer bumping its own epoch after an
    error): epoch + 1 remembering the old one as the last epoch, or, when the expected epoch is
    the last one, the same epoch again (a retry whose answer was lost); None for any other epoch
    (PRODUCER_FENCED)."""
    if expected_epoch == NO_PRODUCER_EPOCH:
        return _prepare(
            meta,
            EMPTY,
            producerEpoch=meta.producerEpoch + 1,
            lastProducerEpoch=NO_PRODUCER_EPOCH,
            topicPartitions=frozenset(),
        )
    if meta.producerEpoch in (NO_PRODUCER_EPOCH, expected_epoch):
        return _prepare(
            meta,
            EMPTY,
            producerEpoch=meta.producerEpoch + 1,
            lastProducerEpoch=meta.producerEpoch,
            topicPartitions=frozenset(),
        )
    if expected_epoch == meta.lastProducerEpoch:
        return _prepare(meta, EMPTY, topicPartitions=frozenset())
    return None


def fence_and_abort(meta: TxnMeta, tv2: bool, kafka_19367: bool = True) -> TxnMeta:
    """prepareFenceProducerEpoch (PrepareEpochFence, epoch + 1, never written), then the abort that
    replaces it: endTransaction(ABORT) from the coordinator itself. Transaction version 1 installs
    the fenced epoch and aborts at it. Version 2's abort bumps the epoch itself: since KAFKA-19367
    (4.0.1) that bump is the fence, so the old epoch stays the last one; before, the fenced epoch
    was installed first and the abort bumped once more."""
    _prepare(meta, PREPARE_EPOCH_FENCE)
    if tv2 and kafka_19367:
        return prepare_abort_or_commit(meta, PREPARE_ABORT, True)
    fenced = meta._replace(producerEpoch=meta.producerEpoch + 1, lastProducerEpoch=NO_PRODUCER_EPOCH)
    return prepare_abort_or_commit(fenced, PREPARE_ABORT, tv2)


def abort_timed_out(meta: TxnMeta, tv2: bool, kafka_6119: bool = True, kafka_19367: bool = True) -> TxnMeta:
    """abortTimedOutTransactions: fence the producer, then abort. Before KAFKA-6119 (0.11.0.2) the
    abort kept the producer's epoch, so the producer was not fenced and could go on with the
    transactional id as if its transaction were still open."""
    if kafka_6119:
        return fence_and_abort(meta, tv2, kafka_19367)
    return prepare_abort_or_commit(meta, PREPARE_ABORT, tv2)


def prepare_abort_or_commit(meta: TxnMeta, target: str, tv2: bool) -> TxnMeta:
    """prepareAbortOrCommit: transaction version 2 bumps the epoch with every transaction (KIP-890
    part 2) and remembers the old one as the last epoch."""
    if tv2:
        return _prepare(meta, target, producerEpoch=meta.producerEpoch + 1, lastProducerEpoch=meta.producerEpoch)
    return _prepare(meta, target)


def prepare_complete(meta: TxnMeta) -> TxnMeta:
    """prepareComplete: PrepareCommit -> CompleteCommit, PrepareAbort -> CompleteAbort."""
    target = COMPLETE_COMMIT if meta.state == PREPARE_COMMIT else COMPLETE_ABORT
    return _prepare(meta, target, topicPartitions=frozenset())


def prepare_add_partitions(meta: TxnMeta, partitions: frozenset[int]) -> TxnMeta:
    return _prepare(meta, ONGOING, topicPartitions=meta.topicPartitions | partitions)


# -- request handling (TransactionCoordinator) ------------------------------------------------------
def handle_init_producer_id(
    meta: TxnMeta | None, tv2: bool, expected_epoch: int = NO_PRODUCER_EPOCH, kafka_19367: bool = True
) -> Transit:
    """InitProducerId: a new producer id for an unknown transactional id, else the next epoch; an open
    transaction is first fenced and aborted and the client told to retry. ``expected_epoch`` is the
    epoch a producer sends when it bumps its own epoch after an error (KIP-360); without it the
    request comes from a new producer."""
    if meta is None:
        meta = TxnMeta(PRODUCER_ID, NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, EMPTY, frozenset())
        new = increment_epoch(meta)
        assert new is not None
        return Transit(NONE, new, new.producerEpoch, "prepareIncrementProducerEpoch")
    if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
        return Transit(CONCURRENT_TRANSACTIONS)
    if meta.state == ONGOING:
        return Transit(
            CONCURRENT_TRANSACTIONS,
            fence_and_abort(meta, tv2, kafka_19367),
            NO_PRODUCER_EPOCH,
            "prepareFenceProducerEpoch",
        )
    new = increment_epoch(meta, expected_epoch)
    if new is None:
        return Transit(PRODUCER_FENCED)
    return Transit(NONE, new, new.producerEpoch, "prepareIncrementProducerEpoch")


def handle_add_partitions(
    meta: TxnMeta | None, producerId: int, producerEpoch: int, partitions: frozenset[int]
) -> Transit:
    """AddPartitionsToTxn from a client (TV 0/1) or, under TV 2, from the partition leader on the
    client's behalf (the implicit add of KIP-890 part 2)."""
    if meta is None or meta.producerId != producerId:
        return Transit(INVALID_PRODUCER_ID_MAPPING)
    if meta.producerEpoch != producerEpoch:
        return Transit(PRODUCER_FENCED)
    if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
        return Transit(CONCURRENT_TRANSACTIONS)
    if meta.state == ONGOING and partitions <= meta.topicPartitions:
        return Transit(NONE)
    return Transit(NONE, prepare_add_partitions(meta, partitions), meta.producerEpoch, "prepareAddPartitions")


def handle_verify(meta: TxnMeta | None, producerId: int, producerEpoch: int, partition: int) -> str:
    """handleVerifyPartitionsInTransaction (KIP-890 part 1): is the partition in the open transaction?"""
    if meta is None or meta.producerId != producerId:
        return INVALID_PRODUCER_ID_MAPPING
    if meta.producerEpoch != producerEpoch:
        return PRODUCER_FENCED
    if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
        return CONCURRENT_TRANSACTIONS
    return NONE if partition in meta.topicPartitions else TRANSACTION_ABORTABLE


def handle_end_txn(
    meta: TxnMeta | None, producerId: int, producerEpoch: int, commit: bool, tv2: bool, kafka_18464: bool = True
) -> Transit:
    """EndTxn from the client: endTransactionWithTV1 or, under transaction version 2, endTransaction
    with its retry rules (an exact retry carries the epoch before the bump). PrepareCommit and
    PrepareAbort always have their completion pending here (the coordinator prepares it before it
    answers the EndTxn that wrote them, and again when it reloads them after a failover)."""
    if meta is None or meta.producerId != producerId:
        return Transit(INVALID_PRODUCER_ID_MAPPING)
    state = meta.state
    target = PREPARE_COMMIT if commit else PREPARE_ABORT
    if not tv2:
        if producerEpoch != meta.producerEpoch:
            return Transit(PRODUCER_FENCED)
        if state == ONGOING:
            return Transit(NONE, prepare_abort_or_commit(meta, target, False), producerEpoch, "prepareAbortOrCommit")
        if (state, commit) in ((COMPLETE_COMMIT, True), (COMPLETE_ABORT, False)):
            return Transit(NONE, None, producerEpoch)
        if (state, commit) in ((PREPARE_COMMIT, True), (PREPARE_ABORT, False)):
            return Transit(CONCURRENT_TRANSACTIONS)
        return Transit(INVALID_TXN_STATE)
    if state in (PREPARE_COMMIT, PREPARE_ABORT) and kafka_18464:
        # KAFKA-18464: the pending CompleteCommit/CompleteAbort is answered before the epoch is
        # checked, so the next transaction's EndTxn (at the bumped epoch) waits instead of fencing
        # its own producer.
        return Transit(CONCURRENT_TRANSACTIONS)
    retry = meta.producerEpoch == producerEpoch + 1
    if state in (ONGOING, EMPTY):
        valid = producerEpoch == meta.producerEpoch
    elif state in (PREPARE_COMMIT, PREPARE_ABORT):
        valid = retry
    else:
        valid = retry or producerEpoch == meta.producerEpoch
    if not valid:
        return Transit(PRODUCER_FENCED)

    def bump(to: str) -> Transit:
        new = prepare_abort_or_commit(meta, to, True)
        return Transit(NONE, new, new.producerEpoch, "prepareAbortOrCommit")

    if state == ONGOING:
        return bump(target)
    if state == COMPLETE_COMMIT:
        if commit:
            return Transit(NONE, None, meta.producerEpoch) if retry else Transit(INVALID_TXN_STATE)
        return Transit(INVALID_TXN_STATE) if retry else bump(PREPARE_ABORT)
    if state == COMPLETE_ABORT:
        if not commit:
            return Transit(NONE, None, meta.producerEpoch) if retry else bump(PREPARE_ABORT)
        return Transit(INVALID_TXN_STATE)
    if (state, commit) in ((PREPARE_COMMIT, True), (PREPARE_ABORT, False)):
        return Transit(CONCURRENT_TRANSACTIONS)
    if state == EMPTY and not commit:
        return bump(PREPARE_ABORT)
    return Transit(INVALID_TXN_STATE)
