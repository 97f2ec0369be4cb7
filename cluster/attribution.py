"""Who wrote a value twice: the producer ids, epochs and sequences of the batches that hold both copies.

A duplicate in the log is the client's doing or the broker's, and the log says which. The broker
deduplicates an idempotent producer's batches by (producerId, producerEpoch, sequence): a second
copy under the same producer id and epoch with sequences it already took means the broker failed
its promise; a second copy under a new epoch (the client bumped it, and its sequences start again
at 0) or a new producer id is a send the broker had no means to recognise, so the client re-sent
something that had been written. ``DumpLogSegments`` prints every batch's header; one JVM decodes
the topic's segments of every node.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kmc.cluster.release import dump_log_segments

BATCH = re.compile(
    r"baseOffset: (\d+) lastOffset: (\d+) count: \d+ baseSequence: (-?\d+) lastSequence: (-?\d+) "
    r"producerId: (-?\d+) producerEpoch: (-?\d+) partitionLeaderEpoch: (-?\d+) isTransactional: (\w+) "
    r"isControl: (\w+)"
)
DUMPING = "Dumping "


@dataclass(frozen=True)
class ProducerBatch:
    """A record batch's header, as the log holds it."""

    baseOffset: int
    lastOffset: int
    baseSequence: int
    lastSequence: int
    producerId: int
    producerEpoch: int
    partitionLeaderEpoch: int
    isTransactional: bool
    isControl: bool

    def sequence_at(self, offset: int) -> int:
        return self.baseSequence + offset - self.baseOffset if self.baseSequence >= 0 else -1

    def describe(self) -> str:
        where = f"offsets {self.baseOffset}-{self.lastOffset}"
        if self.producerId < 0:
            return f"{where}, by a producer without an id (not idempotent), leader epoch {self.partitionLeaderEpoch}"
        return (
            f"{where}, by producerId {self.producerId} at producerEpoch {self.producerEpoch}, sequences "
            f"{self.baseSequence}-{self.lastSequence}, leader epoch {self.partitionLeaderEpoch}"
        )


@dataclass(frozen=True)
class Attribution:
    """A run of duplicated values that two batches hold, and whose doing it was."""

    partition: str
    values: int
    first: ProducerBatch
    second: ProducerBatch
    by: str
    """``client`` or ``broker``."""
    reason: str

    def describe(self) -> str:
        return (
            f"{self.values} value(s) of {self.partition} written twice, at {self.first.describe()}, and again at "
            f"{self.second.describe()}: {self.reason}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "values": self.values,
            "by": self.by,
            "reason": self.reason,
            "first": vars(self.first),
            "second": vars(self.second),
        }


def blame(first: ProducerBatch, second: ProducerBatch, first_offset: int, second_offset: int) -> tuple[str, str]:
    """Whose doing one duplicate is, from the two batches that hold its copies."""
    if first.producerId < 0 or second.producerId < 0:
        return "client", "the producer is not idempotent, so the broker cannot recognise a retried send"
    if first.producerId != second.producerId:
        return "client", "the second copies came from another producer id, which the broker cannot tie to the first"
    if first.producerEpoch != second.producerEpoch:
        return "client", (
            "the client sent them again after bumping its producer epoch, which starts the sequences again "
            "at 0; the broker deduplicates only within one epoch"
        )
    if first.sequence_at(first_offset) == second.sequence_at(second_offset):
        return "broker", "the broker appended the same sequences of one producer twice within one epoch"
    return "client", "the client gave the same values two sequence numbers within one epoch"


def decode_batches(cluster_dir: Path, partitions: Iterable[str], jars: Path, java: str) -> dict[str, list]:
    """Per partition, the batches of its longest copy among the nodes (all copies agree once healed)."""
    files: dict[str, tuple[str, int]] = {}
    for folder in sorted(cluster_dir.glob("node-*")):
        node = int(folder.name.split("-", 1)[1])
        for partition in partitions:
            for segment in sorted((folder / "data" / "logs" / partition).glob("*.log")):
                files[str(segment)] = (partition, node)
    if not files:
        return {}
    text = dump_log_segments(jars, java, files, what="the topic's logs")
    return longest_copies(parse_batches(text, files))


def parse_batches(text: str, files: dict[str, tuple[str, int]]) -> dict[tuple[str, int], list[ProducerBatch]]:
    """The tool's output, split by the file each part dumps, as (partition, node) -> batches."""
    copies: dict[tuple[str, int], list[ProducerBatch]] = {}
    current: list[ProducerBatch] | None = None
    for line in text.splitlines():
        if line.startswith(DUMPING):
            where = files.get(line[len(DUMPING) :].strip())
            current = copies.setdefault(where, []) if where is not None else None
        elif current is not None and (match := BATCH.match(line)) is not None:
            numbers = [int(g) for g in match.groups()[:7]]
            flags = [g == "true" for g in match.groups()[7:]]
            current.append(ProducerBatch(*numbers, *flags))
    return copies


def longest_copies(copies: dict[tuple[str, int], list[ProducerBatch]]) -> dict[str, list[ProducerBatch]]:
    best: dict[str, list[ProducerBatch]] = {}
    for (partition, _node), batches in sorted(copies.items()):
        end = batches[-1].lastOffset if batches else -1
        if partition not in best or end > (best[partition][-1].lastOffset if best[partition] else -1):
            best[partition] = batches
    return best


def batch_at(batches: list[ProducerBatch], offset: int) -> ProducerBatch | None:
    for batch in batches:
        if batch.baseOffset <= offset <= batch.lastOffset:
            return batch
    return None


def attribute(duplicates: dict[str, dict[int, list[int]]], batches: dict[str, list]) -> list[Attribution]:
    """One attribution per pair of batches that hold the two copies of some duplicated values."""
    runs: dict[tuple[str, ProducerBatch, ProducerBatch, str, str], int] = {}
    for partition, values in sorted(duplicates.items()):
        for offsets in values.values():
            first_offset, second_offset = sorted(offsets)[:2]
            first = batch_at(batches.get(partition, []), first_offset)
            second = batch_at(batches.get(partition, []), second_offset)
            if first is None or second is None:
                continue  # the copy's segment is gone (deleted, or the log was cleaned)
            by, reason = blame(first, second, first_offset, second_offset)
            key = (partition, first, second, by, reason)
            runs[key] = runs.get(key, 0) + 1
    return [Attribution(p, count, first, second, by, reason) for (p, first, second, by, reason), count in runs.items()]
