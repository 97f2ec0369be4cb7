"""A data partition's side of transactions: the log of transactional batches and markers, the
producer's ``ProducerStateEntry`` on the leader, and what ``read_committed`` consumers derive from
them -- the last stable offset and the aborted-transaction index."""

from __future__ import annotations

from typing import NamedTuple

NO_OFFSET = -1


class Batch(NamedTuple):
    """A batch in a partition's log: a transactional record, or a control batch (a marker)."""

    control: bool
    producerEpoch: int
    client: int
    """Data: which producer incarnation wrote it. Marker: -1."""
    txn: int
    """Data: the application's transaction (ghost). Marker: the coordinator's decision (ghost)."""
    commit: bool
    coordinatorEpoch: int


class ProducerEntry(NamedTuple):
    """A leader's ProducerStateEntry for one producer id, with its VerificationStateEntry's guard."""

    producerId: int
    producerEpoch: int = -1
    coordinatorEpoch: int = -1
    currentTxnFirstOffset: int = NO_OFFSET
    verificationGuard: int = -1
    """KAFKA-14884: the guard of a verification in progress (-1 none); the log end when it was made."""


class Partition(NamedTuple):
    """A partition leader's log and its producer state: one entry per producer id of the
    transactional id (a new one after each rotation on epoch exhaustion), oldest first."""

    log: tuple[Batch, ...]
    producers: tuple[ProducerEntry, ...]
    verifying: tuple[tuple[int, int, int, int, int], ...]
    """Produce requests parked while the coordinator is asked: (client, producerEpoch, txn, guard,
    producerId)."""

    def entry(self, producer_id: int) -> ProducerEntry:
        """The entry of ``producer_id`` (an empty one for an id the leader has no state of)."""
        return next((e for e in self.producers if e.producerId == producer_id), ProducerEntry(producer_id))

    def with_entry(self, entry: ProducerEntry) -> Partition:
        rest = [e for e in self.producers if e.producerId != entry.producerId]
        return self._replace(producers=tuple(sorted((*rest, entry))))

    @property
    def newest(self) -> ProducerEntry:
        return self.producers[-1] if self.producers else ProducerEntry(-1)

    @property
    def producerEpoch(self) -> int:
        """The newest producer id's epoch."""
        return self.newest.producerEpoch

    @property
    def coordinatorEpoch(self) -> int:
        return self.newest.coordinatorEpoch

    @property
    def currentTxnFirstOffset(self) -> int:
        """The first offset of the earliest open transaction of any producer id (NO_OFFSET: none)."""
        return min(
            (e.currentTxnFirstOffset for e in self.producers if e.currentTxnFirstOffset != NO_OFFSET), default=NO_OFFSET
        )


def has_ongoing_transaction(p: Partition, producer_id: int, producer_epoch: int) -> bool:
    """UnifiedLog.hasOngoingTransaction: the producer's open transaction here is of this epoch."""
    e = p.entry(producer_id)
    return e.currentTxnFirstOffset != NO_OFFSET and e.producerEpoch == producer_epoch


def last_stable_offset(p: Partition) -> int:
    """UnifiedLog.lastStableOffset: the first offset of the open transaction, else the high watermark."""
    return p.currentTxnFirstOffset if p.currentTxnFirstOffset != NO_OFFSET else len(p.log)


def closing_markers(p: Partition) -> list[int]:
    """For each offset, the offset of the marker that closes its batch's transaction (-1: still open)."""
    out = [-1] * len(p.log)
    pending: list[int] = []
    for offset, batch in enumerate(p.log):
        if batch.control:
            for o in pending:
                out[o] = offset
            pending = []
            out[offset] = offset
        else:
            pending.append(offset)
    return out


def aborted_index(p: Partition) -> list[tuple[int, int]]:
    """The TransactionIndex: (firstOffset, lastOffset) of every aborted transaction of the producer."""
    out = []
    first = -1
    for offset, batch in enumerate(p.log):
        if not batch.control and first == -1:
            first = offset
        elif batch.control:
            if first != -1 and not batch.commit:
                out.append((first, offset))
            first = -1
    return out


def fetch(p: Partition, position: int, committed: bool, aborted_list: bool) -> tuple[int, tuple[int, ...]]:
    """A consumer's fetch from ``position``: the position after it and the offsets of the records it
    returns. A read_committed fetch (``committed``) reads up to the LSO, a read_uncommitted one up to
    the high watermark; the consumer drops a record of an aborted transaction only when the answer
    carries the aborted-transaction list (which the log adds only to a read_committed read)."""
    end = last_stable_offset(p) if committed else len(p.log)
    if committed and aborted_list:
        records = tuple(o for o, _ in read_committed(p) if o >= position)
    else:
        records = tuple(o for o in range(position, end) if not p.log[o].control)
    return max(end, position), records


def read_committed(p: Partition) -> list[tuple[int, Batch]]:
    """What a read_committed fetch returns: data below the LSO, less what the aborted index names."""
    lso = last_stable_offset(p)
    closing = closing_markers(p)
    return [
        (o, b) for o, b in enumerate(p.log[:lso]) if not b.control and closing[o] != -1 and p.log[closing[o]].commit
    ]
