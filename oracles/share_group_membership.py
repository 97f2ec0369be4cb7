"""The `share-group-membership` coordinator held to Kafka's share-group classes.

At every ``HandleHeartbeat`` the model's coordinator takes up to four decisions, and each is asked of
Kafka:

- **the epoch check**: whether the heartbeat's member epoch is accepted, asked of
  ``GroupMetadataManager.throwIfShareGroupMemberEpochIsInvalid`` (private: called by reflection on a
  manager allocated without its constructor; the method reads none of its fields);
- **the initialized partitions waiting**: whenever the heartbeat asks (before KAFKA-20291 at every
  heartbeat, since only while the target is as new as the group), whether initialized
  partitions wait for an assignment, asked of ``GroupMetadataManager.initializedAssignmentPending`` with a
  real ``ShareGroup`` holding the members and targets before the step, and the manager's
  ``shareGroupStatePartitionMetadata`` holding the initialized partitions;
- **the target**: when the step computed a new target, ``SimpleAssignor`` through the coordinator's own
  ``ShareTargetAssignmentBuilder``, with the members (the sender last, as the coordinator adds it), their
  previous targets, a metadata image of the partition counts and the initialized partitions as the
  assignable ones (Kafka 4.2 and later: 4.1's assignor is another algorithm, which the model does not
  port, so on 4.1 the target is not compared);
- **the reconciliation**: when the coordinator would reconcile (the epoch was bumped, or the member is
  not at the target's epoch), ``ShareGroupAssignmentBuilder`` is given the member with the heartbeat's
  subscription, the target's epoch and the member's target, and whether the epoch was bumped; its member
  is compared field by field with the model's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any, NamedTuple

from kmc.checker import Action
from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.models.share_group_membership.assignor import TOPIC_IDS, Member
from kmc.models.share_group_membership.model import ShareGroupMembershipModel
from kmc.models.share_group_membership.state import (
    FENCED_MEMBER_EPOCH,
    LEAVE_EPOCH,
    NONE,
    Partitions,
    ShareGroupMember,
    ShareGroupMembershipState,
    member_of,
    target_of,
)

from . import jvm

GROUP_PACKAGE = "org.apache.kafka.coordinator.group."
MANAGER = GROUP_PACKAGE + "GroupMetadataManager"
SHARE = GROUP_PACKAGE + "modern.share."
MEMBER = SHARE + "ShareGroupMember"
BUILDER = SHARE + "ShareGroupAssignmentBuilder"
TARGET_BUILDER = GROUP_PACKAGE + "modern.TargetAssignmentBuilder$ShareTargetAssignmentBuilder"
ASSIGNOR = GROUP_PACKAGE + "assignor.SimpleAssignor"
GROUP_ID = "g"
PORTED_ASSIGNOR = (4, 2)
"""The first release whose ``SimpleAssignor`` the model's assignor ports."""

MEMBER_QUESTIONS = ("memberEpoch", "previousMemberEpoch", "assignedPartitions")
"""The fields of ``ShareGroupMember`` the model keeps, compared after every reconciliation."""


class MemberView(NamedTuple):
    """A member as both sides keep it."""

    memberEpoch: int
    previousMemberEpoch: int
    subscribedTopicNames: frozenset[str]
    assignedPartitions: Partitions


class EpochCall(NamedTuple):
    member: MemberView
    memberEpoch: int


class PendingCall(NamedTuple):
    members: tuple[tuple[str, frozenset[str]], ...]
    targetAssignment: tuple[tuple[str, Partitions], ...]
    initialized: Partitions


class AssignCall(NamedTuple):
    members: tuple[Member, ...]
    """Each member with its subscription and previous target, the heartbeat's sender last."""
    partitionCounts: tuple[tuple[str, int], ...]
    initialized: Partitions


class ReconcileCall(NamedTuple):
    memberId: str
    member: MemberView
    targetAssignmentEpoch: int
    targetAssignment: Partitions
    hasSubscriptionChanged: bool
    partitionCounts: tuple[tuple[str, int], ...]


def _view(m: ShareGroupMember) -> MemberView:
    return MemberView(m.memberEpoch, m.previousMemberEpoch, m.subscribedTopicNames, m.assignedPartitions)


class KafkaShareClasses:
    """Kafka's share-group classes, built as the group coordinator builds their inputs."""

    ASSIGNED = re.compile(r"([\w-]+)=MemberAssignment\(partitions=\{([^}]*)\}\)")
    TOPIC = re.compile(r"([\w-]+)=\[([\d, ]*)\]")

    def __init__(self) -> None:
        j = self.j = jvm.jclass
        self.hash_map, self.hash_set = j("java.util.HashMap"), j("java.util.HashSet")
        self.array_list, self.integer = j("java.util.ArrayList"), j("java.lang.Integer")
        self.uuids = {n: j("org.apache.kafka.common.Uuid")(u[0], u[1]) for n, u in TOPIC_IDS.items()}
        self.names = {str(u): n for n, u in self.uuids.items()}
        self.assignor = j(ASSIGNOR)()
        self.time = j("org.apache.kafka.common.utils.Time").SYSTEM
        self.registry = j("org.apache.kafka.timeline.SnapshotRegistry")(j("org.apache.kafka.common.utils.LogContext")())

    def java_list(self, items: Iterable[Any]) -> Any:
        out = self.array_list()
        for item in items:
            out.add(item)
        return out

    @cache  # noqa: B019 (one instance per oracle)
    def image(self, layout: tuple[tuple[str, int], ...]) -> Any:
        """A ``KRaftCoordinatorMetadataImage`` with these topics, by the model's topic ids."""
        return jvm.coordinator_metadata_image((name, self.uuids[name], count) for name, count in layout)

    def partition_map(self, partitions: Partitions) -> Any:
        """``Map<Uuid, Set<Integer>>``."""
        out = self.hash_map()
        for topic in sorted({t for t, _ in partitions}):
            out.put(
                self.uuids[topic], self.hash_set(self.java_list(self.integer(p) for t, p in partitions if t == topic))
            )
        return out

    def partitions_of(self, partition_map: Any) -> Partitions:
        return frozenset((self.names[str(u)], int(p)) for u in partition_map.keySet() for p in partition_map.get(u))

    @cache  # noqa: B019
    def assignment(self, previous: Partitions) -> Any:
        """A target as the coordinator holds it: replayed from its record."""
        value = GROUP_PACKAGE + "generated.ShareGroupTargetAssignmentMemberValue"
        topics = self.array_list()
        for topic in sorted({t for t, _ in previous}):
            partitions = self.java_list(self.integer(p) for t, p in sorted(previous) if t == topic)
            topics.add(self.j(value + "$TopicPartition")().setTopicId(self.uuids[topic]).setPartitions(partitions))
        return self.j(GROUP_PACKAGE + "modern.Assignment").fromRecord(self.j(value)().setTopicPartitions(topics))

    def member(self, member_id: str, view: MemberView) -> Any:
        builder = self.j(MEMBER + "$Builder")(member_id)
        builder.setMemberEpoch(view.memberEpoch).setPreviousMemberEpoch(view.previousMemberEpoch)
        builder.setSubscribedTopicNames(self.java_list(sorted(view.subscribedTopicNames)))
        builder.setState(self.j(GROUP_PACKAGE + "modern.MemberState").STABLE)
        return builder.setAssignedPartitions(self.partition_map(view.assignedPartitions)).build()

    @cache  # noqa: B019
    def subscription_type(self, subscriptions: tuple[frozenset[str], ...]) -> Any:
        counts = self.hash_map()
        for topic in sorted(set().union(*subscriptions)):
            count = sum(topic in s for s in subscriptions)
            counts.put(topic, self.j(GROUP_PACKAGE + "modern.SubscriptionCount")(count, 0))
        return self.j(GROUP_PACKAGE + "modern.ModernGroup").subscriptionType(counts, len(subscriptions))

    def assign(self, members: Sequence[Member], layout: Mapping[str, int], assignable: Partitions) -> Any:
        """Every member's new target, or the simple name of what Kafka throws. The group's members are
        put in the given order, the last one as the member whose heartbeat asks (4.4 takes it in the
        group's map; 4.2 keeps no clock)."""
        *others, (last_id, last_topics, _) = members
        existing, targets = self.hash_map(), self.hash_map()
        for member_id, _, previous in members:
            targets.put(member_id, self.assignment(previous))
        for member_id, topics, _ in others:
            existing.put(member_id, self.member(member_id, MemberView(0, 0, topics, frozenset())))
        builder = self.j(TARGET_BUILDER)(GROUP_ID, 1, self.assignor)
        if hasattr(builder, "withTime"):
            builder = builder.withTime(self.time)
        last = self.member(last_id, MemberView(0, 0, last_topics, frozenset()))
        if hasattr(builder, "addOrUpdateMember"):
            builder = builder.addOrUpdateMember(last_id, last)
        else:
            existing.put(last_id, last)
        builder = (
            builder.withMembers(existing)
            .withSubscriptionType(self.subscription_type(tuple(m[1] for m in members)))
            .withTargetAssignment(targets)
            .withTopicAssignablePartitionsMap(self.partition_map(assignable))
            .withMetadataImage(self.image(tuple(sorted(layout.items()))))
        )
        try:
            result = builder.build().targetAssignment()
        except Exception as exc:
            if not jvm.is_java_exception(exc):
                raise
            return str(exc.getClass().getSimpleName())  # type: ignore[attr-defined]
        return self.parse_assignment(str(result.toString()), [m[0] for m in members])

    def parse_assignment(self, text: str, member_ids: list[str]) -> dict[str, Partitions]:
        """``{m0=MemberAssignment(partitions={<uuid>=[0, 1]}), ...}`` read back (one JNI call, not one per
        element); the text must be made of nothing else."""
        found = self.ASSIGNED.findall(text)
        rebuilt = ", ".join(f"{m}=MemberAssignment(partitions={{{inner}}})" for m, inner in found)
        assert f"{{{rebuilt}}}" == text, f"unexpected GroupAssignment text: {text}"
        out: dict[str, Partitions] = {m: frozenset() for m in member_ids}
        for member_id, inner in found:
            topics = self.TOPIC.findall(inner)
            assert ", ".join(f"{u}=[{ps}]" for u, ps in topics) == inner, inner
            out[member_id] = frozenset((self.names[u], int(p)) for u, ps in topics for p in ps.split(", ") if p)
        return out

    def share_group(self, call: PendingCall) -> Any:
        group = self.j(SHARE + "ShareGroup")(self.registry, GROUP_ID)
        for member_id, topics in call.members:
            group.updateMember(self.member(member_id, MemberView(0, 0, topics, frozenset())))
        for member_id, target in call.targetAssignment:
            group.updateTargetAssignment(
                member_id, self.j(GROUP_PACKAGE + "modern.Assignment")(self.partition_map(target))
            )
        return group

    def initialized_info(self, initialized: Partitions) -> Any:
        """``ShareGroupStatePartitionMetadataInfo`` with these partitions initialized (none initializing)."""
        init_value = self.j(SHARE + "ShareGroup$InitMapValue")
        topics = self.hash_map()
        for topic in sorted({t for t, _ in initialized}):
            partitions = self.hash_set(self.java_list(self.integer(p) for t, p in initialized if t == topic))
            topics.put(self.uuids[topic], init_value(topic, partitions, 0))
        return self.j(SHARE + "ShareGroup$ShareGroupStatePartitionMetadataInfo")(
            self.hash_map(), topics, self.hash_set()
        )


class ShareGroupMembershipOracle(Oracle):
    name = "share-group-membership"
    model_name = "share-group-membership"
    reference = (MANAGER, ASSIGNOR, TARGET_BUILDER, BUILDER)
    description = (
        "each heartbeat's epoch check, its check for initialized partitions waiting, its target and the "
        "member's reconciliation are what GroupMetadataManager, SimpleAssignor and ShareGroupAssignmentBuilder decide"
    )

    model: ShareGroupMembershipModel

    def __init__(self, model: ShareGroupMembershipModel, release: str | None = None) -> None:  # type: ignore[override]
        super().__init__(model, release)
        self._version = self.release = jvm.start(self.release)
        self._kafka = KafkaShareClasses()
        self._compare_targets = jvm.release_tuple(self._version) >= PORTED_ASSIGNOR
        self._manager = _allocated(jvm.jclass(MANAGER))
        self._epoch_check = _private_method(MANAGER, "throwIfShareGroupMemberEpochIsInvalid", MEMBER, "int")
        self._pending = _private_method(MANAGER, "initializedAssignmentPending", SHARE + "ShareGroup")
        metadata = jvm.jclass("org.apache.kafka.timeline.TimelineHashMap")(self._kafka.registry, 0)
        field = jvm.jclass(MANAGER).class_.getDeclaredField("shareGroupStatePartitionMetadata")
        field.setAccessible(True)
        field.set(self._manager, metadata)
        self._metadata = metadata
        self._answers: dict[tuple[object, ...], Any] = {}
        """Kafka's answers by call: the same decision recurs in many states."""

    # -- the step ------------------------------------------------------------------------------
    def compare_step(
        self, state: ShareGroupMembershipState, action: Action, next_state: ShareGroupMembershipState
    ) -> Iterable[Comparison]:
        if action.name != "HandleHeartbeat":
            return ()
        hb = state.consumers[action.args["consumer"]].request
        assert hb is not None
        if hb.memberEpoch == LEAVE_EPOCH:
            return ()  # a removal: no decision of the classes compared here
        error = action.args["error"]
        before = member_of(state.group, hb.memberId)
        out: list[Comparison] = []
        if before is not None:
            call = EpochCall(_view(before), hb.memberEpoch)
            theirs = self._ask(call, self._ask_epoch_check)
            out.append(Comparison("memberEpochAccepted", error != FENCED_MEMBER_EPOCH, theirs, call._asdict()))
        if error != NONE:
            return out
        group, after = state.group, next_state.group
        initialized = state.shareGroupStatePartitionMetadata.initializedTopics
        if self.model.asks_initialized_assignment_pending(group):
            pending = PendingCall(
                tuple((m.memberId, m.subscribedTopicNames) for m in group.members), group.targetAssignment, initialized
            )
            ours = self.model.initialized_assignment_pending(group, initialized)
            out.append(
                Comparison(
                    "initializedAssignmentPending", ours, self._ask(pending, self._ask_pending), pending._asdict()
                )
            )
        updated = member_of(after, hb.memberId)
        assert updated is not None
        subscribed = updated.subscribedTopicNames
        if after.assignmentEpoch != group.assignmentEpoch and self._compare_targets:
            out.append(self._compare_target(state, next_state, hb.memberId, subscribed))
        member = before or ShareGroupMember(hb.memberId, 0, 0, frozenset(), frozenset())
        member = member._replace(subscribedTopicNames=subscribed)
        bumped = after.groupEpoch > group.groupEpoch
        if bumped or member.memberEpoch != after.assignmentEpoch:
            call_r = ReconcileCall(
                hb.memberId,
                _view(member),
                after.assignmentEpoch,
                target_of(after, hb.memberId),
                bumped,
                state.partitionCounts,
            )
            theirs_r = self._ask(call_r, self._ask_reconcile)
            ours_r = _view(updated)
            for question in MEMBER_QUESTIONS:
                answer = theirs_r if isinstance(theirs_r, str) else getattr(theirs_r, question)
                out.append(Comparison(question, getattr(ours_r, question), answer, call_r._asdict()))
        return out

    def _compare_target(
        self,
        state: ShareGroupMembershipState,
        next_state: ShareGroupMembershipState,
        sender: str,
        subscribed: frozenset[str],
    ) -> Comparison:
        previous = dict(state.group.targetAssignment)
        others = [m for m in next_state.group.members if m.memberId != sender]
        members = tuple(
            (m.memberId, m.subscribedTopicNames, previous.get(m.memberId, frozenset()))
            for m in [*others, ShareGroupMember(sender, 0, 0, subscribed, frozenset())]
        )
        call = AssignCall(members, state.partitionCounts, state.shareGroupStatePartitionMetadata.initializedTopics)
        theirs = self._ask(call, self._ask_assignor)
        if not isinstance(theirs, str):
            theirs = tuple(sorted(theirs.items()))
        return Comparison("targetAssignment", tuple(sorted(next_state.group.targetAssignment)), theirs, call._asdict())

    def _ask(self, call: tuple[object, ...], ask: Any) -> Any:
        key = (type(call).__name__, *call)
        answer = self._answers.get(key)
        if answer is None:
            try:
                answer = ask(call)
            except Exception as exc:  # a Kafka exception is Kafka's answer
                if not jvm.is_java_exception(exc):
                    raise
                answer = jvm.java_exception_text(exc)
            self._answers[key] = answer
        return answer

    # -- Kafka ---------------------------------------------------------------------------------
    def _ask_epoch_check(self, call: EpochCall) -> bool:
        member = self._kafka.member("m", call.member)
        try:
            self._epoch_check.invoke(self._manager, member, self._kafka.integer(call.memberEpoch))
        except Exception as exc:
            cause = _cause(exc)
            if cause is not None and str(cause.getClass().getSimpleName()) == "FencedMemberEpochException":
                return False
            raise
        return True

    def _ask_pending(self, call: PendingCall) -> bool:
        self._metadata.clear()
        self._metadata.put(GROUP_ID, self._kafka.initialized_info(call.initialized))
        return bool(self._pending.invoke(self._manager, self._kafka.share_group(call)))

    def _ask_assignor(self, call: AssignCall) -> Any:
        return self._kafka.assign(call.members, dict(call.partitionCounts), call.initialized)

    def _ask_reconcile(self, call: ReconcileCall) -> MemberView:
        builder = jvm.jclass(BUILDER)(self._kafka.member(call.memberId, call.member))
        if hasattr(builder, "withMetadataImage"):  # 4.2 and later filter the target by the subscription
            builder = builder.withMetadataImage(self._kafka.image(call.partitionCounts))
        target = jvm.jclass(GROUP_PACKAGE + "modern.Assignment")(self._kafka.partition_map(call.targetAssignment))
        builder = builder.withTargetAssignment(call.targetAssignmentEpoch, target)
        if hasattr(builder, "withHasSubscriptionChanged"):
            builder = builder.withHasSubscriptionChanged(call.hasSubscriptionChanged)
        built = builder.build()
        return MemberView(
            int(built.memberEpoch()),
            int(built.previousMemberEpoch()),
            frozenset(str(t) for t in built.subscribedTopicNames()),
            self._kafka.partitions_of(built.assignedPartitions()),
        )


def _allocated(java_class: Any) -> Any:
    """An instance made without running a constructor (``Unsafe.allocateInstance``)."""
    unsafe_class = jvm.jclass("sun.misc.Unsafe").class_
    field = unsafe_class.getDeclaredField("theUnsafe")
    field.setAccessible(True)
    return field.get(None).allocateInstance(java_class.class_)


def _private_method(owner: str, name: str, *parameters: str) -> Any:
    types = [jvm.jclass("java.lang.Integer").TYPE if p == "int" else jvm.jclass(p).class_ for p in parameters]
    method = jvm.jclass(owner).class_.getDeclaredMethod(name, *types)
    method.setAccessible(True)
    return method


def _cause(exc: BaseException) -> Any:
    """The exception a reflective call threw (``InvocationTargetException`` wraps it)."""
    get_cause = getattr(exc, "getCause", None)
    return get_cause() if get_cause is not None else None
