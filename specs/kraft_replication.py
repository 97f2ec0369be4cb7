"""Properties of the `kraft-replication` model: what Kafka promises producers and consumers.

"Committed" is the longest log prefix a non-stale leader (the controller's leader, in the
controller's leader epoch) has exposed below its high watermark; "consumed" is what consumers read
from any broker that believed it was leader; "acknowledged" is what producers were told succeeded.
The properties that speak of a broker's log ignore brokers that are down: a crashed broker's disk
cannot be read until it restarts, and then it is checked again.
"""

from __future__ import annotations

from kmc.checker import WF, Action, invariant, leads_to, step
from kmc.models.kraft_replication.model import KraftReplicationModel
from kmc.models.kraft_replication.state import NO_LEADER, Controller, KraftReplicationState, Record


def _running_leader(s: KraftReplicationState) -> int:
    """The controller's leader if it is up, else NO_LEADER."""
    leader = s.controller.leader
    return leader if leader != NO_LEADER and s.replicas[leader].running else NO_LEADER


def _holds_prefix(s: KraftReplicationState, b: int, prefix: tuple) -> bool:
    return s.replicas[b].log[: len(prefix)] == prefix


@invariant
def AcknowledgedWriteNeverLost(s: KraftReplicationState) -> bool:
    """Every write a producer was told succeeded is in the log of the partition's running leader.
    With acks=all this is Kafka's durability promise; with acks=1 Kafka promises less, and the
    model shows what is lost."""
    if not s.acked:
        return True
    leader = _running_leader(s)
    if leader == NO_LEADER:
        return True
    ids = {record.id for record in s.replicas[leader].log}
    return s.acked <= ids


@invariant
def LeaderCompleteness(s: KraftReplicationState) -> bool:
    """The leader the controller elected holds every committed record, at its offset."""
    if not s.committed:
        return True
    leader = _running_leader(s)
    return leader == NO_LEADER or _holds_prefix(s, leader, s.committed)


@invariant
def LeaderCandidateCompleteness(s: KraftReplicationState) -> bool:
    """Every running member of the ISR and of the ELR -- everyone the controller may elect
    cleanly; it elects only among the replicas -- holds every committed record."""
    committed = s.committed
    if not committed:
        return True
    c = s.controller
    for b in c.replicas:
        replica = s.replicas[b]
        if (b in c.isr or b in c.elr) and replica.running and replica.log[: len(committed)] != committed:
            return False
    return True


@invariant
def LogMatching(s: KraftReplicationState) -> bool:
    """Two replicas hold the same records below both of their high watermarks, and a record of the
    same epoch at the same offset means the same log up to it."""
    replicas = s.replicas
    for i, a in enumerate(replicas):
        if not a.running:
            continue
        for b in replicas[i + 1 :]:
            if b.running and a.log != b.log and not _logs_match(a.log, b.log, min(a.highWatermark, b.highWatermark)):
                return False
    return True


def _logs_match(a: tuple[Record, ...], b: tuple[Record, ...], common: int) -> bool:
    """LogMatching for two different logs whose high watermarks are both at least ``common``."""
    if len(a) > len(b):
        a, b = b, a
    if b[: len(a)] == a:
        return True  # a lagging follower's log: a prefix of the other
    if a[:common] != b[:common]:
        return False
    for offset in range(min(len(a), len(b)) - 1, -1, -1):
        if a[offset].epoch == b[offset].epoch:
            return a[: offset + 1] == b[: offset + 1]
    return True


@invariant
def ReplicationQuorumSuperset(s: KraftReplicationState, model: KraftReplicationModel) -> bool:
    """While its ISR is at least min.insync.replicas, the replicas the leader counts for its HW
    include everyone the controller could elect cleanly (ISR and ELR). Otherwise the HW can cover
    a record that the next leader does not have."""
    c = s.controller
    leader = _running_leader(s)
    if leader == NO_LEADER:
        return True
    replica = s.replicas[leader]
    if replica.leader != leader or replica.leaderEpoch != c.leaderEpoch:
        return True  # it has not applied its election yet
    if len(replica.isr) < model.config.min_insync_replicas:
        return True
    return (c.isr | c.elr) <= model.hw_quorum(replica)


@invariant
def NoCommittedRecordLostGlobally(s: KraftReplicationState) -> bool:
    """Every committed record is still on the disk of some broker, up or down."""
    committed = s.committed
    if not committed:
        return True
    for replica in s.replicas:
        if replica.log[: len(committed)] == committed:
            return True  # a log that begins with the committed prefix holds every committed record
    held = {record.id for replica in s.replicas for record in replica.log}
    return all(record.id in held for record in s.committed)


@invariant
def ConsistentRead(s: KraftReplicationState) -> bool:
    """A consumer never reads a record that is later truncated away: what was consumed is the
    prefix of the running leader's log once that leader serves in the controller's epoch."""
    if not s.consumed:
        return True
    leader = _running_leader(s)
    if leader == NO_LEADER or s.replicas[leader].leaderEpoch != s.controller.leaderEpoch:
        return True
    return _holds_prefix(s, leader, s.consumed)


@step
def HighWatermarkMonotonic(s: KraftReplicationState, action: Action, t: KraftReplicationState) -> bool:
    """A leader's high watermark never decreases within its leader epoch."""
    replicas = s.replicas
    if t.replicas is replicas:
        return True
    for b, after in enumerate(t.replicas):
        before = replicas[b]
        if after.highWatermark >= before.highWatermark:
            continue
        same_term = before.leader == after.leader == b and before.leaderEpoch == after.leaderEpoch
        if same_term and before.running and after.running:
            return False
    return True


@invariant
def ValidIsrAndElr(s: KraftReplicationState, model: KraftReplicationModel) -> bool:
    """The controller's partition is well formed: the leader is in the ISR, no replica is in both
    the ISR and the ELR, the ELR is empty while the ISR has min.insync.replicas members, and no
    fenced broker is in the ISR unless (before KIP-966) it is the last one."""
    key = (s.controller, model.config.min_insync_replicas, model.config.elr)
    verdict = _VALID_ISR_AND_ELR.get(key)
    if verdict is None:
        if len(_VALID_ISR_AND_ELR) >= 100_000:
            _VALID_ISR_AND_ELR.clear()
        verdict = _VALID_ISR_AND_ELR[key] = _valid_isr_and_elr(*key)
    return verdict


_VALID_ISR_AND_ELR: dict[tuple[Controller, int, bool], bool] = {}
"""ValidIsrAndElr's verdict by the controller's image and the settings it reads: a few hundred images
recur across every state (ValidAssignment's below likewise)."""


def _valid_isr_and_elr(c: Controller, min_insync_replicas: int, elr: bool) -> bool:
    if c.leader != NO_LEADER and (c.leader not in c.isr or c.leader in c.fenced):
        return False
    if c.isr & c.elr:
        return False
    if len(c.isr) >= min_insync_replicas and c.elr:
        return False
    fenced_in_isr = c.isr & c.fenced
    return not fenced_in_isr or (not elr and c.isr == fenced_in_isr and len(c.isr) == 1)


@invariant
def ValidAssignment(s: KraftReplicationState) -> bool:
    """The registration's replicas hold its leader and ISR; during a reassignment the adding and
    removing replicas are disjoint members of them."""
    c = s.controller
    verdict = _VALID_ASSIGNMENTS.get(c)
    if verdict is None:
        if len(_VALID_ASSIGNMENTS) >= 100_000:
            _VALID_ASSIGNMENTS.clear()
        verdict = _VALID_ASSIGNMENTS[c] = _valid_assignment(c)
    return verdict


_VALID_ASSIGNMENTS: dict[Controller, bool] = {}


def _valid_assignment(c: Controller) -> bool:
    replicas = set(c.replicas)
    if c.leader != NO_LEADER and c.leader not in replicas:
        return False
    if not (c.isr | c.addingReplicas | c.removingReplicas) <= replicas:
        return False
    return not c.addingReplicas & c.removingReplicas


@invariant
def ElrWithinReplicas(s: KraftReplicationState) -> bool:
    """Every eligible leader replica is a replica of the partition: a broker a reassignment removed
    (its log deleted) is never eligible."""
    c = s.controller
    return not c.elr or c.elr <= set(c.replicas)


FAIRNESS = [WF("HandleAlterPartition", each=True), WF("ApplyMetadata", each=True)]
"""Liveness asks only that a leader's AlterPartition is answered and that brokers apply metadata;
faults, produce requests and fetches need no fairness."""


def _isr_change_pending(s: KraftReplicationState) -> bool:
    return any(r.running and r.pendingAlterPartition is not None for r in s.replicas)


@leads_to(_isr_change_pending)
def PendingIsrChangeResolved(s: KraftReplicationState) -> bool:
    """A pending ISR change is eventually resolved: answered, superseded by metadata, or dropped --
    through NOT_CONTROLLER retries to a new controller and stale-epoch errors that wait for metadata."""
    return not _isr_change_pending(s)
