"""The consumers of the `group` model (``ConsumerCoordinator`` / ``AbstractCoordinator``): joining,
syncing, heartbeats, commits, the errors they get back, crashes and restarts."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kmc.checker import Action
from kmc.models.group.assignors import AssignorStateError, Member, assign, transferring
from kmc.models.group.state import (
    ASSIGNOR_FAILED,
    COMPLETING_REBALANCE,
    CONSUMING,
    COORDINATOR_NOT_AVAILABLE,
    DEAD,
    FENCED,
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    JOINING,
    MEMBER_ID_REQUIRED,
    NO_GENERATION,
    NO_MEMBER,
    NONE,
    NOT_COORDINATOR,
    PREPARING_REBALANCE,
    REBALANCE_IN_PROGRESS,
    STOPPED,
    SYNCING,
    UNJOINED,
    UNKNOWN_MEMBER_ID,
    Consumer,
    Group,
    GroupState,
    Request,
    Response,
    Step,
    disconnected,
    find_member,
    is_parked,
    with_consumer,
)

if TYPE_CHECKING:
    from kmc.models.group.config import GroupConfig


class OwnSteps(NamedTuple):
    """A consumer's steps that read nothing but the consumer: each action and the consumer after it."""

    start: tuple[Action, Consumer]
    """ConsumerStart (taken only when stopped)."""
    crash: tuple[Action, Consumer]
    send_join: tuple[Action, Consumer] | None
    """SendJoinGroup: unjoined, or consuming and asked to rejoin, with nothing on the wire."""
    receive: tuple[Action, Consumer] | None
    stall: tuple[Action, Consumer] | None


class ClientSide:
    """The consumer's half of :class:`kmc.models.group.model.GroupModel`."""

    config: GroupConfig
    sticky: bool
    cooperative: bool
    claims_generation: str
    claimless_generation_matters: bool
    validates_cooperative_assignment: bool
    _assignments: dict[tuple, tuple[tuple[str, frozenset[int]], ...] | None]
    _own_steps_of: dict[tuple[int, Consumer], OwnSteps]

    def _act(self, name: str, *values: object) -> Action: ...

    def _consumer_steps(self, s: GroupState, c: int, me: Consumer, out: list[Step]) -> None:
        own = self._own_steps_of.get((c, me))
        if own is None:
            own = self._own_steps_of[(c, me)] = self._own_steps(c, me)
        consumers, faults = s.consumers, s.faults
        before, after = consumers[:c], consumers[c + 1 :]
        may_fail = faults < self.config.max_faults
        if me.phase == STOPPED:
            action, started = own.start
            out.append((action, GroupState(s.group, (*before, started, *after), faults)))
            return
        if me.phase == FENCED:
            return
        if me.stalled:  # only its request already on the wire is still handled
            if me.request is not None:
                handler = self._handle_join if me.request.api == "JoinGroup" else self._handle_sync
                error, nxt = handler(s, c, me.request)
                out.append((self._act(f"Handle{me.request.api}", c, error), nxt))
            if may_fail:
                action, crashed = own.crash
                out.append((action, GroupState(s.group, (*before, crashed, *after), faults + 1)))
            return
        if own.send_join is not None and me.phase == UNJOINED:
            action, joining = own.send_join
            out.append((action, GroupState(s.group, (*before, joining, *after), faults)))
        if me.request is not None:
            handler = self._handle_join if me.request.api == "JoinGroup" else self._handle_sync
            error, nxt = handler(s, c, me.request)
            out.append((self._act(f"Handle{me.request.api}", c, error), nxt))
        if own.receive is not None:
            action, received = own.receive
            out.append((action, GroupState(s.group, (*before, received, *after), faults)))
        if self._request_may_time_out(s, c, me):
            abandoned = with_consumer(s, c, me._replace(phase=UNJOINED))._replace(faults=s.faults + 1)
            abandoned = abandoned._replace(group=disconnected(abandoned.group, c, me.incarnation))
            out.append((self._act("RequestTimeout", c), abandoned))
        if me.phase == CONSUMING and me.request is None and me.response is None:
            if own.send_join is not None:  # rejoinRequested
                action, joining = own.send_join
                out.append((action, GroupState(s.group, (*before, joining, *after), faults)))
            error = self._heartbeat_error(s.group, me, c)
            if error != NONE:
                out.append((self._act("Heartbeat", c, error), self._on_error(s, c, me, error)))
            if me.owned:
                out.append(self._offset_commit(s, c, me))
        if may_fail:
            action, crashed = own.crash
            out.append((action, GroupState(s.group, (*before, crashed, *after), faults + 1)))
            if own.stall is not None:
                action, stalled = own.stall
                out.append((action, GroupState(s.group, (*before, stalled, *after), faults + 1)))
            if me.phase == CONSUMING and me.memberId and not self.config.static_membership:
                out.append((self._act("LeaveGroup", c), self._leave(s, c, me)))

    def _own_steps(self, c: int, me: Consumer) -> OwnSteps:
        """What consumer ``c`` does whatever the group and the other consumers hold: the steps that
        change nothing but the consumer, each with the consumer after it."""
        mine = GroupState(None, (me,), 0)  # type: ignore[arg-type]  # only the consumer is read
        start = (self._act("ConsumerStart", c), self._start(mine, 0).consumers[0])
        crash = (self._act("ConsumerCrash", c), self._crash(mine, 0).consumers[0])
        send_join = receive = stall = None
        idle = me.request is None and me.response is None
        if (me.phase == UNJOINED and idle) or (me.phase == CONSUMING and idle and me.rejoinRequested):
            send_join = (self._act("SendJoinGroup", c), self._send_join(mine, 0, me).consumers[0])
        if me.response is not None:
            api = me.response.api
            error = me.response.error
            if api == "JoinGroup" and error == NONE and self._assignor_throws(me.response):
                error = ASSIGNOR_FAILED  # what the leader's poll() throws
            receive = (self._act(f"Receive{api}", c, error), self._receive(mine, 0, me).consumers[0])
        if self.config.poll_stalls:
            stall = (self._act("ConsumerStall", c), me._replace(stalled=True))
        return OwnSteps(start, crash, send_join, receive, stall)

    def _request_may_time_out(self, s: GroupState, c: int, me: Consumer) -> bool:
        """``request.timeout.ms`` (for JoinGroup: the rebalance timeout plus 5 s) expires while the
        coordinator still holds the parked JoinGroup or SyncGroup. The coordinator answers every
        parked callback (on completion, removal, rebalance and unload) before the client's timer,
        so only a coordinator slower than that (``slow_coordinator``, a fault) leaves one unanswered.
        The client abandons the request (a late answer is dropped) and rejoins with its member id."""
        if not self.config.slow_coordinator or s.faults >= self.config.max_faults:
            return False
        waiting = me.phase in (JOINING, SYNCING) and me.request is None and me.response is None
        return waiting and is_parked(s.group, c, me)

    def _metadata(self, me: Consumer) -> tuple[tuple[int, ...], int]:
        """What the JoinGroup subscription says this consumer owned, and of which generation.
        Cooperative consumers send their owned partitions (``ownedPartitions``); the eager sticky
        assignor's user data holds its last assignment. Other eager assignors send nothing."""
        if self.cooperative:
            claimed = me.owned
        elif self.sticky:
            claimed = me.assigned
        else:
            return ((), NO_GENERATION)
        source = self.claims_generation
        if source == "none" or not (claimed or self.claimless_generation_matters):
            generation = NO_GENERATION
        elif source == "current":
            generation = me.generationId
        else:
            generation = me.assignedGeneration
        return (tuple(sorted(claimed)), generation)

    def _send_join(self, s: GroupState, c: int, me: Consumer) -> GroupState:
        """``onJoinPrepare`` then JoinGroup: eager consumers revoke everything first."""
        owned = me.owned if self.cooperative else frozenset()
        me = me._replace(owned=owned, rejoinRequested=False)
        request = Request("JoinGroup", me.memberId, me.generationId, self._metadata(me), ())
        return with_consumer(s, c, me._replace(phase=JOINING, request=request))

    def _receive(self, s: GroupState, c: int, me: Consumer) -> GroupState:
        response = me.response
        assert response is not None
        me = me._replace(response=None)
        if response.error != NONE:
            return self._on_error(s, c, me, response.error, response)
        if response.api == "JoinGroup":
            me = me._replace(memberId=response.memberId, generationId=response.generationId, phase=SYNCING)
            assignment: tuple[tuple[str, frozenset[int]], ...] | None = ()
            if response.leaderId == response.memberId and response.members:
                assignment = self._run_assignor(response.members)
            if assignment is None:
                # ``onLeaderElected`` threw: no SyncGroup; the exception leaves poll() and the next
                # poll rejoins with the new generation and member id (no onJoinPrepare again).
                return with_consumer(s, c, me._replace(phase=UNJOINED))
            request = Request("SyncGroup", me.memberId, me.generationId, ((), NO_GENERATION), assignment)
            return with_consumer(s, c, me._replace(request=request))
        # SyncGroup: onJoinComplete
        new = response.assignment
        if self.cooperative:
            revoked = me.owned - new
            me = me._replace(owned=new, assigned=new, phase=CONSUMING, rejoinRequested=bool(revoked))
        else:
            me = me._replace(owned=new, assigned=new, phase=CONSUMING)
        if self.claims_generation == "assignment":  # the assignor's ``onAssignment``
            me = me._replace(assignedGeneration=me.generationId)
        return with_consumer(s, c, me)

    def _run_assignor(
        self, subscriptions: tuple[tuple[str, str | None, tuple[tuple[int, ...], int]], ...]
    ) -> tuple[tuple[str, frozenset[int]], ...] | None:
        """The leader's ``performAssignment``; None if the assignor throws (``IllegalStateException``)."""
        if subscriptions not in self._assignments:
            members = [
                Member(member_id, ("t",), tuple(("t", p) for p in meta[0]), meta[1], instance)
                for member_id, instance, meta in subscriptions
            ]
            try:
                result = assign(
                    self.config.assignor,
                    members,
                    {"t": self.config.partitions},
                    sanitise=self.config.sanitise_owned_partitions,
                    older_claims=self.config.keep_uncontested_older_claims,
                )
            except AssignorStateError:
                self._assignments[subscriptions] = None
            else:
                if self.validates_cooperative_assignment and transferring(members, result):
                    # ``validateCooperativeAssignment``: a partition given to one member while
                    # another still claims it throws IllegalStateException, like the assignor
                    self._assignments[subscriptions] = None
                else:
                    given = tuple(sorted((m, frozenset(p for _, p in parts)) for m, parts in result.items()))
                    self._assignments[subscriptions] = given
        return self._assignments[subscriptions]

    def _assignor_throws(self, response: Response) -> bool:
        leader = response.leaderId == response.memberId and bool(response.members)
        return leader and self._run_assignor(response.members) is None

    def _on_error(
        self, s: GroupState, c: int, me: Consumer, error: str, response: Response | None = None
    ) -> GroupState:
        """What the client does with an error code from any coordinator API."""
        if error == MEMBER_ID_REQUIRED:
            assert response is not None
            me = me._replace(memberId=response.memberId, phase=UNJOINED)
        elif error == REBALANCE_IN_PROGRESS:
            me = me._replace(phase=UNJOINED, request=None)
            if response is not None and response.api == "SyncGroup" and self.config.sync_rebalance_resets_generation:
                # KAFKA-13891: no assignment in this generation, so none of the owned partitions is sure
                me = me._replace(generationId=NO_GENERATION, owned=self._owned_after_reset(me, response))
        elif error == ILLEGAL_GENERATION:  # onPartitionsLost, keep the member id
            me = me._replace(generationId=NO_GENERATION, owned=self._owned_after_reset(me, response), phase=UNJOINED)
        elif error == UNKNOWN_MEMBER_ID:
            me = me._replace(
                memberId=NO_MEMBER,
                generationId=NO_GENERATION,
                owned=self._owned_after_reset(me, response),
                phase=UNJOINED,
            )
        elif error == FENCED_INSTANCE_ID:  # fatal: the application's poll() throws
            me = me._replace(phase=FENCED, owned=frozenset())
        elif error in (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE):  # find the coordinator, retry
            me = me._replace(phase=UNJOINED)
        else:
            raise AssertionError(f"unexpected error {error}")
        return with_consumer(s, c, me._replace(rejoinRequested=False))

    def _owned_after_reset(self, me: Consumer, response: Response | None) -> frozenset[int]:
        """A reset generation makes the next ``onJoinPrepare`` call ``onPartitionsLost``. Before
        KAFKA-12983 a JoinGroup or SyncGroup response met during a rebalance did not run
        ``onJoinPrepare`` again (``needsJoinPrepare`` stayed false), so the member kept claiming
        what it owned."""
        if response is not None and not self.config.join_prepare_after_reset:
            return me.owned
        return frozenset()

    def _heartbeat_error(self, group: Group, me: Consumer, c: int) -> str:
        if group.state == DEAD:
            return NONE  # COORDINATOR_NOT_AVAILABLE: the client looks for the coordinator, nothing else
        error = self._member_error(group, me.memberId, self.instance_id(c))
        if error != NONE:
            return error
        if me.generationId != group.generationId:
            return ILLEGAL_GENERATION
        if group.state == PREPARING_REBALANCE:
            return REBALANCE_IN_PROGRESS
        return NONE

    def _offset_commit(self, s: GroupState, c: int, me: Consumer) -> Step:
        """OffsetCommit of the owned partitions: fenced by (memberId, generation) only (§1.9)."""
        group = s.group
        if group.state == DEAD:
            return self._act("OffsetCommit", c, me.memberId, me.generationId, COORDINATOR_NOT_AVAILABLE), s
        error = self._member_error(group, me.memberId, self.instance_id(c))
        if error == NONE and me.generationId != group.generationId:
            error = ILLEGAL_GENERATION
        if error == NONE and group.state == COMPLETING_REBALANCE:
            error = REBALANCE_IN_PROGRESS
        action = self._act("OffsetCommit", c, me.memberId, me.generationId, error)
        if error == NONE:
            return action, s
        return action, self._on_error(s, c, me, error)

    def _crash(self, s: GroupState, c: int) -> GroupState:
        me = s.consumers[c]
        stopped = Consumer(
            STOPPED, NO_MEMBER, NO_GENERATION, frozenset(), frozenset(), None, None, me.incarnation, False
        )
        return with_consumer(s, c, stopped)._replace(faults=s.faults + 1)

    def _start(self, s: GroupState, c: int) -> GroupState:
        me = s.consumers[c]
        fresh = Consumer(
            UNJOINED, NO_MEMBER, NO_GENERATION, frozenset(), frozenset(), None, None, me.incarnation + 1, False
        )
        return with_consumer(s, c, fresh)

    def _leave(self, s: GroupState, c: int, me: Consumer) -> GroupState:
        """A dynamic consumer closes: it revokes everything and sends LeaveGroup."""
        s = with_consumer(
            s,
            c,
            me._replace(
                phase=STOPPED,
                memberId=NO_MEMBER,
                generationId=NO_GENERATION,
                owned=frozenset(),
                assigned=frozenset(),
                assignedGeneration=NO_GENERATION,
            ),
        )
        s = s._replace(faults=s.faults + 1)
        if s.group.state == DEAD or find_member(s.group, me.memberId) is None:
            return s
        return self._remove_member_and_update_group(s, me.memberId)
