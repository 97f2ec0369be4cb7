"""The `zk-controller` model as z3 formulas: the same transition system for bmc and prove.

Two facts of the explicit model make the encoding small. Every successful write of the partition
state bumps its zkVersion and its leader epoch by one, from (-1, version 0), so a version is the
leader epoch plus one and is not stored. And since a write needs the current version, each leader
epoch is written once, with one leader. A controller sends a leader epoch to a broker when it
writes it, when it is elected and when it sees the broker start, and drops what it queued for a
broker it sees fail or bounce, so it has at most one request of a leader epoch in flight to a
broker: the requests in flight are a flag per (leader epoch, controller epoch, broker), with the
broker epoch each was sent to, and the leader of each leader epoch. Those values are only read
while the flag is set: a handled or dropped request leaves them as they were (no reset, so the
solver has less to do), and ``values`` writes 0 and -1 there. A state a proof starts from may hold
requests no run sends; a step whose result breaks that shape is one the encoding does not take.
"""

from __future__ import annotations

from typing import Any, ClassVar

import z3
from kmc.checker import Action, Model
from kmc.checker.engines.symbolic.encoding import ActionLabels, Frame, SymbolicEncoding, Var, becomes, select
from kmc.models.zk_controller.state import (
    ACTION_ARGS,
    INITIAL_CONTROLLER_EPOCH,
    NO_EPOCH,
    NONE,
    Broker,
    LeaderAndIsr,
    PartitionState,
    ZkControllerState,
    ZooKeeper,
)

LABELS = ActionLabels(ACTION_ARGS)


class ZkControllerEncoding(SymbolicEncoding):
    action_schema: ClassVar[dict[str, Var]] = LABELS.schema

    def __init__(self, model: Model) -> None:
        super().__init__(model)
        c = model.config
        self.n = c.brokers
        self.epochs = c.max_leader_epoch + 1
        self.controller_epochs = c.max_controller_epoch + 1
        n, e, k = self.n, self.epochs, self.controller_epochs
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
            "pending": Var("bool", (e, k, n)),
            "requestLeader": Var("int", (e,)),
            "requestBrokerEpoch": Var("int", (e, k, n)),
            "nextCzxid": Var("int"),
            "sessionExpiries": Var("int"),
            "restarts": Var("int"),
        }

    # -- explicit <-> symbolic -----------------------------------------------------------------
    def values(self, s: ZkControllerState) -> dict[str, Any]:
        n, e, k = self.n, self.epochs, self.controller_epochs
        zk = s.zk
        if zk.partition.zkVersion != zk.partition.leaderEpoch + 1:
            raise ValueError("partition zkVersion is not leaderEpoch + 1")
        pending = [[[False] * n for _ in range(k)] for _ in range(e)]
        leader = [NONE] * e
        sent = [[[0] * n for _ in range(k)] for _ in range(e)]
        for r in sorted(s.requests):
            epoch, ctrl = r.leaderEpoch, r.controllerEpoch
            if pending[epoch][ctrl][r.broker]:
                raise ValueError(f"two requests of leader epoch {epoch} from controller epoch {ctrl} to {r.broker}")
            if leader[epoch] not in (NONE, r.leader):
                raise ValueError(f"two writes of leader epoch {epoch}")
            pending[epoch][ctrl][r.broker] = True
            leader[epoch] = r.leader
            sent[epoch][ctrl][r.broker] = r.brokerEpoch
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
            LeaderAndIsr(k, b, v["requestBrokerEpoch"][e][k][b], v["requestLeader"][e], e)
            for e in range(self.epochs)
            for k in range(self.controller_epochs)
            for b in range(self.n)
            if v["pending"][e][k][b]
        )
        return ZkControllerState(zk, brokers, requests, v["nextCzxid"], v["sessionExpiries"], v["restarts"])

    def action(self, a: dict[str, Any]) -> Action:
        return LABELS.decode(a)

    # -- the transition system -----------------------------------------------------------------
    def well_formed(self, v: Frame) -> z3.BoolRef:
        n, e = self.n, self.epochs
        ids = lambda x: z3.And(x >= NONE, x < n)  # noqa: E731
        parts = [ids(v.zkController), ids(v.zkLeader), v.zkLeaderEpoch >= NO_EPOCH, v.zkLeaderEpoch < e]
        top = self.config.max_controller_epoch
        parts += [v.zkControllerEpoch >= INITIAL_CONTROLLER_EPOCH, v.zkControllerEpoch <= top]
        for b in range(n):
            parts += [v.controllerEpoch[b] >= 0, v.controllerEpoch[b] <= top]
            parts.append(z3.Implies(v.isController[b], v.controllerEpoch[b] >= 1))
            parts += [ids(v.leader[b]), ids(v.cachedLeader[b]), v.cachedLeaderEpoch[b] <= v.zkLeaderEpoch]
            parts += [v.cachedLeaderEpoch[b] >= NO_EPOCH]
        for epoch in range(e):
            parts.append(z3.Implies(self._any_pending(v, epoch), epoch <= v.zkLeaderEpoch))
            parts.append(ids(v.requestLeader[epoch]))
            for b in range(n):  # controller epoch 0 is no controller's: it sends nothing
                parts.append(z3.Not(v.pending[epoch][0][b]))
        return z3.And(parts)

    def _any_pending(self, v: Frame, epoch: int) -> z3.BoolRef:
        return z3.Or([v.pending[epoch][k][b] for k in range(1, self.controller_epochs) for b in range(self.n)])

    def _requests(
        self, v: Frame, c: Any, sends: list[tuple[Any, Any]], drops: list[Any], epoch: Any, leader: Any
    ) -> tuple[dict[tuple, Any], z3.BoolRef]:
        """Updates for the controller of epoch ``c``: drop its requests to every broker whose
        condition in ``drops`` holds, then send ``epoch`` (led by ``leader``) to every broker whose
        condition in ``sends`` holds, with the broker epoch given there. Also the condition that
        the result fits the encoding: no request kept in flight has the sent leader epoch with
        another leader, or goes to a broker just sent the same epoch at another broker epoch.
        Reachable states always meet it; a state a proof starts from need not, and there the
        explicit model's step has a result the encoding cannot hold, so the encoding takes none."""
        updates: dict[tuple, Any] = {}
        fits = []
        for e in range(self.epochs):
            sent_here, kept_here = [], []
            for k in range(1, self.controller_epochs):
                mine = c == k
                for t in range(self.n):
                    send_t, broker_epoch = sends[t]
                    send = z3.And(mine, epoch == e, send_t)
                    keep = z3.And(v.pending[e][k][t], z3.Not(z3.And(mine, drops[t])))
                    updates[("pending", e, k, t)] = z3.Or(send, keep)
                    updates[("requestBrokerEpoch", e, k, t)] = z3.If(send, broker_epoch, v.requestBrokerEpoch[e][k][t])
                    fits.append(z3.Not(z3.And(send, keep, v.requestBrokerEpoch[e][k][t] != broker_epoch)))
                    sent_here.append(send)
                    kept_here.append(keep)
            updates[("requestLeader", e)] = z3.If(z3.Or(sent_here), leader, v.requestLeader[e])
            fits.append(z3.Not(z3.And(z3.Or(sent_here), z3.Or(kept_here), v.requestLeader[e] != leader)))
        return updates, z3.And(fits)

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
            steps += [
                self._handle(v, w, epoch, ctrl, b)
                for epoch in range(self.epochs)
                for ctrl in range(1, self.controller_epochs)
            ]
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
        # onControllerFailover sends the partition state it read to every live broker
        written = v.zkLeaderEpoch != NO_EPOCH
        sends = [(z3.And(written, v.zkBrokerEpochs[t] != 0), v.zkBrokerEpochs[t]) for t in range(self.n)]
        no_drops = [z3.BoolVal(False)] * self.n
        requests, fits = self._requests(v, epoch, sends, no_drops, v.zkLeaderEpoch, v.zkLeader)
        updates.update(requests)
        return "Elect", (b,), z3.And(guard, fits, becomes(v, w, updates))

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
        live, zk = v.liveBrokerEpochs[c], v.zkBrokerEpochs
        detect = self.config.bounced_broker_detection
        dead = [z3.And(live[j] != 0, zk[j] == 0) for j in range(self.n)]
        new = [z3.And(live[j] == 0, zk[j] != 0) for j in range(self.n)]
        bounced = [z3.And(live[j] != 0, zk[j] != 0, live[j] != zk[j], z3.BoolVal(detect)) for j in range(self.n)]
        seen = [z3.If(z3.Or(dead[j], new[j], bounced[j]), zk[j], live[j]) for j in range(self.n)]
        guard = z3.And(v.isController[c], v.session[c], z3.Or([seen[j] != live[j] for j in range(self.n)]))
        updates: dict[tuple, Any] = {("liveBrokerEpochs", c, j): seen[j] for j in range(self.n)}
        written = v.cachedLeaderEpoch[c] != NO_EPOCH
        sends = [(z3.And(written, z3.Or(new[j], bounced[j])), zk[j]) for j in range(self.n)]
        drops = [z3.Or(dead[j], bounced[j]) for j in range(self.n)]
        cached = (v.cachedLeaderEpoch[c], v.cachedLeader[c])
        requests, fits = self._requests(v, v.controllerEpoch[c], sends, drops, *cached)
        updates.update(requests)
        return "BrokerChange", (c,), z3.And(guard, fits, becomes(v, w, updates))

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
        sends = [(live[t] != 0, live[t]) for t in range(self.n)]
        no_drops = [z3.BoolVal(False)] * self.n
        requests, fits = self._requests(v, v.controllerEpoch[c], sends, no_drops, epoch, z3.IntVal(leader))
        updates.update(requests)
        write = z3.And(fits, becomes(v, w, updates))
        effect = z3.If(moved, resign, z3.If(stale, refresh, write))
        return "ElectLeader", (c, leader), z3.And(guard, effect)

    def handle_outcome(self, v: Frame, epoch: int, ctrl: int, b: int) -> tuple[z3.BoolRef, z3.BoolRef]:
        """(accepted, applied) for the pending request of this leader epoch and controller epoch to broker b."""
        c = self.config
        sent = v.requestBrokerEpoch[epoch][ctrl][b]
        stale_broker = sent < v.brokerEpoch[b] if c.broker_epochs else z3.BoolVal(False)
        stale_ctrl = ctrl < v.lastSeenControllerEpoch[b] if c.controller_epoch_check else z3.BoolVal(False)
        accepted = z3.And(z3.Not(stale_broker), z3.Not(stale_ctrl))
        return accepted, z3.And(accepted, epoch > v.leaderEpoch[b])

    def _handle(self, v: Frame, w: Frame, epoch: int, ctrl: int, b: int) -> tuple:
        accepted, applied = self.handle_outcome(v, epoch, ctrl, b)
        updates: dict[tuple, Any] = {
            ("pending", epoch, ctrl, b): False,
            ("lastSeenControllerEpoch", b): z3.If(
                z3.And(accepted, ctrl > v.lastSeenControllerEpoch[b]), ctrl, v.lastSeenControllerEpoch[b]
            ),
            ("leader", b): z3.If(applied, v.requestLeader[epoch], v.leader[b]),
            ("leaderEpoch", b): z3.If(applied, epoch, v.leaderEpoch[b]),
        }
        args = (b, ctrl, v.requestBrokerEpoch[epoch][ctrl][b], epoch)
        return "HandleLeaderAndIsr", args, z3.And(v.pending[epoch][ctrl][b], becomes(v, w, updates))


# -- the properties, symbolically ------------------------------------------------------------------
def one_controller_per_epoch(enc: ZkControllerEncoding, v: Frame) -> z3.BoolRef:
    n = enc.n
    return z3.And(
        [
            z3.Not(z3.And(v.isController[i], v.isController[j], v.controllerEpoch[i] == v.controllerEpoch[j]))
            for i in range(n)
            for j in range(i + 1, n)
        ]
    )


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
    return z3.And(
        [
            z3.Implies(
                v.isController[b], z3.And(v.controllerEpoch[b] >= 1, v.controllerEpoch[b] <= v.zkControllerEpoch)
            )
            for b in range(enc.n)
        ]
    )


def newest_controller_holds_the_node(enc: ZkControllerEncoding, v: Frame) -> z3.BoolRef:
    """A broker acting in the newest epoch is the one in /controller, unless that node is gone."""
    return z3.And(
        [
            z3.Implies(
                z3.And(v.isController[b], v.controllerEpoch[b] == v.zkControllerEpoch),
                z3.Or(v.zkController == b, v.zkController == NONE),
            )
            for b in range(enc.n)
        ]
    )


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
        parts += [
            z3.Implies(v.pending[e][k][b], v.requestBrokerEpoch[e][k][b] <= own)
            for e in range(enc.epochs)
            for k in range(enc.controller_epochs)
        ]
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
