"""How a consumer-delivery trace is drawn: lanes for the consumers, the group and transaction
coordinators, and the partitions; tables for the group, each consumer, and the output."""

from __future__ import annotations

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table
from kmc.models.consumer_delivery.membership import NONE
from kmc.models.consumer_delivery.state import NO_EPOCH, NO_OFFSET, DeliveryState


# -- how traces are drawn --------------------------------------------------------------------------
class DeliveryDrawing(Drawing):
    """Lanes: one per consumer, the group coordinator, the transaction coordinator, the input and
    output partitions. Tables: the group and committed offset, every consumer, what was processed
    and what a read_committed consumer of the output sees."""

    def __init__(self, consumers: int) -> None:
        self.consumers = [f"consumer {c}" for c in range(consumers)]

    def lanes(self) -> list[str]:
        return [*self.consumers, "group coordinator", "transaction coordinator", "input", "output"]

    def arrow(self, action: Action, before: DeliveryState, after: DeliveryState) -> Arrow:
        args, name = action.args, action.name
        error = args.get("error", NONE)
        suffix = "" if error == NONE else f" → {error}"
        if "consumer" not in args:
            if name == "TransactionTimeout":
                return Arrow("transaction coordinator", ("output",), f"abort {args['transactionalId']} (timeout)")
            if name == "CompleteTxnOffsetCommit":
                outcome = "committed" if args["commit"] else "discarded"
                note = f"{args['transactionalId']}'s pending offsets {outcome} (the earlier marker's task)"
                return Arrow("group coordinator", (), note)
            if name == "SessionTimeout":
                zombie = " (still running: a zombie)" if args["processAlive"] else ""
                return Arrow("group coordinator", (), f"session timeout: {args['memberId']} removed{zombie}")
            note = f"{name}({next(iter(args.values()), '')})" if args else name
            return Arrow("group coordinator", (), note)
        lane = self.consumers[args["consumer"]]
        if name == "Poll":
            note = f"Poll → offset {args['offset']}" + (" (auto-commit first)" if args["autoCommit"] else "") + suffix
            return Arrow(lane, ("input", "group coordinator") if args["autoCommit"] else ("input",), note)
        if name == "Process":
            target = "output"
            return Arrow(lane, (target,), f"process {args['offset']}, write output{suffix}")
        if name in ("OffsetCommit", "SendOffsetsToTransaction"):
            note = f"{name}(offset {args['offset']}, gen {args['generationId']}){suffix}"
            return Arrow(lane, ("group coordinator",), note)
        if name == "CommitTransaction":
            return Arrow(lane, ("transaction coordinator", "output", "group coordinator"), f"{name}{suffix}")
        if name == "InitProducerId":
            return Arrow(lane, ("transaction coordinator",), f"InitProducerId({args['transactionalId']})")
        if name == "OffsetFetch":
            return Arrow(lane, ("group coordinator",), f"OffsetFetch → {args['offset']}")
        if name in ("JoinGroup", "SyncGroup", "Heartbeat", "ReceiveHeartbeat"):
            return Arrow(lane, ("group coordinator",), f"{name}{suffix}")
        return Arrow(lane, (), name)

    def tables(self, state: DeliveryState) -> list[Table]:
        coord = state.coordinator
        members = ", ".join(f"{m.memberId}{'' if m.memberEpoch == 0 else f'@{m.memberEpoch}'}" for m in coord.members)
        pending = ", ".join(f"{t}:{o}" for t, o in coord.pendingOffsets) or "-"
        if coord.txnCompletions:
            markers = ", ".join(f"{t} {'COMMIT' if commit else 'ABORT'}" for t, commit in coord.txnCompletions)
            pending += f" (markers not materialised: {markers})"
        group = Table(
            "group coordinator",
            ["state", "generation / group epoch", "members", "owner", "committed offset", "pending txn offsets"],
            [
                [
                    coord.state,
                    str(coord.generationId),
                    members or "-",
                    coord.owner or "-",
                    "-" if coord.committedOffset == NO_OFFSET else str(coord.committedOffset),
                    pending,
                ]
            ],
        )
        rows = []
        for c, me in enumerate(state.consumers):
            txn = "-" if me.producerEpoch == NO_EPOCH else f"epoch {me.producerEpoch}"
            if me.inTxn:
                txn += ", open" + (", offsets sent" if me.offsetsSent else "")
            rows.append(
                [
                    self.consumers[c],
                    me.phase,
                    me.memberId or "-",
                    str(me.generationId),
                    "p0" if me.owned else "-",
                    "-" if me.position == NO_OFFSET else str(me.position),
                    "-" if me.fetched == NO_OFFSET else str(me.fetched),
                    txn,
                ]
            )
        consumers = Table(
            "consumers", ["", "phase", "memberId", "generation", "owned", "position", "polled", "txn"], rows
        )
        open_txns = "; ".join(f"{t}: {list(offs)}" for t, offs in state.ongoing) or "-"
        records = Table(
            "input offsets",
            ["", *(str(o) for o in range(len(state.processed)))],
            [["processed", *map(str, state.processed)], ["output (read_committed)", *map(str, state.output)]],
        )
        txns = Table("open transactions (output not visible)", ["transactionalId: inputs"], [[open_txns]])
        return [group, consumers, records, txns]
