"""Record batches as Kafka's classes build and read them: one record per batch, its value naming the
model's record (``record-3``), so the log read back says which of the model's records each batch is.

kafka-clients moved ``MemoryRecords`` and its kin to ``org.apache.kafka.common.record.internal`` in
4.3; ``jclass`` finds them where each release has them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kmc.checker.errors import UserError
from kmc.cluster.drive.session import Session
from kmc.cluster.drive.wire import java, java_ints, java_list, message

NAMES_UP_TO = 12
"""Produce and Fetch name topics up to version 12 (13 replaces the name with the topic id)."""


def record_class(name: str) -> Any:
    """A record class by its 4.3 name (``jclass`` finds it under its older name elsewhere)."""
    return java(f"org.apache.kafka.common.record.internal.{name}")


def value_of(record: int) -> bytes:
    return f"record-{record}".encode()


def batch(record: int, producer_id: int, producer_epoch: int, base_sequence: int, transactional: bool = False) -> Any:
    """MemoryRecords holding one record; idempotent (or transactional) when it has a producer id."""
    import jpype

    simple = record_class("SimpleRecord")(jpype.JArray(jpype.JByte)(value_of(record)))
    records = jpype.JArray(record_class("SimpleRecord"))([simple])
    none = no_compression()
    memory = record_class("MemoryRecords")
    if producer_id < 0:
        return memory.withRecords(none, records)
    if transactional:
        return memory.withTransactionalRecords(none, producer_id, producer_epoch, base_sequence, records)
    return memory.withIdempotentRecords(none, producer_id, producer_epoch, base_sequence, records)


def no_compression() -> Any:
    """What MemoryRecords takes for uncompressed batches: a ``Compression`` from 3.8 (KIP-390), a
    ``CompressionType`` before."""
    try:
        return java("org.apache.kafka.common.compress.Compression").NONE
    except UserError:
        return java("org.apache.kafka.common.record.CompressionType").NONE


@dataclass(frozen=True)
class LoggedBatch:
    """A batch as the partition's log holds it."""

    baseOffset: int
    record: int | None
    """The model's record its value names; None for a control batch (a transaction marker)."""
    producerId: int
    producerEpoch: int
    baseSequence: int
    isTransactional: bool
    isControl: bool
    marker: str = ""
    """A control batch's marker: ``commit`` or ``abort``."""


def produce_request(topic: str, partition: int, records: Any, acks: int, transactional_id: str | None = None) -> Any:
    data = message("ProduceRequestData").setAcks(acks).setTimeoutMs(15_000).setTransactionalId(transactional_id)
    partition_data = message("ProduceRequestData$PartitionProduceData").setIndex(partition).setRecords(records)
    topic_data = message("ProduceRequestData$TopicProduceData").setName(topic)
    topic_data.setPartitionData(java_list([partition_data]))
    data.topicData().add(topic_data)
    return data


def produce_answer(answer: Any) -> tuple[str, int]:
    """The error name and base offset of a one-partition Produce response."""
    from kmc.cluster.drive.wire import error_name

    for topic in answer.responses():
        for partition in topic.partitionResponses():
            return error_name(partition.errorCode()), int(partition.baseOffset())
    return "(no answer for the partition)", -1


def read_log(session: Session, node: int, topic: str, partition: int, isolation: int = 0) -> list[LoggedBatch]:
    """Every batch of the partition from offset 0 (isolation 1: read_committed, up to the LSO)."""
    request = message("FetchRequestData").setMaxWaitMs(0).setMinBytes(0).setMaxBytes(1 << 20)
    request.setIsolationLevel(isolation).setReplicaId(-1)
    fetched = message("FetchRequestData$FetchPartition").setPartition(partition).setFetchOffset(0)
    fetched.setPartitionMaxBytes(1 << 20)
    request.topics().add(message("FetchRequestData$FetchTopic").setTopic(topic).setPartitions(java_list([fetched])))
    conn = session.connection("log-reader", node)
    answer = conn.call("FETCH", request, version=min(NAMES_UP_TO, conn.version("FETCH")))
    found: list[LoggedBatch] = []
    for response in answer.responses():
        for data in response.partitions():
            for stored in data.records().batches():
                found.extend(_logged(stored))
    return found


def _logged(stored: Any) -> list[LoggedBatch]:
    values: list[int | None] = []
    marker = ""
    if stored.isControlBatch():
        values = [None]
        for rec in stored:
            marker = str(record_class("ControlRecordType").parse(rec.key()).name()).lower()
    else:
        for rec in stored:
            raw = bytes(java("org.apache.kafka.common.utils.Utils").toArray(rec.value()))
            text = raw.decode(errors="replace")
            values.append(int(text.removeprefix("record-")) if text.startswith("record-") else -1)
    return [
        LoggedBatch(
            int(stored.baseOffset()),
            value,
            int(stored.producerId()),
            int(stored.producerEpoch()),
            int(stored.baseSequence()),
            bool(stored.isTransactional()),
            bool(stored.isControlBatch()),
            marker,
        )
        for value in values
    ]


def active_producers(session: Session, node: int, topic: str, partition: int) -> dict[int, dict[str, int]]:
    """DescribeProducers (KIP-664): the partition leader's producer state, by producer id."""
    request = message("DescribeProducersRequestData")
    entry = message("DescribeProducersRequestData$TopicRequest").setName(topic)
    entry.setPartitionIndexes(java_ints([partition]))
    request.topics().add(entry)
    answer = session.connection("log-reader", node).call("DESCRIBE_PRODUCERS", request)
    shown: dict[int, dict[str, int]] = {}
    for response in answer.topics():
        for data in response.partitions():
            for producer in data.activeProducers():
                shown[int(producer.producerId())] = {
                    "producerEpoch": int(producer.producerEpoch()),
                    "lastSequence": int(producer.lastSequence()),
                    "currentTxnStartOffset": int(producer.currentTxnStartOffset()),
                }
    return shown
