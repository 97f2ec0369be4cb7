"""The `group` model's state: the coordinator's group and members, the requests and responses on
the wire, the consumers, and the pure helpers on them (member ids, generations and their shift)."""

from __future__ import annotations

from typing import NamedTuple

from kmc.checker import Action

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
    isNew: bool = False
    """Added and not yet through a completed join (``ClassicGroupMember.isNew``, KAFKA-7610)."""
    connected: bool = True
    """The connection of a parked callback is still open: the client's request timed out otherwise
    (the coordinator cannot tell, its socket is muted while the JoinGroup waits)."""


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
    assignedGeneration: int = NO_GENERATION
    """The generation of ``assigned`` (``onAssignment``), kept only where the sticky assignors'
    user data reports it (KIP-341, KAFKA-12984 before KIP-792)."""


class GroupState(NamedTuple):
    group: Group
    consumers: tuple[Consumer, ...]
    faults: int


Step = tuple[Action, GroupState]


# -- pure helpers --------------------------------------------------------------------------------
def is_parked(group: Group, c: int, me: Consumer) -> bool:
    """Whether the coordinator holds a callback that will answer this consumer."""
    return any(
        m.consumer == c and m.incarnation == me.incarnation and m.connected and (m.awaitingJoin or m.awaitingSync)
        for m in group.members
    )


def disconnected(group: Group, c: int, incarnation: int) -> Group:
    """The client closed the connection of its parked request (a request timeout): a late answer
    is lost, and nobody stands behind that callback any more."""
    members = tuple(
        m._replace(connected=False)
        if m.consumer == c and m.incarnation == incarnation and (m.awaitingJoin or m.awaitingSync)
        else m
        for m in group.members
    )
    return group._replace(members=members)


def find_member(group: Group, member_id: str) -> GroupMember | None:
    for m in group.members:
        if m.memberId == member_id:
            return m
    return None


def without_member(group: Group, member_id: str) -> Group:
    members = tuple(m for m in group.members if m.memberId != member_id)
    leader = group.leaderId
    if leader == member_id:
        leader = members[0].memberId if members else NO_MEMBER
    return group._replace(members=members, leaderId=leader, pendingSyncMembers=group.pendingSyncMembers - {member_id})


def stored_group(group: Group) -> StoredGroup:
    members = tuple(m._replace(awaitingJoin=False, awaitingSync=False, connected=True) for m in group.members)
    return StoredGroup(group.generationId, group.leaderId, members)


def holds_member_id(me: Consumer, member_id: str) -> bool:
    """A running consumer that has (or is about to learn) this member id."""
    if me.phase in (STOPPED, FENCED):
        return False
    return me.memberId == member_id or (me.response is not None and me.response.memberId == member_id)


def is_behind(me: Consumer, m: GroupMember) -> bool:
    """This consumer holds the member's id, or is about to learn it: its JoinGroup is parked on an
    open connection, or the answer is on its way. (A member minted by a JoinGroup the client gave
    up on is behind nobody.)"""
    if me.memberId == m.memberId:
        return True
    if me.memberId != NO_MEMBER:
        return False
    return (m.awaitingJoin and m.connected) or (me.response is not None and me.response.memberId == m.memberId)


def error_response(api: str, error: str) -> Response:
    return Response(api, error, NO_MEMBER, NO_GENERATION, NO_MEMBER, (), frozenset())


def sync_response(assignment: frozenset[int]) -> Response:
    return Response("SyncGroup", NONE, NO_MEMBER, NO_GENERATION, NO_MEMBER, (), assignment)


def with_consumer(s: GroupState, c: int, consumer: Consumer) -> GroupState:
    return s._replace(consumers=(*s.consumers[:c], consumer, *s.consumers[c + 1 :]))


def with_group(s: GroupState, group: Group) -> GroupState:
    return s._replace(group=group)


def mentioned_member_ids(s: GroupState) -> set[str]:
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


def generations_of(s: GroupState) -> list[int]:
    gens = [s.group.generationId]
    if s.group.stored is not None:
        gens.append(s.group.stored.generationId)
        gens.extend(m.metadata[1] for m in s.group.stored.members)
    for m in s.group.members:
        gens.append(m.metadata[1])
    for me in s.consumers:
        gens.append(me.generationId)
        gens.append(me.assignedGeneration)
        if me.request is not None:
            gens.append(me.request.generationId)
            gens.append(me.request.metadata[1])
        if me.response is not None:
            gens.append(me.response.generationId)
            gens.extend(meta[1] for _, _, meta in me.response.members)
    return [g for g in gens if g >= 0]


def _some_generation_at_most_one(s: GroupState) -> bool:
    """``min(generations_of(s)) <= 1``, stopping at the first one found (most states have one)."""
    group = s.group
    if 0 <= group.generationId <= 1:
        return True
    for me in s.consumers:
        if 0 <= me.generationId <= 1:
            return True
    return min(generations_of(s)) <= 1


def highest_generation(s: GroupState) -> int:
    return max(generations_of(s))


def canonical_state(s: GroupState) -> GroupState:
    """Forget the connection of a callback no longer parked (only a parked one can be lost)."""
    if all(m.connected or m.awaitingJoin or m.awaitingSync for m in s.group.members):
        return s
    members = tuple(m if m.awaitingJoin or m.awaitingSync else m._replace(connected=True) for m in s.group.members)
    return s._replace(group=s.group._replace(members=members))


def normalised(s: GroupState) -> GroupState:
    """Shift every generation so the smallest is 1 (when none is 0): only their differences, and
    comparisons with 0 and -1, matter to the protocol."""
    if _some_generation_at_most_one(s):
        return s
    lowest = min(generations_of(s))
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
        consumers.append(
            me._replace(
                generationId=g(me.generationId),
                assignedGeneration=g(me.assignedGeneration),
                request=request,
                response=response,
            )
        )
    return GroupState(group, tuple(consumers), s.faults)
