"""Safety properties of the `replication` model (hachikuji/kafka-specification)."""

from __future__ import annotations

from kmc.checker import invariant
from kmc.models.replication.state import NO_LEADER, ReplicationState


def _presumed_leaders_replicated(s: ReplicationState, true_isr: frozenset[int] | None) -> bool:
    """Every presumed leader's log up to its high watermark is on each member of ``true_isr``, or
    of its own ISR when that is None. (Plain loops and no slice of a log that is all below the HW:
    this runs on every new state.)"""
    logs = s.replicaLog
    r = -1
    for st in s.replicaState:
        r += 1
        hw = st.hw
        if not hw or st.leader != r:
            continue
        leader_log = logs[r]
        if len(leader_log) < hw:
            return False
        prefix = leader_log if len(leader_log) == hw else leader_log[:hw]
        for member in st.isr if true_isr is None else true_isr:
            log = logs[member]
            if log is not leader_log and log[:hw] != prefix:
                return False
    return True


def _some_leader_has_a_high_watermark(s: ReplicationState) -> bool:
    """The guard of the ISR properties: they say something once a presumed leader has committed a record."""
    for r, st in enumerate(s.replicaState):  # noqa: SIM110 -- any() over a generator costs three times this
        if st.hw and st.leader == r:
            return True
    return False


def _two_replicas_have_high_watermarks(s: ReplicationState) -> bool:
    """LogMatching's guard: it compares two logs only below two non-zero high watermarks."""
    return sum(1 for st in s.replicaState if st.hw > 0) >= 2


@invariant(guard=_some_leader_has_a_high_watermark)
def WeakIsr(s: ReplicationState) -> bool:
    """Every presumed leader's own ISR holds exactly its log up to its high watermark."""
    return _presumed_leaders_replicated(s, None)


@invariant(guard=_some_leader_has_a_high_watermark)
def StrongIsr(s: ReplicationState) -> bool:
    """Everything below any presumed leader's high watermark is on every member of the true ISR.

    If it fails, a committed record (one a consumer may have read) can be lost when a member of
    the ISR in ZooKeeper is elected leader.
    """
    return _presumed_leaders_replicated(s, s.quorumState.isr)


@invariant(guard=lambda s: s.quorumState.leader != NO_LEADER)
def LeaderInIsr(s: ReplicationState) -> bool:
    """The leader in ZooKeeper is a member of the ISR (vacuous before the first election)."""
    quorum = s.quorumState
    return quorum.leader == NO_LEADER or quorum.leader in quorum.isr


@invariant(guard=_two_replicas_have_high_watermarks)
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
