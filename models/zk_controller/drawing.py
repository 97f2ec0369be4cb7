"""How a zk-controller trace is drawn: a lane for ZooKeeper and one per broker; tables for the
znodes, each broker's view and the requests in flight."""

from __future__ import annotations

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table
from kmc.models.zk_controller.state import NO_EPOCH, NONE, ZkControllerState


class ZkControllerDrawing(Drawing):
    """Lanes: ZooKeeper and one per broker. Tables: the znodes, and every broker's view."""

    def __init__(self, brokers: int) -> None:
        self.brokers = [f"broker {b}" for b in range(brokers)]

    def lanes(self) -> list[str]:
        return ["ZooKeeper", *self.brokers]

    def arrow(self, action: Action, before: ZkControllerState, after: ZkControllerState) -> Arrow:
        args, name = action.args, action.name
        if name in ("Elect", "ZkReconnect", "RegisterBrokerAndReelect", "BrokerChange"):
            who = args.get("broker", args.get("controller"))
            note = {
                "Elect": "create /controller",
                "ZkReconnect": "new session",
                "RegisterBrokerAndReelect": "resign, register",
                "BrokerChange": "read /brokers/ids",
            }[name]
            return Arrow(self.brokers[who], ("ZooKeeper",), note)
        if name == "ZkSessionExpire":
            return Arrow("ZooKeeper", (self.brokers[args["broker"]],), "session expired")
        if name == "BrokerRestart":
            return Arrow(self.brokers[args["broker"]], ("ZooKeeper",), "restart, register")
        if name == "ElectLeader":
            c = args["controller"]
            sent = sorted({r.broker for r in after.requests - before.requests})
            if after.zk.partition != before.zk.partition:
                return Arrow(
                    self.brokers[c],
                    ("ZooKeeper", *(self.brokers[t] for t in sent if t != c)),
                    f"leader {args['leader']}, epoch {after.zk.partition.leaderEpoch}",
                )
            return Arrow(self.brokers[c], ("ZooKeeper",), "write fails")
        b = args["broker"]
        return Arrow(self.brokers[b], (), f"LeaderAndIsr(c{args['controllerEpoch']}, e{args['leaderEpoch']})")

    def tables(self, state: ZkControllerState) -> list[Table]:
        zk = state.zk
        part = zk.partition
        written = f"leader {part.leader}, epoch {part.leaderEpoch}, v{part.zkVersion}"
        znodes = Table(
            "ZooKeeper",
            ["/controller", "/controller_epoch", "/brokers/ids (czxid)", "partition state"],
            [
                [
                    "-" if zk.controller == NONE else f"broker {zk.controller}",
                    str(zk.controllerEpoch),
                    " ".join(f"{b}:{e}" for b, e in enumerate(zk.brokerEpochs) if e) or "-",
                    "-" if part.leaderEpoch == NO_EPOCH else written,
                ]
            ],
        )
        rows = []
        for b, broker in enumerate(state.brokers):
            role = f"controller e{broker.controllerEpoch}" if broker.isController else "-"
            applied = "-" if broker.leaderEpoch == NO_EPOCH else f"leader {broker.leader}, epoch {broker.leaderEpoch}"
            inbox = sorted(r for r in state.requests if r.broker == b)
            rows.append(
                [
                    f"broker {b}",
                    "alive" if broker.session else "expired",
                    str(broker.brokerEpoch),
                    role,
                    str(broker.lastSeenControllerEpoch),
                    applied,
                    " ".join(f"c{r.controllerEpoch}/b{r.brokerEpoch}/e{r.leaderEpoch}" for r in inbox) or "-",
                ]
            )
        brokers = Table(
            "brokers (requests = controller epoch / broker epoch / leader epoch)",
            ["", "session", "broker epoch", "role", "seen controller epoch", "partition", "requests"],
            rows,
        )
        return [znodes, brokers]
