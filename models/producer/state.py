"""The producer model's state: the client's batches and sequence numbers, each broker's log and
producer state, and the requests and responses in flight."""

from __future__ import annotations

from typing import NamedTuple

from kmc.models.producer.broker import (
    NO_SEQUENCE,
    Batch,
    Replica,
)


class ClientBatch(NamedTuple):
    """A ProducerBatch the client has not completed: queued in the accumulator or in flight."""

    record: int
    producerId: int
    producerEpoch: int
    baseSequence: int
    inFlight: bool
    sequenceHasBeenReset: bool = False
    inRetry: bool = False
    """ProducerBatch.inRetry: it was sent and put back for another attempt."""


class Client(NamedTuple):
    producerId: int
    producerEpoch: int
    nextSequence: int
    lastAckedSequence: int
    lastAckedOffset: int
    batches: tuple[ClientBatch, ...]
    """The accumulator's deque in drain order, in-flight batches kept where they were."""
    epochBumpRequired: bool
    connection: int
    """The generation of the connection to the brokers: a disconnect opens a new one."""
    unresolvedSequence: int = NO_SEQUENCE
    """TransactionManager.partitionsWithUnresolvedSequences: after a batch that was being retried
    expired, the sequence after it; new batches wait until it is resolved."""
    fatalError: bool = False
    """A transactional producer before KIP-360 got a sequence error it could not retry: every batch
    failed with it, and the application must close the producer."""


class ProduceRequest(NamedTuple):
    connection: int
    """With ``broker``: which connection it travels on (one per broker, FIFO)."""
    broker: int
    batch: Batch


class ProduceResponse(NamedTuple):
    connection: int
    record: int
    error: str
    baseOffset: int
    logStartOffset: int
    broker: int
    leaderEpoch: int
    """For a PENDING response: the leader and epoch that wrote it (it completes when replicated)."""


class ProducerState(NamedTuple):
    client: Client
    requests: tuple[ProduceRequest, ...]
    """Sent and not yet handled, in sending order; FIFO per connection. Requests of a closed
    connection may still be handled (their answers are dropped)."""
    responses: tuple[ProduceResponse, ...]
    replicas: tuple[Replica, ...]
    leader: int
    leaderEpoch: int
    acked: frozenset[int]
    """Ghost: records whose send the client completed successfully."""
    failed: frozenset[int]
    """Ghost: records whose send the client reported failed."""
    faults: int
    """Disconnects so far."""
    rejections: int
    timeouts: int
    failovers: int
    deletions: int
    expirations: int


def high_watermark(s: ProducerState) -> int:
    """Both replicas are the ISR: the HW is the length of the prefix both logs share."""
    a, b = s.replicas[0].log, s.replicas[1].log
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n
