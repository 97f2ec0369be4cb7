"""The `zk-controller` model as z3 formulas: the same transition system for bmc and prove.

Two facts of the explicit model make the encoding small. Every successful write of the partition
state bumps its zkVersion and its leader epoch by one, from (-1, version 0), so a version is the
leader epoch plus one and is not stored. And since a write needs the current version, each leader
epoch is written once: the requests in flight are a flag per (leader epoch, broker), with the
controller epoch and leader of that epoch's write and the broker epoch each target was sent.
"""

from __future__ import annotations

from typing import Any, ClassVar

import z3
from kmc.checker import Action
from kmc.checker.symbolic import ActionLabels, Frame, SymbolicEncoding, Var, becomes, select
from kmc.models.zk_controller import (
    ACTION_ARGS,
    INITIAL_CONTROLLER_EPOCH,
    NO_EPOCH,
    NONE,
    Broker,
    LeaderAndIsr,
    PartitionState,
    ZkControllerModel,
    ZkControllerState,
    ZooKeeper,
)

LABELS = ActionLabels(ACTION_ARGS)


class ZkControllerEncoding(SymbolicEncoding):
    action_schema: ClassVar[dict[str, Var]] = LABELS.schema

    def __init__(self, model: ZkControllerModel) -> None:
        super().__init__(model)
        c = model.config
        self.n = c.brokers
        self.epochs = c.max_leader_epoch + 1
        n, e = self.n, self.epochs
        self.state_schema = {
            "zkController": Var("int"),
            "zkControllerEpoch": Var("int"),
            "zkBrokerEpochs": Var("int", (n,)),
            "zkLeader": Var("int"),
            "zkLeaderEpoch": Var("int"),
            "session": Var("bool", (n,)),
            "brokerEpoch": Var("int", (n,)),
            "lastSeenControllerEpoch": Var("int", (n,)),
            "leader": Var("int", (n,)),
            "leaderEpoch": Var("int", (n,)),
            "isController": Var("bool", (n,)),
            "controllerEpoch": Var("int", (n,)),
            "liveBrokerEpochs": Var("int", (n, n)),
            "cachedLeader": Var("int", (n,)),
            "cachedLeaderEpoch": Var("int", (n,)),
            "pending": Var("bool", (e, n)),
            "requestControllerEpoch": Var("int", (e,)),
            "requestLeader": Var("int", (e,)),
            "requestBrokerEpoch": Var("int", (e, n)),
            "nextCzxid": Var("int"),
            "sessionExpiries": Var("int"),
            "restarts": Var("int"),
        }

    # -- explicit <-> symbolic -----------------------------------------------------------------
    def values(self, s: ZkControllerState) -> dict[str, Any]:
        n, e = self.n, self.epochs
        zk = s.zk
        if zk.partition.zkVersion != zk.partition.leaderEpoch + 1:
            raise ValueError("partition zkVersion is not leaderEpoch + 1")
        pending = [[False] * n for _ in range(e)]
        ctrl, leader = [0] * e, [NONE] * e
        sent = [[0] * n for _ in range(e)]
        for r in s.requests:
            if pending[r.leaderEpoch][r.broker] or (any(pending[r.leaderEpoch]) and
                                                    (ctrl[r.leaderEpoch], leader[r.leaderEpoch]) !=
                                                    (r.controllerEpoch, r.leader)):  # fmt: skip
                raise ValueError(f"two writes of leader epoch {r.leaderEpoch}")
            pending[r.leaderEpoch][r.broker] = True
            ctrl[r.leaderEpoch], leader[r.leaderEpoch] = r.controllerEpoch, r.leader
            sent[r.leaderEpoch][r.broker] = r.brokerEpoch
        b = s.brokers
        return {
            "zkController": zk.controller,
            "zkControllerEpoch": zk.controllerEpoch,
            "zkBrokerEpochs": list(zk.brokerEpochs),
            "zkLeader": zk.partition.leader,
            "zkLeaderEpoch": zk.partition.leaderEpoch,
            "session": [x.session for x in b],
            "brokerEpoch": [x.brokerEpoch for x in b],
            "lastSeenControllerEpoch": [x.lastSeenControllerEpoch for x in b],
            "leader": [x.leader for x in b],
            "leaderEpoch": [x.leaderEpoch for x in b],
            "isController": [x.isController for x in b],
            "controllerEpoch": [x.controllerEpoch for x in b],
            "liveBrokerEpochs": [list(x.liveBrokerEpochs) for x in b],
            "cachedLeader": [x.cachedPartition.leader for x in b],
            "cachedLeaderEpoch": [x.cachedPartition.leaderEpoch for x in b],
            "pending": pending,
            "requestControllerEpoch": ctrl,
            "requestLeader": leader,
            "requestBrokerEpoch": sent,
            "nextCzxid": s.nextCzxid,
            "sessionExpiries": s.sessionExpiries,
            "restarts": s.restarts,
        }

    def state(self, v: dict[str, Any]) -> ZkControllerState:
        def partition(leader: int, epoch: int) -> PartitionState:
            return PartitionState(leader, epoch, epoch + 1)

        zk = ZooKeeper(
            v["zkController"],
            v["zkControllerEpoch"],
            tuple(v["zkBrokerEpochs"]),
            partition(v["zkLeader"], v["zkLeaderEpoch"]),
        )
        brokers = tuple(
            Broker(
                v["session"][b],
                v["brokerEpoch"][b],
                v["lastSeenControllerEpoch"][b],
                v["leader"][b],
                v["leaderEpoch"][b],
                v["isController"][b],
                v["controllerEpoch"][b],
                tuple(v["liveBrokerEpochs"][b]),
                partition(v["cachedLeader"][b], v["cachedLeaderEpoch"][b]),
            )
            for b in range(self.n)
        )
        requests = frozenset(
            LeaderAndIsr(v["requestControllerEpoch"][e], b, v["requestBrokerEpoch"][e][b], v["requestLeader"][e], e)
            for e in range(self.epochs)
            for b in range(self.n)
            if v["pending"][e][b]
        )
        return ZkControllerState(zk, brokers, requests, v["nextCzxid"], v["sessionExpiries"], v["restarts"])

    def action(self, a: dict[str, Any]) -> Action:
        return LABELS.decode(a)

    # -- the transition system -----------------------------------------------------------------
    def well_formed(self, v: Frame) -> z3.BoolRef:
        n, e = self.n, self.epochs
        ids = lambda x: z3.And(x >= NONE, x < n)  # noqa: E731
        parts = [ids(v.zkController), ids(v.zkLeader), v.zkLeaderEpoch >= NO_EPOCH, v.zkLeaderEpoch < e]
        parts.append(v.zkControllerEpoch >= INITIAL_CONTROLLER_EPOCH)
        for b in range(n):
            parts += [ids(v.leader[b]), ids(v.cachedLeader[b]), v.cachedLeaderEpoch[b] <= v.zkLeaderEpoch]
            parts += [v.cachedLeaderEpoch[b] >= NO_EPOCH]
        for epoch in range(e):
            written = z3.Or(v.pending[epoch])
            parts.append(z3.Implies(written, epoch <= v.zkLeaderEpoch))
            parts.append(z3.Implies(z3.Not(written), z3.And(v.requestControllerEpoch[epoch] == 0,
                                                             v.requestLeader[epoch] == NONE)))  # fmt: skip
            parts.append(ids(v.requestLeader[epoch]))
            for b in range(n):
                parts.append(z3.Implies(z3.Not(v.pending[epoch][b]), v.requestBrokerEpoch[epoch][b] == 0))
        return z3.And(parts)

    def init(self, v: Frame) -> z3.BoolRef:
        return v.equals(self.values(self.model.init_states()[0]))

    def next(self, v: Frame, a: Frame, w: Frame) -> z3.BoolRef:
        steps = []
        for b in range(self.n):
            steps += [
                self._elect(v, w, b),
                self._session_expire(v, w, b),
                self._reconnect(v, w, b),
                self._register(v, w, b),
                self._restart(v, w, b),
                self._broker_change(v, w, b),
            ]
            steps += [self._elect_leader(v, w, b, leader) for leader in range(self.n)]
            steps += [self._handle(v, w, epoch, b) for epoch in range(self.epochs)]
        return z3.Or([z3.And(LABELS.label(a, name, args), guard_and_effect) for name, args, guard_and_effect in steps])

    def _elect(self, v: Frame, w: Frame, b: int) -> tuple:
        guard = z3.And(
            v.session[b],
            v.zkBrokerEpochs[b] != 0,
            z3.Not(v.isController[b]),
            v.zkController == NONE,
            v.zkControllerEpoch < self.config.max_controller_epoch,
        )
        epoch = v.zkControllerEpoch + 1
        updates: dict[tuple, Any] = {
            ("zkController",): b,
            ("zkControllerEpoch",): epoch,
            ("isController", b): True,
            ("controllerEpoch", b): epoch,
            ("cachedLeader", b): v.zkLeader,
            ("cachedLeaderEpoch", b): v.zkLeaderEpoch,
        }
        for j in range(self.n):
            updates[("liveBrokerEpochs", b, j)] = v.zkBrokerEpochs[j]
        return "Elect", (b,), z3.And(guard, becomes(v, w, updates))

    def _session_expire(self, v: Frame, w: Frame, b: int) -> tuple:
        guard = z3.And(v.session[b], v.sessionExpiries < self.config.max_session_expiries)
        updates = {
            ("zkController",): z3.If(v.zkController == b, NONE, v.zkController),
            ("zkBrokerEpochs", b): 0,
            ("session", b): False,
            ("sessionExpiries",): v.sessionExpiries + 1,
        }
        return "ZkSessionExpire", (b,), z3.And(guard, becomes(v, w, updates))

    def _reconnect(self, v: Frame, w: Frame, b: int) -> tuple:
        return "ZkReconnect", (b,), z3.And(z3.Not(v.session[b]), becomes(v, w, {("session", b): True}))

    def _register(self, v: Frame, w: Frame, b: int) -> tuple:
        guard = z3.And(v.session[b], v.zkBrokerEpochs[b] == 0)
        updates = {
            ("brokerEpoch", b): v.nextCzxid,
            ("isController", b): False,
            ("zkBrokerEpochs", b): v.nextCzxid,
            ("nextCzxid",): v.nextCzxid + 1,
        }
        return "RegisterBrokerAndReelect", (b,), z3.And(guard, becomes(v, w, updates))

    def _restart(self, v: Frame, w: Frame, b: int) -> tuple:
        guard = v.restarts < self.config.max_restarts
        updates: dict[tuple, Any] = {
            ("zkController",): z3.If(v.zkController == b, NONE, v.zkController),
            ("zkBrokerEpochs", b): v.nextCzxid,
            ("session", b): True,
            ("brokerEpoch", b): v.nextCzxid,
            ("lastSeenControllerEpoch", b): 0,
            ("leader", b): NONE,
            ("leaderEpoch", b): NO_EPOCH,
            ("isController", b): False,
            ("controllerEpoch", b): 0,
            ("cachedLeader", b): NONE,
            ("cachedLeaderEpoch", b): NO_EPOCH,
            ("nextCzxid",): v.nextCzxid + 1,
            ("restarts",): v.restarts + 1,
        }
        for j in range(self.n):
            updates[("liveBrokerEpochs", b, j)] = 0
        return "BrokerRestart", (b,), z3.And(guard, becomes(v, w, updates))

    def _broker_change(self, v: Frame, w: Frame, c: int) -> tuple:
        live = v.liveBrokerEpochs[c]
        guard = z3.And(v.isController[c], v.session[c], z3.Or([live[j] != v.zkBrokerEpochs[j] for j in range(self.n)]))
        updates = {("liveBrokerEpochs", c, j): v.zkBrokerEpochs[j] for j in range(self.n)}
        return "BrokerChange", (c,), z3.And(guard, becomes(v, w, updates))

    def _elect_leader(self, v: Frame, w: Frame, c: int, leader: int) -> tuple:
        live = v.liveBrokerEpochs[c]
        guard = z3.And(
            v.isController[c],
            v.session[c],
            v.cachedLeaderEpoch[c] < self.config.max_leader_epoch,
            live[leader] != 0,
            v.cachedLeader[c] != leader,
        )
        moved = v.controllerEpoch[c] != v.zkControllerEpoch if self.config.conditional_writes else z3.BoolVal(False)
        stale = v.cachedLeaderEpoch[c] != v.zkLeaderEpoch  # the zkVersions differ
        resign = becomes(v, w, {("isController", c): False})
        refresh = becomes(v, w, {("cachedLeader", c): v.zkLeader, ("cachedLeaderEpoch", c): v.zkLeaderEpoch})
        epoch = v.cachedLeaderEpoch[c] + 1
        updates: dict[tuple, Any] = {
            ("zkLeader",): leader,
            ("zkLeaderEpoch",): epoch,
            ("cachedLeader", c): leader,
            ("cachedLeaderEpoch", c): epoch,
        }
        for e in range(self.epochs):
            here = epoch == e
            for t in range(self.n):
                send = z3.And(here, live[t] != 0)
                updates[("pending", e, t)] = z3.Or(send, v.pending[e][t])
                updates[("requestBrokerEpoch", e, t)] = z3.If(send, live[t], v.requestBrokerEpoch[e][t])
            any_sent = z3.And(here, z3.Or([live[t] != 0 for t in range(self.n)]))
            updates[("requestControllerEpoch", e)] = z3.If(any_sent, v.controllerEpoch[c], v.requestControllerEpoch[e])
            updates[("requestLeader", e)] = z3.If(any_sent, leader, v.requestLeader[e])
        write = becomes(v, w, updates)
        effect = z3.If(moved, resign, z3.If(stale, refresh, write))
        return "ElectLeader", (c, leader), z3.And(guard, effect)

    def handle_outcome(self, v: Frame, epoch: int, b: int) -> tuple[z3.BoolRef, z3.BoolRef]:
        """(accepted, applied) for the pending request of this leader epoch to broker b."""
        c = self.config
        ctrl = v.requestControllerEpoch[epoch]
        stale_broker = v.requestBrokerEpoch[epoch][b] < v.brokerEpoch[b] if c.broker_epochs else z3.BoolVal(False)
        stale_ctrl = ctrl < v.lastSeenControllerEpoch[b] if c.controller_epoch_check else z3.BoolVal(False)
        accepted = z3.And(z3.Not(stale_broker), z3.Not(stale_ctrl))
        return accepted, z3.And(accepted, epoch > v.leaderEpoch[b])

    def _handle(self, v: Frame, w: Frame, epoch: int, b: int) -> tuple:
        ctrl = v.requestControllerEpoch[epoch]
        accepted, applied = self.handle_outcome(v, epoch, b)
        still = [v.pending[epoch][t] if t != b else z3.BoolVal(False) for t in range(self.n)]
        updates: dict[tuple, Any] = {
            ("pending", epoch, b): False,
            ("requestBrokerEpoch", epoch, b): 0,
            ("requestControllerEpoch", epoch): z3.If(z3.Or(still), ctrl, 0),
            ("requestLeader", epoch): z3.If(z3.Or(still), v.requestLeader[epoch], NONE),
            ("lastSeenControllerEpoch", b): z3.If(
                z3.And(accepted, ctrl > v.lastSeenControllerEpoch[b]), ctrl, v.lastSeenControllerEpoch[b]
            ),
            ("leader", b): z3.If(applied, v.requestLeader[epoch], v.leader[b]),
            ("leaderEpoch", b): z3.If(applied, epoch, v.leaderEpoch[b]),
        }
        args = (b, ctrl, v.requestBrokerEpoch[epoch][b], epoch)
        return "HandleLeaderAndIsr", args, z3.And(v.pending[epoch][b], becomes(v, w, updates))


# -- the properties, symbolically ------------------------------------------------------------------
def one_controller_per_epoch(enc: ZkControllerEncoding, v: Frame) -> z3.BoolRef:
    n = enc.n
    return z3.And([
        z3.Not(z3.And(v.isController[i], v.isController[j], v.controllerEpoch[i] == v.controllerEpoch[j]))
        for i in range(n) for j in range(i + 1, n)
    ])  # fmt: skip


def controller_node_is_current(enc: ZkControllerEncoding, v: Frame) -> z3.BoolRef:
    holder_is = [v.isController[b] for b in range(enc.n)]
    holder_epoch = [v.controllerEpoch[b] for b in range(enc.n)]
    return z3.Or(
        v.zkController == NONE,
        z3.And(select(holder_is, v.zkController), select(holder_epoch, v.zkController) == v.zkControllerEpoch),
    )


def _is(a: Frame, name: str) -> z3.BoolRef:
    return LABELS.is_(a, name)


def only_newest_controller_writes(enc: ZkControllerEncoding, v: Frame, a: Frame, w: Frame) -> z3.BoolRef:
    changed = z3.Or(v.zkLeader != w.zkLeader, v.zkLeaderEpoch != w.zkLeaderEpoch)
    writer_epoch = select([v.controllerEpoch[b] for b in range(enc.n)], a.args[0])
    return z3.Implies(changed, writer_epoch == v.zkControllerEpoch)


def _applied(enc: ZkControllerEncoding, v: Frame, a: Frame, w: Frame) -> z3.BoolRef:
    b = a.args[0]
    before = select([v.leaderEpoch[x] for x in range(enc.n)], b)
    after = select([w.leaderEpoch[x] for x in range(enc.n)], b)
    return z3.And(_is(a, "HandleLeaderAndIsr"), before != after)


def no_stale_controller_epoch_applied(enc: ZkControllerEncoding, v: Frame, a: Frame, w: Frame) -> z3.BoolRef:
    seen = select([v.lastSeenControllerEpoch[x] for x in range(enc.n)], a.args[0])
    return z3.Implies(_applied(enc, v, a, w), a.args[1] >= seen)


def no_request_for_earlier_incarnation(enc: ZkControllerEncoding, v: Frame, a: Frame, w: Frame) -> z3.BoolRef:
    current = select([v.brokerEpoch[x] for x in range(enc.n)], a.args[0])
    return z3.Implies(_applied(enc, v, a, w), a.args[2] == current)


def leader_epochs_only_increase(enc: ZkControllerEncoding, v: Frame, a: Frame, w: Frame) -> z3.BoolRef:
    restart = _is(a, "BrokerRestart")
    brokers = [z3.Or(z3.And(restart, a.args[0] == b), w.leaderEpoch[b] >= v.leaderEpoch[b]) for b in range(enc.n)]
    return z3.And(w.zkLeaderEpoch >= v.zkLeaderEpoch, *brokers)


# -- lemmas that make the properties inductive -----------------------------------------------------
def controller_epochs_are_bounded_by_zookeeper(enc: ZkControllerEncoding, v: Frame) -> z3.BoolRef:
    """No broker believes in a controller epoch newer than /controller_epoch."""
    return z3.And([z3.Implies(v.isController[b], z3.And(v.controllerEpoch[b] >= 1,
                   v.controllerEpoch[b] <= v.zkControllerEpoch)) for b in range(enc.n)])  # fmt: skip


def newest_controller_holds_the_node(enc: ZkControllerEncoding, v: Frame) -> z3.BoolRef:
    """A broker acting in the newest epoch is the one in /controller, unless that node is gone."""
    return z3.And([
        z3.Implies(z3.And(v.isController[b], v.controllerEpoch[b] == v.zkControllerEpoch),
                   z3.Or(v.zkController == b, v.zkController == NONE))
        for b in range(enc.n)
    ])  # fmt: skip


def node_holder_is_registered(enc: ZkControllerEncoding, v: Frame) -> z3.BoolRef:
    """/controller and the holder's /brokers/ids node are ephemeral nodes of the same session."""
    return z3.And([z3.Implies(v.zkController == b, v.zkBrokerEpochs[b] != 0) for b in range(enc.n)])


def broker_epochs_never_run_ahead(enc: ZkControllerEncoding, v: Frame) -> z3.BoolRef:
    """Every broker epoch anyone holds -- in ZooKeeper, in a controller's cache, in a request -- is
    at most the broker's own current one, which is below the next czxid; ZooKeeper's is 0 or it."""
    parts = []
    for b in range(enc.n):
        own = v.brokerEpoch[b]
        parts += [own >= 1, own < v.nextCzxid, z3.Or(v.zkBrokerEpochs[b] == 0, v.zkBrokerEpochs[b] == own)]
        parts += [v.liveBrokerEpochs[c][b] <= own for c in range(enc.n)]
        parts += [v.requestBrokerEpoch[e][b] <= own for e in range(enc.epochs)]
    return z3.And(parts)


ZkControllerEncoding.invariants = {
    "OneControllerPerEpoch": one_controller_per_epoch,
    "ControllerNodeIsCurrent": controller_node_is_current,
}
ZkControllerEncoding.step_properties = {
    "OnlyNewestControllerWrites": only_newest_controller_writes,
    "NoStaleControllerEpochApplied": no_stale_controller_epoch_applied,
    "NoRequestForEarlierIncarnation": no_request_for_earlier_incarnation,
    "LeaderEpochsOnlyIncrease": leader_epochs_only_increase,
}
ZkControllerEncoding.lemmas = {
    "ControllerEpochsBoundedByZooKeeper": controller_epochs_are_bounded_by_zookeeper,
    "NewestControllerHoldsTheNode": newest_controller_holds_the_node,
    "NodeHolderIsRegistered": node_holder_is_registered,
    "BrokerEpochsNeverRunAhead": broker_epochs_never_run_ahead,
}
