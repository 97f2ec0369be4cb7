"""How a ``transactions`` trace is drawn: lanes for the producers, the coordinator, the partition
leaders and the consumer; tables for the transaction metadata, the producers, each partition's log
and LSO, and the messages in flight."""

from __future__ import annotations

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.models.transactions.coordinator import NONE, PRODUCER_ID, TxnMeta
from kmc.models.transactions.log import Partition, aborted_index, last_stable_offset
from kmc.models.transactions.state import COORDINATOR, TransactionsState, client_lane, leader_lane


class TransactionsDrawing(Drawing):
    """Lanes: producers, coordinator, partition leaders, consumer. Tables: the transaction metadata
    (in memory and in __transaction_state), each producer, each partition (log, LSO, open
    transaction, aborted index, epochs), and the messages in flight."""

    def __init__(self, producers: int, partitions: int) -> None:
        self.producers = [client_lane(c) for c in range(producers)]
        self.leaders = [leader_lane(p) for p in range(partitions)]

    def lanes(self) -> list[str]:
        return [*self.producers, COORDINATOR, *self.leaders, "consumer"]

    def arrow(self, action: Action, before: TransactionsState, after: TransactionsState) -> Arrow:
        a, name = action.args, action.name
        sent = [m for m in after.network if m not in before.network]
        note = name
        if sent:
            m = sent[0]
            epoch = f"e{m.producerEpoch}" if m.producerId <= PRODUCER_ID else f"pid {m.producerId}, e{m.producerEpoch}"
            note = f"{m.api}(p{m.partition}, {epoch})" if m.partition >= 0 else f"{m.api}({epoch})"
            if m.error != NONE:
                note = f"{m.api}: {m.error}"
            if m.api == "WriteTxnMarkers":
                result = "COMMIT" if m.commit else "ABORT"
                note = f"{result} markers, e{m.producerEpoch}, coordinatorEpoch {m.coordinatorEpoch}"
            targets = tuple(dict.fromkeys(x.dst for x in sent))
            source = sent[0].src
            if name.startswith("Handle") and name.endswith("Response") and "client" in a:
                return Arrow(client_lane(a["client"]), (), f"{name[6:]}")
            return Arrow(source, targets, note)
        if "client" in a and not name.startswith("HandleProduce"):
            return Arrow(client_lane(a["client"]), (), name)
        if name in ("ConsumerFetch", "CompleteDelayedFetch"):
            p = a["partition"]
            given = after.consumed[p][len(before.consumed[p]) :]
            return Arrow(
                "consumer",
                (leader_lane(p),),
                f"{'delayed fetch' if name == 'CompleteDelayedFetch' else 'fetch'} to {after.consumerPositions[p]}: "
                f"records at {describe(frozenset(given))}",
            )
        if name == "DelayFetch":
            return Arrow("consumer", (leader_lane(a["partition"]),), "fetch waits in the purgatory")
        if "partition" in a:
            return Arrow(leader_lane(a["partition"]), (), name)
        return Arrow(COORDINATOR, (), name)

    def tables(self, state: TransactionsState) -> list[Table]:
        co = state.coordinator

        def meta_row(label: str, meta: TxnMeta | None) -> list[str]:
            if meta is None:
                return [label, "-", "-", "-", "-", "-"]
            return [
                label,
                meta.state,
                str(meta.producerId),
                str(meta.producerEpoch),
                str(meta.lastProducerEpoch),
                describe(meta.topicPartitions),
            ]

        txn = Table(
            f"transaction coordinator (coordinatorEpoch {co.coordinatorEpoch}, markers pending "
            f"{describe(co.pendingMarkers)}{', hasFailedEpochFence' if co.hasFailedEpochFence else ''})",
            ["", "state", "producerId", "producerEpoch", "lastProducerEpoch", "topicPartitions"],
            [meta_row("in memory", co.metadata), meta_row("__transaction_state", state.transactionLog)],
        )
        producers = Table(
            "producers",
            [
                "",
                "state",
                "producerId",
                "producerEpoch",
                "txn",
                "added",
                "produced",
                "completed",
                "awaiting",
                "epochBumpRequired",
            ],
            [
                [
                    client_lane(c),
                    cl.state,
                    str(cl.producerId),
                    str(cl.producerEpoch),
                    str(cl.txn),
                    describe(cl.added),
                    describe(cl.produced),
                    describe(cl.completed),
                    cl.awaiting or "-",
                    "yes" if cl.epochBumpRequired else "-",
                ]
                for c, cl in enumerate(state.clients)
            ],
        )
        rows = []
        for i, p in enumerate(state.partitions):
            entries = (
                " ".join(
                    f"{o}:{'COMMIT' if b.commit else 'ABORT'}/e{b.producerEpoch}"
                    if b.control
                    else f"{o}:t{b.txn}/e{b.producerEpoch}"
                    for o, b in enumerate(p.log)
                )
                or "(empty)"
            )
            index = " ".join(f"[{a},{b}]" for a, b in aborted_index(p)) or "-"
            rows.append(
                [
                    leader_lane(i),
                    entries,
                    str(len(p.log)),
                    str(last_stable_offset(p)),
                    _per_producer_id(p, "producerEpoch"),
                    _per_producer_id(p, "coordinatorEpoch"),
                    index,
                    f"{state.consumerPositions[i]}{' (fetch waiting)' if i in state.delayedFetches else ''}, "
                    f"given {describe(frozenset(state.consumed[i]))}",
                ]
            )
        partitions = Table(
            "partitions (log = offset:txn/epoch; markers COMMIT/ABORT)",
            ["", "log", "HW", "LSO", "producerEpoch", "coordinatorEpoch", "aborted index", "consumer"],
            rows,
        )
        flight = Table(
            "in flight",
            ["messages"],
            [[" ".join(f"{m.api}->{m.dst}" for m in state.network) or "-"]],
        )
        return [txn, producers, partitions, flight]


def _per_producer_id(p: Partition, field: str) -> str:
    """A field of the leader's producer state: its value, or each producer id's once there are two."""
    if len(p.producers) <= 1:
        return str(getattr(p, field))
    return " ".join(f"pid {e.producerId}: {getattr(e, field)}" for e in p.producers)
