"""How a replication trace is drawn: lanes for the producer, the controller (with ZooKeeper) and each
broker; tables for every replica's log with LEO, HW, epoch, leader and ISR, and the partition state;
and why a counterexample is a bug (explain.py)."""

from __future__ import annotations

from kmc.checker import Action, Trace
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.models.replication.explain import explain
from kmc.models.replication.state import NO_EPOCH, NO_LEADER, ReplicationState


# -- how traces are drawn --------------------------------------------------------------------------
class ReplicationDrawing(Drawing):
    """Lanes: producer, controller (with ZooKeeper), one per broker. Tables: every replica's log
    with LEO, HW, epoch, leader and ISR, and the partition state in ZooKeeper."""

    def __init__(self, replicas: int) -> None:
        self.brokers = [f"broker {r}" for r in range(replicas)]

    def lanes(self) -> list[str]:
        return ["producer", "controller", *self.brokers]

    def arrow(self, action: Action, before: ReplicationState, after: ReplicationState) -> Arrow:
        args = action.args
        name = action.name
        if name in ("BecomeLeader", "BecomeFollower"):
            target = args["leader"] if name == "BecomeLeader" else args["replica"]
            return Arrow("controller", (self.brokers[target],), f"LeaderAndIsr(epoch {args['leaderEpoch']})")
        if name == "LeaderWrite":
            return Arrow("producer", (self.brokers[args["leader"]],), f"Produce(record {args['id']})")
        if name == "FollowerFetch":
            return Arrow(self.brokers[args["follower"]], (self.brokers[args["leader"]],), "Fetch")
        if name in ("LeaderShrinkIsr", "LeaderExpandIsr"):
            return Arrow(self.brokers[args["leader"]], ("controller",), "ISR write to ZooKeeper")
        if name in ("ControllerElectLeader", "ControllerShrinkIsr"):
            return Arrow("controller")
        owner = args.get("leader", args.get("follower", 0))
        if name == "FollowerTruncate":
            owner = args["follower"]
        return Arrow(self.brokers[owner])

    def tables(self, state: ReplicationState) -> list[Table]:
        rows = []
        for r, (log, st) in enumerate(zip(state.replicaLog, state.replicaState, strict=True)):
            entries = " ".join(f"{offset}:r{rec.id}/e{rec.epoch}" for offset, rec in enumerate(log)) or "(empty)"
            role = "leader" if st.leader == r else ("-" if st.leader == NO_LEADER else f"follows {st.leader}")
            epoch = "-" if st.leaderEpoch == NO_EPOCH else str(st.leaderEpoch)
            rows.append([f"broker {r}", entries, str(len(log)), str(st.hw), epoch, role, describe(st.isr)])
        replicas = Table("replicas (log = offset:record/epoch)", ["", "log", "LEO", "HW", "epoch", "role", "ISR"], rows)
        quorum = state.quorumState
        zk = Table(
            "ZooKeeper",
            ["leader", "epoch", "ISR", "LeaderAndIsr sent"],
            [
                [
                    "none" if quorum.leader == NO_LEADER else f"broker {quorum.leader}",
                    "-" if quorum.leaderEpoch == NO_EPOCH else str(quorum.leaderEpoch),
                    describe(quorum.isr),
                    ", ".join(f"e{q.leaderEpoch}->{q.leader}" for q in sorted(state.leaderAndIsrRequests)) or "-",
                ]
            ],
        )
        return [replicas, zk]

    def explain(self, violated: str, trace: Trace) -> str | None:
        """Which committed record a broker the controller may elect lacks, and since which step."""
        return explain(violated, trace)
