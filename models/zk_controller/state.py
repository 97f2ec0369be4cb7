"""The zk-controller model's state: ZooKeeper's nodes, each broker's view, the LeaderAndIsr requests
in flight; and the names of every action's arguments."""

from __future__ import annotations

from typing import NamedTuple

NONE = -1
"""No broker: /controller absent, or a partition with no leader."""


NO_EPOCH = -1
"""A partition never written (leader epoch) or a broker that holds no partition state."""


INITIAL_CONTROLLER_EPOCH = 0
"""KafkaController.InitialControllerEpoch: /controller_epoch before the first election, and what a
broker that has seen no controller yet holds."""


class PartitionState(NamedTuple):
    """/brokers/topics/t/partitions/0/state: the leader, its epoch, and the znode's version."""

    leader: int
    leaderEpoch: int
    zkVersion: int


class ZooKeeper(NamedTuple):
    controller: int
    """The broker id in the ephemeral /controller node, or NONE."""
    controllerEpoch: int
    """/controller_epoch. Its zkVersion moves with it (one setData per election), so one number is both."""
    brokerEpochs: tuple[int, ...]
    """The czxid of each /brokers/ids/<id> node, or 0 when the node is absent (session gone)."""
    partition: PartitionState


class Broker(NamedTuple):
    session: bool
    """It has a live ZooKeeper session (the first, or the one ZooKeeperClient opened after an expiry)."""
    brokerEpoch: int
    """The czxid of the registration this incarnation made (KIP-380)."""
    lastSeenControllerEpoch: int
    """ReplicaManager.controllerEpoch: the newest controller epoch of a request it accepted."""
    leader: int
    leaderEpoch: int
    """The partition state it applied from a LeaderAndIsr request."""
    isController: bool
    """It believes it is the controller (true for a zombie too, until it resigns)."""
    controllerEpoch: int
    """The epoch it was elected in, and the /controller_epoch version its writes expect."""
    liveBrokerEpochs: tuple[int, ...]
    """The controller's cache of /brokers/ids: each broker's epoch, or 0 if it is thought dead."""
    cachedPartition: PartitionState
    """The controller's cache of the partition state, with the zkVersion it read."""


class LeaderAndIsr(NamedTuple):
    """A control request in flight from a controller to one broker."""

    controllerEpoch: int
    broker: int
    brokerEpoch: int
    """The epoch of the incarnation the controller addressed. Sent on the wire only with KIP-380;
    kept here either way, so the properties can tell which incarnation a request was meant for."""
    leader: int
    leaderEpoch: int


class ZkControllerState(NamedTuple):
    zk: ZooKeeper
    brokers: tuple[Broker, ...]
    requests: frozenset[LeaderAndIsr]
    """Control requests sent and not yet handled, delivered in any order."""
    nextCzxid: int
    """ZooKeeper's next zxid as seen by broker registrations: every new /brokers/ids node gets a larger one."""
    sessionExpiries: int
    restarts: int


ACTION_ARGS = {
    "Elect": ("broker",),
    "ZkSessionExpire": ("broker",),
    "ZkReconnect": ("broker",),
    "RegisterBrokerAndReelect": ("broker",),
    "BrokerRestart": ("broker",),
    "BrokerChange": ("controller",),
    "ElectLeader": ("controller", "leader"),
    "HandleLeaderAndIsr": ("broker", "controllerEpoch", "brokerEpoch", "leaderEpoch"),
}
"""Every action of the model and the names of its arguments."""


HANDLE_OUTCOMES = ("applied", "ignored", "STALE_CONTROLLER_EPOCH", "STALE_BROKER_EPOCH")
