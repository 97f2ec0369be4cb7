"""KIP-848: the consumer rebalance protocol in which the group coordinator reconciles each member.

One consumer group on one topic. The coordinator keeps a group epoch (bumped when membership
changes), a target assignment and its epoch, and per member an epoch, a previous epoch, a state
(STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS), its assigned partitions and those pending
revocation, plus the epoch of every partition's current owner. Consumers send
ConsumerGroupHeartbeat requests with their member epoch and the partitions they own; the
coordinator answers with the member's next epoch and assignment, computed by
``CurrentAssignmentBuilder``: a member moves to a new epoch only after it has revoked what it
must give up, and a partition is given only once its previous owner has released it.
(kafka-protocols.md §2.6; ``ConsumerGroup``, ``CurrentAssignmentBuilder``,
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

from dataclasses import dataclass
from typing import Literal, NamedTuple

from kmc.checker import Action, Model, Preset, param
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.checker.liveness import WF

from .assignors import Member, assign
from .group import fresh_member_id

# member states (MemberState)
STABLE = "STABLE"
UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"

# group states (ConsumerGroup.ConsumerGroupState)
EMPTY = "EMPTY"
ASSIGNING = "ASSIGNING"
RECONCILING = "RECONCILING"

NONE = "NONE"
FENCED_MEMBER_EPOCH = "FENCED_MEMBER_EPOCH"
UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
STALE_MEMBER_EPOCH = "STALE_MEMBER_EPOCH"

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
FREE = -1
"""A partition's epoch when no member holds it (assigned or pending revocation)."""

# client phases
UNSUBSCRIBED = "unsubscribed"
RUNNING = "running"
LEAVING = "leaving"
STOPPED = "stopped"


class GroupMember(NamedTuple):
    memberId: str
    memberEpoch: int
    previousMemberEpoch: int
    state: str
    assigned: frozenset[int]
    pendingRevocation: frozenset[int]
    consumer: int


class Coordinator(NamedTuple):
    groupEpoch: int
    targetAssignmentEpoch: int
    targetAssignment: tuple[tuple[str, frozenset[int]], ...]
    members: tuple[GroupMember, ...]
    partitionEpochs: tuple[int, ...]
    """The member epoch of each partition's current owner, or FREE."""


class Heartbeat(NamedTuple):
    memberId: str
    memberEpoch: int
    ownedPartitions: frozenset[int] | None
    """None (the request's field left null) unless joining or a reconciliation completed since the last one."""


class HeartbeatResponse(NamedTuple):
    error: str
    memberId: str
    memberEpoch: int
    assignment: frozenset[int]


class Consumer(NamedTuple):
    phase: str
    memberId: str
    memberEpoch: int
    owned: frozenset[int]
    assignment: frozenset[int]
    """The last assignment the coordinator sent: what the client reconciles towards."""
    request: Heartbeat | None
    response: HeartbeatResponse | None
    reconciled: frozenset[int] | None = None
    """The partitions of the last reconciliation the consumer completed and has not reported yet (None:
    nothing to report): like the consumer's local assignment, sent once in the next heartbeat."""
    reconciling: frozenset[int] | None = None
    """The assignment of the reconciliation in progress (None: none): fixed when it starts."""
    synced: bool = True
    """Whether the assignment in hand (the one being reconciled, else the last completed) is the latest
    received; an assignment that differs from the previous one received makes it False."""


class Kip848State(NamedTuple):
    coordinator: Coordinator
    consumers: tuple[Consumer, ...]
    faults: int


Step = tuple[Action, Kip848State]


@dataclass(frozen=True)
class Kip848Config:
    consumers: int = param(2, "consumer processes", min=1, max=4)
    partitions: int = param(2, "partitions of the one subscribed topic", min=0, max=6)
    wait_for_release: bool = param(
        True, "give a partition only once its partition epoch is free (the previous owner revoked it)"
    )
    partition_epoch_bookkeeping: bool = param(
        True, "KAFKA-16147: a member update removes all its old partition epochs before it adds the new ones"
    )
    reclaim_pending_revocation: bool = param(
        False,
        "early-2024 reconciliation: a revoking member whose new target returns partitions it still "
        "holds takes them back at once",
    )
    revoke_only_owned: bool = param(
        True,
        "KAFKA-16615 (Kafka 3.8): partitions the heartbeat does not list as owned are dropped without waiting "
        "for their revocation; before (KAFKA-16249's builder), every revocation waited for the member",
    )
    release_own_pending_revocation: bool = param(
        True,
        "KAFKA-19449 (Kafka 4.2): a partition the member itself has pending revocation is not withheld as "
        "unreleased when its target gives it back",
    )
    bump_epoch_after_revocation: bool = param(
        False,
        "before KAFKA-19974 (Kafka 4.2): a member that has revoked what it must reconciles from its epoch + 1, "
        "so it may stay UNREVOKED_PARTITIONS one epoch later",
    )
    max_faults: int = param(1, "consumer crashes and leaves in all", min=0, max=3)
    timeouts: Literal["crashed", "any"] = param(
        "crashed", "session and rebalance timeouts: only for stopped consumers, or at any moment"
    )
    max_group_epoch: int = param(8, "bound on the group epoch (within_bounds)", min=1, max=16)


PRESETS = {
    "kip-848": Preset.of(
        "the KIP-848 protocol as in Kafka 4.2 and later (4.3.1 is the pinned release); a heartbeat that reports "
        "an older completed reconciliation lets the coordinator give away a partition the consumer is taking",
        {"NoDoubleClientAssignment": "violated", "ValidPartitionEpoch": "holds", "EventuallyConverges": "holds"},
    ),
    "kafka-4.0": Preset.of(
        "Kafka 4.0 and 4.1: before KAFKA-19449 and KAFKA-19974",
        {"NoDoubleClientAssignment": "violated", "ValidPartitionEpoch": "holds", "EventuallyConverges": "holds"},
        release_own_pending_revocation=False,
        bump_epoch_after_revocation=True,
    ),
    "pre-kafka-16615": Preset.of(
        "today's protocol with KAFKA-16249's rule that every revocation waits for the member (never released: "
        "KAFKA-16615 dropped unlisted partitions before 3.8.0); holds with one fault, not with two",
        {"NoDoubleClientAssignment": "holds", "ValidPartitionEpoch": "holds", "EventuallyConverges": "holds"},
        revoke_only_owned=False,
    ),
    "no-release-wait": Preset.of(
        "the coordinator assigns a partition before its previous owner has revoked it",
        {"NoDoubleClientAssignment": "violated"},
        wait_for_release=False,
    ),
    "pre-kafka-16147": Preset.of(
        "early 2024: a revoking member takes back partitions its new target returns, and the partition "
        "epochs are updated set by set, so the epoch of such a partition is lost",
        {"NoDoubleClientAssignment": "violated", "ValidPartitionEpoch": "violated"},
        partition_epoch_bookkeeping=False,
        reclaim_pending_revocation=True,
        revoke_only_owned=False,
        release_own_pending_revocation=False,
        bump_epoch_after_revocation=True,
    ),
    "slow-member": Preset.of(
        "timeouts at any moment: a member fenced for being slow keeps processing until it learns",
        {"NoDoubleClientAssignment": "violated"},
        timeouts="any",
        max_faults=0,
    ),
}

ACTION_ARGS = {
    "SendHeartbeat": ("consumer",),
    "HandleHeartbeat": ("consumer", "error"),
    "ReceiveHeartbeat": ("consumer", "error"),
    "RevokePartitions": ("consumer",),
    "AssignPartitions": ("consumer",),
    "StartReconciliation": ("consumer",),
    "Subscribe": ("consumer",),
    "Unsubscribe": ("consumer",),
    "ConsumerCrash": ("consumer",),
    "SessionTimeout": ("memberId",),
    "RebalanceTimeout": ("memberId",),
    "OffsetCommit": ("consumer", "memberEpoch", "error"),
}


class Kip848Model(Model):
    name = "group-kip848"
    description = "KIP-848 consumer groups: member epochs and server-side reconciliation"
    Config = Kip848Config
    presets = PRESETS
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

    def _act(self, name: str, *values: object) -> Action:
        return Action.of(name, zip(ACTION_ARGS[name], values, strict=True))

    def init_states(self) -> list[Kip848State]:
        coordinator = Coordinator(0, 0, (), (), (FREE,) * self.config.partitions)
        consumer = Consumer(UNSUBSCRIBED, "", JOIN_EPOCH, frozenset(), frozenset(), None, None)
        return [Kip848State(coordinator, (consumer,) * self.config.consumers, 0)]

    def within_bounds(self, s: Kip848State) -> bool:
        return s.coordinator.groupEpoch < self.config.max_group_epoch

    # -- next ----------------------------------------------------------------------------------
    def successors(self, s: Kip848State) -> list[Step]:
        out: list[Step] = []
        for c, me in enumerate(s.consumers):
            self._consumer_steps(s, c, me, out)
        for m in s.coordinator.members:
            me = s.consumers[m.consumer]
            learning = me.response is not None and me.response.memberId == m.memberId
            gone = me.phase == STOPPED or (me.memberId != m.memberId and not learning)
            if gone or self.config.timeouts == "any":
                out.append((self._act("SessionTimeout", m.memberId), self._remove_member(s, m.memberId)))
            # a member that must revoke and does not leave its epoch in time is fenced
            if m.state == UNREVOKED_PARTITIONS and (gone or self.config.timeouts == "any"):
                out.append((self._act("RebalanceTimeout", m.memberId), self._remove_member(s, m.memberId)))
        return out

    def _consumer_steps(self, s: Kip848State, c: int, me: Consumer, out: list[Step]) -> None:
        if me.phase == STOPPED:
            return
        if me.phase == UNSUBSCRIBED:
            if me.memberId == "":
                out.append((self._act("Subscribe", c), _set(s, c, me._replace(phase=RUNNING))))
            return
        if me.request is None and me.response is None:
            epoch = LEAVE_EPOCH if me.phase == LEAVING else me.memberEpoch
            # like the consumer's heartbeat state, the owned partitions are sent when joining and in the
            # first heartbeat after a reconciliation completed (its result); null otherwise
            owned = me.owned if epoch == JOIN_EPOCH else me.reconciled
            request = Heartbeat(me.memberId, epoch, owned)
            sent = me._replace(request=request, reconciled=None)
            out.append((self._act("SendHeartbeat", c), _set(s, c, sent)))
        if me.request is not None:
            error, nxt = self._handle_heartbeat(s, c, me.request)
            out.append((self._act("HandleHeartbeat", c, error), nxt))
        if me.response is not None:
            out.append((self._act("ReceiveHeartbeat", c, me.response.error), self._receive(s, c, me)))
        target = me.reconciling
        if me.phase == RUNNING and target is None and not me.synced:
            out.append((self._act("StartReconciliation", c), _set(s, c, _start_reconciliation(me))))
        if target is not None:
            # onPartitionsRevoked, then onPartitionsAssigned, towards the assignment the reconciliation started from
            if me.owned - target:
                out.append((self._act("RevokePartitions", c), _set(s, c, _reconciled(me, me.owned & target))))
            elif target - me.owned:
                out.append((self._act("AssignPartitions", c), _set(s, c, _reconciled(me, target))))
        if me.owned and me.phase == RUNNING:
            out.append(self._offset_commit(s, c, me))
        if s.faults < self.config.max_faults:
            crashed = Consumer(STOPPED, "", JOIN_EPOCH, frozenset(), frozenset(), None, None)
            out.append((self._act("ConsumerCrash", c), _set(s, c, crashed)._replace(faults=s.faults + 1)))
            if me.phase == RUNNING and me.memberId:
                leaving = me._replace(phase=LEAVING, owned=frozenset(), assignment=frozenset(), reconciling=None,
                                      synced=True)  # fmt: skip
                out.append((self._act("Unsubscribe", c), _set(s, c, leaving)._replace(faults=s.faults + 1)))

    # -- the coordinator: ConsumerGroupHeartbeat ---------------------------------------------------
    def _handle_heartbeat(self, s: Kip848State, c: int, hb: Heartbeat) -> tuple[str, Kip848State]:
        s = _set(s, c, s.consumers[c]._replace(request=None))
        coord = s.coordinator
        if hb.memberEpoch == LEAVE_EPOCH:
            if _member(coord, hb.memberId) is not None:
                s = self._remove_member(s, hb.memberId)
            return NONE, _respond(s, c, HeartbeatResponse(NONE, hb.memberId, LEAVE_EPOCH, frozenset()))
        if hb.memberEpoch == JOIN_EPOCH and hb.memberId == "":
            member_id = fresh_member_id(c, _mentioned_ids(s))
            member = GroupMember(member_id, JOIN_EPOCH, JOIN_EPOCH, STABLE, frozenset(), frozenset(), c)
            coord = coord._replace(groupEpoch=coord.groupEpoch + 1, members=_sorted((*coord.members, member)))
        else:
            member = _member(coord, hb.memberId)
            if member is None:
                error = UNKNOWN_MEMBER_ID
                return error, _respond(s, c, HeartbeatResponse(error, hb.memberId, hb.memberEpoch, frozenset()))
            lost_response = (
                hb.memberEpoch == member.previousMemberEpoch
                and hb.ownedPartitions is not None
                and hb.ownedPartitions <= member.assigned
            )
            if hb.memberEpoch != member.memberEpoch and not (hb.memberEpoch < member.memberEpoch and lost_response):
                error = FENCED_MEMBER_EPOCH
                return error, _respond(s, c, HeartbeatResponse(error, hb.memberId, hb.memberEpoch, frozenset()))
        if coord.groupEpoch > coord.targetAssignmentEpoch:
            coord = self._compute_target_assignment(coord)
        updated = self._reconcile(coord, member, hb.ownedPartitions)
        coord = _update_member(coord, member, updated, self.config.partition_epoch_bookkeeping)
        s = s._replace(coordinator=coord)
        response = HeartbeatResponse(NONE, updated.memberId, updated.memberEpoch, updated.assigned)
        return NONE, _respond(s, c, response)

    def _compute_target_assignment(self, coord: Coordinator) -> Coordinator:
        """The server-side assignor: balanced and sticky to the previous target."""
        previous = dict(coord.targetAssignment)
        members = [
            Member(m.memberId, ("t",), tuple(("t", p) for p in sorted(previous.get(m.memberId, ()))), 1)
            for m in coord.members
        ]
        result = assign("sticky", members, {"t": self.config.partitions}) if members else {}
        target = tuple(sorted((m, frozenset(p for _, p in parts)) for m, parts in result.items()))
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
            return moved._replace(state=UNREVOKED_PARTITIONS, memberEpoch=epoch, assigned=keep,
                                  pendingRevocation=revoke)  # fmt: skip
        state = UNRELEASED_PARTITIONS if unreleased else STABLE
        return moved._replace(state=state, memberEpoch=target_epoch, assigned=keep | pending,
                              pendingRevocation=frozenset())  # fmt: skip

    def _remove_member(self, s: Kip848State, member_id: str) -> Kip848State:
        coord = s.coordinator
        member = _member(coord, member_id)
        assert member is not None
        epochs = list(coord.partitionEpochs)
        for p in member.assigned | member.pendingRevocation:
            epochs[p] = FREE
        members = tuple(m for m in coord.members if m.memberId != member_id)
        coord = coord._replace(members=members, partitionEpochs=tuple(epochs), groupEpoch=coord.groupEpoch + 1)
        return s._replace(coordinator=coord)

    # -- the client (ConsumerMembershipManager) ---------------------------------------------------
    def _receive(self, s: Kip848State, c: int, me: Consumer) -> Kip848State:
        response = me.response
        assert response is not None
        me = me._replace(response=None)
        if me.phase == LEAVING:
            return _set(s, c, Consumer(UNSUBSCRIBED, "", JOIN_EPOCH, frozenset(), frozenset(), None, None))
        if response.error != NONE:  # fenced: lose everything, rejoin as a new member
            return _set(s, c, Consumer(RUNNING, "", JOIN_EPOCH, frozenset(), frozenset(), None, None))
        # a new target when it differs from the last one received (the first one after joining always does);
        # a reconciliation in progress carries on towards the one it started from
        changed = me.memberEpoch == JOIN_EPOCH or response.assignment != me.assignment
        me = me._replace(memberId=response.memberId, memberEpoch=response.memberEpoch, assignment=response.assignment)
        return _set(s, c, me._replace(synced=False) if changed else me)

    def _offset_commit(self, s: Kip848State, c: int, me: Consumer) -> Step:
        """OffsetCommit v9+: carries the member epoch, which must be the member's current one."""
        member = _member(s.coordinator, me.memberId)
        if member is None:
            error = UNKNOWN_MEMBER_ID
        elif me.memberEpoch != member.memberEpoch:
            error = STALE_MEMBER_EPOCH
        else:
            error = NONE
        return self._act("OffsetCommit", c, me.memberEpoch, error), s

    def drawing(self) -> Kip848Drawing:
        return Kip848Drawing(self.config.consumers)


def group_state(coord: Coordinator) -> str:
    """``ConsumerGroup.maybeUpdateGroupState``."""
    if not coord.members:
        return EMPTY
    if coord.groupEpoch > coord.targetAssignmentEpoch:
        return ASSIGNING
    if any(m.memberEpoch != coord.targetAssignmentEpoch or m.state != STABLE for m in coord.members):
        return RECONCILING
    return STABLE


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
    return next((m for m in coord.members if m.memberId == member_id), None)


def _sorted(members: tuple[GroupMember, ...]) -> tuple[GroupMember, ...]:
    return tuple(sorted(members))


def _set(s: Kip848State, c: int, consumer: Consumer) -> Kip848State:
    return s._replace(consumers=(*s.consumers[:c], consumer, *s.consumers[c + 1 :]))


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


def _respond(s: Kip848State, c: int, response: HeartbeatResponse) -> Kip848State:
    me = s.consumers[c]
    if me.phase == STOPPED:
        return s
    return _set(s, c, me._replace(response=response))


def _mentioned_ids(s: Kip848State) -> set[str]:
    ids = {m.memberId for m in s.coordinator.members} | {m for m, _ in s.coordinator.targetAssignment}
    for me in s.consumers:
        ids.add(me.memberId)
        if me.request is not None:
            ids.add(me.request.memberId)
        if me.response is not None:
            ids.add(me.response.memberId)
    return ids


class Kip848Drawing(Drawing):
    """Lanes: the coordinator and one per consumer. Tables: epochs, target assignment, members
    with their state, assigned and pending-revocation partitions, partition epochs; consumers."""

    def __init__(self, consumers: int) -> None:
        self.consumers = [f"consumer {c}" for c in range(consumers)]

    def lanes(self) -> list[str]:
        return ["coordinator", *self.consumers]

    def arrow(self, action: Action, before: Kip848State, after: Kip848State) -> Arrow:
        args = action.args
        error = args.get("error", NONE)
        suffix = "" if error == NONE else f" → {error}"
        if "consumer" not in args:
            return Arrow("coordinator", (), action.name)
        lane = self.consumers[args["consumer"]]
        if action.name == "SendHeartbeat":
            hb = after.consumers[args["consumer"]].request
            assert hb is not None
            return Arrow(
                lane,
                ("coordinator",),
                f"Heartbeat(epoch {hb.memberEpoch}, owned "
                f"{'unchanged' if hb.ownedPartitions is None else describe(hb.ownedPartitions)})",
            )
        if action.name == "HandleHeartbeat":
            return Arrow("coordinator", (), f"handle Heartbeat{suffix}")
        if action.name == "ReceiveHeartbeat":
            return Arrow("coordinator", (lane,), f"Heartbeat response{suffix}")
        if action.name == "OffsetCommit":
            return Arrow(lane, ("coordinator",), f"OffsetCommit{suffix}")
        return Arrow(lane, (), action.name)

    def tables(self, state: Kip848State) -> list[Table]:
        coord = state.coordinator
        target = "; ".join(f"{m}→{describe(p)}" for m, p in coord.targetAssignment) or "-"
        epochs = " ".join(f"p{p}:{'-' if e == FREE else e}" for p, e in enumerate(coord.partitionEpochs))
        group = Table(
            "group coordinator",
            ["state", "group epoch", "target epoch", "target assignment", "partition epochs"],
            [[group_state(coord), str(coord.groupEpoch), str(coord.targetAssignmentEpoch), target, epochs]],
        )
        members = Table(
            "members",
            ["memberId", "epoch", "previous", "state", "assigned", "pending revocation"],
            [[m.memberId, str(m.memberEpoch), str(m.previousMemberEpoch), m.state, describe(m.assigned),
              describe(m.pendingRevocation)] for m in coord.members] or [["-", "", "", "", "", ""]],
        )  # fmt: skip
        consumers = Table(
            "consumers",
            ["", "phase", "memberId", "epoch", "owned", "assignment", "reconciling", "in flight"],
            [[self.consumers[c], me.phase, me.memberId or "-", str(me.memberEpoch), describe(me.owned),
              describe(me.assignment), "-" if me.reconciling is None else describe(me.reconciling),
              "Heartbeat" if me.request else ("response" if me.response else "-")]
             for c, me in enumerate(state.consumers)],
        )  # fmt: skip
        return [group, members, consumers]
