"""The partition leader's producer state for the `producer` model: what ProducerStateManager keeps and decides.

Kept apart from the client and the network (``kmc.models.producer.model``): the per-producer entry with
its epoch and cached batches (``ProducerStateEntry``), the leader's decision for a client batch
(``UnifiedLog.analyzeAndValidateProducerState``, ``ProducerAppendInfo.checkProducerEpoch`` /
``checkSequence``), rebuilding the state from a log (``truncateAndReload``) and what retention does to
it (before and after KAFKA-7190). The ``producer-state`` oracle asks Kafka's classes the same questions.
"""

from __future__ import annotations

from typing import NamedTuple

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
"""RecordBatch.NO_PRODUCER_ID / NO_PRODUCER_EPOCH / NO_SEQUENCE: a batch of a non-idempotent producer."""

NONE = "NONE"
DUPLICATE = "DUPLICATE"
"""Not an error code: the leader found the batch in its cache and answers with the original offset."""
NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
NOT_ENOUGH_REPLICAS = "NOT_ENOUGH_REPLICAS"
NETWORK_EXCEPTION = "NETWORK_EXCEPTION"
OUT_OF_ORDER_SEQUENCE_NUMBER = "OUT_OF_ORDER_SEQUENCE_NUMBER"
UNKNOWN_PRODUCER_ID = "UNKNOWN_PRODUCER_ID"
INVALID_PRODUCER_EPOCH = "INVALID_PRODUCER_EPOCH"
RETRIABLE = frozenset({NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, NETWORK_EXCEPTION})
PENDING = "PENDING"
"""An acks=all response waiting in the leader's produce purgatory until the follower has the batch."""


class Batch(NamedTuple):
    """A record batch as the log stores it (one record each)."""

    record: int
    producerId: int
    producerEpoch: int
    baseSequence: int


class BatchMetadata(NamedTuple):
    """ProducerStateEntry's cached metadata of an appended batch (firstSeq = lastSeq: one record)."""

    lastSeq: int
    lastOffset: int


class ProducerStateEntry(NamedTuple):
    producerId: int
    producerEpoch: int
    batchMetadata: tuple[BatchMetadata, ...]
    """The last NUM_BATCHES_TO_RETAIN appended batches of this epoch, oldest first."""


class Replica(NamedTuple):
    log: tuple[Batch, ...]
    logStartOffset: int
    producers: tuple[ProducerStateEntry, ...]
    """ProducerStateManager.producers, sorted by producerId."""


def entry_of(replica: Replica, producer_id: int) -> ProducerStateEntry | None:
    for entry in replica.producers:
        if entry.producerId == producer_id:
            return entry
    return None


def with_entry(producers: tuple[ProducerStateEntry, ...], entry: ProducerStateEntry) -> tuple:
    others = [e for e in producers if e.producerId != entry.producerId]
    return tuple(sorted([*others, entry]))


def add_batch(entry: ProducerStateEntry | None, batch: Batch, offset: int, retain: int) -> ProducerStateEntry:
    """ProducerStateEntry.addBatch: a new epoch clears the cache; the oldest cached batch makes room."""
    if entry is None or entry.producerEpoch != batch.producerEpoch:
        cached: tuple[BatchMetadata, ...] = ()
    else:
        cached = entry.batchMetadata
    cached = (*cached, BatchMetadata(batch.baseSequence, offset))[-retain:]
    return ProducerStateEntry(batch.producerId, batch.producerEpoch, cached)


def check_produce(
    replica: Replica, batch: Batch, kafka_8710: bool = True, kafka_15591: bool = False, kafka_5793: bool = True
) -> tuple[str, int]:
    """The leader's decision for a client batch: (NONE, -1) to append it, (DUPLICATE, its original
    offset), or an error code. UnifiedLog.analyzeAndValidateProducerState looks the batch up in
    the cache first (ProducerStateEntry.findDuplicateBatch), then ProducerAppendInfo checks the
    epoch (checkProducerEpoch) and the sequence (checkSequence). Before KAFKA-8710 a producer the
    leader has no state for gets UNKNOWN_PRODUCER_ID unless its sequence is 0. With KAFKA-15591
    (Kafka 4.5, after the 4.3.1 jars the oracle runs) a partition whose log never held a record takes
    only sequence 0 from a producer without state, anything else is OUT_OF_ORDER_SEQUENCE_NUMBER;
    the condition is the merged pull request's description (apache/kafka#23234), modelled as a log
    end offset of 0. Before KAFKA-5793 (1.0) there was no UNKNOWN_PRODUCER_ID: the entry-less
    producer's batch was out of sequence."""
    if batch.producerId == NO_PRODUCER_ID:
        return NONE, -1
    entry = entry_of(replica, batch.producerId)
    if entry is not None and entry.producerEpoch == batch.producerEpoch:
        for cached in entry.batchMetadata:
            if cached.lastSeq == batch.baseSequence:
                return DUPLICATE, cached.lastOffset
    if entry is not None and batch.producerEpoch < entry.producerEpoch:
        return INVALID_PRODUCER_EPOCH, -1
    if entry is None or entry.producerEpoch == NO_PRODUCER_EPOCH:
        if batch.baseSequence == 0:
            return NONE, -1
        if not kafka_5793:
            return OUT_OF_ORDER_SEQUENCE_NUMBER, -1
        if not kafka_8710:
            return UNKNOWN_PRODUCER_ID, -1
        if kafka_15591 and not replica.log:
            return OUT_OF_ORDER_SEQUENCE_NUMBER, -1
        return NONE, -1
    if batch.producerEpoch != entry.producerEpoch:
        return (NONE, -1) if batch.baseSequence == 0 else (OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
    last = entry.batchMetadata[-1].lastSeq if entry.batchMetadata else NO_SEQUENCE
    if batch.baseSequence == last + 1:
        return NONE, -1
    return OUT_OF_ORDER_SEQUENCE_NUMBER, -1


def rebuild(replica: Replica, retain: int) -> Replica:
    """Producer state from the log above the log start offset, as loading a log does."""
    producers: tuple[ProducerStateEntry, ...] = ()
    for offset in range(replica.logStartOffset, len(replica.log)):
        batch = replica.log[offset]
        if batch.producerId != NO_PRODUCER_ID:
            entry = add_batch(entry_of(replica._replace(producers=producers), batch.producerId), batch, offset, retain)
            producers = with_entry(producers, entry)
    return replica._replace(producers=producers)


def increment_log_start_offset(replica: Replica, start: int, kafka_7190: bool = True) -> Replica:
    """UnifiedLog.maybeIncrementLogStartOffset. Before KAFKA-7190 the producer state forgets the
    cached batches below the new start and every producer left without one."""
    replica = replica._replace(logStartOffset=start)
    if kafka_7190:
        return replica
    kept = []
    for e in replica.producers:
        cached = tuple(m for m in e.batchMetadata if m.lastOffset >= start)
        if cached:
            kept.append(e._replace(batchMetadata=cached))
    return replica._replace(producers=tuple(kept))
