"""Safety properties of the `replication` model (hachikuji/kafka-specification)."""

from __future__ import annotations

from kmc.checker import invariant
from kmc.models.replication import NO_LEADER, ReplicationState


def _replicated_below_hw(s: ReplicationState, leader: int, members: frozenset[int]) -> bool:
    hw = s.replicaState[leader].hw
    if hw == 0:
        return True
    leader_log = s.replicaLog[leader]
    if len(leader_log) < hw:
        return False
    prefix = leader_log[:hw]
    return all(s.replicaLog[member][:hw] == prefix for member in members)


@invariant
def WeakIsr(s: ReplicationState) -> bool:
    """Every presumed leader's own ISR holds exactly its log up to its high watermark."""
    return all(_replicated_below_hw(s, r, st.isr) for r, st in enumerate(s.replicaState) if st.leader == r)


@invariant
def StrongIsr(s: ReplicationState) -> bool:
    """Everything below any presumed leader's high watermark is on every member of the true ISR.

    If it fails, a committed record (one a consumer may have read) can be lost when a member of
    the ISR in ZooKeeper is elected leader.
    """
    isr = s.quorumState.isr
    return all(_replicated_below_hw(s, r, isr) for r, st in enumerate(s.replicaState) if st.leader == r)


@invariant
def LeaderInIsr(s: ReplicationState) -> bool:
    """The leader in ZooKeeper is a member of the ISR (vacuous before the first election)."""
    quorum = s.quorumState
    return quorum.leader == NO_LEADER or quorum.leader in quorum.isr


@invariant
def LogMatching(s: ReplicationState) -> bool:
    """Two replicas hold the same records at every offset below both of their high watermarks."""
    logs, states = s.replicaLog, s.replicaState
    n = len(logs)
    for a in range(n):
        for b in range(a + 1, n):
            common = min(states[a].hw, states[b].hw)
            if common and (len(logs[a]) < common or len(logs[b]) < common or logs[a][:common] != logs[b][:common]):
                return False
    return True
