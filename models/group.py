"""The classic consumer-group protocol: the group coordinator and the consumers that join it.

One group, one subscribed topic with ``partitions`` partitions, ``consumers`` client processes.
The coordinator follows ``GroupCoordinator``/``GroupMetadata`` (kafka-protocols.md §1): the five
group states and their legal transitions, JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit
with their error codes, member ids, KIP-394 pending members, generations, the KIP-134 initial
delay, the rebalance and session timeouts and DelayedSync as expiry actions, static membership
(KIP-345) and coordinator failover with exactly what is persisted. The consumers follow
``ConsumerCoordinator``: eager (revoke everything before JoinGroup) or cooperative (KIP-429:
keep owned partitions, revoke only what the new assignment takes away, then rejoin), with the
group leader running one of the assignors of :mod:`kmc.models.assignors`.

Requests are messages: a consumer has at most one JoinGroup or SyncGroup outstanding; the
coordinator handles it when it arrives and either answers at once or parks the callback, as the
Kafka code does, and completes it later. Heartbeat, LeaveGroup and OffsetCommit are answered in
the step that sends them. Wall-clock time is abstracted: a timer may expire whenever the
consumer behind it could have missed it — with ``timeouts=crashed`` only when that consumer is
not running, with ``timeouts=any`` at any moment (slow consumers, long GC pauses).

Two abstractions keep the state space finite without changing any behaviour: a new member id is
the smallest number not mentioned anywhere in the state (Kafka mints a UUID: it is only ever
compared for equality), and generations are shifted so the smallest one in the state is 1 when
none is 0 (they are only compared with each other, plus one, or with 0 and -1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from kmc.checker import Action, Model, Preset, param
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.checker.liveness import WF

from .assignors import STRATEGIES, AssignorStateError, Member, assign

# -- group states (ClassicGroupState) ------------------------------------------------------------
EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"

VALID_PREVIOUS_STATES = {
    EMPTY: frozenset({PREPARING_REBALANCE}),
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
}
"""``ClassicGroupState``'s valid previous states: the only transitions the coordinator makes."""

# -- error codes ---------------------------------------------------------------------------------
NONE = "NONE"
UNKNOWN_MEMBER_ID = "UNKNOWN_MEMBER_ID"
ILLEGAL_GENERATION = "ILLEGAL_GENERATION"
REBALANCE_IN_PROGRESS = "REBALANCE_IN_PROGRESS"
MEMBER_ID_REQUIRED = "MEMBER_ID_REQUIRED"
FENCED_INSTANCE_ID = "FENCED_INSTANCE_ID"
NOT_COORDINATOR = "NOT_COORDINATOR"
COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE"

ASSIGNOR_FAILED = "IllegalStateException"
"""Not an error code: the exception the leader's assignor throws out of ``poll()``."""

NO_GENERATION = -1
NO_MEMBER = ""

# -- consumer phases (the client's MemberState plus what it is waiting for) ----------------------
STOPPED = "stopped"
UNJOINED = "unjoined"
JOINING = "joining"
SYNCING = "syncing"
CONSUMING = "stable"
FENCED = "fenced"


class GroupMember(NamedTuple):
    """A member as the coordinator holds it (``MemberMetadata``)."""

    memberId: str
    groupInstanceId: str | None
    consumer: int
    """Which consumer process holds the connection (for delivering parked responses)."""
    incarnation: int
    metadata: tuple[tuple[int, ...], int]
    """The subscription's owned partitions and generation, as the sticky assignors read them."""
    awaitingJoin: bool
    awaitingSync: bool
    assignment: frozenset[int]


class StoredGroup(NamedTuple):
    """The last group record written to __consumer_offsets: what a new coordinator loads."""

    generationId: int
    leaderId: str
    members: tuple[GroupMember, ...]
    """Every member's id, instance id, subscription and assignment (callbacks are not stored)."""


class Group(NamedTuple):
    state: str
    generationId: int
    leaderId: str
    members: tuple[GroupMember, ...]
    """Sorted by memberId."""
    pendingMembers: frozenset[str]
    """KIP-394: member ids handed out with MEMBER_ID_REQUIRED, not yet joined."""
    pendingSyncMembers: frozenset[str]
    joinDelay: str
    """The delayed operation of PreparingRebalance: "initial" (KIP-134), "join", or "" (none)."""
    newMemberAdded: bool
    delayExtensionsLeft: int
    stored: StoredGroup | None


class Request(NamedTuple):
    """A JoinGroup or SyncGroup on its way to the coordinator."""

    api: str
    memberId: str
    generationId: int
    metadata: tuple[tuple[int, ...], int]
    assignment: tuple[tuple[str, frozenset[int]], ...]
    """SyncGroup from the leader: the assignment it computed, by member id."""


class Response(NamedTuple):
    api: str
    error: str
    memberId: str
    generationId: int
    leaderId: str
    members: tuple[tuple[str, str | None, tuple[tuple[int, ...], int]], ...]
    """JoinGroup response to the leader: every member's id, instance id and metadata."""
    assignment: frozenset[int]


class Consumer(NamedTuple):
    phase: str
    memberId: str
    generationId: int
    owned: frozenset[int]
    """The partitions this consumer is processing now."""
    assigned: frozenset[int]
    """The last assignment it received (the sticky assignor's user data)."""
    request: Request | None
    response: Response | None
    incarnation: int
    rejoinRequested: bool
    """Cooperative: revoked something in the last assignment, so it must rejoin."""
    stalled: bool = False
    """The application thread stopped polling; only the heartbeat thread runs (KIP-62)."""


class GroupState(NamedTuple):
    group: Group
    consumers: tuple[Consumer, ...]
    faults: int


Step = tuple[Action, GroupState]


@dataclass(frozen=True)
class GroupConfig:
    consumers: int = param(2, "consumer processes (each may join, crash and restart)", min=1, max=4)
    partitions: int = param(2, "partitions of the one subscribed topic", min=0, max=6)
    assignor: str = param("range", "the assignor the group leader runs", choices=STRATEGIES)
    rebalance_protocol: Literal["eager", "cooperative"] = param(
        "eager", "how consumers revoke: everything before JoinGroup, or only what moves (KIP-429)"
    )
    static_membership: bool = param(False, "consumers set group.instance.id (KIP-345)")
    require_known_member_id: bool = param(True, "KIP-394: a new member first gets MEMBER_ID_REQUIRED")
    initial_rebalance_delay: bool = param(True, "KIP-134: delay the first rebalance of an Empty group")
    delay_extensions: int = param(1, "KIP-134: how often the initial delay can be extended", min=0, max=3)
    delayed_sync: bool = param(True, "KAFKA-12890: remove members that never send SyncGroup")
    rebalance_static_rejoin_in_completing: bool = param(
        True, "KAFKA-9801: a static member rejoining in CompletingRebalance forces a rebalance"
    )
    sanitise_owned_partitions: bool = param(
        True,
        "KAFKA-12984, KAFKA-14639: the sticky assignors drop an owned partition claimed by an older "
        "generation (and by two members of one generation)",
    )
    fence_replaced_static_member: bool = param(
        True, "KAFKA-8500: a static member rejoining in any state gets a new member id; the old one is fenced"
    )
    duplicate_instance: bool = param(
        False, "a second process with consumer 0's group.instance.id may start (started twice, or back from a pause)"
    )
    persist_static_replacement: bool = param(
        True, "KAFKA-10284: persist the new member id of a static member that rejoins a Stable group"
    )
    timeouts: Literal["crashed", "any"] = param(
        "crashed", "which timers expire: only those of consumers that stopped, or any (slow consumers)"
    )
    max_faults: int = param(
        1, "consumer crashes, leaves, stalls, request timeouts and coordinator failovers in all", min=0, max=4
    )
    coordinator_failover: bool = param(True, "the coordinator may move (its partition's leader changes)")
    slow_coordinator: bool = param(
        False,
        "a fault: the client's request.timeout.ms expires while the coordinator still holds its JoinGroup or SyncGroup",
    )
    poll_stalls: bool = param(
        False, "a fault: the application stops polling for good while the heartbeat thread keeps its session alive"
    )
    max_generation: int = param(8, "bound on the (shifted) generation id (within_bounds)", min=1, max=16)


PRESETS = {
    "eager-range": Preset.of(
        "eager rebalancing with the range assignor: the default before Kafka 3.x clients",
        {"ExclusiveOwnership": "holds", "StableAssignmentCovers": "holds"},
    ),
    "cooperative-sticky": Preset.of(
        "KIP-429 incremental cooperative rebalancing with the cooperative-sticky assignor",
        {"ExclusiveOwnership": "holds"},
        assignor="cooperative-sticky",
        rebalance_protocol="cooperative",
    ),
    "cooperative-unsafe-assignor": Preset.of(
        "cooperative consumers whose assignor moves partitions in one round (it does not support COOPERATIVE)",
        {"ExclusiveOwnership": "violated"},
        assignor="sticky",
        rebalance_protocol="cooperative",
    ),
    "static": Preset.of(
        "static membership (KIP-345) with every later fix",
        {"NoLiveConsumerFenced": "holds", "StableAssignmentCovers": "holds"},
        static_membership=True,
    ),
    "slow-coordinator": Preset.of(
        "static members whose JoinGroup or SyncGroup outlives request.timeout.ms at the coordinator: the client "
        "abandons it and rejoins",
        {"NoLiveConsumerFenced": "holds", "RebalanceCompletes": "holds"},
        static_membership=True,
        slow_coordinator=True,
    ),
    "static-kafka-10284": Preset.of(
        "before KAFKA-10284: a static member's new id is not persisted, and a coordinator failover fences it",
        {"NoLiveConsumerFenced": "violated"},
        static_membership=True,
        persist_static_replacement=False,
        max_faults=2,
    ),
    "static-kafka-9801": Preset.of(
        "before KAFKA-9801: a static member rejoining in CompletingRebalance gets no assignment",
        {"StableAssignmentCovers": "violated"},
        static_membership=True,
        rebalance_static_rejoin_in_completing=False,
    ),
    "static-kafka-8500": Preset.of(
        "before KAFKA-8500: a second process with a known group.instance.id joining mid-rebalance takes over the "
        "old member id, and both processes consume as one member",
        {"OneProcessPerMemberId": "violated"},
        static_membership=True,
        duplicate_instance=True,
        fence_replaced_static_member=False,
    ),
    "kafka-12890": Preset.of(
        "before KAFKA-12890: a member that heartbeats but never sends SyncGroup keeps the group in CompletingRebalance",
        {"SyncCompletes": "violated"},
        delayed_sync=False,
        poll_stalls=True,
    ),
    "slow-member": Preset.of(
        "timers expire at any moment: a member that keeps missing its rebalance timeout",
        {"RebalanceCompletes": "violated"},
        timeouts="any",
        max_faults=0,
        partitions=1,
        max_generation=2,
    ),
}

ACTION_ARGS = {
    "SendJoinGroup": ("consumer",),
    "HandleJoinGroup": ("consumer", "error"),
    "HandleSyncGroup": ("consumer", "error"),
    "ReceiveJoinGroup": ("consumer", "error"),
    "ReceiveSyncGroup": ("consumer", "error"),
    "Heartbeat": ("consumer", "error"),
    "OffsetCommit": ("consumer", "memberId", "generationId", "error"),
    "LeaveGroup": ("consumer",),
    "ConsumerCrash": ("consumer",),
    "ConsumerStart": ("consumer",),
    "ConsumerStall": ("consumer",),
    "RequestTimeout": ("consumer",),
    "InitialDelayExpired": (),
    "RebalanceTimeout": (),
    "SyncTimeout": (),
    "SessionTimeout": ("memberId",),
    "PendingMemberTimeout": ("memberId",),
    "CoordinatorUnload": (),
    "CoordinatorLoad": (),
}
"""Every action of the model and the names of its arguments."""


class GroupModel(Model):
    name = "group"
    description = "the classic consumer-group coordinator with eager or cooperative consumers"
    Config = GroupConfig
    presets = PRESETS
    default_preset = "eager-range"
    spec_modules = ("kmc.specs.group",)
    fairness = (
        WF("Send*", each=True),
        WF("Handle*", each=True),
        WF("Receive*", each=True),
        WF("Heartbeat", each=True),
        WF("ConsumerStart", each=True),
        WF("InitialDelayExpired"),
        WF("RebalanceTimeout"),
        WF("SyncTimeout"),
        WF("SessionTimeout", each=True),
        WF("PendingMemberTimeout", each=True),
        WF("CoordinatorLoad"),
    )
    """Everything but the faults (crash, leave, stall, a slow coordinator, failover) and commits
    happens if it stays enabled."""

    config: GroupConfig

    def __init__(self, config: GroupConfig | None = None) -> None:
        super().__init__(config)
        self.partition_ids = frozenset(range(self.config.partitions))
        self.sticky = self.config.assignor in ("sticky", "cooperative-sticky")
        self.cooperative = self.config.rebalance_protocol == "cooperative"
        self._assignments: dict[tuple, tuple[tuple[str, frozenset[int]], ...] | None] = {}
        """The assignor's answer by subscriptions (it is deterministic), None where it throws."""

    def inactive_actions(self) -> tuple[str, ...]:
        """Actions this config turns off: coverage does not call them vacuous."""
        off = []
        if not self.config.slow_coordinator:
            off.append("RequestTimeout")
        if not self.config.poll_stalls:
            off.append("ConsumerStall")
        if self.config.static_membership:  # static members do not send LeaveGroup, nor get MEMBER_ID_REQUIRED
            off.append("LeaveGroup")
        if self.config.static_membership or not self.config.require_known_member_id:
            off.append("PendingMemberTimeout")
        if not self.config.delayed_sync:
            off.append("SyncTimeout")
        if not self.config.initial_rebalance_delay:
            off.append("InitialDelayExpired")
        if not self.config.coordinator_failover:
            off += ["CoordinatorUnload", "CoordinatorLoad"]
        if self.config.max_faults == 0:
            off += [
                "ConsumerCrash",
                "ConsumerStall",
                "LeaveGroup",
                "RequestTimeout",
                "CoordinatorUnload",
                "CoordinatorLoad",
            ]
            if not self.config.duplicate_instance:
                off.append("ConsumerStart")
        return tuple(dict.fromkeys(off))

    def _act(self, name: str, *values: object) -> Action:
        return Action.of(name, zip(ACTION_ARGS[name], values, strict=True))

    def instance_id(self, c: int) -> str | None:
        """Consumer c's group.instance.id; the duplicate process (the last one) shares consumer 0's."""
        if not self.config.static_membership:
            return None
        return "i0" if c == self.config.consumers else f"i{c}"

    @property
    def processes(self) -> int:
        """Consumer processes: one per consumer, and the duplicate of consumer 0 if there is one."""
        return self.config.consumers + (1 if self.config.duplicate_instance else 0)

    # -- init ----------------------------------------------------------------------------------
    def init_states(self) -> list[GroupState]:
        group = Group(EMPTY, 0, NO_MEMBER, (), frozenset(), frozenset(), "", False, 0, None)
        consumer = Consumer(UNJOINED, NO_MEMBER, NO_GENERATION, frozenset(), frozenset(), None, None, 0, False)
        consumers = (consumer,) * self.config.consumers
        if self.config.duplicate_instance:  # not running yet: ConsumerStart launches it
            consumers += (consumer._replace(phase=STOPPED),)
        return [GroupState(group, consumers, 0)]

    # -- next ----------------------------------------------------------------------------------
    def successors(self, s: GroupState) -> list[Step]:
        out: list[Step] = []
        for c, consumer in enumerate(s.consumers):
            self._consumer_steps(s, c, consumer, out)
        if s.group.state == DEAD:
            out.append((self._act("CoordinatorLoad"), self._load(s)))
        else:
            self._coordinator_timers(s, out)
            if self.config.coordinator_failover and s.faults < self.config.max_faults:
                out.append((self._act("CoordinatorUnload"), self._unload(s)))
        return [(a, _normalise(n)) for a, n in out]

    def within_bounds(self, s: GroupState) -> bool:
        """Generations stay finite only if bounded when timers can expire at any moment: a consumer
        can sit idle while the group moves on (its generation falls ever further behind)."""
        return _max_generation(s) < self.config.max_generation

    # -- consumers (ConsumerCoordinator / AbstractCoordinator) -----------------------------------
    def _consumer_steps(self, s: GroupState, c: int, me: Consumer, out: list[Step]) -> None:
        if me.phase == STOPPED:
            out.append((self._act("ConsumerStart", c), self._start(s, c)))
            return
        if me.phase == FENCED:
            return
        if me.stalled:  # only its request already on the wire is still handled
            if me.request is not None:
                handler = self._handle_join if me.request.api == "JoinGroup" else self._handle_sync
                error, nxt = handler(s, c, me.request)
                out.append((self._act(f"Handle{me.request.api}", c, error), nxt))
            if s.faults < self.config.max_faults:
                out.append((self._act("ConsumerCrash", c), self._crash(s, c)))
            return
        if me.phase == UNJOINED and me.request is None and me.response is None:
            out.append((self._act("SendJoinGroup", c), self._send_join(s, c, me)))
        if me.request is not None:
            handler = self._handle_join if me.request.api == "JoinGroup" else self._handle_sync
            error, nxt = handler(s, c, me.request)
            out.append((self._act(f"Handle{me.request.api}", c, error), nxt))
        if me.response is not None:
            api = me.response.api
            error = me.response.error
            if api == "JoinGroup" and error == NONE and self._assignor_throws(me.response):
                error = ASSIGNOR_FAILED  # what the leader's poll() throws
            out.append((self._act(f"Receive{api}", c, error), self._receive(s, c, me)))
        if self._request_may_time_out(s, c, me):
            abandoned = _set_consumer(s, c, me._replace(phase=UNJOINED))._replace(faults=s.faults + 1)
            out.append((self._act("RequestTimeout", c), abandoned))
        if me.phase == CONSUMING and me.request is None and me.response is None:
            if me.rejoinRequested:
                out.append((self._act("SendJoinGroup", c), self._send_join(s, c, me)))
            error = self._heartbeat_error(s.group, me, c)
            if error != NONE:
                out.append((self._act("Heartbeat", c, error), self._on_error(s, c, me, error)))
            if me.owned:
                out.append(self._offset_commit(s, c, me))
        if s.faults < self.config.max_faults:
            out.append((self._act("ConsumerCrash", c), self._crash(s, c)))
            if self.config.poll_stalls:
                stalled = _set_consumer(s, c, me._replace(stalled=True))._replace(faults=s.faults + 1)
                out.append((self._act("ConsumerStall", c), stalled))
            if me.phase == CONSUMING and me.memberId and not self.config.static_membership:
                out.append((self._act("LeaveGroup", c), self._leave(s, c, me)))

    def _request_may_time_out(self, s: GroupState, c: int, me: Consumer) -> bool:
        """``request.timeout.ms`` (for JoinGroup: the rebalance timeout plus 5 s) expires while the
        coordinator still holds the parked JoinGroup or SyncGroup. The coordinator answers every
        parked callback (on completion, removal, rebalance and unload) before the client's timer,
        so only a coordinator slower than that (``slow_coordinator``, a fault) leaves one unanswered.
        The client abandons the request (a late answer is dropped) and rejoins with its member id."""
        if not self.config.slow_coordinator or s.faults >= self.config.max_faults:
            return False
        waiting = me.phase in (JOINING, SYNCING) and me.request is None and me.response is None
        return waiting and _parked(s.group, c, me)

    def _metadata(self, me: Consumer) -> tuple[tuple[int, ...], int]:
        """What the JoinGroup subscription says this consumer owned (only the sticky assignors read it)."""
        if not self.sticky:
            return ((), NO_GENERATION)
        previous = me.owned if self.cooperative else me.assigned
        return (tuple(sorted(previous)), me.generationId if previous else NO_GENERATION)

    def _send_join(self, s: GroupState, c: int, me: Consumer) -> GroupState:
        """``onJoinPrepare`` then JoinGroup: eager consumers revoke everything first."""
        owned = me.owned if self.cooperative else frozenset()
        me = me._replace(owned=owned, rejoinRequested=False)
        request = Request("JoinGroup", me.memberId, me.generationId, self._metadata(me), ())
        return _set_consumer(s, c, me._replace(phase=JOINING, request=request))

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
                return _set_consumer(s, c, me._replace(phase=UNJOINED))
            request = Request("SyncGroup", me.memberId, me.generationId, ((), NO_GENERATION), assignment)
            return _set_consumer(s, c, me._replace(request=request))
        # SyncGroup: onJoinComplete
        new = response.assignment
        if self.cooperative:
            revoked = me.owned - new
            me = me._replace(owned=new, assigned=new, phase=CONSUMING, rejoinRequested=bool(revoked))
        else:
            me = me._replace(owned=new, assigned=new, phase=CONSUMING)
        return _set_consumer(s, c, me)

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
                result = assign(self.config.assignor, members, {"t": self.config.partitions},
                                sanitise=self.config.sanitise_owned_partitions)  # fmt: skip
            except AssignorStateError:
                self._assignments[subscriptions] = None
            else:
                given = tuple(sorted((m, frozenset(p for _, p in parts)) for m, parts in result.items()))
                self._assignments[subscriptions] = given
        return self._assignments[subscriptions]

    def _assignor_throws(self, response: Response) -> bool:
        leader = response.leaderId == response.memberId and bool(response.members)
        return leader and self._run_assignor(response.members) is None

    def _leader_cannot_assign(self, group: Group) -> bool:
        """In CompletingRebalance the leader's assignor throws on the group's subscriptions: its
        rejoins (same subscription) get the same JoinGroup response, so it never sends SyncGroup."""
        if group.state != COMPLETING_REBALANCE or group.leaderId not in group.pendingSyncMembers:
            return False
        return self._run_assignor(self._join_response(group, group.leaderId).members) is None

    def _on_error(
        self, s: GroupState, c: int, me: Consumer, error: str, response: Response | None = None
    ) -> GroupState:
        """What the client does with an error code from any coordinator API."""
        if error == MEMBER_ID_REQUIRED:
            assert response is not None
            me = me._replace(memberId=response.memberId, phase=UNJOINED)
        elif error == REBALANCE_IN_PROGRESS:
            me = me._replace(phase=UNJOINED, request=None)
        elif error == ILLEGAL_GENERATION:  # onPartitionsLost, keep the member id
            me = me._replace(generationId=NO_GENERATION, owned=frozenset(), phase=UNJOINED)
        elif error == UNKNOWN_MEMBER_ID:
            me = me._replace(memberId=NO_MEMBER, generationId=NO_GENERATION, owned=frozenset(), phase=UNJOINED)
        elif error == FENCED_INSTANCE_ID:  # fatal: the application's poll() throws
            me = me._replace(phase=FENCED, owned=frozenset())
        elif error in (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE):  # find the coordinator, retry
            me = me._replace(phase=UNJOINED)
        else:
            raise AssertionError(f"unexpected error {error}")
        return _set_consumer(s, c, me._replace(rejoinRequested=False))

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

    def _member_error(self, group: Group, member_id: str, instance: str | None) -> str:
        """``validateCurrentMember``."""
        if instance is not None:
            holder = next((m.memberId for m in group.members if m.groupInstanceId == instance), None)
            if holder is None:
                return UNKNOWN_MEMBER_ID
            if holder != member_id:
                return FENCED_INSTANCE_ID
            return NONE
        return NONE if _member(group, member_id) is not None else UNKNOWN_MEMBER_ID

    def _crash(self, s: GroupState, c: int) -> GroupState:
        me = s.consumers[c]
        stopped = Consumer(
            STOPPED, NO_MEMBER, NO_GENERATION, frozenset(), frozenset(), None, None, me.incarnation, False
        )
        return _set_consumer(s, c, stopped)._replace(faults=s.faults + 1)

    def _start(self, s: GroupState, c: int) -> GroupState:
        me = s.consumers[c]
        fresh = Consumer(
            UNJOINED, NO_MEMBER, NO_GENERATION, frozenset(), frozenset(), None, None, me.incarnation + 1, False
        )
        return _set_consumer(s, c, fresh)

    def _leave(self, s: GroupState, c: int, me: Consumer) -> GroupState:
        """A dynamic consumer closes: it revokes everything and sends LeaveGroup."""
        s = _set_consumer(s, c, me._replace(phase=STOPPED, memberId=NO_MEMBER, generationId=NO_GENERATION,
                                            owned=frozenset(), assigned=frozenset()))  # fmt: skip
        s = s._replace(faults=s.faults + 1)
        if s.group.state == DEAD or _member(s.group, me.memberId) is None:
            return s
        return self._remove_member_and_update_group(s, me.memberId)

    # -- the coordinator: JoinGroup --------------------------------------------------------------
    def _handle_join(self, s: GroupState, c: int, request: Request) -> tuple[str, GroupState]:
        s = _set_consumer(s, c, s.consumers[c]._replace(request=None))
        group = s.group
        if group.state == DEAD:
            response = _error_response("JoinGroup", COORDINATOR_NOT_AVAILABLE)
            return COORDINATOR_NOT_AVAILABLE, self._respond(s, c, response)
        instance = self.instance_id(c)
        if request.memberId == NO_MEMBER:
            return self._join_new_member(s, c, request, instance)
        if request.memberId in group.pendingMembers:
            s = _set_group(s, group._replace(pendingMembers=group.pendingMembers - {request.memberId}))
            return NONE, self._add_member_and_rebalance(s, c, request.memberId, instance, request.metadata)
        error = self._member_error(group, request.memberId, instance)
        if error != NONE:
            return error, self._respond(s, c, _error_response("JoinGroup", error))
        member = _member(group, request.memberId)
        assert member is not None
        parked = member._replace(metadata=request.metadata, awaitingJoin=True, consumer=c,
                                 incarnation=s.consumers[c].incarnation)  # fmt: skip
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
        new_id = fresh_member_id(c, _mentioned_ids(s))
        if instance is not None:
            old = next((m for m in group.members if m.groupInstanceId == instance), None)
            if old is not None:
                return NONE, self._replace_static_member(s, c, old, new_id, request)
            return NONE, self._add_member_and_rebalance(s, c, new_id, instance, request.metadata)
        if self.config.require_known_member_id:
            s = _set_group(s, group._replace(pendingMembers=group.pendingMembers | {new_id}))
            response = _error_response("JoinGroup", MEMBER_ID_REQUIRED)._replace(memberId=new_id)
            return MEMBER_ID_REQUIRED, self._respond(s, c, response)
        return NONE, self._add_member_and_rebalance(s, c, new_id, instance, request.metadata)

    def _add_member_and_rebalance(
        self, s: GroupState, c: int, member_id: str, instance: str | None, metadata: tuple[tuple[int, ...], int]
    ) -> GroupState:
        group = s.group
        member = GroupMember(member_id, instance, c, s.consumers[c].incarnation, metadata, True, False, frozenset())
        members = tuple(sorted((*group.members, member)))
        leader = group.leaderId or member_id
        added = group.newMemberAdded or (group.state == PREPARING_REBALANCE and group.generationId == 0)
        s = _set_group(s, group._replace(members=members, leaderId=leader, newMemberAdded=added))
        return self._maybe_prepare_rebalance(s)

    def _replace_static_member(
        self, s: GroupState, c: int, old: GroupMember, new_id: str, request: Request
    ) -> GroupState:
        """KIP-345: a known group.instance.id joins with no member id (``updateStaticMemberAndRebalance``)."""
        group = s.group
        if not self.config.fence_replaced_static_member and group.state != STABLE:
            # Before KAFKA-8500 the id was replaced only in Stable: otherwise the joining process took
            # over the old member id (``updateMemberAndRebalance``), its callback in place of the old one.
            taken = old._replace(consumer=c, incarnation=s.consumers[c].incarnation, metadata=request.metadata,
                                 awaitingJoin=True)  # fmt: skip
            return self._maybe_prepare_rebalance(self._update_member(s, taken))
        # The old id's parked callbacks complete with FENCED_INSTANCE_ID (KAFKA-8500).
        s = self._fence_parked(s, old, c)
        group = s.group
        new = old._replace(memberId=new_id, consumer=c, incarnation=s.consumers[c].incarnation,
                           metadata=request.metadata, awaitingJoin=True, awaitingSync=False)  # fmt: skip
        members = tuple(sorted((*(m for m in group.members if m.memberId != old.memberId), new)))
        leader = new_id if group.leaderId == old.memberId else group.leaderId
        pending_sync = group.pendingSyncMembers - {old.memberId}
        if old.memberId in group.pendingSyncMembers:
            pending_sync |= {new_id}
        s = _set_group(s, group._replace(members=members, leaderId=leader, pendingSyncMembers=pending_sync))
        group = s.group
        if group.state == STABLE:
            if self.config.persist_static_replacement:
                s = _set_group(s, group._replace(stored=_store(group)))
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
            return self._update_member(s, old._replace(awaitingJoin=False, awaitingSync=False))
        api = "JoinGroup" if old.awaitingJoin else "SyncGroup"
        return self._deliver(s, old, _error_response(api, FENCED_INSTANCE_ID))

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
                    s = self._deliver(s, m, _error_response("SyncGroup", REBALANCE_IN_PROGRESS))
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
        return self._try_complete_join(_set_group(s, group))

    def _try_complete_join(self, s: GroupState) -> GroupState:
        group = s.group
        if group.state != PREPARING_REBALANCE or group.joinDelay == "initial":
            return s  # InitialDelayedJoin never completes early
        if all(m.awaitingJoin for m in group.members) and not group.pendingMembers:
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
            empty = group._replace(state=EMPTY, generationId=generation, leaderId=NO_MEMBER, members=(),
                                   pendingSyncMembers=frozenset(), joinDelay="", newMemberAdded=False)  # fmt: skip
            return _set_group(s, empty._replace(stored=_store(empty)))
        group = group._replace(
            state=COMPLETING_REBALANCE,
            generationId=generation,
            leaderId=leader,
            members=tuple(m._replace(awaitingJoin=False) for m in members),
            pendingSyncMembers=frozenset(m.memberId for m in members),
            joinDelay="",
            newMemberAdded=False,
        )
        s = _set_group(s, group)
        for m in members:
            if m.awaitingJoin:
                s = self._deliver(s, m, self._join_response(group, m.memberId))
        return s

    # -- the coordinator: SyncGroup --------------------------------------------------------------
    def _handle_sync(self, s: GroupState, c: int, request: Request) -> tuple[str, GroupState]:
        s = _set_consumer(s, c, s.consumers[c]._replace(request=None))
        group = s.group
        if group.state == DEAD:
            response = _error_response("SyncGroup", COORDINATOR_NOT_AVAILABLE)
            return COORDINATOR_NOT_AVAILABLE, self._respond(s, c, response)
        error = self._member_error(group, request.memberId, self.instance_id(c))
        if error == NONE and request.generationId != group.generationId:
            error = ILLEGAL_GENERATION
        if error == NONE and group.state == PREPARING_REBALANCE:
            error = REBALANCE_IN_PROGRESS
        if error == NONE and group.state == EMPTY:
            error = UNKNOWN_MEMBER_ID
        if error != NONE:
            return error, self._respond(s, c, _error_response("SyncGroup", error))
        member = _member(group, request.memberId)
        assert member is not None
        group = group._replace(pendingSyncMembers=group.pendingSyncMembers - {member.memberId})
        s = _set_group(s, group)
        if group.state == STABLE:
            return NONE, self._respond(s, c, _sync_response(member.assignment))
        # CompletingRebalance: park; the leader's assignment is stored, then everyone is answered.
        s = self._update_member(s, member._replace(awaitingSync=True, consumer=c,
                                                    incarnation=s.consumers[c].incarnation))  # fmt: skip
        if member.memberId != group.leaderId:
            return NONE, s
        given = dict(request.assignment)
        members = tuple(m._replace(assignment=given.get(m.memberId, frozenset())) for m in s.group.members)
        group = s.group._replace(members=members, state=STABLE)
        group = group._replace(stored=_store(group))
        s = _set_group(s, group)
        for m in group.members:
            if m.awaitingSync:
                s = self._deliver(s, m, _sync_response(m.assignment))
        return NONE, s

    # -- the coordinator: timers and removal ------------------------------------------------------
    def _coordinator_timers(self, s: GroupState, out: list[Step]) -> None:
        group = s.group
        if group.state == PREPARING_REBALANCE and group.joinDelay == "initial":
            if group.newMemberAdded and group.delayExtensionsLeft > 0:
                extended = group._replace(newMemberAdded=False, delayExtensionsLeft=group.delayExtensionsLeft - 1)
                out.append((self._act("InitialDelayExpired"), _set_group(s, extended)))
            else:
                nxt = self._complete_join(_set_group(s, group._replace(joinDelay="join")))
                out.append((self._act("InitialDelayExpired"), nxt))
        if group.state == PREPARING_REBALANCE and group.joinDelay == "join":
            missing = [m for m in group.members if not m.awaitingJoin]
            if (missing or group.pendingMembers) and self._may_expire(s, missing, group.pendingMembers):
                nxt = self._complete_join(s)
                if nxt.group.state != PREPARING_REBALANCE:
                    out.append((self._act("RebalanceTimeout"), nxt))
        if self.config.delayed_sync and group.state in (COMPLETING_REBALANCE, STABLE) and group.pendingSyncMembers:
            late = [m for m in group.members if m.memberId in group.pendingSyncMembers]
            if self._leader_cannot_assign(group):  # it keeps its session, but never syncs
                waiting = [m for m in late if m.memberId != group.leaderId]
            else:
                waiting = late
            if self._may_expire(s, waiting, frozenset()):
                nxt = s
                for m in late:
                    nxt = _set_group(nxt, _without_member(nxt.group, m.memberId))
                nxt = self._prepare_rebalance(_set_group(nxt, nxt.group._replace(pendingSyncMembers=frozenset())))
                out.append((self._act("SyncTimeout"), nxt))
        for m in group.members:
            if self._may_expire(s, [m], frozenset(), session=True):
                out.append(
                    (self._act("SessionTimeout", m.memberId), self._remove_member_and_update_group(s, m.memberId))
                )
        for member_id in sorted(group.pendingMembers):
            if self._may_expire(s, [], frozenset({member_id})):
                nxt = _set_group(s, group._replace(pendingMembers=group.pendingMembers - {member_id}))
                out.append((self._act("PendingMemberTimeout", member_id), self._try_complete_join(nxt)))

    def _may_expire(
        self, s: GroupState, members: list[GroupMember], pending: frozenset[str], session: bool = False
    ) -> bool:
        """A timer that waits for these members may fire: always with timeouts=any; with
        timeouts=crashed only if none of them has a running consumer behind it (a running consumer
        heartbeats, joins and syncs in time). For the session timer a stalled consumer is running:
        its heartbeat thread keeps the session alive."""
        if self.config.timeouts == "any":
            return True
        for m in members:
            me = s.consumers[m.consumer]
            alive = me.phase not in (STOPPED, FENCED) and me.incarnation == m.incarnation
            if alive and me.memberId in (m.memberId, NO_MEMBER) and (session or not me.stalled):
                return False
        return not any(_holds_id(me, member_id) for member_id in pending for me in s.consumers)

    def _remove_member_and_update_group(self, s: GroupState, member_id: str) -> GroupState:
        group = s.group
        member = _member(group, member_id)
        assert member is not None
        if member.awaitingJoin or member.awaitingSync:
            api = "JoinGroup" if member.awaitingJoin else "SyncGroup"
            s = self._deliver(s, member, _error_response(api, UNKNOWN_MEMBER_ID))
        s = _set_group(s, _without_member(s.group, member_id))
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
                s = self._deliver(s, m, _error_response(api, NOT_COORDINATOR))
        dead = s.group._replace(state=DEAD, pendingSyncMembers=frozenset(), pendingMembers=frozenset(), joinDelay="")
        return GroupState(dead, s.consumers, s.faults + 1)

    def _load(self, s: GroupState) -> GroupState:
        """The new coordinator loads the last group record (``loadGroupsAndOffsets``): Stable if it
        has members, else Empty; nothing that was not written survives."""
        stored = s.group.stored
        if stored is None:
            group = Group(EMPTY, 0, NO_MEMBER, (), frozenset(), frozenset(), "", False, 0, None)
        else:
            state = STABLE if stored.members else EMPTY
            group = Group(state, stored.generationId, stored.leaderId, stored.members, frozenset(), frozenset(), "",
                          False, 0, stored)  # fmt: skip
        return s._replace(group=group)

    # -- helpers ---------------------------------------------------------------------------------
    def _respond(self, s: GroupState, c: int, response: Response) -> GroupState:
        return _set_consumer(s, c, s.consumers[c]._replace(response=response))

    def _deliver(self, s: GroupState, member: GroupMember, response: Response) -> GroupState:
        """Complete a parked callback: the response reaches the consumer if its connection is still
        the one that sent the request."""
        if member.awaitingJoin or member.awaitingSync:
            s = self._update_member(s, member._replace(awaitingJoin=False, awaitingSync=False))
        me = s.consumers[member.consumer]
        waiting = JOINING if response.api == "JoinGroup" else SYNCING
        connected = me.incarnation == member.incarnation and me.memberId in (member.memberId, NO_MEMBER)
        if connected and me.phase == waiting and me.request is None and me.response is None:
            return self._respond(s, member.consumer, response)
        return s

    def _update_member(self, s: GroupState, member: GroupMember) -> GroupState:
        group = s.group
        members = tuple(member if m.memberId == member.memberId else m for m in group.members)
        return _set_group(s, group._replace(members=members))

    def drawing(self) -> GroupDrawing:
        return GroupDrawing(self.processes)


# -- pure helpers --------------------------------------------------------------------------------
def _parked(group: Group, c: int, me: Consumer) -> bool:
    """Whether the coordinator holds a callback that will answer this consumer."""
    return any(
        m.consumer == c and m.incarnation == me.incarnation and (m.awaitingJoin or m.awaitingSync)
        for m in group.members
    )


def _member(group: Group, member_id: str) -> GroupMember | None:
    for m in group.members:
        if m.memberId == member_id:
            return m
    return None


def _without_member(group: Group, member_id: str) -> Group:
    members = tuple(m for m in group.members if m.memberId != member_id)
    leader = group.leaderId
    if leader == member_id:
        leader = members[0].memberId if members else NO_MEMBER
    return group._replace(members=members, leaderId=leader, pendingSyncMembers=group.pendingSyncMembers - {member_id})


def _store(group: Group) -> StoredGroup:
    members = tuple(m._replace(awaitingJoin=False, awaitingSync=False) for m in group.members)
    return StoredGroup(group.generationId, group.leaderId, members)


def _holds_id(me: Consumer, member_id: str) -> bool:
    """A running consumer that has (or is about to learn) this member id."""
    if me.phase in (STOPPED, FENCED):
        return False
    return me.memberId == member_id or (me.response is not None and me.response.memberId == member_id)


def _error_response(api: str, error: str) -> Response:
    return Response(api, error, NO_MEMBER, NO_GENERATION, NO_MEMBER, (), frozenset())


def _sync_response(assignment: frozenset[int]) -> Response:
    return Response("SyncGroup", NONE, NO_MEMBER, NO_GENERATION, NO_MEMBER, (), assignment)


def _set_consumer(s: GroupState, c: int, consumer: Consumer) -> GroupState:
    return s._replace(consumers=(*s.consumers[:c], consumer, *s.consumers[c + 1 :]))


def _set_group(s: GroupState, group: Group) -> GroupState:
    return s._replace(group=group)


def _mentioned_ids(s: GroupState) -> set[str]:
    group = s.group
    ids = {m.memberId for m in group.members} | set(group.pendingMembers) | {group.leaderId}
    if group.stored is not None:
        ids |= {m.memberId for m in group.stored.members} | {group.stored.leaderId}
    for me in s.consumers:
        ids.add(me.memberId)
        if me.request is not None:
            ids.add(me.request.memberId)
            ids |= {m for m, _ in me.request.assignment}
        if me.response is not None:
            ids |= {me.response.memberId, me.response.leaderId} | {m[0] for m in me.response.members}
    return ids


def fresh_member_id(consumer: int, mentioned: set[str]) -> str:
    """A member id for this consumer that nothing in the state mentions. Kafka mints a UUID, which
    is only ever compared for equality, so reusing a number no longer mentioned changes nothing."""
    n = 0
    while f"c{consumer}-{n}" in mentioned:
        n += 1
    return f"c{consumer}-{n}"


def _generations(s: GroupState) -> list[int]:
    gens = [s.group.generationId]
    if s.group.stored is not None:
        gens.append(s.group.stored.generationId)
        gens.extend(m.metadata[1] for m in s.group.stored.members)
    for m in s.group.members:
        gens.append(m.metadata[1])
    for me in s.consumers:
        gens.append(me.generationId)
        if me.request is not None:
            gens.append(me.request.generationId)
            gens.append(me.request.metadata[1])
        if me.response is not None:
            gens.append(me.response.generationId)
            gens.extend(meta[1] for _, _, meta in me.response.members)
    return [g for g in gens if g >= 0]


def _max_generation(s: GroupState) -> int:
    return max(_generations(s))


def _normalise(s: GroupState) -> GroupState:
    """Shift every generation so the smallest is 1 (when none is 0): only their differences, and
    comparisons with 0 and -1, matter to the protocol."""
    lowest = min(_generations(s))
    if lowest <= 1:
        return s
    shift = lowest - 1

    def g(x: int) -> int:
        return x - shift if x >= 0 else x

    def meta(m: tuple[tuple[int, ...], int]) -> tuple[tuple[int, ...], int]:
        return (m[0], g(m[1]))

    group = s.group
    stored = None
    if group.stored is not None:
        stored = group.stored._replace(
            generationId=g(group.stored.generationId),
            members=tuple(m._replace(metadata=meta(m.metadata)) for m in group.stored.members),
        )
    members = tuple(m._replace(metadata=meta(m.metadata)) for m in group.members)
    group = group._replace(generationId=g(group.generationId), stored=stored, members=members)
    consumers = []
    for me in s.consumers:
        request, response = me.request, me.response
        if request is not None:
            request = request._replace(generationId=g(request.generationId), metadata=meta(request.metadata))
        if response is not None:
            response = response._replace(
                generationId=g(response.generationId),
                members=tuple((mid, inst, meta(md)) for mid, inst, md in response.members),
            )
        consumers.append(me._replace(generationId=g(me.generationId), request=request, response=response))
    return GroupState(group, tuple(consumers), s.faults)


# -- how traces are drawn --------------------------------------------------------------------------
class GroupDrawing(Drawing):
    """Lanes: the coordinator and one per consumer. Tables: the group (state, generation, leader,
    members and assignments) and every consumer (member id, generation, phase, owned partitions)."""

    def __init__(self, consumers: int) -> None:
        self.consumers = [f"consumer {c}" for c in range(consumers)]

    def lanes(self) -> list[str]:
        return ["coordinator", *self.consumers]

    def arrow(self, action: Action, before: GroupState, after: GroupState) -> Arrow:
        args = action.args
        name = action.name
        error = args.get("error", "")
        suffix = "" if not error or error == NONE else f" → {error}"
        if "consumer" in args:
            lane = self.consumers[args["consumer"]]
            if name.startswith("Send"):
                return Arrow(lane, ("coordinator",), name.removeprefix("Send"))
            if name.startswith("Handle"):
                return Arrow("coordinator", (), f"handle {name.removeprefix('Handle')}{suffix}")
            if name.startswith("Receive"):
                return Arrow("coordinator", (lane,), f"{name.removeprefix('Receive')} response{suffix}")
            if name in ("Heartbeat", "OffsetCommit", "LeaveGroup"):
                return Arrow(lane, ("coordinator",), f"{name}{suffix}")
            return Arrow(lane, (), name)
        return Arrow("coordinator", (), name)

    def tables(self, state: GroupState) -> list[Table]:
        group = state.group
        members = "; ".join(
            f"{m.memberId}{'*' if m.memberId == group.leaderId else ''}"
            f"{'[' + m.groupInstanceId + ']' if m.groupInstanceId else ''}→{describe(m.assignment)}"
            for m in group.members
        )
        stored = (
            "-"
            if group.stored is None
            else f"gen {group.stored.generationId}: "
            + (", ".join(f"{m.memberId}→{describe(m.assignment)}" for m in group.stored.members) or "no members")
        )
        coordinator = Table(
            "group coordinator (* = leader)",
            ["state", "generation", "members → assignment", "pending", "awaiting sync", "stored record"],
            [[group.state, str(group.generationId), members or "-", describe(group.pendingMembers),
              describe(group.pendingSyncMembers), stored]],
        )  # fmt: skip
        rows = []
        for c, me in enumerate(state.consumers):
            waiting = me.request.api if me.request else (f"{me.response.api} response" if me.response else "-")
            generation = "-" if me.generationId == NO_GENERATION else str(me.generationId)
            rows.append([self.consumers[c], me.phase, me.memberId or "-", generation, describe(me.owned), waiting])
        consumers = Table("consumers", ["", "phase", "memberId", "generation", "owned", "in flight"], rows)
        return [coordinator, consumers]
