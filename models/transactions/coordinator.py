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
"""The producer id the coordinator allocates first for the model's one transactional id; each
rotation on epoch exhaustion allocates the next one (ProducerIdManager hands out increasing ids)."""
SHORT_MAX_VALUE = 32767
"""Short.MaxValue, the highest producer epoch: the coordinator keeps it back to fence with."""

NONE = "NONE"
UNKNOWN_SERVER_ERROR = "UNKNOWN_SERVER_ERROR"
COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE"
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
    prevProducerId: int = NO_PRODUCER_ID
    """The producer id before the last transition (the one a retry across a rotation still carries)."""
    nextProducerId: int = NO_PRODUCER_ID
    """Transaction version 2: the producer id a prepared transaction rotates to when it completes."""


class Transit(NamedTuple):
    """What a request did to the metadata: Kafka's error code, the new metadata (None: unchanged),
    the producer id and epoch the coordinator answers with, and the prepare method that made it
    (for the oracle)."""

    error: str
    meta: TxnMeta | None = None
    producerEpoch: int = NO_PRODUCER_EPOCH
    method: str = ""
    producerId: int = NO_PRODUCER_ID
    installed: TxnMeta | None = None
    """Metadata changed in memory only, nothing appended: what a refused fence left behind."""


class EpochOverflowError(Exception):
    """Kafka refuses a transition whose epoch would pass Short.MaxValue (the short wraps negative and
    prepareTransitionTo throws), or a fence at Short.MaxValue before KAFKA-20090; the request is
    answered UNKNOWN_SERVER_ERROR. ``installed`` is what the refusal leaves in memory: the metadata
    unchanged (None), or the fenced epoch endTransaction had already set when the abort after it
    overflowed (transaction version 2 before KAFKA-19367)."""

    def __init__(self, message: str, installed: TxnMeta | None = None) -> None:
        super().__init__(message)
        self.installed = installed


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """TransactionMetadata.isEpochExhausted: Short.MaxValue is kept back for fencing, so an epoch of
    Short.MaxValue - 1 or more cannot be bumped for a client any more."""
    return producer_epoch >= SHORT_MAX_VALUE - 1


def is_valid_transition(current: str, target: str) -> bool:
    return current in VALID_PREVIOUS_STATES[target]


def _prepare(meta: TxnMeta, target: str, **changes: object) -> TxnMeta:
    """prepareTransitionTo: refuse a target whose valid predecessors do not include the state, and an
    epoch past Short.MaxValue; remember the producer id before the transition."""
    if not is_valid_transition(meta.state, target):
        raise ValueError(f"illegal transition {meta.state} -> {target}")
    if int(changes.get("producerEpoch", meta.producerEpoch)) > SHORT_MAX_VALUE:  # type: ignore[call-overload]
        raise EpochOverflowError(f"illegal new producer epoch {changes['producerEpoch']}")
    return meta._replace(state=target, prevProducerId=meta.producerId, **changes)


def increment_epoch(meta: TxnMeta, expected_epoch: int = NO_PRODUCER_EPOCH) -> TxnMeta | None:
    """prepareIncrementProducerEpoch. Without an expected epoch: a new incarnation of the producer
    (epoch + 1, no last epoch). With one (KIP-360, a producer bumping its own epoch after an
    error): epoch + 1 remembering the old one as the last epoch, or, when the expected epoch is
    the last one, the same epoch again (a retry whose answer was lost); None for any other epoch
    (PRODUCER_FENCED). An exhausted epoch cannot be incremented (EpochOverflowError)."""
    if is_epoch_exhausted(meta.producerEpoch):
        raise EpochOverflowError(f"cannot allocate any more producer epochs for producer id {meta.producerId}")
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


def rotate_producer_id(meta: TxnMeta, record_last_epoch: bool) -> TxnMeta:
    """prepareProducerIdRotation: an exhausted producer id is replaced by a newly allocated one at
    epoch 0; a producer that asked with its own epoch (KIP-360) keeps it as the last epoch."""
    return _prepare(
        meta,
        EMPTY,
        producerId=next_producer_id(meta),
        producerEpoch=0,
        lastProducerEpoch=meta.producerEpoch if record_last_epoch else NO_PRODUCER_EPOCH,
        topicPartitions=frozenset(),
    )


def next_producer_id(meta: TxnMeta) -> int:
    """ProducerIdManager.generateProducerId for the model's one transactional id: the next id."""
    return meta.producerId + 1


def fenced_epoch(meta: TxnMeta, kafka_20090: bool = True, has_failed_epoch_fence: bool = False) -> int:
    """prepareFenceProducerEpoch's epoch: + 1, or the same once a fence's append failed (KAFKA-9666,
    2.6.0: hasFailedEpochFence) or, since KAFKA-20090 (4.3.0), at Short.MaxValue; before KAFKA-20090
    a fence at Short.MaxValue threw (EpochOverflowError)."""
    _prepare(meta, PREPARE_EPOCH_FENCE)
    if meta.producerEpoch == SHORT_MAX_VALUE and not kafka_20090:
        raise EpochOverflowError("cannot fence producer with epoch equal to Short.MaxValue since this would overflow")
    if has_failed_epoch_fence or meta.producerEpoch == SHORT_MAX_VALUE:
        return meta.producerEpoch
    return meta.producerEpoch + 1


def install_fence(
    meta: TxnMeta, tv2: bool, kafka_19367: bool = True, kafka_20090: bool = True, has_failed_epoch_fence: bool = False
) -> TxnMeta:
    """What endTransaction leaves in memory before it prepares the abort of a fenced transaction, and
    what stays there when that abort cannot be appended to __transaction_state: the fenced epoch
    with no last epoch (the fence's pending state is dropped). Under transaction version 2 since
    KAFKA-19367 nothing is installed: the abort's own bump is the fence."""
    epoch = fenced_epoch(meta, kafka_20090, has_failed_epoch_fence)
    if tv2 and kafka_19367:
        return meta
    return meta._replace(producerEpoch=epoch, lastProducerEpoch=NO_PRODUCER_EPOCH)


def fence_and_abort(
    meta: TxnMeta, tv2: bool, kafka_19367: bool = True, kafka_20090: bool = True, has_failed_epoch_fence: bool = False
) -> TxnMeta:
    """prepareFenceProducerEpoch (PrepareEpochFence, never written; see ``install_fence``), then the
    abort that replaces it: endTransaction(ABORT) from the coordinator itself. Transaction version 1
    aborts at the installed epoch. Version 2's abort bumps the epoch itself: since KAFKA-19367 (4.0.1)
    that bump is the fence, so the old epoch stays the last one; before, the fenced epoch was
    installed first and the abort bumped once more, past Short.MaxValue from Short.MaxValue - 1
    (EpochOverflowError, the fenced epoch left installed) unless KAFKA-20090 kept it there."""
    installed = install_fence(meta, tv2, kafka_19367, kafka_20090, has_failed_epoch_fence)
    if not tv2:
        return prepare_abort_or_commit(installed, PREPARE_ABORT, False)
    try:
        return _abort_or_commit_from_coordinator(installed, PREPARE_ABORT, kafka_20090)
    except EpochOverflowError as overflow:
        raise EpochOverflowError(str(overflow), installed if installed != meta else None) from None


def _abort_or_commit_from_coordinator(meta: TxnMeta, target: str, kafka_20090: bool) -> TxnMeta:
    """endTransaction's abort of a fenced transaction (transaction version 2): since KAFKA-20090
    (4.3.0) it rotates an exhausted producer id like a client's EndTxn does; before, the fence path
    skipped the rotation and the epoch reached Short.MaxValue under the same producer id."""
    rotate = kafka_20090 and is_epoch_exhausted(meta.producerEpoch)
    return prepare_abort_or_commit(
        meta, target, True, next_producer_id(meta) if rotate else NO_PRODUCER_ID, kafka_20090
    )


def abort_timed_out(
    meta: TxnMeta,
    tv2: bool,
    kafka_6119: bool = True,
    kafka_19367: bool = True,
    kafka_20090: bool = True,
    has_failed_epoch_fence: bool = False,
) -> TxnMeta:
    """abortTimedOutTransactions: fence the producer, then abort. Before KAFKA-6119 (0.11.0.2) the
    abort kept the producer's epoch, so the producer was not fenced and could go on with the
    transactional id as if its transaction were still open."""
    if kafka_6119:
        return fence_and_abort(meta, tv2, kafka_19367, kafka_20090, has_failed_epoch_fence)
    return prepare_abort_or_commit(meta, PREPARE_ABORT, tv2, kafka_20090=kafka_20090)


def prepare_abort_or_commit(
    meta: TxnMeta, target: str, tv2: bool, next_id: int = NO_PRODUCER_ID, kafka_20090: bool = True
) -> TxnMeta:
    """prepareAbortOrCommit: transaction version 2 bumps the epoch with every transaction (KIP-890
    part 2), remembers the old one as the last epoch, and carries the producer id the transaction
    rotates to when the epoch is exhausted. An abort at Short.MaxValue keeps it since KAFKA-20090
    (4.3.0); anything else past it overflows (EpochOverflowError)."""
    if not tv2:
        return _prepare(meta, target, nextProducerId=next_id)
    keep = kafka_20090 and meta.producerEpoch == SHORT_MAX_VALUE and target == PREPARE_ABORT
    epoch = meta.producerEpoch if keep else meta.producerEpoch + 1
    return _prepare(meta, target, producerEpoch=epoch, lastProducerEpoch=meta.producerEpoch, nextProducerId=next_id)


def prepare_complete(meta: TxnMeta, tv2: bool = True) -> TxnMeta:
    """prepareComplete: PrepareCommit -> CompleteCommit, PrepareAbort -> CompleteAbort; under
    transaction version 2 a transaction that exhausted the epoch completes under its next producer
    id at epoch 0 (the last epoch stays the one the client last saw)."""
    target = COMPLETE_COMMIT if meta.state == PREPARE_COMMIT else COMPLETE_ABORT
    if tv2 and meta.nextProducerId != NO_PRODUCER_ID:
        return _prepare(
            meta,
            target,
            producerId=meta.nextProducerId,
            producerEpoch=0,
            nextProducerId=NO_PRODUCER_ID,
            topicPartitions=frozenset(),
        )
    return _prepare(meta, target, nextProducerId=NO_PRODUCER_ID, topicPartitions=frozenset())


def prepare_add_partitions(meta: TxnMeta, partitions: frozenset[int]) -> TxnMeta:
    return _prepare(meta, ONGOING, topicPartitions=meta.topicPartitions | partitions)


# -- request handling (TransactionCoordinator) ------------------------------------------------------
def handle_init_producer_id(
    meta: TxnMeta | None,
    tv2: bool,
    expected_epoch: int = NO_PRODUCER_EPOCH,
    kafka_19367: bool = True,
    expected_id: int = NO_PRODUCER_ID,
    kafka_20090: bool = True,
    has_failed_epoch_fence: bool = False,
) -> Transit:
    """InitProducerId: a new producer id for an unknown transactional id, else the next epoch, or a
    new producer id once the epoch is exhausted; an open transaction is first fenced and aborted and
    the client told to retry. ``expected_id``/``expected_epoch`` are what a producer sends when it
    bumps its own epoch after an error (KIP-360); without them the request comes from a new
    producer."""
    if meta is None:
        meta = TxnMeta(PRODUCER_ID, NO_PRODUCER_EPOCH, NO_PRODUCER_EPOCH, EMPTY, frozenset())
        new = increment_epoch(meta)
        assert new is not None
        return Transit(NONE, new, new.producerEpoch, "prepareIncrementProducerEpoch", new.producerId)
    expected = expected_epoch != NO_PRODUCER_EPOCH
    if meta.state in (PREPARE_COMMIT, PREPARE_ABORT):
        return Transit(CONCURRENT_TRANSACTIONS)
    if expected and not (
        meta.producerEpoch == NO_PRODUCER_EPOCH
        or expected_id == meta.producerId
        or (expected_id == meta.prevProducerId and is_epoch_exhausted(expected_epoch))
    ):
        return Transit(PRODUCER_FENCED)  # isValidProducerId
    try:
        if meta.state == ONGOING:
            fenced = fence_and_abort(meta, tv2, kafka_19367, kafka_20090, has_failed_epoch_fence)
            return Transit(CONCURRENT_TRANSACTIONS, fenced, NO_PRODUCER_EPOCH, "prepareFenceProducerEpoch")
        if is_epoch_exhausted(meta.producerEpoch) and (not expected or expected_epoch == meta.producerEpoch):
            new = rotate_producer_id(meta, expected)
            return Transit(NONE, new, new.producerEpoch, "prepareProducerIdRotation", new.producerId)
        new = increment_epoch(meta, expected_epoch)
    except EpochOverflowError as overflow:
        return Transit(UNKNOWN_SERVER_ERROR, installed=overflow.installed)
    if new is None:
        return Transit(PRODUCER_FENCED)
    return Transit(NONE, new, new.producerEpoch, "prepareIncrementProducerEpoch", new.producerId)


def handle_add_partitions(
    meta: TxnMeta | None, producerId: int, producerEpoch: int, partitions: frozenset[int], pending_first: bool = False
) -> Transit:
    """AddPartitionsToTxn from a client (TV 0/1) or, under TV 2, from the partition leader on the
    client's behalf (the implicit add of KIP-890 part 2). ``pending_first`` (KAFKA-18660): a pending
    completion is answered before the producer id and epoch are checked, so the first add of a
    transaction under a rotated producer id waits for the rotation instead of failing."""
    prepared = meta is not None and meta.state in (PREPARE_COMMIT, PREPARE_ABORT)
    if prepared and pending_first:
        return Transit(CONCURRENT_TRANSACTIONS)
    if meta is None or meta.producerId != producerId:
        return Transit(INVALID_PRODUCER_ID_MAPPING)
    if meta.producerEpoch != producerEpoch:
        return Transit(PRODUCER_FENCED)
    if prepared:
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
    meta: TxnMeta | None,
    producerId: int,
    producerEpoch: int,
    commit: bool,
    tv2: bool,
    kafka_18464: bool = True,
    kafka_18660: bool = True,
    kafka_20090: bool = True,
) -> Transit:
    """EndTxn from the client: endTransactionWithTV1 or, under transaction version 2, endTransaction
    with its retry rules (an exact retry carries the epoch before the bump, or, across a rotation,
    the old producer id at the exhausted epoch). PrepareCommit and PrepareAbort always have their
    completion pending here (the coordinator prepares it before it answers the EndTxn that wrote
    them, and again when it reloads them after a failover). A transition is answered with the
    producer id and epoch of the completion it prepares (KAFKA-18660; before, with the prepared
    transition's: the old producer id at Short.MaxValue)."""
    state = None if meta is None else meta.state
    target = PREPARE_COMMIT if commit else PREPARE_ABORT
    prepared = state in (PREPARE_COMMIT, PREPARE_ABORT)
    if tv2 and prepared and kafka_18464 and kafka_18660:
        return Transit(CONCURRENT_TRANSACTIONS)
    retry_on_overflow = (
        tv2
        and meta is not None
        and meta.prevProducerId == producerId
        and producerEpoch == SHORT_MAX_VALUE - 1
        and meta.producerEpoch == 0
    )
    if meta is None or (meta.producerId != producerId and not retry_on_overflow):
        return Transit(INVALID_PRODUCER_ID_MAPPING)
    if not tv2:
        if producerEpoch != meta.producerEpoch:
            return Transit(PRODUCER_FENCED)
        if state == ONGOING:
            new = prepare_abort_or_commit(meta, target, False)
            return Transit(NONE, new, producerEpoch, "prepareAbortOrCommit", meta.producerId)
        if (state, commit) in ((COMPLETE_COMMIT, True), (COMPLETE_ABORT, False)):
            return Transit(NONE, None, producerEpoch, "", meta.producerId)
        if (state, commit) in ((PREPARE_COMMIT, True), (PREPARE_ABORT, False)):
            return Transit(CONCURRENT_TRANSACTIONS)
        return Transit(INVALID_TXN_STATE)
    if prepared and kafka_18464:
        # KAFKA-18464: the pending CompleteCommit/CompleteAbort is answered before the epoch is
        # checked, so the next transaction's EndTxn (at the bumped epoch) waits instead of fencing
        # its own producer.
        return Transit(CONCURRENT_TRANSACTIONS)
    retry_on_epoch_bump = meta.producerEpoch == producerEpoch + 1
    retry = retry_on_epoch_bump or retry_on_overflow
    if state in (ONGOING, EMPTY):
        valid = producerEpoch == meta.producerEpoch
    elif prepared:
        valid = retry_on_epoch_bump
    else:
        valid = retry or producerEpoch == meta.producerEpoch
    if not valid:
        return Transit(PRODUCER_FENCED)

    def bump(to: str) -> Transit:
        rotate = is_epoch_exhausted(meta.producerEpoch)
        try:
            next_id = next_producer_id(meta) if rotate else NO_PRODUCER_ID
            new = prepare_abort_or_commit(meta, to, True, next_id, kafka_20090)
        except EpochOverflowError:
            return Transit(UNKNOWN_SERVER_ERROR)
        answer = prepare_complete(new) if kafka_18660 else new
        return Transit(NONE, new, answer.producerEpoch, "prepareAbortOrCommit", answer.producerId)

    current = Transit(NONE, None, meta.producerEpoch, "", meta.producerId)
    if state == ONGOING:
        return bump(target)
    if state == COMPLETE_COMMIT:
        if commit:
            return current if retry else Transit(INVALID_TXN_STATE)
        return Transit(INVALID_TXN_STATE) if retry else bump(PREPARE_ABORT)
    if state == COMPLETE_ABORT:
        if not commit:
            return current if retry else bump(PREPARE_ABORT)
        return Transit(INVALID_TXN_STATE)
    if (state, commit) in ((PREPARE_COMMIT, True), (PREPARE_ABORT, False)):
        return Transit(CONCURRENT_TRANSACTIONS)
    if state == EMPTY and not commit:
        return bump(PREPARE_ABORT)
    return Transit(INVALID_TXN_STATE)
