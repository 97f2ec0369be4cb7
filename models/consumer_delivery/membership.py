"""The consumer group as the `consumer-delivery` model needs it: states, commit fencing, rebalances.

What the delivery guarantees depend on is only *when* a consumer learns that it lost or gained the
input partition and *which* commits the coordinator accepts, so the rebalance is abstract rather
than the full protocol of :mod:`kmc.models.group.model` or :mod:`kmc.models.group_kip848.model` (whose product
with offsets, records and transactions would be far larger than these questions need):

* classic: a stop-the-world (eager) rebalance -- PreparingRebalance until every member has rejoined
  (revoking first), then a new generation with the partition given to any member (any assignor),
  JoinGroup and SyncGroup each one step;
* KIP-848: a membership change bumps the group epoch and picks a target; the holder revokes before
  the target gets the partition; each member's epoch moves by a heartbeat whose response travels
  separately, so a commit can carry an epoch the coordinator has moved past.

The commit decisions are the pure functions :func:`validate_classic_offset_commit` and
:func:`validate_consumer_offset_commit`, compared with Kafka's classes by the ``offset-commit`` oracle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kmc.checker import Action
from kmc.models.consumer_delivery.state import (
    COMPLETING_REBALANCE,
    JOINING,
    NO_OFFSET,
    RUNNING,
    UNJOINED,
    Consumer,
    Coordinator,
    DeliveryState,
    Member,
    Step,
)
from kmc.models.group.model import (
    EMPTY,
    ILLEGAL_GENERATION,
    NO_GENERATION,
    NO_MEMBER,
    NONE,
    PREPARING_REBALANCE,
    REBALANCE_IN_PROGRESS,
    STABLE,
    UNKNOWN_MEMBER_ID,
    fresh_member_id,
)
from kmc.models.group_kip848.state import FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH

if TYPE_CHECKING:
    from collections.abc import Callable


# -- the commit-fencing decisions (compared with Kafka's classes by the offset-commit oracle) ------
def validate_classic_offset_commit(
    group_state: str, generation: int, members: frozenset[str], member_id: str, generation_id: int, txn: bool
) -> str:
    """``ClassicGroup.validateOffsetCommit``: the error an (transactional) offset commit gets."""
    if generation_id < 0 and group_state == EMPTY:
        return NONE  # a consumer outside group management, or an admin client
    if generation_id >= 0 or member_id != NO_MEMBER:
        if member_id not in members:
            return UNKNOWN_MEMBER_ID
        if generation_id != generation:
            return ILLEGAL_GENERATION
    elif not txn and group_state != EMPTY:
        return UNKNOWN_MEMBER_ID  # OffsetCommit v0 to a group with members
    if not txn and group_state == COMPLETING_REBALANCE:
        return REBALANCE_IN_PROGRESS
    return NONE


def validate_consumer_offset_commit(
    members: tuple[tuple[str, int], ...],
    holder: str,
    assignment_epoch: int,
    member_id: str,
    member_epoch: int,
    txn: bool,
    kip_1251: bool = True,
) -> str:
    """``ConsumerGroup.validateOffsetCommit`` (Kafka 4.3) for a commit of the one partition:
    the member's current epoch is accepted; with KIP-1251 an older one too, for a partition the
    member has held (assigned or pending revocation) since that epoch."""
    if member_epoch < 0 and not members:
        return NONE
    if txn and member_epoch == NO_GENERATION and member_id == NO_MEMBER:
        return NONE  # a TxnOffsetCommit without group metadata (before KIP-447)
    epochs = dict(members)
    if member_id not in epochs:
        return UNKNOWN_MEMBER_ID
    current = epochs[member_id]
    if member_epoch == current:
        return NONE
    if member_epoch > current or not kip_1251:
        return STALE_MEMBER_EPOCH
    if holder == member_id and assignment_epoch <= member_epoch:
        return NONE
    return STALE_MEMBER_EPOCH


class GroupMembership:
    """The group's side of the model: joins, rebalances, heartbeats and removals (a mixin of
    :class:`kmc.models.consumer_delivery.model.ConsumerDeliveryModel`, which provides the consumer's
    callbacks: ``_revoke``, ``_lost``, ``_can_revoke``)."""

    classic: bool
    config: Any
    _act: Callable[..., Action]
    _revoke: Callable[[DeliveryState, int, Consumer], tuple[str, DeliveryState]]
    _lost: Callable[[DeliveryState, int], DeliveryState]
    _can_revoke: Callable[[Consumer], bool]
    _commit_before_revocation: Callable[[DeliveryState, int, Consumer], Step | None]
    _poll_during_revocation: Callable[[DeliveryState, int, Consumer], Step | None]

    # -- classic group: stop-the-world rebalance -------------------------------------------------
    def _classic_membership(self, s: DeliveryState, c: int, me: Consumer, out: list[Step]) -> None:
        coord = s.coordinator
        member = _member(coord, me.memberId)
        if me.phase == UNJOINED:
            if self._can_revoke(me):
                self._join(s, c, me, out)
        elif member is None:
            if me.phase == JOINING:  # removed while joining: the JoinGroup fails
                nxt = with_consumer(s, c, me._replace(phase=UNJOINED, memberId=NO_MEMBER, generationId=NO_GENERATION))
                out.append((self._act("JoinGroup", c, UNKNOWN_MEMBER_ID), nxt))
            elif self._can_revoke(me):
                # the heartbeat hears UNKNOWN_MEMBER_ID: partitions lost, rejoin as a new member
                nxt = self._lost(s, c)
                nxt = with_consumer(nxt, c, nxt.consumers[c]._replace(memberId=NO_MEMBER, generationId=NO_GENERATION))
                out.append((self._act("Heartbeat", c, UNKNOWN_MEMBER_ID, coord.owner), nxt))
        elif coord.state == PREPARING_REBALANCE and not member.joined:
            if self._can_revoke(me):  # the heartbeat (or SyncGroup) said REBALANCE_IN_PROGRESS
                self._join(s, c, me, out)
        elif me.phase == JOINING and coord.state == STABLE and coord.generationId > me.generationId:
            owned = coord.owner == me.memberId
            synced = me._replace(phase=RUNNING, generationId=coord.generationId, owned=owned, position=NO_OFFSET)
            out.append((self._act("SyncGroup", c), with_consumer(s, c, synced)))

    def _join(self, s: DeliveryState, c: int, me: Consumer, out: list[Step]) -> None:
        """onJoinPrepare (commit and revoke), then JoinGroup; a new member starts a rebalance."""
        sent = self._commit_before_revocation(s, c, me)
        if sent is not None:  # 3.2.0-3.2.2: the commit is asynchronous, and onJoinPrepare waits for it
            out.append(sent)
            return
        error, s = self._revoke(s, c, me)
        if error != NONE:
            out.append((self._act("JoinGroup", c, error), s))
            return
        me = s.consumers[c]
        coord = s.coordinator
        member_id = me.memberId
        if _member(coord, member_id) is None:
            if member_id != NO_MEMBER:  # an id the coordinator forgot: UNKNOWN_MEMBER_ID, then join anew
                nxt = with_consumer(s, c, me._replace(memberId=NO_MEMBER, generationId=NO_GENERATION))
                out.append((self._act("JoinGroup", c, UNKNOWN_MEMBER_ID), nxt))
                return
            member_id = fresh_member_id(c, _mentioned_ids(s))
            coord = coord._replace(members=_sorted((*coord.members, Member(member_id, c, 0, True))))
        else:
            coord = coord._replace(
                members=tuple(m._replace(joined=True) if m.memberId == member_id else m for m in coord.members)
            )
        coord = coord._replace(state=PREPARING_REBALANCE)
        nxt = with_consumer(s._replace(coordinator=coord), c, me._replace(phase=JOINING, memberId=member_id))
        out.append((self._act("JoinGroup", c, NONE), nxt))

    def _complete_rebalance(self, s: DeliveryState, out: list[Step]) -> None:
        """Every member has rejoined (the others were removed): a new generation, the partition to
        any member (the assignor is left open), JoinGroup and SyncGroup answered."""
        coord = s.coordinator
        if coord.state != PREPARING_REBALANCE or not all(m.joined for m in coord.members):
            return
        members = tuple(m._replace(joined=False) for m in coord.members)
        base = coord._replace(generationId=coord.generationId + 1, members=members)
        if not members:
            nxt = s._replace(coordinator=base._replace(state=EMPTY, owner=NO_MEMBER))
            out.append((self._act("CompleteRebalance", NO_MEMBER), nxt))
            return
        for m in members:
            nxt = s._replace(coordinator=base._replace(state=STABLE, owner=m.memberId))
            out.append((self._act("CompleteRebalance", m.memberId), nxt))

    # -- KIP-848 group: member epochs --------------------------------------------------------------
    def _kip848_membership(self, s: DeliveryState, c: int, me: Consumer, out: list[Step]) -> None:
        coord = s.coordinator
        if me.response is not None:
            error, _, assigned = me.response
            revoking = error == NONE and me.owned and not assigned
            if revoking and not self._can_revoke(me):
                return  # a revocation waits for the poll loop
            out.append(self._receive_heartbeat(s, c, me))
            step = self._poll_during_revocation(s, c, me) if revoking else None
            if step is not None:
                out.append(step)
            return
        member = _member(coord, me.memberId)
        if me.phase == UNJOINED:
            for target, nxt in self._heartbeat_join(s, c):
                out.append((self._act("Heartbeat", c, NONE, target), nxt))
            return
        if member is None:
            out.append(
                (self._act("Heartbeat", c, UNKNOWN_MEMBER_ID, coord.owner), self._respond(s, c, UNKNOWN_MEMBER_ID))
            )
        elif member.memberEpoch != me.generationId:
            out.append(
                (self._act("Heartbeat", c, FENCED_MEMBER_EPOCH, coord.owner), self._respond(s, c, FENCED_MEMBER_EPOCH))
            )
        elif (
            member.memberEpoch < coord.generationId
            or (coord.holder == member.memberId) != me.owned
            or (coord.owner == member.memberId and coord.holder == NO_MEMBER)
        ):
            out.append((self._act("Heartbeat", c, NONE, coord.owner), self._reconcile(s, c, me, member)))

    def _respond(self, s: DeliveryState, c: int, error: str) -> DeliveryState:
        me = s.consumers[c]
        return with_consumer(s, c, me._replace(response=(error, me.generationId, False)))

    def _heartbeat_join(self, s: DeliveryState, c: int) -> list[tuple[str, DeliveryState]]:
        """A heartbeat with epoch 0: a new member, the group epoch bumped, a new target."""
        coord = s.coordinator
        member_id = fresh_member_id(c, _mentioned_ids(s))
        members = _sorted((*coord.members, Member(member_id, c, 0, False)))
        joined = s._replace(coordinator=coord._replace(members=members, generationId=coord.generationId + 1))
        joined = with_consumer(joined, c, s.consumers[c]._replace(phase=RUNNING, memberId=member_id, generationId=0))
        result = []
        for target in self._targets(joined.coordinator):
            nxt = joined._replace(coordinator=joined.coordinator._replace(owner=target))
            member = _member(nxt.coordinator, member_id)
            assert member is not None
            result.append((target, self._reconcile(nxt, c, nxt.consumers[c], member)))
        return result

    def _targets(self, coord: Coordinator) -> list[str]:
        """The new target owner: any member (the server-side assignor is left open)."""
        return [m.memberId for m in coord.members] or [NO_MEMBER]

    def _reconcile(self, s: DeliveryState, c: int, me: Consumer, member: Member) -> DeliveryState:
        """``CurrentAssignmentBuilder`` for one partition: revoke before moving on, take it once free."""
        coord = s.coordinator
        epoch = member.memberEpoch
        holder, assignment_epoch = coord.holder, coord.assignmentEpoch
        if holder == member.memberId and coord.owner != member.memberId and me.owned:
            pass  # UNREVOKED_PARTITIONS: the epoch stays until the consumer reports it revoked
        elif holder == member.memberId and coord.owner != member.memberId:
            holder, assignment_epoch, epoch = NO_MEMBER, 0, coord.generationId
        elif coord.owner == member.memberId and holder == NO_MEMBER:
            holder, assignment_epoch, epoch = member.memberId, coord.generationId, coord.generationId
        else:
            epoch = coord.generationId
        members = tuple(m._replace(memberEpoch=epoch) if m.memberId == member.memberId else m for m in coord.members)
        coord = coord._replace(members=members, holder=holder, assignmentEpoch=assignment_epoch)
        return with_consumer(
            s._replace(coordinator=coord),
            c,
            me._replace(response=(NONE, epoch, holder == member.memberId == coord.owner)),
        )

    def _receive_heartbeat(self, s: DeliveryState, c: int, me: Consumer) -> Step:
        assert me.response is not None
        error, epoch, assigned = me.response
        me = me._replace(response=None)
        s = with_consumer(s, c, me)
        if error != NONE:  # fenced: partitions lost, rejoin with epoch 0
            return self._act("ReceiveHeartbeat", c, error), self._lost(s, c)
        me = me._replace(generationId=epoch)
        s = with_consumer(s, c, me)
        if me.owned and not assigned:
            revoke_error, s = self._revoke(s, c, me)
            return self._act("ReceiveHeartbeat", c, revoke_error), s
        if assigned and not me.owned:
            s = with_consumer(s, c, me._replace(owned=True, position=NO_OFFSET, dirty=False))
        return self._act("ReceiveHeartbeat", c, NONE), s

    # -- membership changes --------------------------------------------------------------------
    def _remove_member(self, s: DeliveryState, member_id: str) -> DeliveryState:
        coord = s.coordinator
        members = tuple(m for m in coord.members if m.memberId != member_id)
        if self.classic:
            state = PREPARING_REBALANCE if coord.state != EMPTY or members else coord.state
            return s._replace(coordinator=coord._replace(members=members, state=state))
        if coord.holder == member_id:
            coord = coord._replace(holder=NO_MEMBER, assignmentEpoch=0)
        coord = coord._replace(members=members, generationId=coord.generationId + 1)
        if coord.owner == member_id or coord.owner == NO_MEMBER:
            coord = coord._replace(owner=members[0].memberId if members else NO_MEMBER)
        return s._replace(coordinator=coord)


# -- pure helpers ----------------------------------------------------------------------------------
def dropped_consumer(me: Consumer) -> Consumer:
    return me._replace(
        owned=False,
        position=NO_OFFSET,
        fetched=NO_OFFSET,
        dirty=False,
        inTxn=False,
        offsetsSent=False,
        revocationCommitSent=False,
    )


def with_consumer(s: DeliveryState, c: int, me: Consumer) -> DeliveryState:
    return s._replace(consumers=(*s.consumers[:c], me, *s.consumers[c + 1 :]))


def _member(coord: Coordinator, member_id: str) -> Member | None:
    for m in coord.members:
        if m.memberId == member_id:
            return m
    return None


def _sorted(members: tuple[Member, ...]) -> tuple[Member, ...]:
    return tuple(sorted(members, key=lambda m: m.memberId))


def _mentioned_ids(s: DeliveryState) -> set[str]:
    coord = s.coordinator
    ids = {m.memberId for m in coord.members} | {coord.owner, coord.holder}
    return ids | {me.memberId for me in s.consumers}
