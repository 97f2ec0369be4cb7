"""The transactions model's state: the producer clients, the transaction coordinator with its
__transaction_state record, the partitions' logs, and the messages in flight; and the lanes a
trace is drawn in."""

from __future__ import annotations

from typing import NamedTuple

from kmc.models.transactions.coordinator import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NONE, TxnMeta
from kmc.models.transactions.log import Partition

# Client (TransactionManager) states.
UNINITIALIZED = "UNINITIALIZED"
INITIALIZING = "INITIALIZING"
READY = "READY"
IN_TRANSACTION = "IN_TRANSACTION"
COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
"""commitTransaction() called: the EndTxn is held back until every batch is complete, then sent."""
ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
ABORTABLE_ERROR = "ABORTABLE_ERROR"
FATAL_ERROR = "FATAL_ERROR"
BETWEEN_TRANSACTIONS = frozenset({UNINITIALIZED, INITIALIZING, READY, FATAL_ERROR})
"""States in which the client has no transaction of its own open."""

COORDINATOR = "coordinator"


def client_lane(c: int) -> str:
    return f"producer {c}"


def leader_lane(p: int) -> str:
    return f"leader {p}"


class Client(NamedTuple):
    """A transactional producer (KafkaProducer's TransactionManager) for the one transactional id."""

    state: str
    producerId: int
    producerEpoch: int
    txn: int
    """Ghost: the number of the transaction the application is running (-1: none)."""
    added: frozenset[int]
    """Partitions the coordinator confirmed in this transaction (AddPartitionsToTxn; TV2: a produce answered)."""
    produced: frozenset[int]
    """Partitions this transaction sent a record to (one record each)."""
    completed: frozenset[int]
    """Partitions whose batch is complete: acknowledged, failed or expired (no longer in the
    accumulator's incomplete batches, which hold back the EndTxn)."""
    awaiting: str
    """The coordinator request in flight ("" for none)."""
    epochBumpRequired: bool
    """KIP-360: once the abort completes, bump the epoch with InitProducerId (transaction version 0/1)."""


class Message(NamedTuple):
    api: str
    src: str
    dst: str
    client: int = -1
    partition: int = -1
    producerEpoch: int = NO_PRODUCER_EPOCH
    commit: bool = False
    coordinatorEpoch: int = -1
    txn: int = -1
    error: str = NONE
    producerId: int = NO_PRODUCER_ID


class Decision(NamedTuple):
    """Ghost: a coordinator's PrepareCommit/PrepareAbort and the partitions it covers."""

    commit: bool
    partitions: frozenset[int]


class Coordinator(NamedTuple):
    coordinatorEpoch: int
    metadata: TxnMeta | None
    """The in-memory TransactionMetadata."""
    pendingMarkers: frozenset[int]
    """Partitions whose marker has not been acknowledged (TransactionMarkerChannelManager)."""
    decision: int
    """Ghost: the decision being written (-1 none)."""
    completionLost: bool
    """Nothing completes the prepared transaction until a reload: before KAFKA-9777 the last marker was
    acknowledged while the state lock was held and the DelayedTxnMarker gave up; or a leader refused a
    marker (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED) and the coordinator cancelled the
    rest (TransactionMarkerRequestCompletionHandler.removeMarkersForTxn)."""
    hasFailedEpochFence: bool = False
    """KAFKA-9666: the in-memory fence's append failed, so the next fence keeps its epoch (cleared by a
    completion, lost on a reload)."""


class TransactionsState(NamedTuple):
    clients: tuple[Client, ...]
    coordinator: Coordinator
    transactionLog: TxnMeta | None
    """The last record of the transactional id in __transaction_state."""
    partitions: tuple[Partition, ...]
    network: tuple[Message, ...]
    consumerPositions: tuple[int, ...]
    """A read_committed consumer's fetch position in each partition."""
    consumed: tuple[tuple[int, ...], ...]
    """The offsets of the records the consumer was given, in each partition."""
    delayedFetches: frozenset[int]
    """Partitions whose fetch waits in the leader's delayed-fetch purgatory (nothing to return yet)."""
    decisions: tuple[Decision, ...]
    aborted: frozenset[int]
    """Ghost: application transactions the producer aborted or gave up."""
    nextTxn: int
    requestTimeouts: int
    txnTimeouts: int
    failovers: int
    expirations: int
    stateLoads: int
    fenceAppendFailures: int = 0


def request_in_flight(s: TransactionsState, api: str, client: int) -> Message | None:
    """The client's request of ``api`` on its way (a client has at most one of each in flight)."""
    return next((m for m in s.network if m.api == api and m.client == client), None)
