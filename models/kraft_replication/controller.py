"""The controller's side of the `kraft-replication` model: AlterPartition requests, fencing,
controlled shutdown, registration and unfencing of brokers, and the partition changes and leader
elections of ``PartitionChangeBuilder`` (the ISR, KIP-966's eligible leader replicas, unclean
election), and failovers of the active controller with the leader's handling of NOT_CONTROLLER and
stale-epoch errors (and, before KAFKA-14154, of a stale controller's answer). Mixed into
``KraftReplicationModel``."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

from kmc.checker import Action
from kmc.models.common.tuples import put
from kmc.models.kraft_replication.config import KraftReplicationConfig
from kmc.models.kraft_replication.state import (
    AWAITING_METADATA,
    ERROR_NONE,
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    INVALID_UPDATE_VERSION,
    NO_LEADER,
    STALE_BROKER_EPOCH,
    AlterPartition,
    Controller,
    Fetch,
    KraftReplicationState,
    Record,
    Replica,
    with_controller,
    with_pending,
)

Step = tuple[Action, KraftReplicationState]

action_label = cache(Action)
"""Action labels, each built once: the search makes the same few hundred of them over and over."""


_NOT_YET = object()
"""A change ``controller_changes`` has not computed yet (None is an answer: not within the bounds)."""


class KraftController:
    """The active controller, and the leader's handling of its AlterPartition answers."""

    config: KraftReplicationConfig
    ids: tuple[int, ...]
    controller_changes: dict[tuple, Controller | None]
    """The controller's image after a change (fencing, unfencing, registering a broker, committing an
    AlterPartition), by the change and the image before it: a few hundred images recur in every
    state, and PartitionChangeBuilder's work is then done once per image and change."""

    if TYPE_CHECKING:  # the model's own helpers, used here

        def _update(
            self,
            s: KraftReplicationState,
            b: int,
            replica: Replica,
            fetches: tuple[Fetch, ...] | None = None,
            controller: Controller | None = None,
            **changes: object,
        ) -> KraftReplicationState: ...
        def _maybe_increment_hw(self, replica: Replica, b: int) -> Replica: ...
        def _stopped(self, replica: Replica, log: tuple[Record, ...], hw: int, clean_epoch: int) -> Replica: ...
        def _drop_fetches(self, s: KraftReplicationState, b: int) -> tuple[Fetch, ...]: ...
        def _restarted_view(
            self, c: Controller, b: int, broker_epoch: int, log: tuple[Record, ...], hw: int
        ) -> Replica: ...

    def _changed(self, key: tuple, change: Callable[..., Controller | None], *args: object) -> Controller | None:
        """``change(*args)``, remembered by ``key`` (the change's name and its arguments) in
        ``controller_changes``, which starts over when it passes a million entries."""
        changes = self.controller_changes
        changed = changes.get(key, _NOT_YET)
        if changed is _NOT_YET:
            if len(changes) >= 1_000_000:
                changes.clear()
            changed = changes[key] = change(*args)
        return changed  # type: ignore[return-value]

    def _handle_alter_partition(self, s: KraftReplicationState, leader_id: int, out: list[Step]) -> None:
        """ReplicationControlManager.alterPartition, and the leader handling the response. The
        controller rejects a request from a stale leader epoch or partition epoch, and a new ISR
        member that is fenced (INELIGIBLE_REPLICA) or, with KIP-903, whose fetch came from an earlier
        broker epoch (STALE_BROKER_EPOCH)."""
        leader = s.replicas[leader_id]
        request = leader.pendingAlterPartition
        if request is None or request.sentTo == AWAITING_METADATA:
            return
        action = action_label("HandleAlterPartition", leader=leader_id)
        if request.sentTo != s.failovers:
            # NOT_CONTROLLER from a controller that has failed over: NodeToControllerChannelManager
            # finds the active controller and sends the same request again.
            resent = leader._replace(pendingAlterPartition=request._replace(sentTo=s.failovers))
            cached = s.cachedActiveControllers
            if not cached:
                out.append((action, self._update(s, leader_id, resent)))
                return
            # NOT_CONTROLLER means the old controller has learned it lost leadership (it renounced):
            # it answers no request from its image again.
            found = put(cached, leader_id, s.failovers)
            learned = put(s.staleControllers, request.sentTo, None)
            out.append(
                (action, self._update(s, leader_id, resent, cachedActiveControllers=found, staleControllers=learned))
            )
            # Before KAFKA-14154 a controller that has not yet learned it answers from its stale
            # image, and a request ahead of it gets a stale-epoch error, which the leader takes as the
            # controller's word. (One that agrees with the image is written and never committed, and
            # one behind it is the request it committed and never answered: NOT_CONTROLLER in the end.)
            image = s.staleControllers[request.sentTo]
            if image is not None and (
                leader.leaderEpoch > image.leaderEpoch or leader.partitionEpoch > image.partitionEpoch
            ):
                stale = self._alter_partition_error(image, leader_id, leader, request)
                out.append((action, self._alter_partition_failed(s, leader_id, leader, request, stale)))
            return
        error = self._alter_partition_error(s.controller, leader_id, leader, request)
        if error == ERROR_NONE:
            committed = self._commit_alter_partition(s.controller, request)
            if committed is None:
                return  # a leader epoch bump past the bound (a shrink before KAFKA-15021, a reassignment)
            if committed.leader != leader_id:
                # The change completed a reassignment that removed this leader: it is no longer
                # leader in the answer, and keeps its maximal ISR until the metadata arrives.
                waiting = leader._replace(pendingAlterPartition=request._replace(sentTo=AWAITING_METADATA))
                out.append((action, self._update(s, leader_id, waiting, controller=committed)))
                return
            # leader._replace(partitionEpoch=..., isr=..., pendingAlterPartition=None), without the keywords
            updated = Replica(*leader[:7], committed.partitionEpoch, committed.isr, None, *leader[10:])
            updated = self._maybe_increment_hw(updated, leader_id)
            out.append((action, self._update(s, leader_id, updated, controller=committed)))
        else:
            out.append((action, self._alter_partition_failed(s, leader_id, leader, request, error)))

    def _alter_partition_failed(
        self, s: KraftReplicationState, leader_id: int, leader: Replica, request: AlterPartition, error: str
    ) -> KraftReplicationState:
        """Partition.handleAlterPartitionError: after a stale-epoch error the request may have been
        applied by a controller whose answer was lost, so the leader keeps its maximal ISR, proposes
        nothing and waits for the partition's next metadata; any other error drops the change."""
        if error in (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION) and self.config.alter_partition_awaits_metadata:
            waiting = leader._replace(pendingAlterPartition=request._replace(sentTo=AWAITING_METADATA))
            return self._update(s, leader_id, waiting)
        return self._update(s, leader_id, with_pending(leader, None))

    def alter_partition_destination(self, s: KraftReplicationState, b: int) -> int:
        """The controller (a failover number) broker b sends a new AlterPartition to: the one its
        channel last found active before KAFKA-14154, else the active one."""
        cached = s.cachedActiveControllers
        return cached[b] if cached else s.failovers

    def _alter_partition_error(self, c: Controller, leader_id: int, leader: Replica, request: AlterPartition) -> str:
        """ReplicationControlManager.validateAlterPartitionData: a stale leader epoch, a stale partition
        epoch, a new ISR member that is fenced (INELIGIBLE_REPLICA, KIP-841) or, with KIP-903, whose fetch
        came from an earlier broker epoch (STALE_BROKER_EPOCH)."""
        if c.leader != leader_id or c.leaderEpoch != leader.leaderEpoch:
            return FENCED_LEADER_EPOCH
        if c.partitionEpoch != leader.partitionEpoch:
            return INVALID_UPDATE_VERSION
        if any(r in c.fenced for r in request.isr - c.isr):
            return INELIGIBLE_REPLICA
        if any(epoch != c.brokerEpochs[r] for r, epoch in request.brokerEpochs):
            return STALE_BROKER_EPOCH
        return ERROR_NONE

    def _commit_alter_partition(self, c: Controller, request: AlterPartition) -> Controller | None:
        return self._changed(("commit", c, request.isr), self._partition_change_isr, c, request.isr)

    def _partition_change_isr(self, c: Controller, isr: frozenset[int]) -> Controller | None:
        return self._partition_change(c, isr=isr)

    def _controller_failover(self, s: KraftReplicationState, out: list[Step]) -> None:
        """The active controller fails over to another member of the KRaft quorum, whose image is the
        committed metadata log. It may fail right after committing an AlterPartition it accepted and
        before answering it (``committed`` is then that leader): the leader's request is still in
        flight, to a controller that is gone."""
        if s.failovers >= self.config.max_controller_failovers:
            return
        out.append((action_label("ControllerFailover", committed=NO_LEADER), self._failed_over(s, s.controller)))
        for b in self.ids:
            leader = s.replicas[b]
            request = leader.pendingAlterPartition
            if not leader.running or request is None or request.sentTo != s.failovers:
                continue
            if self._alter_partition_error(s.controller, b, leader, request) != ERROR_NONE:
                continue
            committed = self._commit_alter_partition(s.controller, request)
            if committed is not None:
                out.append((action_label("ControllerFailover", committed=b), self._failed_over(s, committed)))

    def _failed_over(self, s: KraftReplicationState, image: Controller) -> KraftReplicationState:
        """The next controller is active with ``image``, the committed metadata log. Before
        KAFKA-14154 the one that failed over keeps the same image and answers from it, and every
        broker that has not been told otherwise still sends to it."""
        if self.config.kafka_14154:
            return s._replace(controller=image, failovers=s.failovers + 1)
        stale = (*s.staleControllers, image)
        cached = s.cachedActiveControllers or (s.failovers,) * len(self.ids)
        return s._replace(
            controller=image, failovers=s.failovers + 1, staleControllers=stale, cachedActiveControllers=cached
        )

    def _alter_partition_reassignments(self, s: KraftReplicationState, out: list[Step]) -> None:
        """ReplicationControlManager.alterPartitionReassignments: an administrator moves one replica
        of the partition to a broker that holds none. PartitionReassignmentReplicas makes the replicas
        the target followed by those being removed, with the adding and removing sets; the builder
        completes the reassignment as soon as every adding replica is in the ISR."""
        c = s.controller
        if s.reassignments >= self.config.max_reassignments or c.addingReplicas or c.removingReplicas:
            return
        for removing in c.replicas:
            for adding in self.ids:
                if adding in c.replicas:
                    continue
                target = (*(r for r in c.replicas if r != removing), adding)
                changed = self._partition_change(
                    c,
                    replicas=(*target, removing),
                    adding=frozenset({adding}),
                    removing=frozenset({removing}),
                )
                if changed is None:
                    continue
                action = action_label("AlterPartitionReassignments", adding=adding, removing=removing)
                out.append((action, s._replace(controller=changed, reassignments=s.reassignments + 1)))

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
        out.append((action_label("ControlledShutdown", broker=b), nxt))

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
        nxt = with_controller(s, fenced) if not running else s._replace(controller=fenced, fences=s.fences + 1)
        out.append((action_label("FenceBroker", broker=b), nxt))

    def _fence_in_controller(self, c: Controller, b: int) -> Controller | None:
        """The broker leaves the ISR and loses leadership, and a new leader is elected. Before
        KIP-966 the last ISR member stays in the ISR with no leader; with it the ISR may become empty
        and whoever leaves an ISR below min ISR joins the ELR. None if the fence is not possible
        within the bounds."""
        if b in c.fenced:
            return None
        return self._changed(("fence", c, b), self._fenced_change, c, b)

    def _fenced_change(self, c: Controller, b: int) -> Controller | None:
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
        if s.cachedActiveControllers:  # a new process finds the active controller
            found = put(s.cachedActiveControllers, b, s.failovers)
            nxt = self._update(s, b, started, controller=registered, cachedActiveControllers=found)
        else:
            nxt = self._update(s, b, started, controller=registered)
        out.append((action_label("BrokerRestart", broker=b), nxt))

    def _unfence(self, s: KraftReplicationState, b: int, out: list[Step]) -> None:
        """A heartbeat of a caught-up broker unfences it (handleBrokerUnfenced); a partition without a
        leader gets one if it can."""
        c = s.controller
        if b not in c.fenced or s.replicas[b].brokerEpoch != c.brokerEpochs[b]:
            return
        unfenced = self._changed(("unfence", c, b), self._unfenced_change, c, b)
        if unfenced is None:
            return
        out.append((action_label("UnfenceBroker", broker=b), with_controller(s, unfenced)))

    def _unfenced_change(self, c: Controller, b: int) -> Controller | None:
        return self._partition_change(c._replace(fenced=c.fenced - {b}), elect=True)

    def _partition_change(
        self,
        c: Controller,
        *,
        isr: frozenset[int] | None = None,
        elr: frozenset[int] | None = None,
        leader: int | None = None,
        elect: bool = False,
        ineligible: frozenset[int] = frozenset(),
        replicas: tuple[int, ...] | None = None,
        adding: frozenset[int] | None = None,
        removing: frozenset[int] | None = None,
    ) -> Controller | None:
        """PartitionChangeBuilder: apply an ISR, ELR or leader change, elect a leader if asked to and
        there is none, keep the ELR rule of KIP-966, and bump the partition epoch (and the leader
        epoch when the leader changes). ``ineligible`` replicas (an unclean restart) never join the
        ELR, and after an unclean election the ELR is empty. None when the new leader epoch would
        pass the bound. Before KAFKA-15021 an ISR shrink bumps the leader epoch as well."""
        new_isr = c.isr if isr is None else isr
        new_elr = c.elr if elr is None else elr
        new_leader = c.leader if leader is None else leader
        new_replicas = c.replicas if replicas is None else replicas
        new_adding = c.addingReplicas if adding is None else adding
        new_removing = c.removingReplicas if removing is None else removing
        if (new_adding or new_removing) and new_adding <= new_isr and new_isr - new_removing:
            # completeReassignmentIfNeeded (PartitionReassignmentReplicas.maybeCompleteReassignment):
            # every adding replica is in the ISR; the removing ones leave the replicas and the ISR.
            new_replicas = tuple(r for r in new_replicas if r not in new_removing)
            new_isr = new_isr - new_removing
            new_adding = new_removing = frozenset()
        unclean = False
        if new_leader != NO_LEADER and (new_leader not in new_isr or new_leader not in new_replicas):
            elect = True  # the leader left the ISR or the replicas: it moves (shouldTryElection)
            new_leader = NO_LEADER
        if elect and (new_leader == NO_LEADER or new_leader in c.fenced):
            candidates = new_isr | new_elr
            new_leader, new_isr, new_elr = self.elect_leader(c._replace(replicas=new_replicas), new_isr, new_elr)
            unclean = new_leader != NO_LEADER and new_leader not in candidates
        if self.config.elr and not unclean:
            # An unclean election clears the ELR (PartitionChangeBuilder.maybeUpdateRecordElr): no
            # replica that left the ISR is known to hold what the new leader lacks.
            if len(new_isr) >= self.config.min_insync_replicas:
                new_elr = frozenset()
            else:
                new_elr = (new_elr | (c.isr - new_isr - ineligible)) - new_isr
        assignment = (new_replicas, new_adding, new_removing)
        if (new_leader, new_isr, new_elr, *assignment) == (c.leader, c.isr, c.elr, c.replicas, *c[-2:]):
            return c
        epoch = c.leaderEpoch
        # Before KAFKA-15021 a shrink bumped the leader epoch too (triggerLeaderEpochBumpForIsrShrinkIfNeeded).
        shrink_bump = not self.config.shrink_keeps_leader_epoch and not c.isr <= new_isr
        # Replicas leaving the assignment always bump it (triggerLeaderEpochBumpForReplicaReassignmentIfNeeded).
        removal_bump = not set(c.replicas) <= set(new_replicas)
        if new_leader != c.leader or shrink_bump or removal_bump:
            if epoch >= self.config.max_leader_epoch:
                return None
            epoch += 1
        return c._replace(
            leader=new_leader,
            leaderEpoch=epoch,
            partitionEpoch=c.partitionEpoch + 1,
            isr=new_isr,
            elr=new_elr,
            replicas=new_replicas,
            addingReplicas=new_adding,
            removingReplicas=new_removing,
        )

    def elect_leader(
        self, c: Controller, isr: frozenset[int], elr: frozenset[int]
    ) -> tuple[int, frozenset[int], frozenset[int]]:
        """PartitionChangeBuilder.electLeader, in the order of the target replicas (``c.replicas``):
        the first unfenced ISR member; then (KIP-966) the first unfenced ELR member, which moves into
        the ISR; then, only with unclean leader election, the first unfenced replica, alone in a new ISR."""
        order = c.replicas
        for r in order:
            if r in isr and r not in c.fenced:
                return r, isr, elr
        if self.config.elr:
            for r in order:
                if r in elr and r not in c.fenced:
                    return r, isr | {r}, elr - {r}
        if self.config.unclean_election:
            for r in order:
                if r not in c.fenced:
                    return r, frozenset({r}), frozenset()
        return NO_LEADER, isr, elr
