"""How the `kraft-replication` model's traces are drawn: lanes for the producer, the controller
and each broker; tables of every replica, the controller's partition and what clients were told;
and why a counterexample is a bug (explain.py)."""

from __future__ import annotations

from kmc.checker import Action, Trace
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.models.kraft_replication.explain import explain
from kmc.models.kraft_replication.state import (
    AWAITING_METADATA,
    DIVERGING_EPOCH,
    ERROR_NONE,
    NO_LEADER,
    TRUNCATING,
    UNDEFINED,
    FetchRequest,
    FetchResponse,
    KraftReplicationState,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
)

FLIGHT = {
    FetchRequest: "request",
    FetchResponse: "response",
    OffsetsForLeaderEpochRequest: "OffsetsForLeaderEpoch",
    OffsetsForLeaderEpochResponse: "its answer",
}


class KraftReplicationDrawing(Drawing):
    """Lanes: producer, controller, one per broker. Tables: every replica (log, LEO, HW, role, ISR
    as the leader sees it), the controller's registrations and partition, and what producers and
    consumers were told."""

    def __init__(self, brokers: int, failovers: bool = False, reassignments: bool = False) -> None:
        self.brokers = [f"broker {b}" for b in range(brokers)]
        self.failovers = failovers
        """Whether the controller table shows the failovers (only when the config allows any)."""
        self.reassignments = reassignments
        """Whether the controller table shows the replicas and the reassignment in progress."""

    def lanes(self) -> list[str]:
        return ["producer", "controller", *self.brokers]

    def arrow(self, action: Action, before: KraftReplicationState, after: KraftReplicationState) -> Arrow:
        args, name = action.args, action.name
        if name == "Produce":
            return Arrow("producer", (self.brokers[args["leader"]],), f"Produce(record {args['id']})")
        if name == "SendFetch":
            f = args["follower"]
            req = after.fetches[f]
            note = f"Fetch(offset {req.fetchOffset}, epoch {req.lastFetchedEpoch})" if req else "Fetch"
            return Arrow(self.brokers[f], (self.brokers[args["leader"]],), note)
        if name == "HandleFetch":
            f = args["follower"]
            resp = after.fetches[f]
            if resp is None:
                note = "records"
            elif resp.error == ERROR_NONE:
                note = f"{len(resp.records)} records, HW {resp.highWatermark}"
            elif resp.error == DIVERGING_EPOCH:
                note = f"diverging epoch {resp.divergingEpoch[0]} at {resp.divergingEpoch[1]}"
            else:
                note = resp.error
            return Arrow(self.brokers[args["leader"]], (self.brokers[f],), note)
        if name == "SendOffsetsForLeaderEpoch":
            f = args["follower"]
            note = f"OffsetsForLeaderEpoch(epoch {after.fetches[f].leaderEpoch})"
            return Arrow(self.brokers[f], (self.brokers[args["leader"]],), note)
        if name == "HandleOffsetsForLeaderEpoch":
            f = args["follower"]
            answer = after.fetches[f]
            epoch, end = answer.endOffset
            note = answer.error if answer.error != ERROR_NONE else f"epoch {epoch} ends at {end}"
            return Arrow(self.brokers[args["leader"]], (self.brokers[f],), note)
        if name in ("ShrinkIsr", "ExpandIsr"):
            proposed = after.replicas[args["leader"]].pendingAlterPartition
            isr = describe(proposed.isr) if proposed else "?"
            note = f"AlterPartition(ISR {isr})"
            if proposed is not None and proposed.sentTo != after.failovers:
                note += " to the controller that failed over"
            return Arrow(self.brokers[args["leader"]], ("controller",), note)
        if name == "HandleAlterPartition":
            # Partition epochs are ranks (dense_partition_epochs): an accepted change may keep the number.
            ok = after.controller != before.controller
            pending = after.replicas[args["leader"]].pendingAlterPartition
            note = "accepted" if ok else "rejected"
            if pending is not None and pending.sentTo != AWAITING_METADATA:
                note = "NOT_CONTROLLER: sent again"
            elif pending is not None:
                sent = before.replicas[args["leader"]].pendingAlterPartition
                stale = sent is not None and sent.sentTo != before.failovers
                note = "stale controller's error: awaits metadata" if stale else "error: awaits metadata"
            return Arrow("controller", (self.brokers[args["leader"]],), note)
        if name == "ControllerFailover":
            b = args["committed"]
            note = "fails over" if b == NO_LEADER else f"commits broker {b}'s AlterPartition, fails over unanswered"
            return Arrow("controller", (), note)
        if name == "AlterPartitionReassignments":
            note = f"reassign: broker {args['removing']}'s replica to broker {args['adding']}"
            return Arrow("controller", (), note)
        if name == "ApplyMetadata":
            c = after.controller
            return Arrow("controller", (self.brokers[args["broker"]],), f"leader {c.leader}, epoch {c.leaderEpoch}")
        if name in ("FenceBroker", "UnfenceBroker"):
            return Arrow("controller", (), f"{name[:-6].lower()} broker {args['broker']}")
        if name == "BrokerRestart":
            return Arrow(self.brokers[args["broker"]], ("controller",), "register")
        if name == "BrokerCrash":
            return Arrow(self.brokers[args["broker"]], (), f"crash, log kept to {args['logEndOffset']}")
        if name == "ControlledShutdown":
            return Arrow(self.brokers[args["broker"]], ("controller",), "controlled shutdown")
        return Arrow(self.brokers[next(iter(args.values()))])

    def tables(self, state: KraftReplicationState) -> list[Table]:
        c = state.controller
        rows = []
        for b, r in enumerate(state.replicas):
            entries = " ".join(f"{o}:r{rec.id}/e{rec.epoch}" for o, rec in enumerate(r.log)) or "(empty)"
            if not r.running:
                role = "down (clean)" if r.cleanShutdownEpoch != UNDEFINED else "down"
            elif r.leader == b:
                role = f"leader e{r.leaderEpoch}"
            elif not r.hosted:
                role = "not a replica"
            else:
                role = "no leader" if r.leader == NO_LEADER else f"follows {r.leader} e{r.leaderEpoch}"
            isr = describe(r.isr) if r.leader == b and r.running else "-"
            if r.pendingAlterPartition is not None:
                isr += f" -> {describe(r.pendingAlterPartition.isr)}"
                if r.pendingAlterPartition.sentTo == AWAITING_METADATA:
                    isr += " (failed)"
            flight = state.fetches[b]
            fetch = "-" if flight is None else FLIGHT[type(flight)]
            if r.fetchState == TRUNCATING:
                fetch = f"truncating, {fetch}"
            rows.append(
                [f"broker {b}", entries, str(len(r.log)), str(r.highWatermark), role, isr, str(r.brokerEpoch), fetch]
            )
        replicas = Table(
            "replicas (log = offset:record/epoch)",
            ["", "log", "LEO", "HW", "role", "ISR", "broker epoch", "fetch"],
            rows,
        )
        header = ["leader", "epoch", "partition epoch", "ISR", "ELR", "fenced", "broker epochs"]
        row = [
            "none" if c.leader == NO_LEADER else f"broker {c.leader}",
            str(c.leaderEpoch),
            str(c.partitionEpoch),
            describe(c.isr),
            describe(c.elr),
            describe(c.fenced),
            " ".join(map(str, c.brokerEpochs)),
        ]
        if self.reassignments:
            header += ["replicas", "adding", "removing"]
            row += [" ".join(map(str, c.replicas)), describe(c.addingReplicas), describe(c.removingReplicas)]
        if self.failovers:
            header.append("failovers")
            row.append(str(state.failovers))
        controller = Table("controller", header, [row])
        clients = Table(
            "clients",
            ["acknowledged", "committed", "consumed"],
            [
                [
                    describe(state.acked),
                    " ".join(f"r{rec.id}" for rec in state.committed) or "-",
                    " ".join(f"r{rec.id}" for rec in state.consumed) or "-",
                ]
            ],
        )
        return [replicas, controller, clients]

    def explain(self, violated: str, trace: Trace) -> str | None:
        """Which acknowledged or committed record the leader, or a broker it may be, lacks, and since when."""
        return explain(violated, trace)
