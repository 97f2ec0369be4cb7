"""Kafka 4.3's share-group ``SimpleAssignor`` (KIP-932), as a pure function (4.2 and 4.4 agree; 4.1's
is another algorithm).

``assign(members, partitions, assignable)`` gives each member its new target assignment, step for
step as ``SimpleHomogeneousAssignmentBuilder`` (all members subscribe to the same topic names) or
``SimpleHeterogeneousAssignmentBuilder`` computes it. Both walk ``HashMap``s and ``HashSet``s where
the walk decides who gets what; this port walks them in Java's order (``java_order``). The inputs
are rebuilt as the coordinator's ``TargetAssignmentBuilder`` builds them for a share group:

* members: a default ``HashMap`` by member id, filled with the group's members, then the one whose
  heartbeat asks. The builders number members in its walk order, which decides who gets the spare
  partitions. Ids sharing a bucket are walked in the order they were put, which the model cannot
  know: they are taken in the order given (by id). "m0" to "m9" share none, so their order is exact.
* subscriptions: a ``HashSet`` of names (from the heartbeat's list, taken as sorted) read through
  ``TopicIds``, which skips topics that do not exist.
* previous targets: ``Assignment.fromRecord``, a default ``HashMap`` of topic id to a ``HashSet`` of
  partitions. ``TOPIC_IDS`` hash to 1, 2, 3 (distinct buckets), so the record's order never matters.
* ``isPartitionAssignable``: the partitions whose share-group state is initialized.

Kafka's quirks kept (each seen in Kafka's own answers): an old partition of a subscribed topic is
counted and kept even when not assignable, and can be dealt to more members while an assignable one
waits; a heterogeneous group keeps old partitions of topics no member subscribes to (or that no
longer exist); a partition may be dealt twice to one member, counting as two; and when the unfilled
members run out while a partition wants more, Kafka's iterator throws ``NoSuchElementException``,
raised here as :class:`SimpleAssignorError`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, TypeAlias, TypeVar

from kmc.models.common.java_order import JavaHashMap, JavaHashSet, TopicIdPartition, Uuid, hash_order, hash_set_capacity

K = TypeVar("K")
TopicPartition = tuple[str, int]
Member = tuple[str, frozenset[str], frozenset[TopicPartition]]
OldAssignment: TypeAlias = JavaHashMap[Uuid, JavaHashSet[int]]
NewAssignment: TypeAlias = dict[Uuid, set[int]]

TOPIC_IDS: Mapping[str, Uuid] = MappingProxyType({f"t{i}": Uuid(i + 1, 0) for i in range(3)})
"""The id of each topic the model names (``Uuid.hashCode`` 1, 2, 3; not Kafka's reserved 0 and 1)."""
TopicIds: TypeAlias = tuple[tuple[str, Uuid], ...]
"""Each topic name with its id: the model's ``TOPIC_IDS``, or a real cluster's (``assign(..., topic_ids=)``)."""
MODEL_TOPIC_IDS: TopicIds = tuple(TOPIC_IDS.items())


class SimpleAssignorError(RuntimeError):
    """Kafka's assignor throws instead of answering; ``java_exception`` names what it throws."""

    def __init__(self, java_exception: str, message: str) -> None:
        super().__init__(f"{java_exception}: {message}")
        self.java_exception = java_exception


def newHashMap(numMappings: int) -> JavaHashMap[Any, Any]:
    """``AssignorHelpers.newHashMap``: a map sized for that many keys (``HashMap(int)``)."""
    return JavaHashMap(int((numMappings + 1) / 0.75 + 1))


def newHashSet(numElements: int) -> JavaHashSet[Any]:
    """``AssignorHelpers.newHashSet``."""
    return JavaHashSet(initial_capacity=int((numElements + 1) / 0.75 + 1))


@dataclass(frozen=True)
class GroupSpec:
    """What ``GroupSpecImpl`` and its ``SubscribedTopicDescriber`` tell the assignor."""

    memberIds: tuple[str, ...]
    subscribedTopicNames: Mapping[str, frozenset[str]]
    subscribedTopicIds: Mapping[str, tuple[Uuid, ...]]
    numPartitions: Mapping[Uuid, int]
    assignable: frozenset[TopicIdPartition]
    memberAssignments: Mapping[str, OldAssignment]
    homogeneous: bool
    topicNames: Mapping[Uuid, str]

    def isSubscribed(self, memberId: str, topicId: Uuid) -> bool:
        """``TopicIds.contains``: the topic exists and the member subscribes to its name."""
        return topicId in self.numPartitions and self.topicNames[topicId] in self.subscribedTopicNames[memberId]

    def isPartitionAssignable(self, topicId: Uuid, partition: int) -> bool:
        return TopicIdPartition(topicId, partition) in self.assignable


@lru_cache(maxsize=4096)
def fromRecord(previous: frozenset[TopicPartition], ids: TopicIds = MODEL_TOPIC_IDS) -> OldAssignment:
    """``Assignment.fromRecord``: the previous target as the coordinator holds it (shared: the
    builders only read it, as Kafka's, which gets it unmodifiable)."""
    byTopic: dict[str, list[int]] = {}
    for topic, partition in sorted(previous):
        byTopic.setdefault(topic, []).append(partition)
    assignment: OldAssignment = JavaHashMap()
    topicId = dict(ids)
    for topic, partitions in byTopic.items():
        assignment.put(topicId[topic], JavaHashSet(partitions, hash_set_capacity(len(partitions))))
    return assignment


@lru_cache(maxsize=1024)
def topicIds(topics: frozenset[str], existing: frozenset[str], ids: TopicIds = MODEL_TOPIC_IDS) -> tuple[Uuid, ...]:
    """A member's ``TopicIds`` walked: its ``HashSet`` of names (made from the heartbeat's list),
    skipping topics that do not exist."""
    names = JavaHashSet(sorted(topics), hash_set_capacity(len(topics)))
    topicId = dict(ids)
    return tuple(topicId[name] for name in names if name in existing)


def groupSpec(
    members: Sequence[Member],
    partitions: Mapping[str, int],
    assignable: frozenset[TopicPartition],
    ids: TopicIds = MODEL_TOPIC_IDS,
) -> GroupSpec:
    """The assignor's input as ``TargetAssignmentBuilder`` builds it for a share group."""
    existing = frozenset(partitions)
    topicId = dict(ids)
    return GroupSpec(
        memberIds=hash_order(memberId for memberId, _, _ in members),
        subscribedTopicNames={memberId: topics for memberId, topics, _ in members},
        subscribedTopicIds={memberId: topicIds(topics, existing, ids) for memberId, topics, _ in members},
        numPartitions={topicId[name]: count for name, count in partitions.items()},
        assignable=frozenset(TopicIdPartition(topicId[topic], p) for topic, p in assignable),
        memberAssignments={memberId: fromRecord(previous, ids) for memberId, _, previous in members},
        homogeneous=len({topics for _, topics, _ in members}) <= 1,  # ModernGroup.subscriptionType
        topicNames={uuid: name for name, uuid in ids},
    )


def assign(
    members: Sequence[Member],
    partitions: Mapping[str, int],
    assignable: frozenset[TopicPartition],
    topic_ids: Mapping[str, Uuid] = TOPIC_IDS,
) -> dict[str, frozenset[TopicPartition]]:
    """``SimpleAssignor.assign``: every member's new target assignment (empty when it has none).

    ``members``: (member id, subscribed topic names, previous target) in the model's order (by id);
    ``partitions``: partition count of each existing topic; ``assignable``: the initialized partitions;
    ``topic_ids``: the topics' ids, which decide the order Kafka walks partitions in.
    Raises :class:`SimpleAssignorError` where Kafka's assignor throws."""
    ids = tuple(sorted(topic_ids.items()))
    return dict(_assign(tuple(members), tuple(sorted(partitions.items())), frozenset(assignable), ids))


@lru_cache(maxsize=65536)
def _assign(
    members: tuple[Member, ...],
    partitions: tuple[tuple[str, int], ...],
    assignable: frozenset[TopicPartition],
    ids: TopicIds,
) -> dict[str, frozenset[TopicPartition]]:
    """Cached: a model asks the same question from many states."""
    if not members:
        return {}
    spec = groupSpec(members, dict(partitions), assignable, ids)
    builder = (
        SimpleHomogeneousAssignmentBuilder(spec) if spec.homogeneous else SimpleHeterogeneousAssignmentBuilder(spec)
    )
    result = builder.build()
    return {memberId: result[memberId] for memberId, _, _ in members}


def deepCopyAssignment(assignment: OldAssignment | NewAssignment) -> NewAssignment:
    """``AssignorHelpers.deepCopyAssignment``; the copies are only looked up, so plain dicts do."""
    return {topicId: set(partitions) for topicId, partitions in assignment.items()}


class _AssignmentBuilder:
    """What both builders share: the members' numbering and their old and new assignments."""

    def __init__(self, spec: GroupSpec) -> None:
        self.spec = spec
        self.memberIds = spec.memberIds
        self.numGroupMembers = len(spec.memberIds)
        self.oldGroupAssignment: JavaHashMap[int, OldAssignment] = newHashMap(self.numGroupMembers)
        for memberIndex, memberId in enumerate(self.memberIds):
            self.oldGroupAssignment.put(memberIndex, spec.memberAssignments[memberId])
        self.newGroupAssignment: dict[int, NewAssignment] = {}

    def newMemberAssignment(self, memberIndex: int) -> NewAssignment:
        """The member's new assignment: a copy of its old one, made when first changed."""
        assignment = self.newGroupAssignment.get(memberIndex)
        if assignment is None:
            assignment = self.newGroupAssignment[memberIndex] = deepCopyAssignment(self.oldGroupAssignment[memberIndex])
        return assignment

    def result(self) -> dict[str, frozenset[TopicPartition]]:
        """The new assignment of each member, else its old one."""
        out = {}
        for memberIndex, memberId in enumerate(self.memberIds):
            assignment = self.newGroupAssignment.get(memberIndex)
            chosen = self.oldGroupAssignment[memberIndex] if assignment is None else assignment
            out[memberId] = frozenset(
                (self.spec.topicNames[t], p) for t, partitions in chosen.items() for p in partitions
            )
        return out


def desiredAssignmentCounts(desiredSharing: int, numTargetPartitions: int, numMembers: int) -> list[int]:
    """Each member's share of ``desiredSharing * numTargetPartitions`` assignments, the spare ones
    going to the members whose (fractional) share first crosses an integer."""
    precise = desiredSharing * numTargetPartitions / numMembers
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(numMembers)]


def desiredSharingOf(numMembers: int, numTargetPartitions: int) -> int:
    """How many members each partition wants: ceil(members / partitions), 0 without partitions."""
    return 0 if numTargetPartitions == 0 else (numMembers + numTargetPartitions - 1) // numTargetPartitions


def revokeOversharedPartitions(
    finalAssignmentByPartition: JavaHashMap[K, JavaHashSet[int]], desiredSharing: int, revoke: Callable[[int, K], bool]
) -> None:
    """A partition held by more than ``desiredSharing`` members is taken from the first ones of its
    set that still hold it in their new assignment (``revoke`` says whether one did)."""
    for partition, assignedMembers in finalAssignmentByPartition.items():
        assignedMemberCount = len(assignedMembers)
        if assignedMemberCount <= desiredSharing:
            continue
        for memberIndex in assignedMembers.snapshot():
            if revoke(memberIndex, partition):
                assignedMemberCount -= 1
                assignedMembers.remove(memberIndex)
            if assignedMemberCount <= desiredSharing:
                break


def assignRemainingPartitions(
    finalAssignmentByPartition: JavaHashMap[K, JavaHashSet[int]],
    unfilledMembers: JavaHashSet[int],
    desiredSharing: int,
    give: Callable[[int, K], bool],
) -> None:
    """One pass over the partitions, dealing each under-shared one to the unfilled members in turn;
    the members are walked again only if the last walk gave something. ``give`` says whether the
    member is now full (it then leaves the set). Kafka never adds the new holder to the partition's
    set, so a second walk may give the same member the same partition again, which counts."""
    memberIterator, position = unfilledMembers.snapshot(), 0
    partitionAssignedForThisIterator = False
    for partition, membersAssigned in finalAssignmentByPartition.items():
        assignmentsToMake = desiredSharing - len(membersAssigned)
        while assignmentsToMake > 0:
            if position == len(memberIterator):
                if not partitionAssignedForThisIterator:
                    break
                memberIterator, position = unfilledMembers.snapshot(), 0
                partitionAssignedForThisIterator = False
                if not memberIterator:  # Kafka's iterator.next() on an empty set
                    raise SimpleAssignorError("NoSuchElementException", f"no unfilled member left for {partition}")
            memberIndex = memberIterator[position]
            position += 1
            if memberIndex not in membersAssigned:
                assignmentsToMake -= 1
                partitionAssignedForThisIterator = True
                if give(memberIndex, partition):
                    unfilledMembers.remove(memberIndex)
        if not len(unfilledMembers):
            break


class SimpleHomogeneousAssignmentBuilder(_AssignmentBuilder):
    """All members subscribe to the first member's topics: one pass over all their partitions."""

    def __init__(self, spec: GroupSpec) -> None:
        super().__init__(spec)
        self.firstMember = spec.memberIds[0]
        self.targetPartitions = [
            TopicIdPartition(topicId, p)
            for topicId in spec.subscribedTopicIds[self.firstMember]
            for p in range(spec.numPartitions[topicId])
            if spec.isPartitionAssignable(topicId, p)
        ]
        numTargetPartitions = len(self.targetPartitions)
        self.desiredSharing = desiredSharingOf(self.numGroupMembers, numTargetPartitions)
        self.desiredAssignmentCount = desiredAssignmentCounts(
            self.desiredSharing, numTargetPartitions, self.numGroupMembers
        )
        self.finalAssignmentByPartition: JavaHashMap[TopicIdPartition, JavaHashSet[int]] = newHashMap(
            numTargetPartitions
        )
        self.finalAssignmentByMember: dict[int, JavaHashSet[TopicIdPartition]] = {}  # its sets are walked
        self.unfilledMembers: JavaHashSet[int] = newHashSet(self.numGroupMembers)
        self.overfilledMembers: JavaHashSet[int] = newHashSet(self.numGroupMembers)

    def build(self) -> dict[str, frozenset[TopicPartition]]:
        if not self.spec.subscribedTopicNames[self.firstMember]:  # TopicIds.isEmpty counts names
            return {memberId: frozenset() for memberId in self.memberIds}
        self.revokeUnassignablePartitions()
        self.revokeOverfilledMembers()
        revokeOversharedPartitions(self.finalAssignmentByPartition, self.desiredSharing, self.revoke)
        for topicPartition in self.targetPartitions:
            self.finalAssignmentByPartition.compute_if_absent(topicPartition, JavaHashSet)
        if len(self.unfilledMembers):
            assignRemainingPartitions(
                self.finalAssignmentByPartition, self.unfilledMembers, self.desiredSharing, self.give
            )
        return self.result()

    def revokeUnassignablePartitions(self) -> None:
        """Count each member's old partitions of subscribed topics (assignable or not); drop the
        unsubscribed topics; sort the members into unfilled and overfilled."""
        for memberIndex, oldMemberAssignment in self.oldGroupAssignment.items():
            newMemberAssignment: NewAssignment | None = None
            memberAssignedPartitions = 0
            desired = self.desiredAssignmentCount[memberIndex]
            for topicId, assignedPartitions in oldMemberAssignment.items():
                if self.spec.isSubscribed(self.firstMember, topicId):
                    for partition in assignedPartitions:
                        topicPartition = TopicIdPartition(topicId, partition)
                        memberAssignedPartitions += 1
                        self.finalAssignmentByPartition.compute_if_absent(topicPartition, JavaHashSet).add(memberIndex)
                        self.finalAssignmentByMember.setdefault(memberIndex, JavaHashSet()).add(topicPartition)
                        if memberAssignedPartitions >= desired and newMemberAssignment is None:
                            newMemberAssignment = deepCopyAssignment(oldMemberAssignment)
                else:
                    if newMemberAssignment is None:
                        newMemberAssignment = deepCopyAssignment(oldMemberAssignment)
                    del newMemberAssignment[topicId]
            if newMemberAssignment is not None:
                self.newGroupAssignment[memberIndex] = newMemberAssignment
            if memberAssignedPartitions < desired:
                self.unfilledMembers.add(memberIndex)
            elif memberAssignedPartitions > desired:
                self.overfilledMembers.add(memberIndex)

    def revokeOverfilledMembers(self) -> None:
        """Overfilled members give up partitions, first in their set's order, down to their count."""
        for memberIndex in self.overfilledMembers:
            desired = self.desiredAssignmentCount[memberIndex]
            memberFinalAssignment = self.finalAssignmentByMember[memberIndex]
            for topicPartition in memberFinalAssignment.snapshot():
                if len(memberFinalAssignment) <= desired:
                    break
                self.newGroupAssignment[memberIndex][topicPartition.topicId].discard(topicPartition.partitionId)
                self.finalAssignmentByPartition[topicPartition].remove(memberIndex)
                memberFinalAssignment.remove(topicPartition)

    def revoke(self, memberIndex: int, topicPartition: TopicIdPartition) -> bool:
        partitions = self.newMemberAssignment(memberIndex).get(topicPartition.topicId)
        if partitions is None or topicPartition.partitionId not in partitions:
            return False
        partitions.remove(topicPartition.partitionId)
        self.finalAssignmentByMember[memberIndex].remove(topicPartition)
        self.unfilledMembers.add(memberIndex)
        return True

    def give(self, memberIndex: int, topicPartition: TopicIdPartition) -> bool:
        self.newMemberAssignment(memberIndex).setdefault(topicPartition.topicId, set()).add(topicPartition.partitionId)
        memberFinalAssignment = self.finalAssignmentByMember.setdefault(memberIndex, JavaHashSet())
        memberFinalAssignment.add(topicPartition)
        return len(memberFinalAssignment) >= self.desiredAssignmentCount[memberIndex]


class SimpleHeterogeneousAssignmentBuilder(_AssignmentBuilder):
    """Members subscribe to different topics: each topic is balanced on its own, in the order of the
    set of all subscribed topic ids, among the members subscribed to it."""

    def __init__(self, spec: GroupSpec) -> None:
        super().__init__(spec)
        self.subscribedTopicIds: JavaHashSet[Uuid] = JavaHashSet()
        for memberId in spec.memberIds:
            for topicId in spec.subscribedTopicIds[memberId]:
                self.subscribedTopicIds.add(topicId)
        self.subscribedMembersByTopic: dict[Uuid, list[int]] = {}
        for memberIndex, memberId in enumerate(spec.memberIds):
            for topicId in spec.subscribedTopicIds[memberId]:
                self.subscribedMembersByTopic.setdefault(topicId, []).append(memberIndex)

    def build(self) -> dict[str, frozenset[TopicPartition]]:
        if not len(self.subscribedTopicIds):  # no existing topic: every member ends with nothing
            return {memberId: frozenset() for memberId in self.memberIds}
        for topicId in self.subscribedTopicIds:
            TopicAssignmentPartialBuilder(self, topicId).build()
        return self.result()


class TopicAssignmentPartialBuilder:
    """The assignment of one topic's partitions, keyed by partition index."""

    def __init__(self, parent: SimpleHeterogeneousAssignmentBuilder, topicId: Uuid) -> None:
        self.parent = parent
        self.topicId = topicId
        spec = parent.spec
        self.targetPartitions = [
            p for p in range(spec.numPartitions[topicId]) if spec.isPartitionAssignable(topicId, p)
        ]
        self.subscribedMembers = parent.subscribedMembersByTopic[topicId]
        numTargetPartitions, numSubscribedMembers = len(self.targetPartitions), len(self.subscribedMembers)
        self.finalAssignmentByPartition: JavaHashMap[int, JavaHashSet[int]] = newHashMap(numTargetPartitions)
        self.finalAssignmentByMember: JavaHashMap[int, JavaHashSet[int]] = newHashMap(numSubscribedMembers)
        self.desiredSharing = desiredSharingOf(numSubscribedMembers, numTargetPartitions)
        counts = desiredAssignmentCounts(self.desiredSharing, numTargetPartitions, numSubscribedMembers)
        self.desiredAssignmentCounts = [0] * parent.numGroupMembers  # 0 for the unsubscribed members
        for position, memberIndex in enumerate(self.subscribedMembers):
            self.desiredAssignmentCounts[memberIndex] = counts[position]

    def build(self) -> None:
        self.revokeUnassignablePartitions()
        self.revokeOverfilledMembers()
        revokeOversharedPartitions(self.finalAssignmentByPartition, self.desiredSharing, self.revoke)
        numSubscribedMembers = len(self.subscribedMembers)
        for partition in self.targetPartitions:
            self.finalAssignmentByPartition.compute_if_absent(partition, lambda: newHashSet(numSubscribedMembers))
        unfilledMembers: JavaHashSet[int] = newHashSet(self.parent.numGroupMembers)
        for memberIndex in self.subscribedMembers:
            assigned = self.finalAssignmentByMember.get(memberIndex)
            if (0 if assigned is None else len(assigned)) < self.desiredAssignmentCounts[memberIndex]:
                unfilledMembers.add(memberIndex)
        assignRemainingPartitions(self.finalAssignmentByPartition, unfilledMembers, self.desiredSharing, self.give)

    def revokeUnassignablePartitions(self) -> None:
        """Every member's old partitions of this topic, subscribed or not, assignable or not. (Kafka's
        branch for a topic outside the subscribed set cannot run: the topic comes from that set.)"""
        for memberIndex, oldMemberAssignment in self.parent.oldGroupAssignment.items():
            assignedPartitions = oldMemberAssignment.get(self.topicId)
            if assignedPartitions is None:
                continue
            for partition in assignedPartitions:
                self.finalAssignmentByPartition.compute_if_absent(partition, JavaHashSet).add(memberIndex)
                self.finalAssignmentByMember.compute_if_absent(memberIndex, JavaHashSet).add(partition)

    def revokeOverfilledMembers(self) -> None:
        """Members over their count (all of them, for the unsubscribed) give up partitions in order."""
        for memberIndex, assignedPartitions in self.finalAssignmentByMember.items():
            desired = self.desiredAssignmentCounts[memberIndex]
            for partitionIndex in assignedPartitions.snapshot():
                if len(assignedPartitions) <= desired:
                    break
                self.finalAssignmentByPartition[partitionIndex].remove(memberIndex)
                assignedPartitions.remove(partitionIndex)
                self.parent.newMemberAssignment(memberIndex)[self.topicId].discard(partitionIndex)

    def revoke(self, memberIndex: int, partitionIndex: int) -> bool:
        partitions = self.parent.newMemberAssignment(memberIndex).get(self.topicId)
        if partitions is None or partitionIndex not in partitions:
            return False
        partitions.remove(partitionIndex)
        self.finalAssignmentByMember[memberIndex].remove(partitionIndex)
        return True

    def give(self, memberIndex: int, partitionIndex: int) -> bool:
        self.parent.newMemberAssignment(memberIndex).setdefault(self.topicId, set()).add(partitionIndex)
        memberFinalAssignment = self.finalAssignmentByMember.compute_if_absent(memberIndex, JavaHashSet)
        memberFinalAssignment.add(partitionIndex)
        return len(memberFinalAssignment) >= self.desiredAssignmentCounts[memberIndex]
