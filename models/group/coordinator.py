"""The coordinator of the `group` model (``GroupCoordinator`` / ``GroupMetadataManager`` for the
classic protocol): JoinGroup, SyncGroup, the timers, member removal and failover."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kmc.models.group.state import (
    COMPLETING_REBALANCE,
    COORDINATOR_NOT_AVAILABLE,
    DEAD,
    EMPTY,
    FENCED,
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    JOINING,
    MEMBER_ID_REQUIRED,
    NO_MEMBER,
    NONE,
    NOT_COORDINATOR,
    PREPARING_REBALANCE,
    REBALANCE_IN_PROGRESS,
    STABLE,
    STOPPED,
    SYNCING,
    UNKNOWN_MEMBER_ID,
    Group,
    GroupMember,
    GroupState,
    Request,
    Response,
    Step,
    error_response,
    find_member,
    fresh_member_id,
    holds_member_id,
    is_behind,
    mentioned_member_ids,
    stored_group,
    sync_response,
    with_consumer,
    with_group,
    without_member,
)

if TYPE_CHECKING:
    from kmc.models.group.config import GroupConfig


class CoordinatorSide:
    """The coordinator's half of :class:`kmc.models.group.model.GroupModel`."""

    config: GroupConfig

    # -- the coordinator: JoinGroup --------------------------------------------------------------
    def _handle_join(self, s: GroupState, c: int, request: Request) -> tuple[str, GroupState]:
        s = with_consumer(s, c, s.consumers[c]._replace(request=None))
        group = s.group
        if group.state == DEAD:
            response = error_response("JoinGroup", COORDINATOR_NOT_AVAILABLE)
            return COORDINATOR_NOT_AVAILABLE, self._respond(s, c, response)
        instance = self.instance_id(c)
        if request.memberId == NO_MEMBER:
            return self._join_new_member(s, c, request, instance)
        if request.memberId in group.pendingMembers:
            s = with_group(s, group._replace(pendingMembers=group.pendingMembers - {request.memberId}))
            return NONE, self._add_member_and_rebalance(s, c, request.memberId, instance, request.metadata)
        error = self._member_error(group, request.memberId, instance)
        if error != NONE:
            return error, self._respond(s, c, error_response("JoinGroup", error))
        member = find_member(group, request.memberId)
        assert member is not None
        parked = member._replace(
            metadata=request.metadata,
            awaitingJoin=True,
            consumer=c,
            incarnation=s.consumers[c].incarnation,
            connected=True,
        )
        if group.state == PREPARING_REBALANCE:
            return NONE, self._try_complete_join(self._update_member(s, parked))
        if group.state == COMPLETING_REBALANCE:
            if member.metadata == request.metadata:
                return NONE, self._respond(s, c, self._join_response(group, member.memberId))
            return NONE, self._prepare_rebalance(self._update_member(s, parked))
        # Stable: the leader rejoining, or a follower whose subscription changed, starts a rebalance
        if member.memberId == group.leaderId or member.metadata != request.metadata:
            return NONE, self._prepare_rebalance(self._update_member(s, parked))
        return NONE, self._respond(s, c, self._join_response(group, member.memberId))

    def _join_new_member(self, s: GroupState, c: int, request: Request, instance: str | None) -> tuple[str, GroupState]:
        group = s.group
        new_id = fresh_member_id(c, mentioned_member_ids(s))
        if instance is not None:
            old = next((m for m in group.members if m.groupInstanceId == instance), None)
            if old is not None:
                return NONE, self._replace_static_member(s, c, old, new_id, request)
            return NONE, self._add_member_and_rebalance(s, c, new_id, instance, request.metadata)
        if self.config.require_known_member_id:
            s = with_group(s, group._replace(pendingMembers=group.pendingMembers | {new_id}))
            response = error_response("JoinGroup", MEMBER_ID_REQUIRED)._replace(memberId=new_id)
            return MEMBER_ID_REQUIRED, self._respond(s, c, response)
        return NONE, self._add_member_and_rebalance(s, c, new_id, instance, request.metadata)

    def _add_member_and_rebalance(
        self, s: GroupState, c: int, member_id: str, instance: str | None, metadata: tuple[tuple[int, ...], int]
    ) -> GroupState:
        group = s.group
        member = GroupMember(
            member_id, instance, c, s.consumers[c].incarnation, metadata, True, False, frozenset(), isNew=True
        )
        members = tuple(sorted((*group.members, member)))
        leader = group.leaderId or member_id
        added = group.newMemberAdded or (group.state == PREPARING_REBALANCE and group.generationId == 0)
        s = with_group(s, group._replace(members=members, leaderId=leader, newMemberAdded=added))
        return self._maybe_prepare_rebalance(s)

    def _replace_static_member(
        self, s: GroupState, c: int, old: GroupMember, new_id: str, request: Request
    ) -> GroupState:
        """KIP-345: a known group.instance.id joins with no member id (``updateStaticMemberAndRebalance``)."""
        group = s.group
        if not self.config.fence_replaced_static_member and group.state != STABLE:
            # Before KAFKA-8500 the id was replaced only in Stable: otherwise the joining process took
            # over the old member id (``updateMemberAndRebalance``), its callback in place of the old one.
            taken = old._replace(
                consumer=c,
                incarnation=s.consumers[c].incarnation,
                metadata=request.metadata,
                awaitingJoin=True,
                connected=True,
            )
            return self._maybe_prepare_rebalance(self._update_member(s, taken))
        # The old id's parked callbacks complete with FENCED_INSTANCE_ID (KAFKA-8500).
        s = self._fence_parked(s, old, c)
        group = s.group
        new = old._replace(
            memberId=new_id,
            consumer=c,
            incarnation=s.consumers[c].incarnation,
            connected=True,
            metadata=request.metadata,
            awaitingJoin=True,
            awaitingSync=False,
            isNew=False,
        )
        members = tuple(sorted((*(m for m in group.members if m.memberId != old.memberId), new)))
        leader = new_id if group.leaderId == old.memberId else group.leaderId
        pending_sync = group.pendingSyncMembers - {old.memberId}
        if old.memberId in group.pendingSyncMembers:
            pending_sync |= {new_id}
        s = with_group(s, group._replace(members=members, leaderId=leader, pendingSyncMembers=pending_sync))
        group = s.group
        if group.state == STABLE:
            if self.config.persist_static_replacement:
                s = with_group(s, group._replace(stored=stored_group(group)))
            s = self._update_member(s, new._replace(awaitingJoin=False))
            # KIP-814: a static leader rejoining a Stable group is told to skip the assignment
            return self._respond(s, c, self._join_response(s.group, new_id)._replace(members=()))
        if group.state == COMPLETING_REBALANCE:
            if self.config.rebalance_static_rejoin_in_completing:
                return self._prepare_rebalance(s)
            s = self._update_member(s, new._replace(awaitingJoin=False))
            return self._respond(s, c, self._join_response(s.group, new_id))
        return self._try_complete_join(s)  # PreparingRebalance: park

    def _fence_parked(self, s: GroupState, old: GroupMember, c: int) -> GroupState:
        if not (old.awaitingJoin or old.awaitingSync):
            return s
        if old.consumer == c and old.incarnation == s.consumers[c].incarnation:
            # The same process, whose request timed out (``slow_coordinator``): the client closed
            # that connection (NetworkClient disconnects on a request timeout), the answer is lost.
            return self._update_member(s, old._replace(awaitingJoin=False, awaitingSync=False, connected=True))
        api = "JoinGroup" if old.awaitingJoin else "SyncGroup"
        return self._deliver(s, old, error_response(api, FENCED_INSTANCE_ID))

    def _join_response(self, group: Group, member_id: str) -> Response:
        members: tuple = ()
        if member_id == group.leaderId:
            members = tuple((m.memberId, m.groupInstanceId, m.metadata) for m in group.members)
        return Response("JoinGroup", NONE, member_id, group.generationId, group.leaderId, members, frozenset())

    def _maybe_prepare_rebalance(self, s: GroupState) -> GroupState:
        if s.group.state in (STABLE, COMPLETING_REBALANCE, EMPTY):
            return self._prepare_rebalance(s)
        return self._try_complete_join(s)

    def _prepare_rebalance(self, s: GroupState) -> GroupState:
        group = s.group
        if group.state == COMPLETING_REBALANCE:  # parked SyncGroups get REBALANCE_IN_PROGRESS
            for m in group.members:
                if m.awaitingSync:
                    s = self._deliver(s, m, error_response("SyncGroup", REBALANCE_IN_PROGRESS))
            group = s.group
            members = tuple(m._replace(assignment=frozenset(), awaitingSync=False) for m in group.members)
            group = group._replace(members=members)
        initial = group.state == EMPTY and self.config.initial_rebalance_delay
        group = group._replace(
            state=PREPARING_REBALANCE,
            pendingSyncMembers=frozenset(),
            joinDelay="initial" if initial else "join",
            delayExtensionsLeft=self.config.delay_extensions if initial else 0,
            newMemberAdded=False if initial else group.newMemberAdded,
        )
        return self._try_complete_join(with_group(s, group))

    def _try_complete_join(self, s: GroupState) -> GroupState:
        group = s.group
        if group.state != PREPARING_REBALANCE or group.joinDelay == "initial":
            return s  # InitialDelayedJoin never completes early
        if all(m.awaitingJoin for m in group.members) and not self._pending_blocking(group):
            return self._complete_join(s)
        return s

    def _complete_join(self, s: GroupState) -> GroupState:
        """``onCompleteJoin``: drop dynamic members that did not rejoin, then the next generation."""
        group = s.group
        members = tuple(m for m in group.members if m.awaitingJoin or m.groupInstanceId is not None)
        if members and not any(m.awaitingJoin for m in members):
            return s  # only static members that did not rejoin: another DelayedJoin
        leader = group.leaderId
        if not any(m.memberId == leader and m.awaitingJoin for m in members):
            leader = next((m.memberId for m in members if m.awaitingJoin), NO_MEMBER)
        generation = group.generationId + 1
        if not members:
            empty = group._replace(
                state=EMPTY,
                generationId=generation,
                leaderId=NO_MEMBER,
                members=(),
                pendingSyncMembers=frozenset(),
                joinDelay="",
                newMemberAdded=False,
            )
            return with_group(s, empty._replace(stored=stored_group(empty)))
        group = group._replace(
            state=COMPLETING_REBALANCE,
            generationId=generation,
            leaderId=leader,
            members=tuple(m._replace(awaitingJoin=False, isNew=False) for m in members),
            pendingSyncMembers=frozenset(m.memberId for m in members),
            joinDelay="",
            newMemberAdded=False,
        )
        s = with_group(s, group)
        for m in members:
            if m.awaitingJoin:
                s = self._deliver(s, m, self._join_response(group, m.memberId))
        return s

    # -- the coordinator: SyncGroup --------------------------------------------------------------
    def _handle_sync(self, s: GroupState, c: int, request: Request) -> tuple[str, GroupState]:
        s = with_consumer(s, c, s.consumers[c]._replace(request=None))
        group = s.group
        if group.state == DEAD:
            response = error_response("SyncGroup", COORDINATOR_NOT_AVAILABLE)
            return COORDINATOR_NOT_AVAILABLE, self._respond(s, c, response)
        error = self._member_error(group, request.memberId, self.instance_id(c))
        if error == NONE and request.generationId != group.generationId:
            error = ILLEGAL_GENERATION
        if error == NONE and group.state == PREPARING_REBALANCE:
            error = REBALANCE_IN_PROGRESS
        if error == NONE and group.state == EMPTY:
            error = UNKNOWN_MEMBER_ID
        if error != NONE:
            return error, self._respond(s, c, error_response("SyncGroup", error))
        member = find_member(group, request.memberId)
        assert member is not None
        group = group._replace(pendingSyncMembers=group.pendingSyncMembers - {member.memberId})
        s = with_group(s, group)
        if group.state == STABLE:
            return NONE, self._respond(s, c, sync_response(member.assignment))
        # CompletingRebalance: park; the leader's assignment is stored, then everyone is answered.
        synced = member._replace(awaitingSync=True, consumer=c, incarnation=s.consumers[c].incarnation, connected=True)
        s = self._update_member(s, synced)
        if member.memberId != group.leaderId:
            return NONE, s
        given = dict(request.assignment)
        members = tuple(m._replace(assignment=given.get(m.memberId, frozenset())) for m in s.group.members)
        group = s.group._replace(members=members, state=STABLE)
        group = group._replace(stored=stored_group(group))
        s = with_group(s, group)
        for m in group.members:
            if m.awaitingSync:
                s = self._deliver(s, m, sync_response(m.assignment))
        return NONE, s

    # -- the coordinator: timers and removal ------------------------------------------------------
    def _coordinator_timers(self, s: GroupState, out: list[Step]) -> None:
        group = s.group
        if group.state == PREPARING_REBALANCE and group.joinDelay == "initial":
            if group.newMemberAdded and group.delayExtensionsLeft > 0:
                extended = group._replace(newMemberAdded=False, delayExtensionsLeft=group.delayExtensionsLeft - 1)
                out.append((self._act("InitialDelayExpired"), with_group(s, extended)))
            else:
                nxt = self._complete_join(with_group(s, group._replace(joinDelay="join")))
                out.append((self._act("InitialDelayExpired"), nxt))
        instant = self.config.join_group_v0 and not self.config.v0_rebalance_timeout  # KAFKA-8653: 0 ms
        if group.state == PREPARING_REBALANCE and group.joinDelay == "join":
            missing = [m for m in group.members if not m.awaitingJoin]
            pending = self._pending_blocking(group)
            if (missing or pending) and (instant or self._may_expire(s, missing, pending)):
                nxt = self._complete_join(s)
                if nxt.group.state != PREPARING_REBALANCE:
                    out.append((self._act("RebalanceTimeout"), nxt))
        if self.config.delayed_sync and group.state in (COMPLETING_REBALANCE, STABLE) and group.pendingSyncMembers:
            late = [m for m in group.members if m.memberId in group.pendingSyncMembers]
            if self._leader_cannot_assign(group):  # it keeps its session, but never syncs
                waiting = [m for m in late if m.memberId != group.leaderId]
            else:
                waiting = late
            if instant or self._may_expire(s, waiting, frozenset()):
                nxt = s
                for m in late:
                    nxt = with_group(nxt, without_member(nxt.group, m.memberId))
                nxt = self._prepare_rebalance(with_group(nxt, nxt.group._replace(pendingSyncMembers=frozenset())))
                out.append((self._act("SyncTimeout"), nxt))
        for m in group.members:
            if m.isNew and m.awaitingJoin:
                # KAFKA-7610: a new member's parked JoinGroup keeps no session (the client has no member
                # id to heartbeat with); it is completed after the new-member join timeout instead.
                # Before, a parked JoinGroup kept its member alive until the join completed.
                abandoned = not m.connected or self._may_expire(s, [m], frozenset(), session=True)
                if self.config.new_member_join_timeout and abandoned:
                    nxt = self._remove_member_and_update_group(s, m.memberId)
                    out.append((self._act("NewMemberJoinTimeout", m.memberId), nxt))
            elif not (m.awaitingJoin or m.awaitingSync):
                if self._may_expire(s, [m], frozenset(), session=True):
                    removed = self._remove_member_and_update_group(s, m.memberId)
                    out.append((self._act("SessionTimeout", m.memberId), removed))
                elif self.config.consumer_pauses and s.faults < self.config.max_faults:
                    # the session timer of a running consumer fires: it paused longer than its timeout
                    removed = self._remove_member_and_update_group(s, m.memberId)
                    out.append((self._act("ConsumerPause", m.memberId), removed._replace(faults=removed.faults + 1)))
        for member_id in sorted(group.pendingMembers):
            if self._may_expire(s, [], frozenset({member_id})):
                nxt = with_group(s, group._replace(pendingMembers=group.pendingMembers - {member_id}))
                out.append((self._act("PendingMemberTimeout", member_id), self._try_complete_join(nxt)))

    def _may_expire(
        self, s: GroupState, members: list[GroupMember], pending: frozenset[str], session: bool = False
    ) -> bool:
        """A timer that waits for these members may fire: always with timeouts=any; with
        timeouts=crashed only if none of them has a running consumer behind it (a running consumer
        heartbeats, joins and syncs in time). For the session timer a stalled consumer is running:
        its heartbeat thread keeps the session alive (there is none before KIP-62, JoinGroup v0)."""
        if self.config.timeouts == "any":
            return True
        heartbeat_thread = session and not self.config.join_group_v0
        for m in members:
            me = s.consumers[m.consumer]
            alive = me.phase not in (STOPPED, FENCED) and me.incarnation == m.incarnation
            if alive and is_behind(me, m) and (heartbeat_thread or not me.stalled):
                return False
        return not any(holds_member_id(me, member_id) for member_id in pending for me in s.consumers)

    def _pending_blocking(self, group: Group) -> frozenset[str]:
        """The KIP-394 pending member ids that hold the join open (``hasAllMembersJoined``)."""
        return group.pendingMembers if self.config.pending_members_block_join else frozenset()

    def _remove_member_and_update_group(self, s: GroupState, member_id: str) -> GroupState:
        group = s.group
        member = find_member(group, member_id)
        assert member is not None
        if member.awaitingJoin or member.awaitingSync:
            api = "JoinGroup" if member.awaitingJoin else "SyncGroup"
            s = self._deliver(s, member, error_response(api, UNKNOWN_MEMBER_ID))
        s = with_group(s, without_member(s.group, member_id))
        if s.group.state in (STABLE, COMPLETING_REBALANCE):
            return self._prepare_rebalance(s)
        return self._try_complete_join(s)

    # -- coordinator failover (GroupMetadataManager) ---------------------------------------------
    def _unload(self, s: GroupState) -> GroupState:
        """Leadership of the group's __consumer_offsets partition moves: the old coordinator marks
        the group Dead (``removeGroupsForPartition``) and parked callbacks get NOT_COORDINATOR."""
        for m in s.group.members:
            if m.awaitingJoin or m.awaitingSync:
                api = "JoinGroup" if m.awaitingJoin else "SyncGroup"
                s = self._deliver(s, m, error_response(api, NOT_COORDINATOR))
        members = tuple(m._replace(isNew=False, connected=True) for m in s.group.members)  # a group nobody reads
        dead = s.group._replace(
            state=DEAD, members=members, pendingSyncMembers=frozenset(), pendingMembers=frozenset(), joinDelay=""
        )
        return GroupState(dead, s.consumers, s.faults + 1)

    def _load(self, s: GroupState) -> GroupState:
        """The new coordinator loads the last group record (``loadGroupsAndOffsets``): Stable if it
        has members, else Empty; nothing that was not written survives."""
        stored = s.group.stored
        if stored is None:
            group = Group(EMPTY, 0, NO_MEMBER, (), frozenset(), frozenset(), "", False, 0, None)
        else:
            state = STABLE if stored.members else EMPTY
            group = Group(
                state,
                stored.generationId,
                stored.leaderId,
                stored.members,
                frozenset(),
                frozenset(),
                "",
                False,
                0,
                stored,
            )
        return s._replace(group=group)

    # -- helpers ---------------------------------------------------------------------------------
    def _respond(self, s: GroupState, c: int, response: Response) -> GroupState:
        return with_consumer(s, c, s.consumers[c]._replace(response=response))

    def _deliver(self, s: GroupState, member: GroupMember, response: Response) -> GroupState:
        """Complete a parked callback: the response reaches the consumer if its connection is still
        the one that sent the request."""
        current = find_member(s.group, member.memberId)
        if current is not None and (member.awaitingJoin or member.awaitingSync):
            s = self._update_member(s, current._replace(awaitingJoin=False, awaitingSync=False, connected=True))
        me = s.consumers[member.consumer]
        waiting = JOINING if response.api == "JoinGroup" else SYNCING
        connected = member.connected and me.incarnation == member.incarnation
        connected = connected and me.memberId in (member.memberId, NO_MEMBER)
        if connected and me.phase == waiting and me.request is None and me.response is None:
            return self._respond(s, member.consumer, response)
        return s

    def _update_member(self, s: GroupState, member: GroupMember) -> GroupState:
        group = s.group
        members = tuple(member if m.memberId == member.memberId else m for m in group.members)
        return with_group(s, group._replace(members=members))

    def _member_error(self, group: Group, member_id: str, instance: str | None) -> str:
        """``validateCurrentMember``."""
        if instance is not None:
            holder = next((m.memberId for m in group.members if m.groupInstanceId == instance), None)
            if holder is None:
                return UNKNOWN_MEMBER_ID
            if holder != member_id:
                return FENCED_INSTANCE_ID
            return NONE
        return NONE if find_member(group, member_id) is not None else UNKNOWN_MEMBER_ID

    def _leader_cannot_assign(self, group: Group) -> bool:
        """In CompletingRebalance the leader's assignor throws on the group's subscriptions: its
        rejoins (same subscription) get the same JoinGroup response, so it never sends SyncGroup."""
        if group.state != COMPLETING_REBALANCE or group.leaderId not in group.pendingSyncMembers:
            return False
        return self._run_assignor(self._join_response(group, group.leaderId).members) is None
