"""The partition leaders of the ``transactions`` model: the transactional appends, KIP-890's
verification with its guard, and the markers (``UnifiedLog``, ``ProducerStateManager``,
``ProducerAppendInfo``), a mixin of :class:`kmc.models.transactions.model.TransactionsModel`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kmc.checker import Action
from kmc.models.transactions import coordinator as tc
from kmc.models.transactions.coordinator import (
    INVALID_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NONE,
    PRODUCER_FENCED,
    TRANSACTION_COORDINATOR_FENCED,
)
from kmc.models.transactions.log import NO_OFFSET, Batch, Partition, has_ongoing_transaction
from kmc.models.transactions.state import (
    BETWEEN_TRANSACTIONS,
    COORDINATOR,
    Message,
    TransactionsState,
    client_lane,
    leader_lane,
)

if TYPE_CHECKING:
    from collections.abc import Callable

Step = tuple[Action, TransactionsState]


def _batches_cleared_by_marker(p: Partition) -> bool:
    """ProducerStateEntry.maybeUpdateEpoch: the last write is a marker at a newer epoch than the data
    before it, so the entry keeps no batch (and, before KAFKA-9144, no timestamp)."""
    last_data = next((b for b in reversed(p.log) if not b.control), None)
    return (
        bool(p.log) and p.log[-1].control and (last_data is None or last_data.producerEpoch < p.log[-1].producerEpoch)
    )


class PartitionLeaders:
    """Each data partition's leader, as the producer and the coordinator reach it."""

    config: Any
    tv2: bool
    _send: Callable[..., tuple[Message, ...]]

    @staticmethod
    def _set_partition(s: TransactionsState, p: int, partition: Partition) -> tuple[Partition, ...]:
        return (*s.partitions[:p], partition, *s.partitions[p + 1 :])

    def _expire_producer(self, s: TransactionsState, pi: int, out: list[Step]) -> None:
        """ProducerStateManager.removeExpiredProducers: a producer with no open transaction whose
        state has been idle for producer.id.expiration.ms is forgotten, and with it the producer epoch
        and coordinator epoch that fenced its late requests. That is a day by default, longer than any
        transaction or request: idle means no request on its way to the leader and no producer inside
        a transaction. Before KAFKA-9144 the idle time was counted from the last data batch, and a
        marker that bumped the epoch cleared the batches: the state expired within minutes."""
        p = s.partitions[pi]
        if p.producerEpoch == NO_PRODUCER_EPOCH or p.currentTxnFirstOffset != NO_OFFSET:
            return
        lane = leader_lane(pi)
        idle = (
            not p.verifying
            and not any(m.dst == lane for m in s.network)
            and all(c.state in BETWEEN_TRANSACTIONS for c in s.clients)
        )
        if not (idle or (not self.config.kafka_9144 and _batches_cleared_by_marker(p))):
            return
        forgotten = p._replace(producers=())
        nxt = s._replace(partitions=self._set_partition(s, pi, forgotten), expirations=s.expirations + 1)
        out.append((Action("ExpireProducer", partition=pi), nxt))

    def _on_Produce(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        p = s.partitions[m.partition]
        action = Action(
            "HandleProduce", partition=m.partition, client=m.client, producerEpoch=m.producerEpoch, txn=m.txn
        )
        entry = p.entry(m.producerId)
        if m.producerEpoch < entry.producerEpoch:
            error = PRODUCER_FENCED if self.tv2 else INVALID_PRODUCER_EPOCH
            resp = m._replace(api="ProduceResponse", src=m.dst, dst=m.src, error=error)
            out.append((action, s._replace(network=self._send(s, resp, drop=m))))
            return
        ongoing = has_ongoing_transaction(p, m.producerId, m.producerEpoch)
        if self.config.verification and not ongoing:
            guard = entry.verificationGuard if entry.verificationGuard != -1 else len(p.log)
            parked = p.with_entry(entry._replace(verificationGuard=guard))._replace(
                verifying=(*p.verifying, (m.client, m.producerEpoch, m.txn, guard, m.producerId))
            )
            verify = Message(
                "VerifyPartition",
                m.dst,
                COORDINATOR,
                client=m.client,
                partition=m.partition,
                producerEpoch=m.producerEpoch,
                txn=m.txn,
                producerId=m.producerId,
            )
            out.append(
                (
                    action,
                    s._replace(
                        partitions=self._set_partition(s, m.partition, parked), network=self._send(s, verify, drop=m)
                    ),
                )
            )
            return
        self._append(s, m, out, action, drop=m)

    def _append(
        self,
        s: TransactionsState,
        m: Message,
        out: list[Step],
        action: Action,
        drop: Message,
        verifying: tuple | None = None,
    ) -> None:
        pi, c, epoch, txn = m.partition, m.client, m.producerEpoch, m.txn
        p = s.partitions[pi]
        entry = p.entry(m.producerId)
        # The coordinator lets a newer producer id add a partition only once the older id's transaction
        # is complete, its marker written here: transactions of two ids never interleave in one log.
        assert all(e.currentTxnFirstOffset == NO_OFFSET for e in p.producers if e.producerId != m.producerId), (
            "two producer ids' transactions open on one partition"
        )
        first = entry.currentTxnFirstOffset if entry.currentTxnFirstOffset != NO_OFFSET else len(p.log)
        batch = Batch(False, epoch, c, txn, False, -1)
        entry = entry._replace(
            producerEpoch=max(epoch, entry.producerEpoch), currentTxnFirstOffset=first, verificationGuard=-1
        )
        new = p.with_entry(entry)._replace(
            log=(*p.log, batch), verifying=p.verifying if verifying is None else verifying
        )
        resp = Message(
            "ProduceResponse",
            leader_lane(pi),
            client_lane(c),
            client=c,
            partition=pi,
            producerEpoch=epoch,
            txn=txn,
            producerId=m.producerId,
        )
        out.append(
            (action, s._replace(partitions=self._set_partition(s, pi, new), network=self._send(s, resp, drop=drop)))
        )

    def _on_VerifyResponse(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        p = s.partitions[m.partition]
        action = Action("HandleVerifyResponse", partition=m.partition)
        entry = next(
            e for e in p.verifying if (e[0], e[1], e[2], e[4]) == (m.client, m.producerEpoch, m.txn, m.producerId)
        )
        rest = list(p.verifying)
        rest.remove(entry)
        ongoing = has_ongoing_transaction(p, m.producerId, m.producerEpoch)
        producer = p.entry(m.producerId)
        guard_ok = not self.config.verification_guard or entry[3] == producer.verificationGuard or ongoing
        fenced = m.producerEpoch < producer.producerEpoch
        if m.error == NONE and guard_ok and not fenced:
            self._append(s, m, out, action, drop=m, verifying=tuple(rest))
            return
        error = m.error if m.error != NONE else tc.INVALID_TXN_STATE
        if fenced:
            error = PRODUCER_FENCED if self.tv2 else INVALID_PRODUCER_EPOCH
        resp = Message(
            "ProduceResponse",
            m.dst,
            client_lane(m.client),
            client=m.client,
            partition=m.partition,
            producerEpoch=m.producerEpoch,
            txn=m.txn,
            error=error,
            producerId=m.producerId,
        )
        new = p._replace(verifying=tuple(rest))
        out.append(
            (
                action,
                s._replace(partitions=self._set_partition(s, m.partition, new), network=self._send(s, resp, drop=m)),
            )
        )

    def _on_WriteTxnMarkers(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        """ProducerAppendInfo.appendEndTxnMarker: fence an older coordinator and an older producer epoch
        (under TV 2 a marker must carry a newer epoch, or the same one as a retry when no transaction is
        open, or, since KAFKA-20090, Short.MaxValue), close the open transaction and clear the
        verification guard. A newer producer id's first marker starts its entry."""
        p = s.partitions[m.partition]
        entry = p.entry(m.producerId)
        action = Action(
            "HandleWriteTxnMarkers", partition=m.partition, commit=m.commit, coordinatorEpoch=m.coordinatorEpoch
        )
        error = NONE
        if m.coordinatorEpoch < entry.coordinatorEpoch:
            error = TRANSACTION_COORDINATOR_FENCED
        elif self.tv2:
            open_txn = entry.currentTxnFirstOffset != NO_OFFSET
            at_max = self.config.kafka_20090 and m.producerEpoch == tc.SHORT_MAX_VALUE
            same_epoch = m.producerEpoch == entry.producerEpoch
            if m.producerEpoch < entry.producerEpoch or (same_epoch and open_txn and not at_max):
                error = INVALID_PRODUCER_EPOCH
        elif m.producerEpoch < entry.producerEpoch:
            error = INVALID_PRODUCER_EPOCH
        resp = Message(
            "WriteTxnMarkersResponse",
            m.dst,
            COORDINATOR,
            partition=m.partition,
            coordinatorEpoch=m.coordinatorEpoch,
            txn=m.txn,
            error=error,
        )
        if error != NONE:
            out.append((action, s._replace(network=self._send(s, resp, drop=m))))
            return
        marker = Batch(True, m.producerEpoch, -1, m.txn, m.commit, m.coordinatorEpoch)
        # KAFKA-18575: under TV 2 the next transaction, already at the marker's bumped epoch, may be
        # verifying; its guard (VerificationStateEntry.supportsEpochBump) survives the marker.
        # A newer producer id's verification is its own VerificationStateEntry: a marker of another id
        # never clears it.
        keep_guard = (
            self.tv2
            and self.config.kafka_18575
            and any(
                e[3] == entry.verificationGuard and e[1] == m.producerEpoch and e[4] == m.producerId
                for e in p.verifying
            )
        )
        entry = entry._replace(
            producerEpoch=m.producerEpoch,
            coordinatorEpoch=m.coordinatorEpoch,
            currentTxnFirstOffset=NO_OFFSET,
            verificationGuard=entry.verificationGuard if keep_guard else -1,
        )
        new = p.with_entry(entry)._replace(log=(*p.log, marker))
        out.append(
            (
                action,
                s._replace(partitions=self._set_partition(s, m.partition, new), network=self._send(s, resp, drop=m)),
            )
        )
