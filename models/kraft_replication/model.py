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
* ``isr_fetch_in_leader_epoch`` (``Partition.makeLeader``'s ``resetReplicaState``): in a new leader
  epoch the leader knows nothing of its followers until they fetch in it; off (an ablation), a
  re-elected leader keeps their fetch state from its earlier epoch.
* ``isr_broker_epoch`` (KIP-903, KAFKA-14617): the controller accepts a new ISR member only if
  the broker epoch of the fetch that made it eligible is its current registration's.
* ``hw_min_isr`` (KAFKA-15583, with KIP-966): the HW does not advance while the ISR is smaller
  than min.insync.replicas.
* ``elr`` (KIP-966, KAFKA-15584): replicas that leave an ISR smaller than min.insync.replicas
  become eligible leader replicas; the ISR may be empty; a broker that restarts after an unclean
  shutdown leaves the ELR.
* ``diverging_fetch_not_counted`` (KAFKA-13141, 2.7.2/2.8.1/3.0): a fetch the leader answers with a
  diverging epoch does not update the follower's fetch state; before it the leader recorded the
  fetch offset as the follower's LEO, though the follower's log diverges below it.
* ``alter_partition_awaits_metadata`` (``Partition.handleAlterPartitionError``): an AlterPartition that
  fails with FENCED_LEADER_EPOCH or INVALID_UPDATE_VERSION keeps the leader's pending (maximal) ISR
  until metadata arrives; off, it is dropped at once -- unsafe once ``max_controller_failovers`` lets a
  controller commit a request and fail over before answering it.
* ``kafka_14154`` (3.3.0): a controller answers NOT_CONTROLLER to an AlterPartition whose epochs are
  ahead of its image; before it, one that failed over answered from its stale image with a
  stale-epoch error, and the leader gave up its ISR change until the next metadata.
* ``shrink_keeps_leader_epoch`` (KAFKA-15021, metadata.version 3.6): the controller no longer bumps
  the leader epoch when the ISR shrinks; before it, every shrink started a new leader epoch.

Offsets count from 0; a log's end offset (LEO) is its length; a leader epoch of -1 means none.
"""

from __future__ import annotations

from kmc.checker import Action, Model
from kmc.checker.extension import SuccessorsInC
from kmc.models.common.tuples import put
from kmc.models.kraft_replication.bugs import BUGS
from kmc.models.kraft_replication.config import ACTION_ARGS, PRESETS, KraftReplicationConfig
from kmc.models.kraft_replication.controller import KraftController, action_label
from kmc.models.kraft_replication.drawing import KraftReplicationDrawing
from kmc.models.kraft_replication.state import (
    DIVERGING_EPOCH,
    ERROR_NONE,
    FENCED_LEADER_EPOCH,
    FETCHING,
    NO_LEADER,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    TRUNCATING,
    UNDEFINED,
    UNKNOWN_LEADER_EPOCH,
    AlterPartition,
    Controller,
    Fetch,
    FetchRequest,
    FetchResponse,
    KraftReplicationState,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
    Record,
    Replica,
    dense_partition_epochs,
    end_offset_for_epoch,
    epoch_start_offset,
    last_epoch,
    with_fetches,
    with_follower_state,
    with_high_watermark,
    with_log,
    with_pending,
)
from kmc.models.kraft_replication.twin import twin_context

EPOCH_CHANGING_ACTIONS = frozenset(
    {
        "ApplyMetadata",
        "HandleAlterPartition",
        "BrokerCrash",
        "ControlledShutdown",
        "FenceBroker",
        "BrokerRestart",
        "UnfenceBroker",
        "ControllerFailover",
        "AlterPartitionReassignments",
    }
)
"""The actions that can change a partition epoch, the controller's or a broker's: only their
successors need ``dense_partition_epochs``, and only when the controller's epoch or a replica moved
(fetches, produce requests and ISR proposals leave every epoch be)."""


Step = tuple[Action, KraftReplicationState]


class KraftReplicationModel(SuccessorsInC, KraftController, Model):
    name = "kraft-replication"
    actions = tuple(ACTION_ARGS)
    description = "KRaft-era replication: acks, min ISR, fetch sessions, AlterPartition, fencing, ELR, crashes"
    Config = KraftReplicationConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "kip-966"
    spec_modules = ("kmc.specs.kraft_replication",)

    config: KraftReplicationConfig

    def __init__(self, config: KraftReplicationConfig | None = None) -> None:
        super().__init__(config)
        self.ids = tuple(range(self.config.brokers))
        self.unknown_followers = ((UNDEFINED, UNDEFINED),) * self.config.brokers
        self.controller_changes = {}
        # The C twin sends every AlterPartition to the active controller (a controller that failed
        # over answers from its image only before KAFKA-14154) and resets the followers' fetch state
        # in every new leader epoch.
        stale_controllers_answer = not self.config.kafka_14154 and self.config.max_controller_failovers > 0
        if not stale_controllers_answer and self.config.isr_fetch_in_leader_epoch:
            self.use_c_twin(
                "kmc.models.kraft_replication._successors", KraftReplicationModel, lambda: twin_context(self)
            )

    def inactive_actions(self) -> tuple[str, ...]:
        """What the configuration turns off: a fault whose bound is 0, the restarts and fencing that
        only follow a fault, and OffsetsForLeaderEpoch unless truncation is by it."""
        c = self.config
        off = [] if c.max_controller_failovers else ["ControllerFailover"]
        if not c.max_reassignments:
            off.append("AlterPartitionReassignments")
        if c.truncation != "offsets_for_leader_epoch":
            off += ["SendOffsetsForLeaderEpoch", "HandleOffsetsForLeaderEpoch", "HandleOffsetsForLeaderEpochResponse"]
        if not c.max_crashes:
            off.append("BrokerCrash")
        if not c.max_shutdowns:
            off.append("ControlledShutdown")
        if not (c.max_crashes or c.max_shutdowns):
            off.append("BrokerRestart")  # only a broker that went down restarts
            if not c.max_fences:
                off += ["FenceBroker", "UnfenceBroker"]  # nor is a running broker fenced
        return tuple(off)

    # -- the initial state ---------------------------------------------------------------------
    def init_states(self) -> list[KraftReplicationState]:
        """Every broker registered and unfenced (broker epochs 1..n); the partition created with
        broker 0 as leader in epoch 0 and every broker in the ISR; every log empty."""
        n = self.config.brokers
        assignment = self.ids[:-1] if self.config.max_reassignments else self.ids
        everyone = frozenset(assignment)
        controller = Controller(
            tuple(range(1, n + 1)), frozenset(), 0, 0, 0, everyone, frozenset(), n + 1, replicas=assignment
        )
        replicas = tuple(self._restarted_view(controller, b, controller.brokerEpochs[b], (), 0) for b in self.ids)
        leader = replicas[0]._replace(partitionEpoch=0, isr=everyone, assignment=assignment)
        replicas = (leader, *replicas[1:])
        return [KraftReplicationState(controller, replicas, (None,) * n, 1, 0, 0, 0, (), (), frozenset())]

    def _restarted_view(self, c: Controller, b: int, broker_epoch: int, log: tuple[Record, ...], hw: int) -> Replica:
        """A running broker that has caught up with the metadata log (it is not leader: it was fenced).
        A broker outside the replicas hosts no partition: a stray log is deleted when it starts."""
        if b not in c.replicas:
            return Replica(
                True,
                broker_epoch,
                UNDEFINED,
                (),
                0,
                NO_LEADER,
                UNDEFINED,
                UNDEFINED,
                frozenset(),
                None,
                self.unknown_followers,
                FETCHING,
                hosted=False,
            )
        return Replica(
            True,
            broker_epoch,
            UNDEFINED,
            log,
            hw,
            c.leader,
            c.leaderEpoch,
            UNDEFINED,
            frozenset(),
            None,
            self.unknown_followers,
            self.new_fetch_state(log),
        )

    def new_fetch_state(self, log: tuple[Record, ...]) -> str:
        """A partition added to a fetcher starts Truncating when truncation is by OffsetsForLeaderEpoch;
        one without an epoch (an empty log) has nothing to truncate and starts Fetching."""
        return TRUNCATING if self.config.truncation == "offsets_for_leader_epoch" and log else FETCHING

    # -- successors ----------------------------------------------------------------------------
    def _successors(self, s: KraftReplicationState) -> list[Step]:
        """The definition of the model's steps (the C extension's successors return the same list)."""
        out: list[Step] = []
        config, fenced = self.config, s.controller.fenced
        may_crash, may_shut_down = s.crashes < config.max_crashes, s.shutdowns < config.max_shutdowns
        may_fence = s.fences < config.max_fences
        for b in self.ids:
            replica = s.replicas[b]
            if replica.running:
                if replica.leader == b:
                    self._produce(s, b, out)
                    self._shrink_isr(s, b, out)
                    self._expand_isr(s, b, out)
                    self._handle_alter_partition(s, b, out)
                elif replica.hosted:
                    self._send_fetch(s, b, out)
                if s.fetches[b] is not None:
                    self._handle_fetch_response(s, b, out)
                self._apply_metadata(s, b, out)
                if may_crash:
                    self._crash(s, b, out)
                if may_shut_down:
                    self._controlled_shutdown(s, b, out)
                if b in fenced:
                    self._unfence(s, b, out)
            elif b in fenced:
                self._restart(s, b, out)
            if b not in fenced and (may_fence or not replica.running):
                self._fence(s, b, out)
        if s.failovers < config.max_controller_failovers:
            self._controller_failover(s, out)
        if s.reassignments < config.max_reassignments:
            self._alter_partition_reassignments(s, out)
        for f in self.ids:
            request = s.fetches[f]
            if type(request) is FetchRequest:
                self._handle_fetch(s, request.leader, f, request, out)
            elif type(request) is OffsetsForLeaderEpochRequest:
                self._handle_offsets_for_leader_epoch(s, request.leader, f, request, out)
        epoch, replicas = s.controller.partitionEpoch, s.replicas
        return [
            (a, dense_partition_epochs(t))
            if a[0] in EPOCH_CHANGING_ACTIONS and (t.replicas is not replicas or t.controller.partitionEpoch != epoch)
            else (a, t)
            for a, t in out
        ]

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
        return with_high_watermark(replica, hw) if hw > replica.highWatermark else replica

    def _update(
        self,
        s: KraftReplicationState,
        b: int,
        replica: Replica,
        fetches: tuple[Fetch, ...] | None = None,
        controller: Controller | None = None,
        **changes: object,
    ) -> KraftReplicationState:
        """Put broker b's new replica into the state, and account for what a leader's HW advance does:
        acks=all produce requests complete (``checkEnoughReplicasReachOffset``), consumers may read
        further, and a non-stale leader's HW defines what is committed."""
        old = s.replicas[b]
        replicas = (*s.replicas[:b], replica, *s.replicas[b + 1 :])
        nxt = tuple.__new__(
            KraftReplicationState,
            (
                s.controller if controller is None else controller,
                replicas,
                s.fetches if fetches is None else fetches,
                *s[3:],
            ),
        )
        if changes:
            nxt = nxt._replace(**changes)
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
        out.append((action_label("Produce", leader=b, id=rid), nxt))

    def _handle_fetch(
        self, s: KraftReplicationState, leader_id: int, f: int, req: FetchRequest, out: list[Step]
    ) -> None:
        """ReplicaManager.fetchMessages on the leader: check leadership and (KIP-320) the epoch, validate
        (fetchOffset, lastFetchedEpoch) against its log, record the follower's LEO and broker epoch,
        maybe advance the HW, and answer with the records from fetchOffset and its HW."""
        leader = s.replicas[leader_id]
        if not leader.running:
            return
        action = action_label("HandleFetch", leader=leader_id, follower=f)
        log = leader.log
        error = self._epoch_error(leader, leader_id, req.currentLeaderEpoch)
        if error is None and f not in leader.assignment:
            error = NOT_LEADER_OR_FOLLOWER  # Partition.followerReplicaOrThrow: not a replica it knows
        if error is None and self.config.truncation == "diverging_epoch" and req.fetchOffset > 0:
            epoch, end = end_offset_for_epoch(log, req.lastFetchedEpoch, leader.leaderEpoch)
            if end < req.fetchOffset or epoch < req.lastFetchedEpoch:
                response = FetchResponse(
                    leader_id,
                    req.currentLeaderEpoch,
                    req.fetchOffset,
                    DIVERGING_EPOCH,
                    (),
                    UNDEFINED,
                    (epoch, end),
                    len(log),
                )
                if self.config.diverging_fetch_not_counted:
                    out.append((action, with_fetches(s, put(s.fetches, f, response))))
                    return
                # Before KAFKA-13141 the leader recorded the fetch offset as the follower's LEO all the
                # same (updateFollowerFetchState skipped errors only), though the log below it diverges.
                followers = put(leader.followerState, f, (req.fetchOffset, req.replicaEpoch))
                updated = self._maybe_increment_hw(with_follower_state(leader, followers), leader_id)
                out.append((action, self._update(s, leader_id, updated, put(s.fetches, f, response))))
                return
        elif error is None and req.fetchOffset > len(log):
            error = OFFSET_OUT_OF_RANGE
        if error is not None:
            response = FetchResponse(
                leader_id,
                req.currentLeaderEpoch,
                req.fetchOffset,
                error,
                (),
                UNDEFINED,
                (UNDEFINED, UNDEFINED),
                len(log),
            )
            out.append((action, with_fetches(s, put(s.fetches, f, response))))
            return
        followers = put(leader.followerState, f, (req.fetchOffset, req.replicaEpoch))
        updated = self._maybe_increment_hw(with_follower_state(leader, followers), leader_id)
        records = log[req.fetchOffset :]
        response = FetchResponse(
            leader_id,
            req.currentLeaderEpoch,
            req.fetchOffset,
            ERROR_NONE,
            records,
            updated.highWatermark,
            (UNDEFINED, UNDEFINED),
            len(log),
        )
        out.append((action, self._update(s, leader_id, updated, put(s.fetches, f, response))))

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
        action = action_label("HandleOffsetsForLeaderEpoch", leader=leader_id, follower=f)
        out.append((action, with_fetches(s, put(s.fetches, f, response))))

    def _shrink_isr(self, s: KraftReplicationState, leader_id: int, out: list[Step]) -> None:
        """Partition.maybeShrinkIsr: the followers that have not caught up to the leader's LEO within
        replica.lag.time.max.ms (time is abstracted: any nonempty set of lagging followers) are
        proposed out of the ISR together, by one AlterPartition request."""
        leader = s.replicas[leader_id]
        if leader.pendingAlterPartition is not None:
            return
        leo = len(leader.log)
        lagging = 0
        for r in leader.isr:
            if r != leader_id and leader.followerState[r][0] < leo:
                lagging |= 1 << r
        for mask in self.out_of_sync_sets(lagging):
            removed = frozenset(r for r in self.ids if mask >> r & 1)
            request = AlterPartition(leader.isr - removed, (), self.alter_partition_destination(s, leader_id))
            proposed = with_pending(leader, request)
            proposed = self._maybe_increment_hw(proposed, leader_id)
            action = action_label("ShrinkIsr", leader=leader_id, replicas=tuple(sorted(removed)))
            out.append((action, self._update(s, leader_id, proposed)))

    def out_of_sync_sets(self, lagging: int) -> list[int]:
        """The nonempty subsets of a set of brokers (a bit mask), smallest first, then by mask: the
        order the C twin emits them in."""
        subsets = [m for m in range(1, 1 << self.config.brokers) if m & ~lagging == 0]
        return sorted(subsets, key=lambda m: (m.bit_count(), m))

    def _expand_isr(self, s: KraftReplicationState, leader_id: int, out: list[Step]) -> None:
        """Partition.maybeExpandIsr: a follower whose LEO has reached the leader's HW -- and, with
        KAFKA-7128, the start of the leader's epoch -- is proposed into the ISR."""
        leader = s.replicas[leader_id]
        if leader.pendingAlterPartition is not None:
            return
        leso = epoch_start_offset(leader) if self.config.isr_expand_leso else 0
        for r in leader.assignment:
            if r == leader_id or r in leader.isr:
                continue
            leo = leader.followerState[r][0]
            if leo >= leader.highWatermark and leo >= leso:
                epochs = ((r, leader.followerState[r][1]),) if self.config.isr_broker_epoch else ()
                request = AlterPartition(leader.isr | {r}, epochs, self.alter_partition_destination(s, leader_id))
                proposed = with_pending(leader, request)
                action = action_label("ExpandIsr", leader=leader_id, replica=r)
                out.append((action, self._update(s, leader_id, proposed)))

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
            action = action_label("SendOffsetsForLeaderEpoch", follower=f, leader=leader_id)
            out.append((action, with_fetches(s, put(s.fetches, f, ask))))
            return
        log = follower.log
        request = FetchRequest(
            leader_id, len(log), log[-1].epoch if log else UNDEFINED, follower.leaderEpoch, follower.brokerEpoch
        )
        action = action_label("SendFetch", follower=f, leader=leader_id)
        out.append((action, with_fetches(s, put(s.fetches, f, request))))

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
        action = action_label("HandleFetchResponse", follower=f, leader=response.leader)
        cleared = put(s.fetches, f, None)
        log = follower.log
        current = (
            follower.leader == response.leader
            and follower.leaderEpoch == response.leaderEpoch
            and len(log) == response.fetchOffset
        )
        error = response.error
        if not current or error in (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH):
            out.append((action, with_fetches(s, cleared)))
            return
        if error == ERROR_NONE:
            appended = log + response.records if response.records else log
            updated = with_log(follower, appended, min(response.highWatermark, len(appended)))
        else:
            if error == DIVERGING_EPOCH:
                truncated = log[: self.truncation_offset(follower, response.divergingEpoch)[0]]
            else:  # OFFSET_OUT_OF_RANGE
                truncated = log[: min(len(log), response.logEndOffset)]
            updated = with_log(follower, truncated, min(follower.highWatermark, len(truncated)))
        out.append((action, self._update(s, f, updated, cleared)))

    def _handle_offsets_for_leader_epoch_response(
        self, s: KraftReplicationState, f: int, response: OffsetsForLeaderEpochResponse, out: list[Step]
    ) -> None:
        """AbstractFetcherThread.truncateToEpochEndOffsets: truncate, and fetch once the epochs match
        (else ask again for the new last epoch). The answer is kept only while the follower is still
        truncating against that leader -- and, with KIP-320, still in the epoch it asked in."""
        follower = s.replicas[f]
        action = action_label("HandleOffsetsForLeaderEpochResponse", follower=f, leader=response.leader)
        cleared = put(s.fetches, f, None)
        current = follower.leader == response.leader and follower.fetchState == TRUNCATING
        if self.config.fetch_fencing:
            current = current and follower.leaderEpoch == response.leaderEpoch
        if not current or response.error != ERROR_NONE:
            out.append((action, with_fetches(s, cleared)))
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
            same_epoch = replica.leader == b and replica.leaderEpoch == c.leaderEpoch
            if same_epoch and replica.partitionEpoch == c.partitionEpoch and replica.isr == c.isr:
                return
            # The same leader epoch keeps what the followers fetched (so does a leader re-elected in
            # the ablation); a replica that left the assignment leaves remoteReplicasMap.
            if same_epoch or (replica.leader == b and not self.config.isr_fetch_in_leader_epoch):
                followers = tuple(
                    state if r in c.replicas else (UNDEFINED, UNDEFINED)
                    for r, state in enumerate(replica.followerState)
                )
            else:
                followers = self.unknown_followers
            if same_epoch:
                # Only the ISR or the replicas moved: a request in flight is superseded.
                updated = Replica(
                    *replica[:7],
                    partitionEpoch=c.partitionEpoch,
                    isr=c.isr,
                    pendingAlterPartition=None,
                    followerState=followers,
                    fetchState=replica.fetchState,
                    hosted=replica.hosted,
                    assignment=c.replicas,
                )
            else:
                # makeLeader: a new epoch starts at the LEO; nothing is known of the followers yet.
                updated = Replica(
                    *replica[:5],
                    leader=b,
                    leaderEpoch=c.leaderEpoch,
                    partitionEpoch=c.partitionEpoch,
                    isr=c.isr,
                    pendingAlterPartition=None,
                    followerState=followers,
                    fetchState=FETCHING,
                    hosted=True,
                    assignment=c.replicas,
                )
            updated = self._maybe_increment_hw(updated, b)
        elif b not in c.replicas:
            if not replica.hosted:
                return
            # ReplicaManager.applyDelta: a replica removed from the partition is stopped and deleted.
            updated = self._restarted_view(c, b, replica.brokerEpoch, (), 0)._replace(
                cleanShutdownEpoch=replica.cleanShutdownEpoch
            )
        else:
            if replica.leader == c.leader and replica.leaderEpoch == c.leaderEpoch and replica.hosted:
                return
            log = replica.log
            if self.config.truncation == "hw":
                log = log[: replica.highWatermark]
            updated = Replica(
                *replica[:3],
                log,
                replica.highWatermark,
                leader=c.leader,
                leaderEpoch=c.leaderEpoch,
                partitionEpoch=UNDEFINED,
                isr=frozenset(),
                pendingAlterPartition=None,
                followerState=self.unknown_followers,
                fetchState=self.new_fetch_state(log),
                hosted=True,
                assignment=(),
            )
        out.append((action_label("ApplyMetadata", broker=b), self._update(s, b, updated)))

    # -- brokers and the controller ------------------------------------------------------------
    def _crash(self, s: KraftReplicationState, b: int, out: list[Step]) -> None:
        """An unclean shutdown. A power loss loses any unflushed suffix (Kafka flushes only on segment
        roll by default, so any suffix); kill -9 loses nothing; a lost disk loses the whole log. The
        HW checkpoint survives but never beyond the log. No clean-shutdown file is written."""
        if s.crashes >= self.config.max_crashes:
            return
        replica = s.replicas[b]
        leo = len(replica.log)
        crash = self.config.crash
        kept = range(leo + 1) if crash == "power" else (leo,) if crash == "process" else (0,)
        for keep in kept:
            down = self._stopped(replica, replica.log[:keep], min(replica.highWatermark, keep), UNDEFINED)
            nxt = self._update(s, b, down, fetches=self._drop_fetches(s, b), crashes=s.crashes + 1)
            out.append((action_label("BrokerCrash", broker=b, logEndOffset=keep), nxt))

    def _stopped(self, replica: Replica, log: tuple[Record, ...], hw: int, clean_epoch: int) -> Replica:
        return Replica(
            False,
            replica.brokerEpoch,
            clean_epoch,
            log,
            hw,
            NO_LEADER,
            UNDEFINED,
            UNDEFINED,
            frozenset(),
            None,
            self.unknown_followers,
        )

    def _drop_fetches(self, s: KraftReplicationState, b: int) -> tuple[Fetch, ...]:
        """A stopped broker's connections close: its own fetch and every fetch sent to it are gone."""
        return tuple(None if f == b or (m is not None and m.leader == b) else m for f, m in enumerate(s.fetches))

    def drawing(self) -> KraftReplicationDrawing:
        return KraftReplicationDrawing(
            self.config.brokers,
            failovers=self.config.max_controller_failovers > 0,
            reassignments=self.config.max_reassignments > 0,
        )
