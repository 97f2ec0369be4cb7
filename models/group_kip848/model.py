"""KIP-848: the consumer rebalance protocol in which the group coordinator reconciles each member.

One consumer group on one topic. The coordinator keeps a group epoch (bumped when membership
changes), a target assignment and its epoch, and per member an epoch, a previous epoch, a state
(STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS), its assigned partitions and those pending
revocation, plus the epoch of every partition's current owner. Consumers send
ConsumerGroupHeartbeat requests with their member epoch and the partitions they own; the
coordinator answers with the member's next epoch and assignment, computed by
``CurrentAssignmentBuilder``: a member moves to a new epoch only after it has revoked what it
must give up, and a partition is given only once its previous owner has released it.
(``ConsumerGroup``, ``CurrentAssignmentBuilder``,
``GroupMetadataManager.consumerGroupHeartbeat``.)

Requests are messages: each consumer has at most one heartbeat in flight and handles its
response in a later step. The client reconciles as ``AbstractMembershipManager`` does: a
reconciliation starts from the latest assignment received and runs to that assignment even when a
newer one arrives meanwhile (the newer one is reconciled next); revoking and assigning are separate
steps, as the application's rebalance callbacks run between heartbeats. Like the consumer's heartbeat
state, a heartbeat lists the owned partitions only when joining and once after each completed
reconciliation (the partitions of that reconciliation, not those being taken), and leaves the field
null otherwise (the coordinator then assumes nothing was revoked).
"""

from __future__ import annotations

from kmc.checker import Action, Model
from kmc.checker.search.liveness import WF
from kmc.models.group.assignors import Member, assign
from kmc.models.group.model import fresh_member_id
from kmc.models.group_kip848.bugs import BUGS
from kmc.models.group_kip848.config import ACTION_ARGS, PRESETS, Kip848Config
from kmc.models.group_kip848.drawing import Kip848Drawing
from kmc.models.group_kip848.state import (
    FENCED_MEMBER_EPOCH,
    FREE,
    JOIN_EPOCH,
    LEAVE_EPOCH,
    LEAVING,
    NONE,
    RUNNING,
    STABLE,
    STALE_MEMBER_EPOCH,
    STOPPED,
    UNKNOWN_MEMBER_ID,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    UNSUBSCRIBED,
    Consumer,
    Coordinator,
    GroupMember,
    Heartbeat,
    HeartbeatResponse,
    Kip848State,
    OwnSteps,
    Step,
)

_new = tuple.__new__
"""Builds a state from a tuple of its fields without NamedTuple's own __new__ (a Python call on
every successor)."""


class Kip848Model(Model):
    name = "group-kip848"
    actions = tuple(ACTION_ARGS)
    description = "KIP-848 consumer groups: member epochs and server-side reconciliation"
    Config = Kip848Config
    presets = PRESETS
    bugs = BUGS
    default_preset = "kip-848"
    spec_modules = ("kmc.specs.group_kip848",)
    fairness = (
        WF("SendHeartbeat", each=True),
        WF("HandleHeartbeat", each=True),
        WF("ReceiveHeartbeat", each=True),
        WF("RevokePartitions", each=True),
        WF("AssignPartitions", each=True),
        WF("StartReconciliation", each=True),
        WF("Subscribe", each=True),
        WF("SessionTimeout", each=True),
        WF("RebalanceTimeout", each=True),
    )

    config: Kip848Config

    def __init__(self, config: Kip848Config | None = None) -> None:
        super().__init__(config)
        self.all_partitions = frozenset(range(self.config.partitions))
        self._own_steps_of: dict[tuple[int, Consumer], OwnSteps] = {}
        self._heartbeat_outcomes: dict[
            tuple[Coordinator, int, Consumer, str], tuple[Action, Coordinator, Consumer]
        ] = {}
        self._removals: dict[tuple[Coordinator, str], tuple[Action, Action, Coordinator]] = {}
        self._sticky_targets: dict[tuple[tuple[str, frozenset[int]], ...], tuple[tuple[str, frozenset[int]], ...]] = {}
        """The assignor's target by its inputs: the members in order, each with its previous target."""
        self._actions: dict[tuple[str, tuple[object, ...]], Action] = {}

    def init_states(self) -> list[Kip848State]:
        coordinator = Coordinator(0, 0, (), (), (FREE,) * self.config.partitions)
        consumer = Consumer(UNSUBSCRIBED, "", JOIN_EPOCH, frozenset(), frozenset(), None, None)
        return [Kip848State(coordinator, (consumer,) * self.config.consumers, 0)]

    def within_bounds(self, s: Kip848State) -> bool:
        return s.coordinator.groupEpoch < self.config.max_group_epoch

    # -- next ----------------------------------------------------------------------------------
    # A state repeats a few hundred coordinators and a few thousand consumers in all their
    # combinations, so what a step computes is kept by exactly what it reads: a consumer's own steps
    # by the consumer, a heartbeat's outcome by the coordinator and the consumer sending it, a
    # removal by the coordinator and the member, the assignor's target by its inputs.
    def successors(self, s: Kip848State) -> list[Step]:
        coord, consumers, faults = s
        may_fail = faults < self.config.max_faults
        out: list[Step] = []
        append = out.append
        for c, me in enumerate(consumers):
            own = self._own_steps_of.get((c, me))
            if own is None:
                own = self._own_steps_of[(c, me)] = self._own_steps(c, me)
            others_before, others_after = consumers[:c], consumers[c + 1 :]
            for action, after in own.first:
                append((action, _new(Kip848State, (coord, (*others_before, after, *others_after), faults))))
            if me.request is not None:
                action, coord_after, after = self._heartbeat_outcome(s, c, me)
                append((action, _new(Kip848State, (coord_after, (*others_before, after, *others_after), faults))))
            for action, after in own.then:
                append((action, _new(Kip848State, (coord, (*others_before, after, *others_after), faults))))
            if own.commits:
                append((self._offset_commit(coord, c, me), s))
            if may_fail:
                for action, after in own.faults:
                    append((action, _new(Kip848State, (coord, (*others_before, after, *others_after), faults + 1))))
        any_moment = self.config.timeouts == "any"
        for m in coord.members:
            me = consumers[m.consumer]
            learning = me.response is not None and me.response.memberId == m.memberId
            gone = me.phase == STOPPED or (me.memberId != m.memberId and not learning)
            if gone or any_moment:
                session, rebalance, removed = self._removal(coord, m.memberId)
                after_removal = _new(Kip848State, (removed, consumers, faults))
                append((session, after_removal))
                # a member that must revoke and does not leave its epoch in time is fenced
                if m.state == UNREVOKED_PARTITIONS:
                    append((rebalance, after_removal))
        return out

    def _own_steps(self, c: int, me: Consumer) -> OwnSteps:
        """What consumer ``c`` does whatever the coordinator and the other consumers hold, in the order
        the successors list it (the heartbeat's handling and the offset commit go between)."""
        first: list[tuple[Action, Consumer]] = []
        then: list[tuple[Action, Consumer]] = []
        faults: list[tuple[Action, Consumer]] = []
        if me.phase == STOPPED:
            return OwnSteps((), (), False, ())
        if me.phase == UNSUBSCRIBED:
            if me.memberId == "":
                first.append((self._act("Subscribe", c), me._replace(phase=RUNNING)))
            return OwnSteps(tuple(first), (), False, ())
        if me.request is None and me.response is None:
            epoch = LEAVE_EPOCH if me.phase == LEAVING else me.memberEpoch
            # like the consumer's heartbeat state, the owned partitions are sent when joining and in the
            # first heartbeat after a reconciliation completed (its result); null otherwise
            owned = me.owned if epoch == JOIN_EPOCH else me.reconciled
            request = Heartbeat(me.memberId, epoch, owned)
            first.append((self._act("SendHeartbeat", c), me._replace(request=request, reconciled=None)))
        if me.response is not None:
            then.append((self._act("ReceiveHeartbeat", c, me.response.error), _received(me)))
        target = me.reconciling
        if me.phase == RUNNING and target is None and not me.synced:
            then.append((self._act("StartReconciliation", c), _start_reconciliation(me)))
        if target is not None:
            # onPartitionsRevoked, then onPartitionsAssigned, towards the assignment the reconciliation started from
            if me.owned - target:
                then.append((self._act("RevokePartitions", c), _reconciled(me, me.owned & target)))
            elif target - me.owned:
                then.append((self._act("AssignPartitions", c), _reconciled(me, target)))
        crashed = Consumer(STOPPED, "", JOIN_EPOCH, frozenset(), frozenset(), None, None)
        faults.append((self._act("ConsumerCrash", c), crashed))
        if me.phase == RUNNING and me.memberId:
            leaving = me._replace(
                phase=LEAVING, owned=frozenset(), assignment=frozenset(), reconciling=None, synced=True
            )
            faults.append((self._act("Unsubscribe", c), leaving))
        return OwnSteps(tuple(first), tuple(then), bool(me.owned) and me.phase == RUNNING, tuple(faults))

    def _act(self, name: str, *values: object) -> Action:
        action = self._actions.get((name, values))
        if action is None:
            action = self._actions[(name, values)] = Action.of(name, zip(ACTION_ARGS[name], values, strict=True))
        return action

    # -- the coordinator: ConsumerGroupHeartbeat ---------------------------------------------------
    def _heartbeat_outcome(self, s: Kip848State, c: int, me: Consumer) -> tuple[Action, Coordinator, Consumer]:
        """HandleHeartbeat of consumer ``c``'s request: the coordinator and the consumer after it. A joining
        member's id is the one thing read from the rest of the state (the ids it mentions)."""
        hb = me.request
        assert hb is not None
        joining = hb.memberEpoch == JOIN_EPOCH and hb.memberId == ""
        new_id = fresh_member_id(c, _mentioned_ids(s)) if joining else ""
        key = (s.coordinator, c, me, new_id)
        outcome = self._heartbeat_outcomes.get(key)
        if outcome is None:
            error, coord, response = self._handle_heartbeat(s.coordinator, c, hb, new_id)
            after = me._replace(request=None) if me.phase == STOPPED else me._replace(request=None, response=response)
            outcome = self._heartbeat_outcomes[key] = (self._act("HandleHeartbeat", c, error), coord, after)
        return outcome

    def _handle_heartbeat(
        self, coord: Coordinator, c: int, hb: Heartbeat, new_id: str
    ) -> tuple[str, Coordinator, HeartbeatResponse]:
        """``GroupMetadataManager.consumerGroupHeartbeat``; ``new_id`` is the id a joining member gets."""
        if hb.memberEpoch == LEAVE_EPOCH:
            if _member(coord, hb.memberId) is not None:
                coord = self._without_member(coord, hb.memberId)
            return NONE, coord, HeartbeatResponse(NONE, hb.memberId, LEAVE_EPOCH, frozenset())
        if hb.memberEpoch == JOIN_EPOCH and hb.memberId == "":
            member = GroupMember(new_id, JOIN_EPOCH, JOIN_EPOCH, STABLE, frozenset(), frozenset(), c)
            coord = coord._replace(groupEpoch=coord.groupEpoch + 1, members=_sorted((*coord.members, member)))
        else:
            member = _member(coord, hb.memberId)
            if member is None:
                error = UNKNOWN_MEMBER_ID
                return error, coord, HeartbeatResponse(error, hb.memberId, hb.memberEpoch, frozenset())
            lost_response = (
                hb.memberEpoch == member.previousMemberEpoch
                and hb.ownedPartitions is not None
                and hb.ownedPartitions <= member.assigned
            )
            if hb.memberEpoch != member.memberEpoch and not (hb.memberEpoch < member.memberEpoch and lost_response):
                error = FENCED_MEMBER_EPOCH
                return error, coord, HeartbeatResponse(error, hb.memberId, hb.memberEpoch, frozenset())
        if coord.groupEpoch > coord.targetAssignmentEpoch:
            coord = self._compute_target_assignment(coord)
        updated = self._reconcile(coord, member, hb.ownedPartitions)
        coord = _update_member(coord, member, updated, self.config.partition_epoch_bookkeeping)
        return NONE, coord, HeartbeatResponse(NONE, updated.memberId, updated.memberEpoch, updated.assigned)

    def _compute_target_assignment(self, coord: Coordinator) -> Coordinator:
        """The server-side assignor: balanced and sticky to the previous target."""
        previous = dict(coord.targetAssignment)
        inputs = tuple((m.memberId, previous.get(m.memberId, frozenset())) for m in coord.members)
        target = self._sticky_targets.get(inputs)
        if target is None:
            members = [Member(m, ("t",), tuple(("t", p) for p in sorted(parts)), 1) for m, parts in inputs]
            result = assign("sticky", members, {"t": self.config.partitions}) if members else {}
            target = tuple(sorted((m, frozenset(p for _, p in parts)) for m, parts in result.items()))
            self._sticky_targets[inputs] = target
        return coord._replace(targetAssignment=target, targetAssignmentEpoch=coord.groupEpoch)

    def _reconcile(self, coord: Coordinator, member: GroupMember, owned: frozenset[int] | None) -> GroupMember:
        """``CurrentAssignmentBuilder.build()``; ``owned`` is what the heartbeat says the consumer owns, or
        None when it did not say: then it is taken to still own every partition it must revoke."""
        if owned is None:
            owned = member.assigned | member.pendingRevocation
        target_epoch = coord.targetAssignmentEpoch
        if member.state == STABLE:
            if member.memberEpoch != target_epoch:
                return self._compute_next(coord, member, member.memberEpoch, member.assigned, owned)
            return member
        if member.state == UNREVOKED_PARTITIONS:
            target = dict(coord.targetAssignment).get(member.memberId, frozenset())
            if self.config.reclaim_pending_revocation and target & member.pendingRevocation:
                # As the KAFKA-16147 incident shows: revoking -> stable with the partitions pending
                # revocation assigned again, in one step.
                current = member.assigned | member.pendingRevocation
                return self._compute_next(coord, member, member.memberEpoch, current, owned)
            if owned & member.pendingRevocation:
                return member
            epoch = member.memberEpoch + 1 if self.config.bump_epoch_after_revocation else member.memberEpoch
            return self._compute_next(coord, member, epoch, member.assigned, owned)
        return self._compute_next(coord, member, member.memberEpoch, member.assigned, owned)

    def _compute_next(
        self, coord: Coordinator, member: GroupMember, epoch: int, current: frozenset[int], owned: frozenset[int]
    ) -> GroupMember:
        target = dict(coord.targetAssignment).get(member.memberId, frozenset())
        target_epoch = coord.targetAssignmentEpoch
        keep = current & target
        revoke = current - keep
        pending = target - keep
        # a partition still held by a member is withheld; since KAFKA-19449 not when that member is this one,
        # giving back a partition it has pending revocation
        own = member.pendingRevocation if self.config.release_own_pending_revocation else frozenset()
        unreleased = frozenset(p for p in pending if coord.partitionEpochs[p] != FREE and p not in own)
        if self.config.wait_for_release:
            pending -= unreleased
        else:
            unreleased = frozenset()
        moved = member._replace(previousMemberEpoch=member.memberEpoch)
        if revoke & owned if self.config.revoke_only_owned else revoke:
            # the consumer must first revoke what it still owns; what it never took is dropped at once
            return moved._replace(
                state=UNREVOKED_PARTITIONS, memberEpoch=epoch, assigned=keep, pendingRevocation=revoke
            )
        state = UNRELEASED_PARTITIONS if unreleased else STABLE
        return moved._replace(
            state=state, memberEpoch=target_epoch, assigned=keep | pending, pendingRevocation=frozenset()
        )

    def _without_member(self, coord: Coordinator, member_id: str) -> Coordinator:
        member = _member(coord, member_id)
        assert member is not None
        epochs = list(coord.partitionEpochs)
        for p in member.assigned | member.pendingRevocation:
            epochs[p] = FREE
        members = tuple(m for m in coord.members if m.memberId != member_id)
        return coord._replace(members=members, partitionEpochs=tuple(epochs), groupEpoch=coord.groupEpoch + 1)

    def _removal(self, coord: Coordinator, member_id: str) -> tuple[Action, Action, Coordinator]:
        """The session and rebalance timeouts of a member, and the coordinator without it."""
        removal = self._removals.get((coord, member_id))
        if removal is None:
            removal = self._removals[(coord, member_id)] = (
                self._act("SessionTimeout", member_id),
                self._act("RebalanceTimeout", member_id),
                self._without_member(coord, member_id),
            )
        return removal

    # -- the client (ConsumerMembershipManager) ---------------------------------------------------
    def _offset_commit(self, coord: Coordinator, c: int, me: Consumer) -> Action:
        """OffsetCommit v9+: carries the member epoch, which must be the member's current one."""
        member = _member(coord, me.memberId)
        if member is None:
            error = UNKNOWN_MEMBER_ID
        elif me.memberEpoch != member.memberEpoch:
            error = STALE_MEMBER_EPOCH
        else:
            error = NONE
        return self._act("OffsetCommit", c, me.memberEpoch, error)

    def drawing(self) -> Kip848Drawing:
        return Kip848Drawing(self.config.consumers)


def _update_member(coord: Coordinator, old: GroupMember, new: GroupMember, whole: bool = True) -> Coordinator:
    """Replace the member and move its partition epochs (``maybeUpdatePartitionEpoch``): since
    KAFKA-16147 every old epoch is removed before the new ones are added; before, the assigned set
    and then the set pending revocation were each removed and re-added in turn, so a partition that
    moved from pending revocation to assigned lost the epoch just given to it."""
    epochs = list(coord.partitionEpochs)
    if whole:
        for p in old.assigned | old.pendingRevocation:
            if epochs[p] == old.memberEpoch:
                epochs[p] = FREE
        for p in new.assigned | new.pendingRevocation:
            epochs[p] = new.memberEpoch
    else:
        for before, after in ((old.assigned, new.assigned), (old.pendingRevocation, new.pendingRevocation)):
            for p in before:
                epochs[p] = FREE
            for p in after:
                epochs[p] = new.memberEpoch
    members = _sorted((*(m for m in coord.members if m.memberId != old.memberId), new))
    return coord._replace(members=members, partitionEpochs=tuple(epochs))


def _member(coord: Coordinator, member_id: str) -> GroupMember | None:
    for m in coord.members:
        if m.memberId == member_id:
            return m
    return None


def _sorted(members: tuple[GroupMember, ...]) -> tuple[GroupMember, ...]:
    return tuple(sorted(members))


def _start_reconciliation(me: Consumer) -> Consumer:
    """``maybeReconcile``: the latest assignment becomes the one reconciled. When it holds the partitions the
    consumer already owns, there is nothing to revoke or assign: it is acknowledged at once (reported in
    the next heartbeat)."""
    if me.assignment == me.owned:
        return me._replace(synced=True, reconciled=me.owned)
    return me._replace(synced=True, reconciling=me.assignment)


def _reconciled(me: Consumer, owned: frozenset[int]) -> Consumer:
    """The consumer after a rebalance callback: once it owns the assignment its reconciliation started from,
    the reconciliation is complete and its partitions are due in the next heartbeat."""
    me = me._replace(owned=owned)
    return me._replace(reconciling=None, reconciled=owned) if owned == me.reconciling else me


def _received(me: Consumer) -> Consumer:
    """The consumer after it handles its heartbeat's response."""
    response = me.response
    assert response is not None
    me = me._replace(response=None)
    if me.phase == LEAVING:
        return Consumer(UNSUBSCRIBED, "", JOIN_EPOCH, frozenset(), frozenset(), None, None)
    if response.error != NONE:  # fenced: lose everything, rejoin as a new member
        return Consumer(RUNNING, "", JOIN_EPOCH, frozenset(), frozenset(), None, None)
    # a new target when it differs from the last one received (the first one after joining always does);
    # a reconciliation in progress carries on towards the one it started from
    changed = me.memberEpoch == JOIN_EPOCH or response.assignment != me.assignment
    me = me._replace(memberId=response.memberId, memberEpoch=response.memberEpoch, assignment=response.assignment)
    return me._replace(synced=False) if changed else me


def _mentioned_ids(s: Kip848State) -> set[str]:
    ids = {m.memberId for m in s.coordinator.members} | {m for m, _ in s.coordinator.targetAssignment}
    for me in s.consumers:
        ids.add(me.memberId)
        if me.request is not None:
            ids.add(me.request.memberId)
        if me.response is not None:
            ids.add(me.response.memberId)
    return ids
