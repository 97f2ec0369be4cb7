"""Kafka partition replication as it runs today (KRaft), with the failures that lose data.

One partition replicated on every broker, and the active KRaft controller. The leader takes
produce requests (acks 0, 1 or all, with min.insync.replicas), followers replicate by Fetch
requests and responses that travel as messages, the leader advances the high watermark over
its maximal ISR and changes the ISR by AlterPartition requests to the controller. The controller
registers, fences and unfences brokers (each registration has a new broker epoch) and elects
leaders: from the ISR, then from the eligible leader replicas of KIP-966, then -- only with
``unclean_election`` -- from any live replica. Brokers crash and restart; a power loss loses the
unflushed suffix of a log, and the ``crash="disk"`` variant loses the whole disk.

Every guard that a KIP or a JIRA added is a flag, so the protocol before the fix can be checked:

* ``truncation`` -- ``diverging_epoch`` (KIP-101/KIP-279, in the Fetch response since KAFKA-10554):
  the leader answers a fetch whose (fetchOffset, lastFetchedEpoch) is not on its log with a
  diverging epoch and the follower truncates to it; ``offsets_for_leader_epoch`` (KIP-279 as
  brokers 2.0 to 2.6 ran it): a new follower first asks the leader for the end offset of its last
  epoch in a separate OffsetsForLeaderEpoch request, truncates, and then fetches by offset alone;
  ``hw`` (before KIP-101): a new follower truncates to its high watermark and fetches from its log end.
* ``fetch_fencing`` (KIP-320): Fetch and OffsetsForLeaderEpoch carry currentLeaderEpoch; an older
  one is answered with FENCED_LEADER_EPOCH, a newer one with UNKNOWN_LEADER_EPOCH, and a follower
  drops an OffsetsForLeaderEpoch answer to a request of an earlier epoch.
* ``maximal_isr`` (KIP-497, KAFKA-8836): while an AlterPartition is in flight the leader counts
  the union of the committed and the proposed ISR for the HW; without it, the proposed ISR.
* ``isr_expand_leso`` (KAFKA-7128): a follower joins the ISR only once it has reached the
  start offset of the leader's epoch, not merely the leader's HW.
* ``isr_broker_epoch`` (KIP-903, KAFKA-14617): the controller accepts a new ISR member only if
  the broker epoch of the fetch that made it eligible is its current registration's.
* ``hw_min_isr`` (KAFKA-15583, with KIP-966): the HW does not advance while the ISR is smaller
  than min.insync.replicas.
* ``elr`` (KIP-966, KAFKA-15584): replicas that leave an ISR smaller than min.insync.replicas
  become eligible leader replicas; the ISR may be empty; a broker that restarts after an unclean
  shutdown leaves the ELR.
* ``shrink_keeps_leader_epoch`` (KAFKA-15021, metadata.version 3.6): the controller no longer bumps
  the leader epoch when the ISR shrinks; before it, every shrink started a new leader epoch.

Offsets count from 0; a log's end offset (LEO) is its length; a leader epoch of -1 means none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from kmc.checker import Action, Model, Preset, param
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.models.tuples import put

NO_LEADER = -1
"""LeaderConstants.NO_LEADER: the partition has no leader."""
UNDEFINED = -1
"""UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET in epoch lookups; an unknown follower offset or epoch."""

ERROR_NONE = "NONE"
NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
UNKNOWN_LEADER_EPOCH = "UNKNOWN_LEADER_EPOCH"
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
DIVERGING_EPOCH = "DIVERGING_EPOCH"
"""Not an error code in Kafka: a response with the divergingEpoch field set."""
FETCHING = "Fetching"
TRUNCATING = "Truncating"
"""A follower's fetch state (AbstractFetcherThread's PartitionFetchState): with truncation by
OffsetsForLeaderEpoch it is Truncating from becoming a follower until its log matches the leader's."""


class Record(NamedTuple):
    id: int
    """Which produce request wrote it (a value that is never written twice)."""
    epoch: int
    """The leader epoch the batch was stamped with."""


class Replica(NamedTuple):
    """One broker: its process, its copy of the partition, and the partition metadata it applied."""

    running: bool
    brokerEpoch: int
    """The epoch of its current registration with the controller."""
    cleanShutdownEpoch: int
    """KIP-966: the broker epoch it wrote on a clean shutdown, sent as previousBrokerEpoch when it
    registers again; UNDEFINED after an unclean one."""
    log: tuple[Record, ...]
    highWatermark: int
    leader: int
    leaderEpoch: int
    """The partition's leader and leader epoch in the last PartitionChangeRecord it applied."""
    partitionEpoch: int
    isr: frozenset[int]
    """Only a leader keeps these two (followers store UNDEFINED and the empty set)."""
    pendingAlterPartition: AlterPartition | None
    """Its AlterPartition request in flight, if any."""
    followerState: tuple[tuple[int, int], ...]
    """On a leader, per replica: (logEndOffset, brokerEpoch) of its last accepted fetch, or
    (UNDEFINED, UNDEFINED). Partition.remoteReplicasMap."""
    fetchState: str = FETCHING
    """On a follower, TRUNCATING or FETCHING; always FETCHING unless truncation is by OffsetsForLeaderEpoch."""


class AlterPartition(NamedTuple):
    """A leader's request to the controller to change the ISR."""

    isr: frozenset[int]
    brokerEpochs: tuple[tuple[int, int], ...]
    """KIP-903's BrokerState: (brokerId, brokerEpoch) of each member joining the ISR, from the fetch
    that made it eligible -- as it was when the request was sent. Empty before KIP-903."""


class Controller(NamedTuple):
    """The active controller's image: broker registrations and the PartitionRegistration."""

    brokerEpochs: tuple[int, ...]
    fenced: frozenset[int]
    leader: int
    leaderEpoch: int
    partitionEpoch: int
    isr: frozenset[int]
    elr: frozenset[int]
    nextBrokerEpoch: int
    """Broker epochs are offsets of registration records in the metadata log: always larger."""


class FetchRequest(NamedTuple):
    leader: int
    """The broker it is sent to."""
    fetchOffset: int
    lastFetchedEpoch: int
    currentLeaderEpoch: int
    replicaEpoch: int
    """The follower's broker epoch (KIP-903)."""


class FetchResponse(NamedTuple):
    leader: int
    leaderEpoch: int
    """The follower's leader epoch when it sent the request: which fetch state the answer belongs to."""
    fetchOffset: int
    error: str
    records: tuple[Record, ...]
    highWatermark: int
    divergingEpoch: tuple[int, int]
    """(epoch, endOffset) when the error is DIVERGING_EPOCH."""
    logEndOffset: int
    """The leader's LEO, which a follower needs after OFFSET_OUT_OF_RANGE."""


class OffsetsForLeaderEpochRequest(NamedTuple):
    """KIP-279's request (2.0 to 2.6): where does the follower's last epoch end on the leader?"""

    leader: int
    currentLeaderEpoch: int
    """The follower's leader epoch (KIP-320): the leader fences a request of another epoch."""
    leaderEpoch: int
    """The epoch of the follower's last record."""


class OffsetsForLeaderEpochResponse(NamedTuple):
    leader: int
    leaderEpoch: int
    """The follower's leader epoch when it sent the request."""
    error: str
    endOffset: tuple[int, int]
    """(epoch, endOffset): the largest epoch on the leader's log up to the one asked for, and its end."""


Fetch = FetchRequest | FetchResponse | OffsetsForLeaderEpochRequest | OffsetsForLeaderEpochResponse | None


class KraftReplicationState(NamedTuple):
    controller: Controller
    replicas: tuple[Replica, ...]
    fetches: tuple[Fetch, ...]
    """Each follower's one fetch in flight (request or response), or None."""
    nextRecordId: int
    crashes: int
    fences: int
    shutdowns: int
    committed: tuple[Record, ...]
    """Ghost: the longest log prefix any non-stale leader exposed below its HW."""
    consumed: tuple[Record, ...]
    """Ghost: the longest log prefix consumers have read from any broker acting as leader."""
    acked: frozenset[int]
    """Ghost: ids of the records whose produce request was acknowledged as successful."""


ACTION_ARGS = {
    "Produce": ("leader", "id"),
    "SendFetch": ("follower", "leader"),
    "HandleFetch": ("leader", "follower"),
    "HandleFetchResponse": ("follower", "leader"),
    "SendOffsetsForLeaderEpoch": ("follower", "leader"),
    "HandleOffsetsForLeaderEpoch": ("leader", "follower"),
    "HandleOffsetsForLeaderEpochResponse": ("follower", "leader"),
    "ShrinkIsr": ("leader", "replica"),
    "ExpandIsr": ("leader", "replica"),
    "HandleAlterPartition": ("leader",),
    "ApplyMetadata": ("broker",),
    "BrokerCrash": ("broker", "logEndOffset"),
    "ControlledShutdown": ("broker",),
    "FenceBroker": ("broker",),
    "BrokerRestart": ("broker",),
    "UnfenceBroker": ("broker",),
}
"""Every action of the model and the names of its arguments."""

Acks = Literal["0", "1", "all"]
Truncation = Literal["hw", "offsets_for_leader_epoch", "diverging_epoch"]
Crash = Literal["power", "process", "disk"]


@dataclass(frozen=True)
class KraftReplicationConfig:
    brokers: int = param(2, "replication factor: every broker holds a replica", min=2, max=4)
    min_insync_replicas: int = param(2, "min.insync.replicas", min=1, max=4)
    acks: Acks = param("all", "the producer's acks")
    max_records: int = param(2, "how many produce requests are written in all", min=0, max=4)
    max_leader_epoch: int = param(3, "elections stop at this leader epoch (the first leader has epoch 0)", min=0, max=8)
    max_crashes: int = param(1, "unclean shutdowns in all (power loss, kill -9, lost disk)", min=0, max=4)
    max_fences: int = param(1, "times the controller fences a running broker (missed heartbeats)", min=0, max=4)
    max_shutdowns: int = param(0, "controlled (clean) shutdowns in all", min=0, max=4)
    crash: Crash = param("power", "what a crash loses: power (any unflushed suffix), process (nothing), disk (all)")
    unclean_election: bool = param(False, "unclean.leader.election.enable")
    truncation: Truncation = param(
        "diverging_epoch", "KIP-101/279: diverging epoch in Fetch (KAFKA-10554), OffsetsForLeaderEpoch, or to the HW"
    )
    fetch_fencing: bool = param(True, "KIP-320: fetches carry currentLeaderEpoch and are fenced by it")
    maximal_isr: bool = param(True, "KIP-497/KAFKA-8836: the HW counts the ISR being proposed too")
    isr_expand_leso: bool = param(True, "KAFKA-7128: a new ISR member has reached the leader epoch start offset")
    isr_broker_epoch: bool = param(True, "KIP-903/KAFKA-14617: a new ISR member's fetch has its current broker epoch")
    hw_min_isr: bool = param(True, "KAFKA-15583: no HW advance while the ISR is below min.insync.replicas")
    elr: bool = param(True, "KIP-966/KAFKA-15584: eligible leader replicas")
    shrink_keeps_leader_epoch: bool = param(
        True, "KAFKA-15021 (metadata.version 3.6): an ISR shrink does not bump the leader epoch"
    )

    def __post_init__(self) -> None:
        if self.min_insync_replicas > self.brokers:
            raise ValueError(f"min_insync_replicas={self.min_insync_replicas} exceeds brokers={self.brokers}")


_HOLDS = "holds"
_ALL_HOLD = {
    name: _HOLDS
    for name in (
        "AcknowledgedWriteNeverLost",
        "LeaderCompleteness",
        "LeaderCandidateCompleteness",
        "LogMatching",
        "ReplicationQuorumSuperset",
        "NoCommittedRecordLostGlobally",
        "ConsistentRead",
        "HighWatermarkMonotonic",
        "ValidIsrAndElr",
    )
}
_PRE_KIP_966 = {"elr": False, "hw_min_isr": False}

PRESETS = {
    "kip-966": Preset.of(
        "Kafka 4.x: eligible leader replicas and every earlier fix, acks=all, unclean election off",
        _ALL_HOLD,
    ),
    "unclean": Preset.of(
        "kip-966 with unclean.leader.election.enable=true: an out-of-sync replica may become leader",
        {"LeaderCompleteness": "violated", "AcknowledgedWriteNeverLost": "violated"},
        unclean_election=True,
    ),
    "acks-1": Preset.of(
        "kip-966 with acks=1: the leader acknowledges a write before any follower has it",
        {"AcknowledgedWriteNeverLost": "violated"},
        acks="1",
    ),
    "v3.5": Preset.of(
        "Kafka 3.5 (KRaft, before KIP-966): the last replica standing is re-elected after losing data",
        {"LeaderCompleteness": "violated", "AcknowledgedWriteNeverLost": "violated"},
        **_PRE_KIP_966,
        shrink_keeps_leader_epoch=False,
    ),
    "pre-kip-966": Preset.of(
        "kip-966 without eligible leader replicas (KAFKA-15584), HW guard kept",
        {"LeaderCompleteness": "violated"},
        elr=False,
    ),
    "pre-kafka-15583": Preset.of(
        "kip-966 without KAFKA-15583: the HW advances while the ISR is below min.insync.replicas",
        {"LeaderCandidateCompleteness": "violated"},
        hw_min_isr=False,
    ),
    "pre-kip-497": Preset.of(
        "kip-966 without the maximal ISR (KAFKA-8836): the HW counts a proposed ISR shrink at once",
        {"ReplicationQuorumSuperset": "violated", "LeaderCompleteness": "violated"},
        maximal_isr=False,
    ),
    "pre-kafka-7128": Preset.of(
        "kip-966 without KAFKA-7128: a follower joins the ISR below the leader epoch start offset",
        {"LeaderCandidateCompleteness": "violated"},
        isr_expand_leso=False,
    ),
    "pre-kip-903": Preset.of(
        "kip-966 without KIP-903: the ISR is expanded on the fetch state of an earlier incarnation",
        {"LeaderCandidateCompleteness": "violated"},
        isr_broker_epoch=False,
    ),
    "kip-320": Preset.of(
        "kip-966 with truncation by a separate OffsetsForLeaderEpoch request (brokers 2.1 to 2.6), fenced by "
        "the current leader epoch of KIP-320",
        _ALL_HOLD,
        truncation="offsets_for_leader_epoch",
    ),
    "pre-kip-320": Preset.of(
        "kip-320 without the fencing (2.0), 3 brokers: a follower that missed two leader changes fetches by "
        "offset from a leader that rewrote its log, and the HW counts it",
        {"LeaderCandidateCompleteness": "violated"},
        truncation="offsets_for_leader_epoch",
        fetch_fencing=False,
        brokers=3,
        max_leader_epoch=2,
        crash="disk",
    ),
    "pre-kip-101": Preset.of(
        "before KIP-101 (0.10): a new follower truncates to its HW; unclean election and acks=1 were the "
        "defaults; two brokers lose power and their logs diverge for good",
        {"LogMatching": "violated"},
        truncation="hw",
        unclean_election=True,
        acks="1",
        max_crashes=2,
        max_fences=0,
    ),
}

Step = tuple[Action, KraftReplicationState]


def end_offset_for_epoch(log: tuple[Record, ...], requested: int, latest: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor: the largest epoch <= ``requested`` in the log's epoch cache
    and the offset where the next epoch starts (the LEO for the latest epoch). ``latest`` is the
    cache's newest epoch: on a leader, its own epoch even before it has written a record of it."""
    if requested == UNDEFINED:
        return UNDEFINED, UNDEFINED
    if requested == latest:
        return requested, len(log)
    if requested > latest:
        return UNDEFINED, UNDEFINED
    floor = UNDEFINED
    for offset, record in enumerate(log):
        if record.epoch > requested:
            return (floor if floor != UNDEFINED else requested), offset
        floor = record.epoch
    # The next entry is the latest epoch's, which starts at the LEO: a leader that has not yet
    # written in its own epoch (maybeAssignEpochStartOffset put it in the cache when it was elected).
    return (floor if floor != UNDEFINED else requested), len(log)


def last_epoch(log: tuple[Record, ...]) -> int:
    return log[-1].epoch if log else UNDEFINED


def epoch_start_offset(replica: Replica) -> int:
    """The leader epoch start offset (LESO): where the leader's own epoch begins in its log."""
    for offset, record in enumerate(replica.log):
        if record.epoch >= replica.leaderEpoch:
            return offset
    return len(replica.log)


class KraftReplicationModel(Model):
    name = "kraft-replication"
    description = "KRaft-era replication: acks, min ISR, fetch sessions, AlterPartition, fencing, ELR, crashes"
    Config = KraftReplicationConfig
    presets = PRESETS
    default_preset = "kip-966"
    spec_modules = ("kmc.specs.kraft_replication",)

    config: KraftReplicationConfig

    def __init__(self, config: KraftReplicationConfig | None = None) -> None:
        super().__init__(config)
        self.ids = tuple(range(self.config.brokers))
        self.unknown_followers = ((UNDEFINED, UNDEFINED),) * self.config.brokers

    # -- the initial state ---------------------------------------------------------------------
    def init_states(self) -> list[KraftReplicationState]:
        """Every broker registered and unfenced (broker epochs 1..n); the partition created with
        broker 0 as leader in epoch 0 and every broker in the ISR; every log empty."""
        n = self.config.brokers
        everyone = frozenset(self.ids)
        controller = Controller(tuple(range(1, n + 1)), frozenset(), 0, 0, 0, everyone, frozenset(), n + 1)
        replicas = tuple(self._restarted_view(controller, b, controller.brokerEpochs[b], (), 0) for b in self.ids)
        leader = replicas[0]._replace(partitionEpoch=0, isr=everyone)
        replicas = (leader, *replicas[1:])
        return [KraftReplicationState(controller, replicas, (None,) * n, 1, 0, 0, 0, (), (), frozenset())]

    def _restarted_view(self, c: Controller, b: int, broker_epoch: int, log: tuple[Record, ...], hw: int) -> Replica:
        """A running broker that has caught up with the metadata log (it is not leader: it was fenced)."""
        return Replica(
            True, broker_epoch, UNDEFINED, log, hw, c.leader, c.leaderEpoch, UNDEFINED, frozenset(), None,
            self.unknown_followers, self.new_fetch_state(log),
        )  # fmt: skip

    def new_fetch_state(self, log: tuple[Record, ...]) -> str:
        """A partition added to a fetcher starts Truncating when truncation is by OffsetsForLeaderEpoch;
        one without an epoch (an empty log) has nothing to truncate and starts Fetching."""
        return TRUNCATING if self.config.truncation == "offsets_for_leader_epoch" and log else FETCHING

    # -- successors ----------------------------------------------------------------------------
    def successors(self, s: KraftReplicationState) -> list[Step]:
        out: list[Step] = []
        for b in self.ids:
            replica = s.replicas[b]
            if replica.running:
                if replica.leader == b:
                    self._produce(s, b, out)
                    self._shrink_isr(s, b, out)
                    self._expand_isr(s, b, out)
                    self._handle_alter_partition(s, b, out)
                else:
                    self._send_fetch(s, b, out)
                self._handle_fetch_response(s, b, out)
                self._apply_metadata(s, b, out)
                self._crash(s, b, out)
                self._controlled_shutdown(s, b, out)
                self._unfence(s, b, out)
            else:
                self._restart(s, b, out)
            self._fence(s, b, out)
        for f in self.ids:
            request = s.fetches[f]
            if type(request) is FetchRequest:
                self._handle_fetch(s, request.leader, f, request, out)
            elif type(request) is OffsetsForLeaderEpochRequest:
                self._handle_offsets_for_leader_epoch(s, request.leader, f, request, out)
        return [(action, _dense_partition_epochs(t)) for action, t in out]

    # -- the leader ----------------------------------------------------------------------------
    def hw_quorum(self, replica: Replica) -> frozenset[int]:
        """The replicas whose LEO bounds the leader's HW: the maximal ISR (committed ∪ proposed,
        KIP-497), or before KAFKA-8836 the proposed ISR as soon as it is sent."""
        pending = replica.pendingAlterPartition
        if pending is None:
            return replica.isr
        return replica.isr | pending.isr if self.config.maximal_isr else pending.isr

    def _maybe_increment_hw(self, replica: Replica, b: int) -> Replica:
        """Partition.maybeIncrementLeaderHW: the HW is the smallest LEO over the HW quorum, and
        only ever moves forward (and, with KAFKA-15583, not while the ISR is below min ISR)."""
        if self.config.hw_min_isr and len(replica.isr) < self.config.min_insync_replicas:
            return replica
        hw = len(replica.log)
        for r in self.hw_quorum(replica):
            if r != b:
                hw = min(hw, replica.followerState[r][0])
        return replica._replace(highWatermark=hw) if hw > replica.highWatermark else replica

    def _update(self, s: KraftReplicationState, b: int, replica: Replica, **changes: object) -> KraftReplicationState:
        """Put broker b's new replica into the state, and account for what a leader's HW advance does:
        acks=all produce requests complete (``checkEnoughReplicasReachOffset``), consumers may read
        further, and a non-stale leader's HW defines what is committed."""
        old = s.replicas[b]
        replicas = (*s.replicas[:b], replica, *s.replicas[b + 1 :])
        nxt = s._replace(replicas=replicas, **changes)
        hw = replica.highWatermark
        if replica.leader != b or hw <= old.highWatermark or not replica.running:
            return nxt
        ghosts: dict[str, object] = {}
        if hw > len(nxt.consumed):
            ghosts["consumed"] = replica.log[:hw]
        c = nxt.controller
        if c.leader == b and c.leaderEpoch == replica.leaderEpoch and hw > len(nxt.committed):
            ghosts["committed"] = replica.log[:hw]
        # The acks=all produce requests still waiting are this epoch's records above the old HW; they
        # fail with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR is now below min ISR.
        same_term = old.leader == b and old.leaderEpoch == replica.leaderEpoch
        enough = len(self.hw_quorum(replica)) >= self.config.min_insync_replicas
        if self.config.acks == "all" and same_term and enough:
            done = [rec.id for rec in replica.log[old.highWatermark : hw] if rec.epoch == replica.leaderEpoch]
            if done:
                ghosts["acked"] = nxt.acked.union(done)
        return nxt._replace(**ghosts) if ghosts else nxt

    def _produce(self, s: KraftReplicationState, b: int, out: list[Step]) -> None:
        """ReplicaManager.appendRecords -> Partition.appendRecordsToLeader. With acks=all an ISR smaller
        than min.insync.replicas rejects the write (NOT_ENOUGH_REPLICAS) before it is appended."""
        if s.nextRecordId > self.config.max_records:
            return
        replica = s.replicas[b]
        if self.config.acks == "all" and len(replica.isr) < self.config.min_insync_replicas:
            return
        rid = s.nextRecordId
        appended = replica._replace(log=(*replica.log, Record(rid, replica.leaderEpoch)))
        appended = self._maybe_increment_hw(appended, b)
        nxt = self._update(s, b, appended, nextRecordId=rid + 1)
        if self.config.acks == "1":
            nxt = nxt._replace(acked=nxt.acked | {rid})
        out.append((Action("Produce", leader=b, id=rid), nxt))

    def _handle_fetch(
        self, s: KraftReplicationState, leader_id: int, f: int, req: FetchRequest, out: list[Step]
    ) -> None:
        """ReplicaManager.fetchMessages on the leader: check leadership and (KIP-320) the epoch, validate
        (fetchOffset, lastFetchedEpoch) against its log, record the follower's LEO and broker epoch,
        maybe advance the HW, and answer with the records from fetchOffset and its HW."""
        leader = s.replicas[leader_id]
        if not leader.running:
            return
        action = Action("HandleFetch", leader=leader_id, follower=f)
        respond = FetchResponse(leader_id, req.currentLeaderEpoch, req.fetchOffset, ERROR_NONE, (), UNDEFINED,
                                (UNDEFINED, UNDEFINED), len(leader.log))  # fmt: skip
        error = self._epoch_error(leader, leader_id, req.currentLeaderEpoch)
        if error is None and self.config.truncation == "diverging_epoch" and req.fetchOffset > 0:
            epoch, end = end_offset_for_epoch(leader.log, req.lastFetchedEpoch, leader.leaderEpoch)
            if end < req.fetchOffset or epoch < req.lastFetchedEpoch:
                response = respond._replace(error=DIVERGING_EPOCH, divergingEpoch=(epoch, end))
                out.append((action, s._replace(fetches=put(s.fetches, f, response))))
                return
        elif error is None and req.fetchOffset > len(leader.log):
            error = OFFSET_OUT_OF_RANGE
        if error is not None:
            out.append((action, s._replace(fetches=put(s.fetches, f, respond._replace(error=error)))))
            return
        followers = put(leader.followerState, f, (req.fetchOffset, req.replicaEpoch))
        updated = self._maybe_increment_hw(leader._replace(followerState=followers), leader_id)
        response = respond._replace(records=updated.log[req.fetchOffset :], highWatermark=updated.highWatermark)
        out.append((action, self._update(s, leader_id, updated, fetches=put(s.fetches, f, response))))

    def _epoch_error(self, leader: Replica, leader_id: int, current_leader_epoch: int) -> str | None:
        """The checks every request to a leader passes first: leadership, then (KIP-320) the epoch."""
        if leader.leader != leader_id:
            return NOT_LEADER_OR_FOLLOWER
        if self.config.fetch_fencing and current_leader_epoch != leader.leaderEpoch:
            return FENCED_LEADER_EPOCH if current_leader_epoch < leader.leaderEpoch else UNKNOWN_LEADER_EPOCH
        return None

    def _handle_offsets_for_leader_epoch(
        self, s: KraftReplicationState, leader_id: int, f: int, req: OffsetsForLeaderEpochRequest, out: list[Step]
    ) -> None:
        """ReplicaManager.lastOffsetForLeaderEpoch -> Partition.lastOffsetForLeaderEpoch: the end offset
        of the asked-for epoch in the leader's epoch cache."""
        leader = s.replicas[leader_id]
        if not leader.running:
            return
        error = self._epoch_error(leader, leader_id, req.currentLeaderEpoch)
        answer = (UNDEFINED, UNDEFINED)
        if error is None:
            answer = end_offset_for_epoch(leader.log, req.leaderEpoch, leader.leaderEpoch)
        response = OffsetsForLeaderEpochResponse(leader_id, req.currentLeaderEpoch, error or ERROR_NONE, answer)
        action = Action("HandleOffsetsForLeaderEpoch", leader=leader_id, follower=f)
        out.append((action, s._replace(fetches=put(s.fetches, f, response))))

    def _shrink_isr(self, s: KraftReplicationState, leader_id: int, out: list[Step]) -> None:
        """Partition.maybeShrinkIsr: a follower that has not caught up to the leader's LEO within
        replica.lag.time.max.ms (time is abstracted: any lagging follower) is proposed out of the ISR
        by an AlterPartition request."""
        leader = s.replicas[leader_id]
        if leader.pendingAlterPartition is not None:
            return
        leo = len(leader.log)
        for r in sorted(leader.isr):
            if r != leader_id and leader.followerState[r][0] < leo:
                proposed = leader._replace(pendingAlterPartition=AlterPartition(leader.isr - {r}, ()))
                proposed = self._maybe_increment_hw(proposed, leader_id)
                out.append((Action("ShrinkIsr", leader=leader_id, replica=r), self._update(s, leader_id, proposed)))

    def _expand_isr(self, s: KraftReplicationState, leader_id: int, out: list[Step]) -> None:
        """Partition.maybeExpandIsr: a follower whose LEO has reached the leader's HW -- and, with
        KAFKA-7128, the start of the leader's epoch -- is proposed into the ISR."""
        leader = s.replicas[leader_id]
        if leader.pendingAlterPartition is not None:
            return
        leso = epoch_start_offset(leader) if self.config.isr_expand_leso else 0
        for r in self.ids:
            if r == leader_id or r in leader.isr:
                continue
            leo = leader.followerState[r][0]
            if leo >= leader.highWatermark and leo >= leso:
                epochs = ((r, leader.followerState[r][1]),) if self.config.isr_broker_epoch else ()
                proposed = leader._replace(pendingAlterPartition=AlterPartition(leader.isr | {r}, epochs))
                out.append((Action("ExpandIsr", leader=leader_id, replica=r), self._update(s, leader_id, proposed)))

    def _handle_alter_partition(self, s: KraftReplicationState, leader_id: int, out: list[Step]) -> None:
        """ReplicationControlManager.alterPartition, and the leader handling the response. The
        controller rejects a request from a stale leader epoch or partition epoch, and a new ISR
        member that is fenced (INELIGIBLE_REPLICA) or, with KIP-903, whose fetch came from an earlier
        broker epoch (STALE_BROKER_EPOCH)."""
        leader = s.replicas[leader_id]
        request = leader.pendingAlterPartition
        if request is None:
            return
        c = s.controller
        accepted = (
            c.leader == leader_id and c.leaderEpoch == leader.leaderEpoch and c.partitionEpoch == leader.partitionEpoch
        )
        if any(r in c.fenced for r in request.isr - c.isr):
            accepted = False  # INELIGIBLE_REPLICA (KIP-841)
        if any(epoch != c.brokerEpochs[r] for r, epoch in request.brokerEpochs):
            accepted = False  # STALE_BROKER_EPOCH (KIP-903)
        action = Action("HandleAlterPartition", leader=leader_id)
        if not accepted:
            out.append((action, self._update(s, leader_id, leader._replace(pendingAlterPartition=None))))
            return
        committed = self._partition_change(c, isr=request.isr)
        if committed is None:
            return  # a shrink that bumps the leader epoch past the bound (before KAFKA-15021)
        updated = leader._replace(isr=request.isr, partitionEpoch=committed.partitionEpoch, pendingAlterPartition=None)
        updated = self._maybe_increment_hw(updated, leader_id)
        out.append((action, self._update(s, leader_id, updated, controller=committed)))

    # -- followers -----------------------------------------------------------------------------
    def _send_fetch(self, s: KraftReplicationState, f: int, out: list[Step]) -> None:
        """ReplicaFetcherThread: one request in flight to the leader it knows -- OffsetsForLeaderEpoch
        for its last epoch while it is truncating, else a fetch from its LEO."""
        follower = s.replicas[f]
        leader_id = follower.leader
        if leader_id == NO_LEADER or s.fetches[f] is not None or not s.replicas[leader_id].running:
            return
        if follower.fetchState == TRUNCATING:
            ask = OffsetsForLeaderEpochRequest(leader_id, follower.leaderEpoch, last_epoch(follower.log))
            action = Action("SendOffsetsForLeaderEpoch", follower=f, leader=leader_id)
            out.append((action, s._replace(fetches=put(s.fetches, f, ask))))
            return
        request = FetchRequest(
            leader_id, len(follower.log), last_epoch(follower.log), follower.leaderEpoch, follower.brokerEpoch
        )
        out.append((Action("SendFetch", follower=f, leader=leader_id), s._replace(fetches=put(s.fetches, f, request))))

    def _handle_fetch_response(self, s: KraftReplicationState, f: int, out: list[Step]) -> None:
        """ReplicaFetcherThread.processPartitionData and truncateOnFetchResponse. A response for a
        fetch state that has since changed (another leader or epoch, another offset) is dropped."""
        response = s.fetches[f]
        if type(response) is OffsetsForLeaderEpochResponse:
            self._handle_offsets_for_leader_epoch_response(s, f, response, out)
            return
        if type(response) is not FetchResponse:
            return
        follower = s.replicas[f]
        action = Action("HandleFetchResponse", follower=f, leader=response.leader)
        cleared = put(s.fetches, f, None)
        log = follower.log
        current = (
            follower.leader == response.leader
            and follower.leaderEpoch == response.leaderEpoch
            and len(log) == response.fetchOffset
        )
        if not current or response.error in (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH):
            out.append((action, s._replace(fetches=cleared)))
            return
        if response.error == DIVERGING_EPOCH:
            truncated = log[: self.truncation_offset(follower, response.divergingEpoch)[0]]
            updated = follower._replace(log=truncated, highWatermark=min(follower.highWatermark, len(truncated)))
        elif response.error == OFFSET_OUT_OF_RANGE:
            truncated = log[: min(len(log), response.logEndOffset)]
            updated = follower._replace(log=truncated, highWatermark=min(follower.highWatermark, len(truncated)))
        else:
            appended = log + response.records
            updated = follower._replace(log=appended, highWatermark=min(response.highWatermark, len(appended)))
        out.append((action, self._update(s, f, updated, fetches=cleared)))

    def _handle_offsets_for_leader_epoch_response(
        self, s: KraftReplicationState, f: int, response: OffsetsForLeaderEpochResponse, out: list[Step]
    ) -> None:
        """AbstractFetcherThread.truncateToEpochEndOffsets: truncate, and fetch once the epochs match
        (else ask again for the new last epoch). The answer is kept only while the follower is still
        truncating against that leader -- and, with KIP-320, still in the epoch it asked in."""
        follower = s.replicas[f]
        action = Action("HandleOffsetsForLeaderEpochResponse", follower=f, leader=response.leader)
        cleared = put(s.fetches, f, None)
        current = follower.leader == response.leader and follower.fetchState == TRUNCATING
        if self.config.fetch_fencing:
            current = current and follower.leaderEpoch == response.leaderEpoch
        if not current or response.error != ERROR_NONE:
            out.append((action, s._replace(fetches=cleared)))
            return
        offset, done = self.truncation_offset(follower, response.endOffset)
        truncated = follower.log[:offset]
        updated = follower._replace(
            log=truncated,
            highWatermark=min(follower.highWatermark, len(truncated)),
            fetchState=FETCHING if done else TRUNCATING,
        )
        out.append((action, self._update(s, f, updated, fetches=cleared)))

    def truncation_offset(self, follower: Replica, diverging: tuple[int, int]) -> tuple[int, bool]:
        """AbstractFetcherThread.getOffsetTruncationState: where a follower truncates, given the
        leader's (epoch, endOffset) for its last epoch, and whether that is the end of truncation --
        it is not when the follower has no such epoch and must ask again for an earlier one."""
        epoch, end = diverging
        log = follower.log
        if end == UNDEFINED:
            return min(follower.highWatermark, len(log)), True
        own_epoch, own_end = end_offset_for_epoch(log, epoch, last_epoch(log))
        if own_epoch == UNDEFINED:
            return min(end, len(log)), True
        if own_epoch != epoch:
            return min(own_end, len(log)), False
        return min(end, own_end), True

    # -- metadata ------------------------------------------------------------------------------
    def _apply_metadata(self, s: KraftReplicationState, b: int, out: list[Step]) -> None:
        """ReplicaManager.applyDelta: the broker replays the newest PartitionChangeRecord and becomes
        leader (makeLeader) or follower (makeFollower). Intermediate records are skipped: each one
        only replaces the partition's registration."""
        replica, c = s.replicas[b], s.controller
        if c.leader == b:
            if (replica.leader, replica.leaderEpoch, replica.partitionEpoch, replica.isr) == (
                b, c.leaderEpoch, c.partitionEpoch, c.isr
            ):  # fmt: skip
                return
            if replica.leader == b and replica.leaderEpoch == c.leaderEpoch:
                # The same leader epoch: only the ISR moved. A request in flight is superseded.
                updated = replica._replace(partitionEpoch=c.partitionEpoch, isr=c.isr, pendingAlterPartition=None)
            else:
                # makeLeader: a new epoch starts at the LEO; nothing is known of the followers yet.
                updated = replica._replace(
                    leader=b, leaderEpoch=c.leaderEpoch, partitionEpoch=c.partitionEpoch, isr=c.isr,
                    pendingAlterPartition=None, followerState=self.unknown_followers, fetchState=FETCHING,
                )  # fmt: skip
            updated = self._maybe_increment_hw(updated, b)
        else:
            if (replica.leader, replica.leaderEpoch) == (c.leader, c.leaderEpoch):
                return
            log = replica.log
            if self.config.truncation == "hw":
                log = log[: replica.highWatermark]
            updated = replica._replace(
                log=log, leader=c.leader, leaderEpoch=c.leaderEpoch, partitionEpoch=UNDEFINED, isr=frozenset(),
                pendingAlterPartition=None, followerState=self.unknown_followers, fetchState=self.new_fetch_state(log),
            )  # fmt: skip
        out.append((Action("ApplyMetadata", broker=b), self._update(s, b, updated)))

    # -- brokers and the controller ------------------------------------------------------------
    def _crash(self, s: KraftReplicationState, b: int, out: list[Step]) -> None:
        """An unclean shutdown. A power loss loses any unflushed suffix (Kafka flushes only on segment
        roll by default, so any suffix); kill -9 loses nothing; a lost disk loses the whole log. The
        HW checkpoint survives but never beyond the log. No clean-shutdown file is written."""
        if s.crashes >= self.config.max_crashes:
            return
        replica = s.replicas[b]
        leo = len(replica.log)
        kept = {"power": range(leo + 1), "process": (leo,), "disk": (0,)}[self.config.crash]
        for keep in kept:
            down = self._stopped(replica, replica.log[:keep], min(replica.highWatermark, keep), UNDEFINED)
            nxt = self._update(s, b, down, fetches=self._drop_fetches(s, b), crashes=s.crashes + 1)
            out.append((Action("BrokerCrash", broker=b, logEndOffset=keep), nxt))

    def _controlled_shutdown(self, s: KraftReplicationState, b: int, out: list[Step]) -> None:
        """BrokerLifecycleManager's controlled shutdown: the controller moves leadership away and takes
        the broker out of the ISR (as fencing does), then the broker flushes its log and writes its
        broker epoch to the clean-shutdown file."""
        if s.shutdowns >= self.config.max_shutdowns:
            return
        c = s.controller
        fenced = self._fence_in_controller(c, b)
        if fenced is None:
            return
        replica = s.replicas[b]
        down = self._stopped(replica, replica.log, replica.highWatermark, replica.brokerEpoch)
        nxt = self._update(s, b, down, controller=fenced, fetches=self._drop_fetches(s, b), shutdowns=s.shutdowns + 1)
        out.append((Action("ControlledShutdown", broker=b), nxt))

    def _stopped(self, replica: Replica, log: tuple[Record, ...], hw: int, clean_epoch: int) -> Replica:
        return Replica(False, replica.brokerEpoch, clean_epoch, log, hw, NO_LEADER, UNDEFINED, UNDEFINED, frozenset(),
                       None, self.unknown_followers)  # fmt: skip

    def _drop_fetches(self, s: KraftReplicationState, b: int) -> tuple[Fetch, ...]:
        """A stopped broker's connections close: its own fetch and every fetch sent to it are gone."""
        return tuple(None if f == b or (m is not None and m.leader == b) else m for f, m in enumerate(s.fetches))

    def _fence(self, s: KraftReplicationState, b: int, out: list[Step]) -> None:
        """BrokerHeartbeatManager's session timeout -> ReplicationControlManager.handleBrokerFenced.
        A stopped broker is always fenced in the end; fencing a running one is a fault (a network
        partition from the controller, a long GC pause) and is bounded."""
        running = s.replicas[b].running
        if running and s.fences >= self.config.max_fences:
            return
        fenced = self._fence_in_controller(s.controller, b)
        if fenced is None:
            return
        out.append((Action("FenceBroker", broker=b), s._replace(controller=fenced, fences=s.fences + running)))

    def _fence_in_controller(self, c: Controller, b: int) -> Controller | None:
        """The broker leaves the ISR and loses leadership, and a new leader is elected. Before
        KIP-966 the last ISR member stays in the ISR with no leader; with it the ISR may become empty
        and whoever leaves an ISR below min ISR joins the ELR. None if the fence is not possible
        within the bounds."""
        if b in c.fenced:
            return None
        isr = c.isr - {b}
        if not isr and not self.config.elr:
            isr = c.isr
        leader = NO_LEADER if c.leader == b else c.leader
        return self._partition_change(c._replace(fenced=c.fenced | {b}), isr=isr, leader=leader, elect=True)

    def _restart(self, s: KraftReplicationState, b: int, out: list[Step]) -> None:
        """The broker starts and registers (ClusterControlManager.registerBroker) once its old
        registration is fenced: it gets a new broker epoch and stays fenced until it has caught up.
        With KIP-966, a previousBrokerEpoch that is not its last registration's marks an unclean
        shutdown, and the controller takes it out of the ISR and the ELR."""
        c = s.controller
        if b not in c.fenced:
            return
        replica = s.replicas[b]
        epoch = c.nextBrokerEpoch
        registered = c._replace(brokerEpochs=put(c.brokerEpochs, b, epoch), nextBrokerEpoch=epoch + 1)
        if self.config.elr and replica.cleanShutdownEpoch != c.brokerEpochs[b]:
            changed = self._partition_change(
                registered, isr=registered.isr - {b}, elr=registered.elr - {b}, ineligible=frozenset({b})
            )
            if changed is None:
                return
            registered = changed
        log, hw = replica.log, replica.highWatermark
        if self.config.truncation == "hw":
            log = log[:hw]  # makeFollower before KIP-101
        started = self._restarted_view(registered, b, epoch, log, hw)
        out.append((Action("BrokerRestart", broker=b), self._update(s, b, started, controller=registered)))

    def _unfence(self, s: KraftReplicationState, b: int, out: list[Step]) -> None:
        """A heartbeat of a caught-up broker unfences it (handleBrokerUnfenced); a partition without a
        leader gets one if it can."""
        c = s.controller
        if b not in c.fenced or s.replicas[b].brokerEpoch != c.brokerEpochs[b]:
            return
        unfenced = self._partition_change(c._replace(fenced=c.fenced - {b}), elect=True)
        if unfenced is None:
            return
        out.append((Action("UnfenceBroker", broker=b), s._replace(controller=unfenced)))

    def _partition_change(
        self,
        c: Controller,
        *,
        isr: frozenset[int] | None = None,
        elr: frozenset[int] | None = None,
        leader: int | None = None,
        elect: bool = False,
        ineligible: frozenset[int] = frozenset(),
    ) -> Controller | None:
        """PartitionChangeBuilder: apply an ISR, ELR or leader change, elect a leader if asked to and
        there is none, keep the ELR rule of KIP-966, and bump the partition epoch (and the leader
        epoch when the leader changes). ``ineligible`` replicas (an unclean restart) never join the
        ELR, and after an unclean election the ELR is empty. None when the new leader epoch would
        pass the bound. Before KAFKA-15021 an ISR shrink bumps the leader epoch as well."""
        new_isr = c.isr if isr is None else isr
        new_elr = c.elr if elr is None else elr
        new_leader = c.leader if leader is None else leader
        unclean = False
        if elect and (new_leader == NO_LEADER or new_leader in c.fenced):
            candidates = new_isr | new_elr
            new_leader, new_isr, new_elr = self.elect_leader(c, new_isr, new_elr)
            unclean = new_leader != NO_LEADER and new_leader not in candidates
        if self.config.elr and not unclean:
            # An unclean election clears the ELR (PartitionChangeBuilder.maybeUpdateRecordElr): no
            # replica that left the ISR is known to hold what the new leader lacks.
            if len(new_isr) >= self.config.min_insync_replicas:
                new_elr = frozenset()
            else:
                new_elr = (new_elr | (c.isr - new_isr - ineligible)) - new_isr
        if (new_leader, new_isr, new_elr) == (c.leader, c.isr, c.elr):
            return c
        epoch = c.leaderEpoch
        # Before KAFKA-15021 a shrink bumped the leader epoch too (triggerLeaderEpochBumpForIsrShrinkIfNeeded).
        shrink_bump = not self.config.shrink_keeps_leader_epoch and not c.isr <= new_isr
        if new_leader != c.leader or shrink_bump:
            if epoch >= self.config.max_leader_epoch:
                return None
            epoch += 1
        return c._replace(leader=new_leader, leaderEpoch=epoch, partitionEpoch=c.partitionEpoch + 1, isr=new_isr,
                          elr=new_elr)  # fmt: skip

    def elect_leader(
        self, c: Controller, isr: frozenset[int], elr: frozenset[int]
    ) -> tuple[int, frozenset[int], frozenset[int]]:
        """PartitionChangeBuilder.electLeader: the first unfenced ISR member; then (KIP-966) the first
        unfenced ELR member, which moves into the ISR; then, only with unclean leader election, the
        first unfenced replica, alone in a new ISR."""
        for r in sorted(isr):
            if r not in c.fenced:
                return r, isr, elr
        if self.config.elr:
            for r in sorted(elr):
                if r not in c.fenced:
                    return r, isr | {r}, elr - {r}
        if self.config.unclean_election:
            for r in self.ids:
                if r not in c.fenced:
                    return r, frozenset({r}), frozenset()
        return NO_LEADER, isr, elr

    def drawing(self) -> KraftReplicationDrawing:
        return KraftReplicationDrawing(self.config.brokers)


def _dense_partition_epochs(s: KraftReplicationState) -> KraftReplicationState:
    """Partition epochs are only ever compared for equality (a leader's view against the
    controller's, which is always the newest), so they are kept as ranks 0..k-1 of the values
    present. Without this, every ISR shrink and expand would make a new state forever."""
    c = s.controller
    present = {r.partitionEpoch for r in s.replicas if r.partitionEpoch != UNDEFINED}
    present.add(c.partitionEpoch)
    if c.partitionEpoch == len(present) - 1:
        return s
    rank = {epoch: i for i, epoch in enumerate(sorted(present))}
    replicas = tuple(
        r if r.partitionEpoch == UNDEFINED else r._replace(partitionEpoch=rank[r.partitionEpoch]) for r in s.replicas
    )
    return s._replace(controller=c._replace(partitionEpoch=rank[c.partitionEpoch]), replicas=replicas)


# -- how traces are drawn --------------------------------------------------------------------------
FLIGHT = {
    FetchRequest: "request",
    FetchResponse: "response",
    OffsetsForLeaderEpochRequest: "OffsetsForLeaderEpoch",
    OffsetsForLeaderEpochResponse: "its answer",
}


class KraftReplicationDrawing(Drawing):
    """Lanes: producer, controller, one per broker. Tables: every replica (log, LEO, HW, role, ISR
    as the leader sees it), the controller's registrations and partition, and what producers and
    consumers were told."""

    def __init__(self, brokers: int) -> None:
        self.brokers = [f"broker {b}" for b in range(brokers)]

    def lanes(self) -> list[str]:
        return ["producer", "controller", *self.brokers]

    def arrow(self, action: Action, before: KraftReplicationState, after: KraftReplicationState) -> Arrow:
        args, name = action.args, action.name
        if name == "Produce":
            return Arrow("producer", (self.brokers[args["leader"]],), f"Produce(record {args['id']})")
        if name == "SendFetch":
            f = args["follower"]
            req = after.fetches[f]
            note = f"Fetch(offset {req.fetchOffset}, epoch {req.lastFetchedEpoch})" if req else "Fetch"
            return Arrow(self.brokers[f], (self.brokers[args["leader"]],), note)
        if name == "HandleFetch":
            f = args["follower"]
            resp = after.fetches[f]
            if resp is None:
                note = "records"
            elif resp.error == ERROR_NONE:
                note = f"{len(resp.records)} records, HW {resp.highWatermark}"
            elif resp.error == DIVERGING_EPOCH:
                note = f"diverging epoch {resp.divergingEpoch[0]} at {resp.divergingEpoch[1]}"
            else:
                note = resp.error
            return Arrow(self.brokers[args["leader"]], (self.brokers[f],), note)
        if name == "SendOffsetsForLeaderEpoch":
            f = args["follower"]
            note = f"OffsetsForLeaderEpoch(epoch {after.fetches[f].leaderEpoch})"
            return Arrow(self.brokers[f], (self.brokers[args["leader"]],), note)
        if name == "HandleOffsetsForLeaderEpoch":
            f = args["follower"]
            answer = after.fetches[f]
            epoch, end = answer.endOffset
            note = answer.error if answer.error != ERROR_NONE else f"epoch {epoch} ends at {end}"
            return Arrow(self.brokers[args["leader"]], (self.brokers[f],), note)
        if name in ("ShrinkIsr", "ExpandIsr"):
            proposed = after.replicas[args["leader"]].pendingAlterPartition
            isr = describe(proposed.isr) if proposed else "?"
            return Arrow(self.brokers[args["leader"]], ("controller",), f"AlterPartition(ISR {isr})")
        if name == "HandleAlterPartition":
            ok = after.controller.partitionEpoch != before.controller.partitionEpoch
            return Arrow("controller", (self.brokers[args["leader"]],), "accepted" if ok else "rejected")
        if name == "ApplyMetadata":
            c = after.controller
            return Arrow("controller", (self.brokers[args["broker"]],), f"leader {c.leader}, epoch {c.leaderEpoch}")
        if name in ("FenceBroker", "UnfenceBroker"):
            return Arrow("controller", (), f"{name[:-6].lower()} broker {args['broker']}")
        if name == "BrokerRestart":
            return Arrow(self.brokers[args["broker"]], ("controller",), "register")
        if name == "BrokerCrash":
            return Arrow(self.brokers[args["broker"]], (), f"crash, log kept to {args['logEndOffset']}")
        if name == "ControlledShutdown":
            return Arrow(self.brokers[args["broker"]], ("controller",), "controlled shutdown")
        return Arrow(self.brokers[next(iter(args.values()))])

    def tables(self, state: KraftReplicationState) -> list[Table]:
        c = state.controller
        rows = []
        for b, r in enumerate(state.replicas):
            entries = " ".join(f"{o}:r{rec.id}/e{rec.epoch}" for o, rec in enumerate(r.log)) or "(empty)"
            if not r.running:
                role = "down (clean)" if r.cleanShutdownEpoch != UNDEFINED else "down"
            elif r.leader == b:
                role = f"leader e{r.leaderEpoch}"
            else:
                role = "no leader" if r.leader == NO_LEADER else f"follows {r.leader} e{r.leaderEpoch}"
            isr = describe(r.isr) if r.leader == b and r.running else "-"
            if r.pendingAlterPartition is not None:
                isr += f" -> {describe(r.pendingAlterPartition.isr)}"
            flight = state.fetches[b]
            fetch = "-" if flight is None else FLIGHT[type(flight)]
            if r.fetchState == TRUNCATING:
                fetch = f"truncating, {fetch}"
            rows.append([f"broker {b}", entries, str(len(r.log)), str(r.highWatermark), role, isr, str(r.brokerEpoch),
                         fetch])  # fmt: skip
        replicas = Table(
            "replicas (log = offset:record/epoch)",
            ["", "log", "LEO", "HW", "role", "ISR", "broker epoch", "fetch"],
            rows,
        )
        controller = Table(
            "controller",
            ["leader", "epoch", "partition epoch", "ISR", "ELR", "fenced", "broker epochs"],
            [[
                "none" if c.leader == NO_LEADER else f"broker {c.leader}", str(c.leaderEpoch), str(c.partitionEpoch),
                describe(c.isr), describe(c.elr), describe(c.fenced), " ".join(map(str, c.brokerEpochs)),
            ]],
        )  # fmt: skip
        clients = Table(
            "clients",
            ["acknowledged", "committed", "consumed"],
            [[
                describe(state.acked),
                " ".join(f"r{rec.id}" for rec in state.committed) or "-",
                " ".join(f"r{rec.id}" for rec in state.consumed) or "-",
            ]],
        )  # fmt: skip
        return [replicas, controller, clients]
