"""The consumer-group partition assignors, as pure functions.

``assign(strategy, members, partitions_per_topic)`` runs one of Kafka's client-side assignors
(``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``) on the subscriptions the group
leader receives in JoinGroup, and returns member id -> list of (topic, partition). The rules are
those of ``RangeAssignor``, ``RoundRobinAssignor``, ``AbstractStickyAssignor`` and
``CooperativeStickyAssignor`` in ``clients/.../consumer/`` (kafka-protocols.md §2):

* members are ordered static first (by ``group.instance.id``), then dynamic (by member id);
* the sticky assignors first sanitise the owned partitions the members report: only members of
  the highest generation keep theirs, partitions of topics the member no longer subscribes to are
  dropped, and
  a partition claimed twice in that generation is taken from both (KAFKA-12984, KAFKA-14639);
* the cooperative-sticky assignor then withholds every partition that would move from one
  member to another in the same round, so the old owner revokes it first (KIP-429).

Where Kafka iterates a hash map, these functions use the member order above, so the result is
deterministic. The sticky assignor's general builder (members with different subscriptions) is
simplified: owned partitions are kept, the rest go to the least-loaded eligible member, and then
single moves from a member to an eligible one with at least two fewer partitions are made until
none is possible — which gives the balance the javadoc promises, without Kafka's search for the
fewest moves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TopicPartition = tuple[str, int]
Assignment = dict[str, list[TopicPartition]]

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
COOPERATIVE = frozenset({"cooperative-sticky"})
"""The assignors that support the COOPERATIVE rebalance protocol (KIP-429)."""

NO_GENERATION = -1
"""A member that reports no generation with its owned partitions (``DEFAULT_GENERATION``)."""


class AssignorStateError(RuntimeError):
    """The assignor's own consistency check failed (Kafka's ``IllegalStateException``)."""


@dataclass(frozen=True)
class Member:
    """One member's subscription as the leader sees it in the JoinGroup response."""

    memberId: str
    topics: tuple[str, ...]
    ownedPartitions: tuple[TopicPartition, ...] = ()
    generation: int = NO_GENERATION
    groupInstanceId: str | None = None

    def sort_key(self) -> tuple[int, str]:
        """``MemberInfo.compareTo``: static members first by instance id, then dynamic by member id."""
        if self.groupInstanceId is not None:
            return (0, self.groupInstanceId)
        return (1, self.memberId)


@dataclass
class _Sanitised:
    """Owned partitions after ``AbstractStickyAssignor``'s checks, per member."""

    owned: dict[str, list[TopicPartition]]
    claimed_twice: set[TopicPartition] = field(default_factory=set)


def assign(
    strategy: str,
    members: Iterable[Member | Mapping[str, Any]],
    partitions_per_topic: Mapping[str, int],
    *,
    sanitise: bool = True,
) -> Assignment:
    """Run the assignor ``strategy`` and return member id -> sorted list of (topic, partition).

    ``sanitise=False`` is the sticky assignors before KAFKA-12984 and KAFKA-14639: every member
    keeps the partitions it claims, whatever its generation and whoever else claims them."""
    group = sorted((_member(m) for m in members), key=Member.sort_key)
    ids = [m.memberId for m in group]
    if len(set(ids)) != len(ids):
        raise ValueError(f"member ids must be distinct: {ids}")
    for topic, count in partitions_per_topic.items():
        if count < 0:
            raise ValueError(f"topic {topic!r} has a negative partition count {count}")
    if strategy == "range":
        result = _range(group, partitions_per_topic)
    elif strategy == "roundrobin":
        result = _roundrobin(group, partitions_per_topic)
    elif strategy == "sticky":
        result = _sticky(group, partitions_per_topic, sanitise)
    elif strategy == "cooperative-sticky":
        result = _cooperative_sticky(group, partitions_per_topic, sanitise)
    else:
        raise ValueError(f"unknown assignor {strategy!r}; assignors: {', '.join(STRATEGIES)}")
    return {member_id: sorted(parts) for member_id, parts in result.items()}


def _member(m: Member | Mapping[str, Any]) -> Member:
    if isinstance(m, Member):
        return m
    return Member(
        memberId=m["memberId"],
        topics=tuple(m["topics"]),
        ownedPartitions=tuple(tuple(tp) for tp in m.get("ownedPartitions", ())),  # type: ignore[misc]
        generation=m.get("generation", NO_GENERATION),
        groupInstanceId=m.get("groupInstanceId"),
    )


def _partitions(topic: str, partitions_per_topic: Mapping[str, int]) -> list[TopicPartition]:
    return [(topic, p) for p in range(partitions_per_topic.get(topic, 0))]


# -- RangeAssignor --------------------------------------------------------------------------------
def _range(group: Sequence[Member], partitions_per_topic: Mapping[str, int]) -> Assignment:
    """Per topic: n = P // C partitions each, the first P % C members one more, contiguous."""
    result: Assignment = {m.memberId: [] for m in group}
    topics = sorted({t for m in group for t in m.topics})
    for topic in topics:
        consumers = [m.memberId for m in group if topic in m.topics]
        parts = _partitions(topic, partitions_per_topic)
        per_member, extra = divmod(len(parts), len(consumers))
        for i, member_id in enumerate(consumers):
            start = per_member * i + min(i, extra)
            length = per_member + (1 if i < extra else 0)
            result[member_id].extend(parts[start : start + length])
    return result


# -- RoundRobinAssignor ---------------------------------------------------------------------------
def _roundrobin(group: Sequence[Member], partitions_per_topic: Mapping[str, int]) -> Assignment:
    """All partitions sorted by (topic, partition), dealt around the members in order; a member not
    subscribed to a partition's topic is skipped (the circular iterator keeps its place)."""
    result: Assignment = {m.memberId: [] for m in group}
    topics = sorted({t for m in group for t in m.topics})
    position = 0
    for topic in topics:
        for tp in _partitions(topic, partitions_per_topic):
            while topic not in group[position % len(group)].topics:
                position += 1
            result[group[position % len(group)].memberId].append(tp)
            position += 1
    return result


# -- StickyAssignor -------------------------------------------------------------------------------
def sanitise_owned(
    group: Sequence[Member], partitions_per_topic: Mapping[str, int], sanitise: bool = True
) -> _Sanitised:
    """Owned partitions the sticky assignors may keep: those of members of the highest generation,
    of topics the member still subscribes to and that exist, claimed by exactly one such member."""
    if not sanitise:
        claimed = {
            m.memberId: [
                (t, p) for t, p in m.ownedPartitions if t in m.topics and 0 <= p < partitions_per_topic.get(t, 0)
            ]
            for m in group
        }
        return _Sanitised(owned=claimed)
    generations = [m.generation for m in group if m.ownedPartitions or m.generation != NO_GENERATION]
    newest = max(generations, default=NO_GENERATION)
    owners: dict[TopicPartition, list[str]] = {}
    for m in group:
        if m.generation != newest:
            continue
        for topic, p in m.ownedPartitions:
            if topic in m.topics and 0 <= p < partitions_per_topic.get(topic, 0):
                owners.setdefault((topic, p), []).append(m.memberId)
    sanitised = _Sanitised(owned={m.memberId: [] for m in group})
    for tp, claimants in sorted(owners.items()):
        if len(set(claimants)) == 1:
            sanitised.owned[claimants[0]].append(tp)
        else:
            sanitised.claimed_twice.add(tp)
    return sanitised


def _sticky(group: Sequence[Member], partitions_per_topic: Mapping[str, int], sanitise: bool = True) -> Assignment:
    sanitised = sanitise_owned(group, partitions_per_topic, sanitise)
    if len({frozenset(m.topics) for m in group}) <= 1:
        return _constrained(group, partitions_per_topic, sanitised)
    return _general(group, partitions_per_topic, sanitised)


def _constrained(group: Sequence[Member], partitions_per_topic: Mapping[str, int], owned: _Sanitised) -> Assignment:
    """All members subscribe to the same topics: quotas minQuota = P // C and maxQuota = ceil(P / C),
    with exactly P % C members at maxQuota. Members keep owned partitions up to their quota."""
    topics = sorted(set(group[0].topics)) if group else []
    all_parts = [tp for t in topics for tp in _partitions(t, partitions_per_topic)]
    count = len(group)
    min_quota, over = divmod(len(all_parts), count)
    max_quota = min_quota + (1 if over else 0)
    result: Assignment = {m.memberId: [] for m in group}
    at_max = 0
    under_min: list[str] = []
    exactly_min: list[str] = []
    for m in group:
        mine = sorted(owned.owned[m.memberId], key=lambda tp: (tp[1], tp[0]))
        if len(mine) < min_quota:
            result[m.memberId] = mine
            under_min.append(m.memberId)
        elif len(mine) >= max_quota and at_max < over:
            result[m.memberId] = mine[:max_quota]
            at_max += 1
            if at_max == over:
                exactly_min.clear()
        else:
            result[m.memberId] = mine[:min_quota]
            if at_max < over:
                exactly_min.append(m.memberId)
    under_min.sort()
    exactly_min.sort()
    taken = {tp for parts in result.values() for tp in parts}
    # Deal the rest round-robin to the members below minQuota; once none is left, to the members
    # at minQuota in turn, until P % C members are at maxQuota.
    turn = 0
    for tp in (tp for tp in all_parts if tp not in taken):
        if under_min:
            turn %= len(under_min)
            member_id = under_min[turn]
        elif exactly_min:
            member_id = exactly_min.pop(0)
        else:  # only without sanitising: a partition kept by two members throws the quotas off
            raise AssignorStateError(f"No more unfilled consumers to be assigned ({tp} left over)")
        result[member_id].append(tp)
        if len(result[member_id]) == min_quota and member_id in under_min:
            under_min.remove(member_id)
            exactly_min.append(member_id)
        else:
            turn += 1
            if len(result[member_id]) == max_quota:
                at_max += 1
    return result


def _general(group: Sequence[Member], partitions_per_topic: Mapping[str, int], owned: _Sanitised) -> Assignment:
    """Members subscribe to different topics: keep owned partitions, give each other partition to
    the least-loaded member subscribed to its topic, then move single partitions from a member to
    an eligible one with at least two fewer until no such move exists."""
    order = {m.memberId: i for i, m in enumerate(group)}
    topics_of = {m.memberId: set(m.topics) for m in group}
    result: Assignment = {m.memberId: list(owned.owned[m.memberId]) for m in group}
    taken = {tp for parts in result.values() for tp in parts}
    topics = sorted({t for m in group for t in m.topics})
    for topic in topics:
        for tp in _partitions(topic, partitions_per_topic):
            if tp in taken:
                continue
            eligible = [m for m in result if topic in topics_of[m]]
            target = min(eligible, key=lambda m: (len(result[m]), order[m]))
            result[target].append(tp)
    previously = {tp: m for m, parts in owned.owned.items() for tp in parts}
    while True:
        move = _balancing_move(result, topics_of, previously, order)
        if move is None:
            return result
        source, target, tp = move
        result[source].remove(tp)
        result[target].append(tp)


def _balancing_move(
    result: Assignment,
    topics_of: Mapping[str, set[str]],
    previously: Mapping[TopicPartition, str],
    order: Mapping[str, int],
) -> tuple[str, str, TopicPartition] | None:
    """The first move, from the most loaded member, that strictly improves balance; partitions the
    member did not own before move first (stickiness)."""
    for source in sorted(result, key=lambda m: (-len(result[m]), order[m])):
        candidates = sorted(result[source], key=lambda tp: (previously.get(tp) == source, tp))
        for tp in candidates:
            for target in sorted(result, key=lambda m: (len(result[m]), order[m])):
                if len(result[source]) - len(result[target]) < 2:
                    break
                if tp[0] in topics_of[target]:
                    return source, target, tp
    return None


# -- CooperativeStickyAssignor --------------------------------------------------------------------
def _cooperative_sticky(
    group: Sequence[Member], partitions_per_topic: Mapping[str, int], sanitise: bool = True
) -> Assignment:
    """The sticky assignment minus the partitions that change owner this round (KIP-429), and minus
    those claimed by two members, which both revoke first."""
    result = _sticky(group, partitions_per_topic, sanitise)
    sanitised = sanitise_owned(group, partitions_per_topic, sanitise)
    previous_owner = {tp: m for m, parts in sanitised.owned.items() for tp in parts}

    def keeps(member_id: str, tp: TopicPartition) -> bool:
        # a partition two members claimed in the same generation counts as transferring as well
        return tp not in sanitised.claimed_twice and previous_owner.get(tp, member_id) == member_id

    return {member_id: [tp for tp in parts if keeps(member_id, tp)] for member_id, parts in result.items()}


def pairwise_disjoint(partition_sets: Iterable[Iterable[Any]]) -> bool:
    """No partition is in two of these sets (exclusive ownership or assignment)."""
    seen: set[Any] = set()
    for parts in partition_sets:
        parts = set(parts)
        if seen & parts:
            return False
        seen |= parts
    return True


def transferring(group: Iterable[Member], assignment: Mapping[str, Sequence[TopicPartition]]) -> set[TopicPartition]:
    """Partitions assigned to one member while another reports owning them: (∪ added) ∩ (∪ revoked).

    Empty for a valid cooperative assignment (``ConsumerCoordinator.validateCooperativeAssignment``)."""
    members = list(group)
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for m in members:
        mine = set(assignment.get(m.memberId, ()))
        owned = set(m.ownedPartitions)
        added |= mine - owned
        revoked |= owned - mine
    return added & revoked
