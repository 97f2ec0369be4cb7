"""The replication model's state: each replica's log and state, the partition state in ZooKeeper,
the LeaderAndIsr requests in flight; and the names of every action's arguments."""

from __future__ import annotations

from typing import NamedTuple

NO_LEADER = -1
"""Kafka's LeaderAndIsr.NoLeader: the partition has no leader."""


NO_EPOCH = -1
"""A replica that has not yet received a LeaderAndIsr request has no leader epoch."""


class Record(NamedTuple):
    id: int
    epoch: int


class ReplicaState(NamedTuple):
    """A replica's cached view of the partition (from LeaderAndIsr) and its local high watermark."""

    hw: int
    leaderEpoch: int
    leader: int
    isr: frozenset[int]


class LeaderAndIsr(NamedTuple):
    """The partition state in ZooKeeper, and the LeaderAndIsr request that carries it."""

    leaderEpoch: int
    leader: int
    isr: frozenset[int]


class ReplicationState(NamedTuple):
    replicaLog: tuple[tuple[Record, ...], ...]
    """Each replica's log; offset i holds replicaLog[r][i]. The log end offset is its length."""
    replicaState: tuple[ReplicaState, ...]
    nextRecordId: int
    nextLeaderEpoch: int
    leaderAndIsrRequests: frozenset[LeaderAndIsr]
    """Every LeaderAndIsr request sent: a replica may receive any of them, late or twice."""
    quorumState: LeaderAndIsr


ACTION_ARGS = {
    "ControllerElectLeader": ("leader",),
    "ControllerShrinkIsr": ("replica",),
    "BecomeLeader": ("leader", "leaderEpoch"),
    "BecomeFollower": ("replica", "leader", "leaderEpoch"),
    "LeaderWrite": ("leader", "id"),
    "LeaderIncHighWatermark": ("leader",),
    "LeaderShrinkIsr": ("leader", "replica"),
    "LeaderExpandIsr": ("leader", "replica"),
    "FollowerFetch": ("follower", "leader"),
    "FollowerTruncate": ("follower", "leader"),
}
"""Every action of the model and the names of its arguments."""
