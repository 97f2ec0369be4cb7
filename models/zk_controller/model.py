"""The ZooKeeper-era controller: election through /controller, fencing by /controller_epoch.

Brokers hold ZooKeeper sessions. Whoever creates the ephemeral /controller node first, in the
same multi-op that increments /controller_epoch, is the controller of that epoch
(``KafkaZkClient.registerControllerAndIncrementControllerEpoch``). A session can expire while its
broker keeps running: ZooKeeper deletes the broker's ephemeral nodes, another broker is elected,
and the old controller acts on until it notices -- the zombie. Three guards keep a zombie and a
bounced broker harmless, and each is a config flag so the behaviour before it can be checked:

* ``conditional_writes`` (KAFKA-6082, Kafka 2.1): every metadata write of the controller is a
  multi-op that also checks the zkVersion of /controller_epoch it wrote when elected, so a deposed
  controller's write fails with BADVERSION and it resigns (``ControllerMovedException``).
* ``broker_epochs`` (KIP-380, Kafka 2.2): a broker's epoch is the czxid of its /brokers/ids node;
  control requests carry the epoch the controller saw, and a broker rejects one addressed to an
  earlier incarnation of itself (``STALE_BROKER_EPOCH``).
* ``controller_epoch_check`` (since 0.8): a broker rejects a request whose controller epoch is
  older than the newest it has seen (``STALE_CONTROLLER_EPOCH``).
* ``bounced_broker_detection`` (KAFKA-1120, fixed with KIP-380 in 2.2): ``processBrokerChange``
  compares the broker epochs it reads with those it holds, so a broker that re-registered before
  the watch was processed is handled as failed and started again (``bouncedBrokerIds``). Before,
  it compared broker ids only: the id set looks unchanged, and the new incarnation is never sent
  the partition state.

The controller sends the partition state it holds to every live broker when it is elected
(``onControllerFailover``) and to every broker it sees start (``onBrokerStartup``); it drops what
it still had queued for a broker it sees fail or bounce (``ControllerChannelManager.removeBroker``).

One partition, replicated on every broker. LeaderAndIsr stands for the three control requests
(LeaderAndIsr, UpdateMetadata, StopReplica): the broker runs the same two epoch checks on each.
"""

from __future__ import annotations

from typing import Any

from kmc.checker import Action, Model
from kmc.checker.search.liveness import WF
from kmc.models.common.tuples import put
from kmc.models.zk_controller.bugs import BUGS
from kmc.models.zk_controller.config import PRESETS, ZkControllerConfig
from kmc.models.zk_controller.drawing import ZkControllerDrawing
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


class ZkControllerModel(Model):
    name = "zk-controller"
    actions = tuple(ACTION_ARGS)
    description = "the ZooKeeper-era controller: election, /controller_epoch, zombie fencing, broker epochs"
    Config = ZkControllerConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "kip-380"
    spec_modules = ("kmc.specs.zk_controller",)
    fairness = (
        WF("Elect"),
        WF("ZkReconnect", each=True),
        WF("RegisterBrokerAndReelect", each=True),
        WF("BrokerChange", each=True),
        WF("HandleLeaderAndIsr", each=True),
    )
    """The controller's reactions and the delivery of requests happen if they stay enabled; session
    expiries, bounces and leadership moves (``ElectLeader``) need not."""

    config: ZkControllerConfig

    def __init__(self, config: ZkControllerConfig | None = None) -> None:
        super().__init__(config)
        self.broker_ids = tuple(range(self.config.brokers))

    def init_states(self) -> list[ZkControllerState]:
        """Every broker up and registered (czxids 1..n); no controller yet; the partition not yet online."""
        n = self.config.brokers
        epochs = tuple(range(1, n + 1))
        unknown = PartitionState(NONE, NO_EPOCH, 0)
        brokers = tuple(
            Broker(True, epochs[b], INITIAL_CONTROLLER_EPOCH, NONE, NO_EPOCH, False, 0, (0,) * n, unknown)
            for b in self.broker_ids
        )
        zk = ZooKeeper(NONE, INITIAL_CONTROLLER_EPOCH, epochs, unknown)
        return [ZkControllerState(zk, brokers, frozenset(), n + 1, 0, 0)]

    def successors(self, s: ZkControllerState) -> list[tuple[Action, ZkControllerState]]:
        out: list[tuple[Action, ZkControllerState]] = []
        for b in self.broker_ids:
            for step in (
                self._elect,
                self._session_expire,
                self._reconnect,
                self._register_and_reelect,
                self._restart,
                self._broker_change,
            ):
                step(s, b, out)
            self._elect_leader(s, b, out)
        self._handle_requests(s, out)
        return out

    # -- ZooKeeper and sessions ----------------------------------------------------------------
    def _elect(self, s: ZkControllerState, b: int, out: list) -> None:
        """KafkaController.elect: /controller absent, so create it and bump /controller_epoch in one multi-op."""
        broker, zk = s.brokers[b], s.zk
        if not broker.session or zk.brokerEpochs[b] == 0 or broker.isController or zk.controller != NONE:
            return
        if zk.controllerEpoch >= self.config.max_controller_epoch:
            return
        epoch = zk.controllerEpoch + 1
        new_zk = zk._replace(controller=b, controllerEpoch=epoch)
        # onControllerFailover: read the live brokers and the partition state into the context, and
        # send that state to every live broker (UpdateMetadata, and LeaderAndIsr for online replicas).
        elected = broker._replace(
            isController=True, controllerEpoch=epoch, liveBrokerEpochs=zk.brokerEpochs, cachedPartition=zk.partition
        )
        sent = _state_requests(elected, [(t, e) for t, e in enumerate(zk.brokerEpochs) if e != 0])
        nxt = s._replace(zk=new_zk, brokers=put(s.brokers, b, elected), requests=s.requests | sent)
        out.append((Action("Elect", broker=b), nxt))

    def _session_expire(self, s: ZkControllerState, b: int, out: list) -> None:
        """ZooKeeper expires the session: it deletes /brokers/ids/<b> and, if b holds it, /controller.
        The broker does not know yet: if it was controller, it is now a zombie."""
        broker = s.brokers[b]
        if not broker.session or s.sessionExpiries >= self.config.max_session_expiries:
            return
        zk = s.zk
        new_zk = zk._replace(
            controller=NONE if zk.controller == b else zk.controller, brokerEpochs=put(zk.brokerEpochs, b, 0)
        )
        out.append(
            (
                Action("ZkSessionExpire", broker=b),
                s._replace(
                    zk=new_zk,
                    brokers=put(s.brokers, b, broker._replace(session=False)),
                    sessionExpiries=s.sessionExpiries + 1,
                ),
            )
        )

    def _reconnect(self, s: ZkControllerState, b: int, out: list) -> None:
        """ZooKeeperClient opens a new session on its own. The broker's reaction (re-register, resign,
        re-elect) waits in the controller's event queue, so a controller that had expired keeps acting
        through the new session: the zombie of KAFKA-6082."""
        broker = s.brokers[b]
        if broker.session:
            return
        renewed = broker._replace(session=True)
        out.append((Action("ZkReconnect", broker=b), s._replace(brokers=put(s.brokers, b, renewed))))

    def _register_and_reelect(self, s: ZkControllerState, b: int, out: list) -> None:
        """KafkaController.RegisterBrokerAndReelect: resign if controller, register /brokers/ids/<b> again
        with a new czxid; an election follows as Elect."""
        broker = s.brokers[b]
        if not broker.session or s.zk.brokerEpochs[b] != 0:
            return
        czxid = s.nextCzxid
        renewed = broker._replace(brokerEpoch=czxid, isController=False)
        out.append(
            (
                Action("RegisterBrokerAndReelect", broker=b),
                s._replace(
                    zk=s.zk._replace(brokerEpochs=put(s.zk.brokerEpochs, b, czxid)),
                    brokers=put(s.brokers, b, renewed),
                    nextCzxid=czxid + 1,
                ),
            )
        )

    def _restart(self, s: ZkControllerState, b: int, out: list) -> None:
        """A bounce: the process dies and comes back before anyone acts on it. ZooKeeper drops the old
        session's nodes, the new incarnation registers with a new czxid and remembers nothing."""
        if s.restarts >= self.config.max_restarts:
            return
        zk, czxid = s.zk, s.nextCzxid
        new_zk = zk._replace(
            controller=NONE if zk.controller == b else zk.controller, brokerEpochs=put(zk.brokerEpochs, b, czxid)
        )
        unknown = PartitionState(NONE, NO_EPOCH, 0)
        fresh = Broker(True, czxid, INITIAL_CONTROLLER_EPOCH, NONE, NO_EPOCH, False, 0, (0,) * len(s.brokers), unknown)
        out.append(
            (
                Action("BrokerRestart", broker=b),
                s._replace(zk=new_zk, brokers=put(s.brokers, b, fresh), nextCzxid=czxid + 1, restarts=s.restarts + 1),
            )
        )

    # -- the controller ------------------------------------------------------------------------
    def _broker_change(self, s: ZkControllerState, c: int, out: list) -> None:
        """processBrokerChange: the /brokers/ids watch fires and the controller re-reads the live
        brokers and their epochs. A new broker is started (``onBrokerStartup``: it is sent the
        partition state), a dead one failed (what was queued for it is dropped). A broker that
        bounced before the watch was processed has the same id and a larger czxid: with
        ``bounced_broker_detection`` it is failed and started again; without, the id set looks
        unchanged and nothing happens to it. A zombie gets no watches."""
        broker = s.brokers[c]
        if not broker.isController or not broker.session:
            return
        seen = list(broker.liveBrokerEpochs)
        dropped, started = set(), []
        for t, (known, current) in enumerate(zip(broker.liveBrokerEpochs, s.zk.brokerEpochs, strict=True)):
            if known == current:
                continue
            if current == 0:  # dead
                dropped.add(t)
            elif known == 0:  # new
                started.append((t, current))
            elif not self.config.bounced_broker_detection:
                continue  # bounced, and missed: the same id is still there
            else:  # bounced
                dropped.add(t)
                started.append((t, current))
            seen[t] = current
        if tuple(seen) == broker.liveBrokerEpochs:
            return
        updated = broker._replace(liveBrokerEpochs=tuple(seen))
        kept = frozenset(
            r for r in s.requests if not (r.controllerEpoch == broker.controllerEpoch and r.broker in dropped)
        )
        nxt = s._replace(brokers=put(s.brokers, c, updated), requests=kept | _state_requests(updated, started))
        out.append((Action("BrokerChange", controller=c), nxt))

    def _elect_leader(self, s: ZkControllerState, c: int, out: list) -> None:
        """The controller moves the partition's leadership -- a failed leader, a preferred-replica election
        or a reassignment -- by writing the partition state, then sends LeaderAndIsr to every live broker.

        The write is conditional on the partition znode's version (always) and, with KAFKA-6082, on the
        /controller_epoch version: the first failure makes the controller re-read the partition, the
        second makes it resign (``ControllerMovedException``)."""
        broker, zk = s.brokers[c], s.zk
        if not broker.isController or not broker.session:
            return
        cached = broker.cachedPartition
        if cached.leaderEpoch >= self.config.max_leader_epoch:
            return
        for leader, epoch in enumerate(broker.liveBrokerEpochs):
            if epoch == 0 or leader == cached.leader:
                continue
            action = Action("ElectLeader", controller=c, leader=leader)
            if self.config.conditional_writes and broker.controllerEpoch != zk.controllerEpoch:
                resigned = broker._replace(isController=False)
                out.append((action, s._replace(brokers=put(s.brokers, c, resigned))))
                continue
            if cached.zkVersion != zk.partition.zkVersion:
                refreshed = broker._replace(cachedPartition=zk.partition)
                out.append((action, s._replace(brokers=put(s.brokers, c, refreshed))))
                continue
            written = PartitionState(leader, cached.leaderEpoch + 1, cached.zkVersion + 1)
            sent = frozenset(
                LeaderAndIsr(broker.controllerEpoch, target, target_epoch, leader, written.leaderEpoch)
                for target, target_epoch in enumerate(broker.liveBrokerEpochs)
                if target_epoch != 0
            )
            controller = broker._replace(cachedPartition=written)
            out.append(
                (
                    action,
                    s._replace(
                        zk=zk._replace(partition=written),
                        brokers=put(s.brokers, c, controller),
                        requests=s.requests | sent,
                    ),
                )
            )

    # -- brokers -------------------------------------------------------------------------------
    def handle_outcome(self, broker: Broker, request: LeaderAndIsr) -> str:
        """What KafkaApis and ReplicaManager.becomeLeaderOrFollower do with the request: one of HANDLE_OUTCOMES."""
        if self.config.broker_epochs and request.brokerEpoch < broker.brokerEpoch:
            return "STALE_BROKER_EPOCH"
        if self.config.controller_epoch_check and request.controllerEpoch < broker.lastSeenControllerEpoch:
            return "STALE_CONTROLLER_EPOCH"
        if request.leaderEpoch <= broker.leaderEpoch:
            return "ignored"  # a lower epoch is rejected, an equal one ignored (ZooKeeper mode)
        return "applied"

    def _handle_requests(self, s: ZkControllerState, out: list) -> None:
        for request in sorted(s.requests):
            b = request.broker
            broker = s.brokers[b]
            outcome = self.handle_outcome(broker, request)
            if outcome in ("applied", "ignored"):
                broker = broker._replace(
                    lastSeenControllerEpoch=max(broker.lastSeenControllerEpoch, request.controllerEpoch)
                )
            if outcome == "applied":
                broker = broker._replace(leader=request.leader, leaderEpoch=request.leaderEpoch)
            action = Action(
                "HandleLeaderAndIsr",
                broker=b,
                controllerEpoch=request.controllerEpoch,
                brokerEpoch=request.brokerEpoch,
                leaderEpoch=request.leaderEpoch,
            )
            out.append((action, s._replace(brokers=put(s.brokers, b, broker), requests=s.requests - {request})))

    def symbolic(self) -> Any:
        from kmc.models.zk_controller.symbolic import ZkControllerEncoding

        return ZkControllerEncoding(self)

    def drawing(self) -> ZkControllerDrawing:
        return ZkControllerDrawing(self.config.brokers)


def _state_requests(controller: Broker, targets: list[tuple[int, int]]) -> frozenset[LeaderAndIsr]:
    """The partition state the controller holds, sent to each (broker, broker epoch); nothing while
    the partition has never been written."""
    state = controller.cachedPartition
    if state.leaderEpoch == NO_EPOCH:
        return frozenset()
    return frozenset(
        LeaderAndIsr(controller.controllerEpoch, t, epoch, state.leader, state.leaderEpoch) for t, epoch in targets
    )
