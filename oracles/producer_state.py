"""The `producer` model's leader against kafka-storage's producer state (``ProducerStateManager``).

At every step where the model's leader decides a produce request of the idempotent producer
(``HandleProduce`` on the leader, not the NOT_ENOUGH_REPLICAS fault), a ``ProducerStateManager`` is
built for the partition with the leader's producer state from the model: a ``ProducerStateEntry``
with the producer's epoch and, through ``addBatch``, each cached batch (sequence, offset), loaded
with ``loadProducerEntry``. Kafka is then asked what ``UnifiedLog.analyzeAndValidateProducerState``
asks it: first ``ProducerStateEntry.findDuplicateBatch`` for the request's batch (a real
``RecordBatch`` built by ``MemoryRecords.withIdempotentRecords``) -- a duplicate is answered with
its original offset -- then ``prepareUpdate(producerId, CLIENT).appendDataBatch(...)``, whose
``checkProducerEpoch``/``checkSequence`` either accept the batch or throw. Compared: the outcome
(appended / duplicate and its offset / error code) and, after an append, the producer state Kafka
keeps once ``update`` merges the append (epoch and cached (lastSeq, lastOffset)) against the
model's next state.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.checker.model import Action
from kmc.models.producer.model import (
    DUPLICATE,
    INVALID_PRODUCER_EPOCH,
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_LEADER_OR_FOLLOWER,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    UNKNOWN_PRODUCER_ID,
    Batch,
    ProducerModel,
    ProducerState,
    Replica,
    entry_of,
)

from . import jvm

LOG = "org.apache.kafka.storage.internals.log."
RECORD = "org.apache.kafka.common.record.internal."
TIMESTAMP = 1_000
PRODUCER_ID_EXPIRATION_MS = 86_400_000

EXCEPTIONS = {
    "OutOfOrderSequenceException": OUT_OF_ORDER_SEQUENCE_NUMBER,
    "InvalidProducerEpochException": INVALID_PRODUCER_EPOCH,
    "UnknownProducerIdException": UNKNOWN_PRODUCER_ID,
}
"""Kafka's exception -> the error code the produce response carries (Errors.forException)."""


def _value(member: Any) -> Any:
    """A BatchMetadata component: a record accessor from 4.3, a public field before."""
    return member() if callable(member) else member


class ProducerStateOracle(Oracle):
    name = "producer-state"
    model_name = "producer"
    reference = (
        LOG + "ProducerStateManager",
        LOG + "ProducerStateEntry",
        LOG + "ProducerAppendInfo",
        RECORD + "MemoryRecords",
    )
    description = "kafka-storage's producer state accepts, deduplicates and rejects the batches the model's leader does"

    def __init__(self, model: ProducerModel, release: str | None = None) -> None:  # type: ignore[override]
        super().__init__(model, release)
        self.release = jvm.start(self.release)
        j = jvm.jclass
        self.Entry = j(LOG + "ProducerStateEntry")
        self.Manager = j(LOG + "ProducerStateManager")
        self.LogOffsetMetadata = j(LOG + "LogOffsetMetadata")
        self.CLIENT = j(LOG + "AppendOrigin").CLIENT
        self.OptionalLong = j("java.util.OptionalLong")
        self.Optional = j("java.util.Optional")
        self.MemoryRecords = j(RECORD + "MemoryRecords")
        self.SimpleRecord = j(RECORD + "SimpleRecord")
        self.NO_COMPRESSION = j("org.apache.kafka.common.compress.Compression").NONE
        self.tp = j("org.apache.kafka.common.TopicPartition")("producer", 0)
        self.config = j(LOG + "ProducerStateManagerConfig")(PRODUCER_ID_EXPIRATION_MS, False)
        self.time = j("org.apache.kafka.common.utils.Time").SYSTEM
        self.dir = j("java.io.File")(tempfile.mkdtemp(prefix="kmc-producer-state-"))
        self.retain = int(self.Entry.NUM_BATCHES_TO_RETAIN)
        # before 4.3 the constructor also takes the current batch (Optional<BatchMetadata>)
        self._no_batch = () if jvm.has_constructor(self.Entry, 5) else (self.Optional.empty(),)
        entry_class = self.Entry.class_
        short, integer, long_ = (j("java.lang.Short").TYPE, j("java.lang.Integer").TYPE, j("java.lang.Long").TYPE)
        self._add_batch = entry_class.getDeclaredMethod("addBatch", short, integer, long_, integer, long_)
        self._add_batch.setAccessible(True)
        self._find_duplicate = entry_class.getDeclaredMethod("findDuplicateBatch", j(RECORD + "RecordBatch").class_)
        self._find_duplicate.setAccessible(True)

    def unsupported(self) -> str | None:
        c = self.model.config
        if not c.enable_idempotence:
            return "a non-idempotent producer's batches carry no producer id: the producer state decides nothing"
        if not c.kafka_8710:
            return (
                "UNKNOWN_PRODUCER_ID for a producer without state is the broker before KAFKA-8710 (2.4): "
                f"not {self.release}"
            )
        if c.kafka_15591:
            return f"KAFKA-15591 (a never-written partition takes only sequence 0) is Kafka 4.5: not {self.release}"
        if c.num_batches_to_retain != self.retain:
            size = c.num_batches_to_retain
            return f"Kafka caches NUM_BATCHES_TO_RETAIN={self.retain} batches; this config caches {size}"
        return None

    # -- building Kafka's producer state from the model's leader ---------------------------------
    def manager(self, replica: Replica, producer_id: int) -> Any:
        """A ProducerStateManager holding the leader's entry for this producer (if it has one)."""
        manager = self.Manager(self.tp, self.dir, 60_000, self.config, self.time)
        entry = entry_of(replica, producer_id)
        if entry is not None:
            kafka = self.Entry(
                producer_id, entry.producerEpoch, -1, TIMESTAMP, self.OptionalLong.empty(), *self._no_batch
            )
            for cached in entry.batchMetadata:
                self._add_batch.invoke(
                    kafka,
                    jvm.jclass("java.lang.Short")(entry.producerEpoch),
                    jvm.jclass("java.lang.Integer")(cached.lastSeq),
                    jvm.jclass("java.lang.Long")(cached.lastOffset),
                    jvm.jclass("java.lang.Integer")(0),
                    jvm.jclass("java.lang.Long")(TIMESTAMP),
                )
            manager.loadProducerEntry(kafka)
        return manager

    def record_batch(self, batch: Batch, offset: int) -> Any:
        records = self.MemoryRecords.withIdempotentRecords(
            offset,
            self.NO_COMPRESSION,
            batch.producerId,
            batch.producerEpoch,
            batch.baseSequence,
            0,
            self.SimpleRecord(TIMESTAMP, f"r{batch.record}".encode()),
        )
        return next(iter(records.batches()))

    def decide(self, replica: Replica, batch: Batch) -> tuple[tuple[str, int], tuple | None]:
        """Kafka's answer for this batch on this leader: ((outcome, offset), the entry after an append)."""
        manager = self.manager(replica, batch.producerId)
        offset = len(replica.log)
        try:
            last = manager.lastEntry(batch.producerId)
            if last.isPresent():
                duplicate = self._find_duplicate.invoke(last.get(), self.record_batch(batch, offset))
                if duplicate.isPresent():
                    return (DUPLICATE, int(_value(duplicate.get().lastOffset))), None
            info = manager.prepareUpdate(batch.producerId, self.CLIENT)
            info.appendDataBatch(
                batch.producerEpoch,
                batch.baseSequence,
                batch.baseSequence,
                TIMESTAMP,
                self.LogOffsetMetadata(offset),
                offset,
                False,
            )
            manager.update(info)
            entry = manager.lastEntry(batch.producerId).get()
            cached = tuple((int(_value(m.lastSeq)), int(_value(m.lastOffset))) for m in entry.batchMetadata())
            return (NONE, offset), (int(entry.producerEpoch()), cached)
        except Exception as exc:  # a Java exception is Kafka's answer
            if not jvm.is_java_exception(exc):
                raise
            text = jvm.java_exception_text(exc)
            name = text.split(":", 1)[0]
            return (EXCEPTIONS.get(name, text), -1), None

    # -- the comparison --------------------------------------------------------------------------
    def compare_step(self, state: ProducerState, action: Action, next_state: ProducerState) -> Iterator[Comparison]:
        if action.name != "HandleProduce":
            return
        args = action.args
        if args["outcome"] in (NOT_ENOUGH_REPLICAS, NOT_LEADER_OR_FOLLOWER):
            return
        b = args["broker"]
        request = next(r for r in state.requests if (r.connection, r.broker) == (args["connection"], b))
        replica = state.replicas[b]
        batch = request.batch
        offset = len(replica.log)
        if args["outcome"] == DUPLICATE:
            ours_offset = next(
                m.lastOffset
                for m in entry_of(replica, batch.producerId).batchMetadata
                if m.lastSeq == batch.baseSequence
            )
        else:
            ours_offset = offset if args["outcome"] == NONE else -1
        theirs, kafka_entry = self.decide(replica, batch)
        inputs = {"batch": tuple(batch), "entry": repr(entry_of(replica, batch.producerId))}
        yield Comparison("outcome", (args["outcome"], ours_offset), theirs, inputs)
        if args["outcome"] == NONE and kafka_entry is not None:
            ours = entry_of(next_state.replicas[b], batch.producerId)
            ours_entry = (ours.producerEpoch, tuple((m.lastSeq, m.lastOffset) for m in ours.batchMetadata))
            yield Comparison("producerState", ours_entry, kafka_entry, inputs)
