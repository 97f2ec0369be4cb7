"""The consumer-group partition assignors, as pure functions.

``assign(strategy, members, partitions_per_topic)`` runs one of Kafka's client-side assignors
(``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``) on the subscriptions the group
leader receives in JoinGroup, and returns member id -> list of (topic, partition). The rules are
those of ``RangeAssignor``, ``RoundRobinAssignor``, ``AbstractStickyAssignor`` and
``CooperativeStickyAssignor`` in ``clients/.../consumer/``, re-implemented
step for step so that the ``assignors`` oracle finds no difference from Kafka's classes:

* range and round robin order members static first (by ``group.instance.id``), then dynamic (by
  member id);
* the sticky assignors start from the owned partitions the members report, read in Java hash
  order of the member ids: a later claimant of a higher generation takes a partition over, two
  of the same generation both lose it (KAFKA-12984, KAFKA-14639), an older generation keeps an
  owned partition nobody else claims;
* equal subscriptions use the quota builder, different ones the general builder with its
  balancing moves, its memory of earlier moves, and the revert when balance did not improve;
* the cooperative-sticky assignor then withholds every partition that would move from one
  member to another in the same round, so the old owner revokes it first (KIP-429).

Where Kafka's result depends on the order it walks a ``HashMap`` or ``HashSet`` (member ids, the
partitions moved between two members), ``JavaHashSet`` (``kmc.models.common.java_order``) reproduces
that order from Java's ``String.hashCode``/``TopicPartition.hashCode`` and its table sizes. Racks are
not modelled (no member reports one, so Kafka's rack-aware paths do not run).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kmc.models.common.java_order import JavaHashSet, hash_order

TopicPartition = tuple[str, int]
Assignment = dict[str, list[TopicPartition]]

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
COOPERATIVE = frozenset({"cooperative-sticky"})
"""The assignors that support the COOPERATIVE rebalance protocol (KIP-429)."""

NO_GENERATION = -1
"""A member that reports no generation with its owned partitions (``DEFAULT_GENERATION``)."""


class AssignorStateError(RuntimeError):
    """The assignor's own consistency check failed (Kafka's ``IllegalStateException``)."""

    java_exception = "IllegalStateException"


class AssignorNullPointerError(AssignorStateError):
    """Where Kafka's general sticky builder looks up a member it set aside (``NullPointerException``)."""

    java_exception = "NullPointerException"


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
    older_claims: bool = True,
) -> Assignment:
    """Run the assignor ``strategy`` and return member id -> sorted list of (topic, partition).

    ``sanitise=False`` is the sticky assignors before KAFKA-12984: a partition claimed twice stays
    with both claimants. ``older_claims=False`` is them before KAFKA-14639: only the members of the
    newest generation reported keep their claims. Neither is compared with Kafka (4.3.1 has both)."""
    given = [_member(m) for m in members]  # the sticky assignors walk the ids in hash order of this order
    group = sorted(given, key=Member.sort_key)
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
        result = _sticky(given, partitions_per_topic, sanitise, older_claims)[0]
    elif strategy == "cooperative-sticky":
        result = _cooperative_sticky(given, partitions_per_topic, sanitise, older_claims)
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


# -- AbstractStickyAssignor -----------------------------------------------------------------------
def _assignable_topics(group: Sequence[Member], partitions_per_topic: Mapping[str, int]) -> dict[str, int]:
    """The topics the assignor sees: subscribed by someone and with at least one partition."""
    subscribed = {t for m in group for t in m.topics}
    return {t: n for t, n in partitions_per_topic.items() if t in subscribed and n > 0}


def sanitise_owned(
    group: Sequence[Member], partitions_per_topic: Mapping[str, int], sanitise: bool = True, older_claims: bool = True
) -> _Sanitised:
    """The owned partitions the sticky assignors start from (``allSubscriptionsEqual``).

    Members are read in Java hash order of their ids; a partition of a topic the assignor sees is
    kept by its first claimant unless a later one reports a higher generation (it takes it over) or
    the same generation (neither keeps it: KAFKA-12984, KAFKA-14639). An older generation's claim
    nobody else makes is kept. ``sanitise=False``: every claim is kept, whoever else makes it.
    ``older_claims=False`` (2.3 to 3.5): a member reporting a generation below the newest any member
    reports keeps none of its claims, uncontested or not."""
    topics = _assignable_topics(group, partitions_per_topic)
    by_id = {m.memberId: m for m in group}
    order = hash_order(by_id)
    owned: dict[str, list[TopicPartition]] = {m: [] for m in order}
    result = _Sanitised(owned=owned)
    owner: dict[TopicPartition, str] = {}
    newest = NO_GENERATION if older_claims else max((m.generation for m in group), default=NO_GENERATION)
    for member_id in order:
        member = by_id[member_id]
        if member.generation < newest:
            continue
        for tp in member.ownedPartitions:
            if tp[0] not in topics:
                continue
            other = owner.get(tp)
            if other is None or not sanitise:
                owned[member_id].append(tp)
                owner[tp] = member_id
            elif member.generation == by_id[other].generation:
                result.claimed_twice.add(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                owner[tp] = member_id
            elif member.generation > by_id[other].generation:
                owned[member_id].append(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                owner[tp] = member_id
    return result


def _sticky(
    group: Sequence[Member], partitions_per_topic: Mapping[str, int], sanitise: bool = True, older_claims: bool = True
) -> tuple[Assignment, dict[TopicPartition, str] | None]:
    """The sticky assignment, and the partitions it hands from one member to another (None when the
    general builder ran: the cooperative assignor then works them out from the owned partitions)."""
    topics = _assignable_topics(group, partitions_per_topic)
    sanitised = sanitise_owned(group, partitions_per_topic, sanitise, older_claims)
    first = set(group[0].topics) if group else set()
    if all(set(m.topics) == first for m in group):
        return _Constrained(topics, sanitised).build()
    return _General(group, topics, sanitised).build(), None


def _unassigned(all_partitions: Sequence[TopicPartition], assigned: Sequence[TopicPartition], key: Any) -> list:
    """``getUnassignedPartitions``: one walk over the sorted partitions and the sorted assigned ones."""
    if not assigned:
        return list(all_partitions)
    taken = iter(sorted(assigned, key=key))
    target = next(taken)
    exhausted = False
    out = []
    for tp in all_partitions:
        if exhausted or tp != target:
            out.append(tp)
        else:
            target = next(taken, None)
            exhausted = target is None
    return out


class _Constrained:
    """Every member subscribes to the same topics: quotas minQuota = P // C and maxQuota = ceil(P / C),
    P % C members at maxQuota. Owned partitions are kept up to the quota, in the hash order of the
    members; the rest are dealt round robin to the members below minQuota (by member id), then one
    each to members at minQuota until P % C members are at maxQuota."""

    def __init__(self, topics: Mapping[str, int], sanitised: _Sanitised) -> None:
        self.topics = topics
        self.owned = sanitised.owned
        self.claimed_twice = sanitised.claimed_twice
        total = sum(topics.values())
        count = len(self.owned)
        self.min_quota, self.expected_over = divmod(total, count)
        self.max_quota = self.min_quota + (1 if self.expected_over else 0)
        self.current_over = 0
        self.assignment: Assignment = {m: [] for m in self.owned}
        self.maybe_revoked: dict[TopicPartition, str] = {}
        self.transferring: dict[TopicPartition, str] = {}

    def build(self) -> tuple[Assignment, dict[TopicPartition, str]]:
        under: list[str] = []
        exactly: list[str] = []
        assigned: list[TopicPartition] = []
        for member_id, claimed in self.owned.items():  # hash order
            mine = sorted(claimed, key=lambda tp: (tp[1], tp[0]))
            mine = [tp for tp in mine if tp not in self.claimed_twice]
            if len(mine) < self.min_quota:
                keep = mine
                under.append(member_id)
            elif len(mine) >= self.max_quota and self.current_over < self.expected_over:
                self.current_over += 1
                if self.current_over == self.expected_over:
                    exactly.clear()
                keep = mine[: self.max_quota]
            else:
                keep = mine[: self.min_quota]
                if self.current_over < self.expected_over:
                    exactly.append(member_id)
            for tp in mine[len(keep) :]:
                self.maybe_revoked[tp] = member_id
            self.assignment[member_id].extend(keep)
            assigned.extend(keep)
        everything = [(t, p) for t in sorted(self.topics) for p in range(self.topics[t])]
        unassigned = _unassigned(everything, assigned, key=lambda tp: tp)
        under.sort()
        exactly.sort()
        self._round_robin(unassigned, under, exactly)
        self._verify(under)
        return self.assignment, self.transferring

    def _round_robin(self, unassigned: list[TopicPartition], under: list[str], exactly: list[str]) -> None:
        position = 0  # a cursor over ``under`` that survives removals, like a list iterator
        last = -1
        for tp in unassigned:
            if position < len(under):
                member_id, last = under[position], position
                position += 1
            elif not under and not exactly:
                raise AssignorStateError("No more unfilled consumers to be assigned.")
            elif not under:
                member_id = exactly.pop(0)
            else:
                position, last = 1, 0
                member_id = under[0]
            count = self._give(tp, member_id)
            if count == self.min_quota:
                del under[last]
                position -= 1
                exactly.append(member_id)
            elif count == self.max_quota:
                self.current_over += 1

    def _give(self, tp: TopicPartition, member_id: str) -> int:
        self.assignment[member_id].append(tp)
        revoked_from = self.maybe_revoked.get(tp)
        if (revoked_from is not None and revoked_from != member_id) or tp in self.claimed_twice:
            self.transferring[tp] = member_id
        return len(self.assignment[member_id])

    def _verify(self, under: list[str]) -> None:
        if not under:
            return
        if self.current_over != self.expected_over:
            raise AssignorStateError(
                "We haven't reached the expected number of members with more than the minQuota partitions, "
                "but no more partitions to be assigned"
            )
        for member_id in under:
            if len(self.assignment[member_id]) != self.min_quota:
                raise AssignorStateError(
                    f"Consumer: [{member_id}] doesn't reach minQuota partitions, and no more partitions to be assigned"
                )


class _Movements:
    """``PartitionMovements``: where each partition moved from and to during this assignment, so a
    move that would undo an earlier one of the same topic moves that earlier partition back."""

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashSet]] = {}
        self.moves: dict[TopicPartition, tuple[str, str]] = {}

    def _forget(self, tp: TopicPartition) -> tuple[str, str]:
        pair = self.moves.pop(tp)
        of_topic = self.by_topic[tp[0]]
        of_topic[pair].remove(tp)
        if not len(of_topic[pair]):
            del of_topic[pair]
        if not of_topic:
            del self.by_topic[tp[0]]
        return pair

    def _record(self, tp: TopicPartition, pair: tuple[str, str]) -> None:
        self.moves[tp] = pair
        self.by_topic.setdefault(tp[0], {}).setdefault(pair, JavaHashSet()).add(tp)

    def move(self, tp: TopicPartition, old: str, new: str) -> None:
        if tp in self.moves:
            source, _ = self._forget(tp)
            if source != new:
                self._record(tp, (source, new))
        else:
            self._record(tp, (old, new))

    def partition_to_move(self, tp: TopicPartition, old: str, new: str) -> TopicPartition:
        of_topic = self.by_topic.get(tp[0])
        if of_topic is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        back = of_topic.get((new, old))
        return tp if back is None else next(iter(back))


class _General:
    """Members subscribe to different topics (``GeneralAssignmentBuilder``): keep the owned partitions
    of subscribed topics, give each other partition to the least-loaded eligible member, then move
    partitions (topics with the fewest potential members first) from a member to one with at least
    two fewer until the assignment is balanced, and keep the result only if it is more balanced.
    A partition an older generation owned goes back to that member when it is two behind."""

    def __init__(self, group: Sequence[Member], topics: Mapping[str, int], sanitised: _Sanitised) -> None:
        self.group = {m.memberId: m for m in group}
        self.topics = topics
        self.total = sum(topics.values())
        self.current: Assignment = sanitised.owned  # hash order of the member ids
        self.consumers_of: dict[str, list[str]] = {t: [] for t in topics}
        self.topics_of: dict[str, list[str]] = {}
        for member_id in self.current:
            mine = [t for t in self.group[member_id].topics if t in topics]
            self.topics_of[member_id] = mine
            for t in mine:
                self.consumers_of[t].append(member_id)
        self.owner: dict[TopicPartition, str] = {}
        for member_id, parts in self.current.items():
            for tp in parts:
                self.owner[tp] = member_id
        order = sorted(topics, key=lambda t: (len(self.consumers_of[t]), t))
        self.all_partitions = [(t, p) for t in order for p in range(topics[t])]
        self.in_tree: set[str] = set()
        self.movements = _Movements()
        self.revocation_required = False

    def _by_load(self) -> list[str]:
        """``sortedCurrentSubscriptions``: members by (number of partitions, member id)."""
        return sorted(self.in_tree, key=lambda m: (len(self.current[m]), m))

    def build(self) -> Assignment:
        previous = self._previous_owners()
        assigned: list[TopicPartition] = []
        for member_id, parts in self.current.items():
            subscribed = self.group[member_id].topics
            for tp in list(parts):
                if tp[0] not in subscribed:
                    parts.remove(tp)
                    self.revocation_required = True
                else:
                    assigned.append(tp)
        rank = {t: len(c) for t, c in self.consumers_of.items()}
        unassigned = _unassigned(self.all_partitions, assigned, key=lambda tp: (rank[tp[0]], tp[0], tp[1]))
        self.in_tree = set(self.current)
        self._balance(previous, unassigned)
        return self.current

    def _previous_owners(self) -> dict[TopicPartition, tuple[str, int]]:
        """``prepopulateCurrentAssignments``: for each partition a member of a generation below the
        newest reports, the member of the highest such generation (the first in hash order on a tie)."""
        newest = max((m.generation for m in self.group.values()), default=NO_GENERATION)
        previous: dict[TopicPartition, tuple[str, int]] = {}
        for member_id in self.current:
            member = self.group[member_id]
            if member.generation < newest:
                for tp in member.ownedPartitions:
                    if tp not in previous or member.generation > previous[tp][1]:
                        previous[tp] = (member_id, member.generation)
        return previous

    def _max_size(self, member_id: str) -> int:
        mine = self.topics_of[member_id]
        if len(mine) == len(self.topics):
            return self.total
        return sum(self.topics[t] for t in mine)

    def _balanced(self) -> bool:
        by_load = self._by_load()
        if len(self.current[by_load[0]]) >= len(self.current[by_load[-1]]) - 1:
            return True
        holder = {tp: m for m, parts in self.current.items() for tp in parts}
        for member_id in by_load:
            mine = self.current[member_id]
            if len(mine) == self._max_size(member_id):
                continue
            for t in self.topics_of[member_id]:
                for p in range(self.topics[t]):
                    if (t, p) not in mine:
                        other = holder.get((t, p))
                        if other is None:
                            raise AssignorNullPointerError(f"{(t, p)} has no owner among the members that may move")
                        if len(mine) + 1 < len(self.current[other]):
                            return False
        return True

    @staticmethod
    def _score(assignment: Assignment) -> int:
        sizes = [len(parts) for parts in assignment.values()]
        return sum(abs(a - b) for i, a in enumerate(sizes) for b in sizes[i + 1 :])

    def _movable_member(self, member_id: str) -> bool:
        mine = self.current[member_id]
        if len(mine) < self._max_size(member_id):
            return True
        return any(len(self.consumers_of[tp[0]]) >= 2 for tp in mine)

    def _balance(self, previous: dict[TopicPartition, tuple[str, int]], unassigned: list[TopicPartition]) -> None:
        initializing = not self.current[self._by_load()[-1]]
        for tp in unassigned:
            for member_id in self._by_load():
                if tp[0] in self.topics_of[member_id]:
                    self.current[member_id].append(tp)
                    self.owner[tp] = member_id
                    break
        fixed_topics = {t for t, c in self.consumers_of.items() if len(c) < 2}
        self.all_partitions = [tp for tp in self.all_partitions if tp[0] not in fixed_topics]
        unassigned = [tp for tp in unassigned if tp[0] not in fixed_topics]
        fixed: Assignment = {}
        for member_id in list(self.topics_of):
            if not self._movable_member(member_id):
                self.in_tree.discard(member_id)
                fixed[member_id] = self.current.pop(member_id)
        before = {m: list(parts) for m, parts in self.current.items()}
        before_owner = dict(self.owner)
        if not self.revocation_required:
            self._reassign_all(unassigned, previous)
        moved = self._reassign_all(self.all_partitions, previous)
        if not initializing and moved and self._score(self.current) >= self._score(before):
            self.current.clear()
            self.current.update(before)
            self.owner = before_owner
        for member_id, parts in fixed.items():
            self.current[member_id] = parts
            self.in_tree.add(member_id)

    def _reassign_all(self, partitions: list[TopicPartition], previous: dict[TopicPartition, tuple[str, int]]) -> bool:
        moved = False
        modified = True
        while modified:
            modified = False
            for tp in partitions:
                if self._balanced():
                    break
                holder = self.owner[tp]
                earlier = previous.get(tp)
                if earlier is not None:
                    if earlier[0] not in self.current:
                        raise AssignorNullPointerError(f"{tp}'s previous owner {earlier[0]} may not move")
                    if len(self.current[holder]) > len(self.current[earlier[0]]) + 1:
                        self._move(tp, earlier[0])
                        moved = modified = True
                        continue
                for other in self.consumers_of[tp[0]]:
                    if len(self.current[holder]) > len(self.current[other]) + 1:
                        target = next(m for m in self._by_load() if tp[0] in self.topics_of[m])
                        self._move(tp, target)
                        moved = modified = True
                        break
        return moved

    def _move(self, tp: TopicPartition, new: str) -> None:
        tp = self.movements.partition_to_move(tp, self.owner[tp], new)
        old = self.owner[tp]
        self.movements.move(tp, old, new)
        self.current[old].remove(tp)
        self.current[new].append(tp)
        self.owner[tp] = new


# -- CooperativeStickyAssignor --------------------------------------------------------------------
def _cooperative_sticky(
    group: Sequence[Member], partitions_per_topic: Mapping[str, int], sanitise: bool = True, older_claims: bool = True
) -> Assignment:
    """The sticky assignment minus the partitions that change owner this round (KIP-429). With equal
    subscriptions those are the ones the sticky builder handed to a member other than the one that
    kept them (and those claimed twice); otherwise, those one member reports owning and the
    assignment gives to another."""
    result, transferring = _sticky(group, partitions_per_topic, sanitise, older_claims)
    if transferring is None:
        transferring = _transferring_ownership(group, result)
    for tp, member_id in transferring.items():
        if tp in result[member_id]:
            result[member_id].remove(tp)
    return result


def _transferring_ownership(group: Sequence[Member], result: Assignment) -> dict[TopicPartition, str]:
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for m in group:
        mine = result.get(m.memberId, [])
        owned = set(m.ownedPartitions)
        for tp in mine:
            if tp not in owned:
                added[tp] = m.memberId
        revoked |= owned - set(mine)
    return {tp: m for tp, m in added.items() if tp in revoked}


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
