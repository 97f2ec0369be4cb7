"""Properties of the `zk-controller` model: one controller per epoch, and its zombies fenced."""

from __future__ import annotations

from kmc.checker import Action, invariant, leads_to, step
from kmc.models.zk_controller.state import NONE, ZkControllerState


@invariant
def OneControllerPerEpoch(s: ZkControllerState) -> bool:
    """At most one broker acts as controller of any one epoch. (Two controllers of different epochs
    -- a zombie and its successor -- are expected; the epochs are what tells them apart.)"""
    epochs = [b.controllerEpoch for b in s.brokers if b.isController]
    return len(epochs) == len(set(epochs))


@invariant
def ControllerNodeIsCurrent(s: ZkControllerState) -> bool:
    """The broker named in /controller is a controller of the epoch in /controller_epoch."""
    zk = s.zk
    if zk.controller == NONE:
        return True
    holder = s.brokers[zk.controller]
    return holder.isController and holder.controllerEpoch == zk.controllerEpoch


@step
def OnlyNewestControllerWrites(s: ZkControllerState, action: Action, t: ZkControllerState) -> bool:
    """Only the controller of the newest epoch changes durable metadata (the partition state)."""
    if t.zk.partition == s.zk.partition:
        return True
    writer = s.brokers[action.args["controller"]]
    return writer.controllerEpoch == s.zk.controllerEpoch


def _applied(s: ZkControllerState, action: Action, t: ZkControllerState) -> bool:
    if action.name != "HandleLeaderAndIsr":
        return False
    b = action.args["broker"]
    return t.brokers[b].leaderEpoch != s.brokers[b].leaderEpoch


@step
def NoStaleControllerEpochApplied(s: ZkControllerState, action: Action, t: ZkControllerState) -> bool:
    """A broker never applies a request from a controller older than one it has already heard from."""
    if not _applied(s, action, t):
        return True
    return action.args["controllerEpoch"] >= s.brokers[action.args["broker"]].lastSeenControllerEpoch


@step
def NoRequestForEarlierIncarnation(s: ZkControllerState, action: Action, t: ZkControllerState) -> bool:
    """A broker never applies a request the controller addressed to an earlier incarnation of it."""
    if not _applied(s, action, t):
        return True
    return action.args["brokerEpoch"] == s.brokers[action.args["broker"]].brokerEpoch


@step
def LeaderEpochsOnlyIncrease(s: ZkControllerState, action: Action, t: ZkControllerState) -> bool:
    """The partition's leader epoch only increases: in ZooKeeper, and on every broker (a restarted
    broker starts again from nothing)."""
    if t.zk.partition.leaderEpoch < s.zk.partition.leaderEpoch:
        return False
    restarted = action.args["broker"] if action.name == "BrokerRestart" else NONE
    return all(
        after.leaderEpoch >= before.leaderEpoch
        for b, (before, after) in enumerate(zip(s.brokers, t.brokers, strict=True))
        if b != restarted
    )


def _lacks_state(s: ZkControllerState) -> bool:
    """Some live broker incarnation -- the one registered in /brokers/ids -- has not applied the
    partition state in ZooKeeper."""
    current = s.zk.partition.leaderEpoch
    return any(
        broker.session and s.zk.brokerEpochs[b] == broker.brokerEpoch and broker.leaderEpoch < current
        for b, broker in enumerate(s.brokers)
    )


@leads_to(_lacks_state)
def EveryBrokerGetsItsState(s: ZkControllerState, model) -> bool:  # type: ignore[no-untyped-def]
    """Every live broker incarnation eventually applies the partition state in ZooKeeper: the
    controller sends it LeaderAndIsr when it is elected, when it writes the state, and when it sees
    the broker start (KAFKA-1120: also when the broker bounced before it noticed). Within the
    model's bounds, unless no controller can be elected any more (/controller_epoch at its bound)."""
    exhausted = s.zk.controller == NONE and s.zk.controllerEpoch >= model.config.max_controller_epoch
    return exhausted or not _lacks_state(s)
