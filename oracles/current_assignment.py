"""The `group-kip848` coordinator held to Kafka's ``CurrentAssignmentBuilder`` and ``ConsumerGroup``.

The model's coordinator reconciles a member only when it handles that member's heartbeat
(``HandleHeartbeat``; a new target assignment is computed inside the same handler and reaches
each member on its own next heartbeat, as in ``GroupMetadataManager.consumerGroupHeartbeat``).
At every such step the member as the coordinator held it before the step becomes a Kafka
``ConsumerGroupMember`` (a joining member: epoch 0, STABLE, nothing assigned), and
``CurrentAssignmentBuilder`` is given the target assignment and its epoch the model used, the
partition epochs the model's coordinator knows and the owned partitions the heartbeat carried;
the member ``build()`` returns is compared field by field with the model's member after the step.

The partition-epoch bookkeeping KAFKA-16147 fixed (``ConsumerGroup.maybeUpdatePartitionEpoch``)
is compared too: a real ``ConsumerGroup`` is filled with the members before the step, then the
step's update (``updateMember`` with the model's new member) or removal (``removeMember``: a
leave heartbeat, a session or rebalance timeout) is applied, and its ``currentPartitionEpoch``
of every partition must equal the model's partition epochs after the step.

The model's one topic ``t`` has a fixed topic id; the metadata image is a
``KRaftCoordinatorMetadataImage`` over a ``MetadataImage`` holding that topic and its partitions,
and every member subscribes to ``t`` by name. The model does not keep the per-partition
assignment epochs of KIP-1251: a partition a member already holds is given the member's epoch;
they are carried by Kafka and never compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from kmc.checker import Action
from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.models.group_kip848.model import Kip848Model
from kmc.models.group_kip848.state import JOIN_EPOCH, LEAVE_EPOCH, NONE, STABLE, GroupMember, Kip848State

from . import jvm

MODERN = "org.apache.kafka.coordinator.group.modern."
BUILDER = MODERN + "consumer.CurrentAssignmentBuilder"
MEMBER = MODERN + "consumer.ConsumerGroupMember"
GROUP = MODERN + "consumer.ConsumerGroup"

TOPIC = "t"
"""The model's one subscribed topic."""
TOPIC_ID = (0x6B6D63, 0x74)
"""The fixed Uuid (most, least significant bits) standing for topic ``t``."""

MEMBER_QUESTIONS = ("state", "memberEpoch", "previousMemberEpoch", "assignedPartitions", "partitionsPendingRevocation")
"""The fields of ``ConsumerGroupMember`` the model keeps, compared after every reconciliation."""

REMOVALS = ("SessionTimeout", "RebalanceTimeout")

MIN_RELEASE = (4, 3)
"""KIP-1251 (4.3) gave ``ConsumerGroupMember`` per-partition assignment epochs: the calls here use that API."""


class MemberView(NamedTuple):
    """A member as both sides keep it (the model's ``GroupMember`` without the consumer index)."""

    state: str
    memberEpoch: int
    previousMemberEpoch: int
    assignedPartitions: frozenset[int]
    partitionsPendingRevocation: frozenset[int]


class BuildCall(NamedTuple):
    """Everything ``CurrentAssignmentBuilder`` is given; also the key of the cache of Kafka's answers."""

    memberId: str
    member: MemberView
    targetAssignmentEpoch: int
    targetAssignment: frozenset[int]
    partitionEpochs: tuple[int, ...]
    ownedPartitions: frozenset[int] | None
    """None: the heartbeat left the field null (unchanged since the previous heartbeat)."""


class BookkeepingCall(NamedTuple):
    """The members before a step and the step's update (a new member) or removal (a member id)."""

    members: tuple[tuple[str, MemberView], ...]
    update: tuple[str, MemberView] | None
    remove: str | None


def _view(m: GroupMember) -> MemberView:
    return MemberView(m.state, m.memberEpoch, m.previousMemberEpoch, m.assigned, m.pendingRevocation)


class CurrentAssignmentOracle(Oracle):
    name = "current-assignment"
    model_name = "group-kip848"
    reference = (BUILDER, MEMBER, GROUP, "org.apache.kafka.coordinator.common.runtime.KRaftCoordinatorMetadataImage")
    description = (
        "each reconciliation is what CurrentAssignmentBuilder.build() returns, and the partition epochs what "
        "ConsumerGroup keeps"
    )

    model: Kip848Model

    def __init__(self, model: Kip848Model, release: str | None = None) -> None:  # type: ignore[override]
        super().__init__(model, release)
        self._version = self.release = jvm.start(self.release)
        if jvm.release_tuple(self._version) < MIN_RELEASE:
            return  # unsupported() says why; nothing below exists in older jars
        j = jvm.jclass
        self._integer = j("java.lang.Integer")
        self._hash_map = j("java.util.HashMap")
        self._hash_set = j("java.util.HashSet")
        self._array_list = j("java.util.ArrayList")
        self._builder = j(BUILDER)
        self._member_builder = j(MEMBER + "$Builder")
        self._group = j(GROUP)
        self._assignment = j(MODERN + "Assignment")
        self._member_state = j(MODERN + "MemberState")
        self._topic_partitions = j("org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData$TopicPartitions")
        self._log_context = j("org.apache.kafka.common.utils.LogContext")()
        self._snapshot_registry = j("org.apache.kafka.timeline.SnapshotRegistry")
        self._topic_id = j("org.apache.kafka.common.Uuid")(*TOPIC_ID)
        self._subscription = j("java.util.List").of(TOPIC)
        self._image = jvm.coordinator_metadata_image([(TOPIC, self._topic_id, model.config.partitions)])
        self._members: dict[tuple[str, MemberView], Any] = {}
        self._built: dict[BuildCall, MemberView | str] = {}
        self._epochs_after: dict[BookkeepingCall, tuple[int, ...] | str] = {}
        """Kafka's answers by input: the same reconciliation recurs in many states."""

    def unsupported(self) -> str | None:
        if jvm.release_tuple(self._version) < MIN_RELEASE:
            return (
                f"this adapter calls the ConsumerGroupMember of Kafka 4.3+ (per-partition assignment epochs, "
                f"KIP-1251); Kafka {self._version} has another API"
            )
        config = self.model.config
        if config.reclaim_pending_revocation:
            return (
                "reclaim_pending_revocation models the early-2024 reconciliation (KAFKA-16147's report), which no "
                f"CurrentAssignmentBuilder since 3.8 has; Kafka {self._version} keeps a revoking member in "
                "UNREVOKED_PARTITIONS, and 3.7's builder (REVOKING/ASSIGNING states) takes other inputs"
            )
        if not config.partition_epoch_bookkeeping:
            return (
                "partition_epoch_bookkeeping=false models ConsumerGroup.maybeUpdatePartitionEpoch before the "
                f"KAFKA-16147 fix (3.7); Kafka {self._version} removes every old epoch before adding the new ones"
            )
        older = [
            name
            for name, flag, fixed in (
                ("KAFKA-16615 (3.8)", config.revoke_only_owned, True),
                ("KAFKA-19449 (4.2)", config.release_own_pending_revocation, True),
                ("KAFKA-19974 (4.2)", config.bump_epoch_after_revocation, False),
            )
            if flag != fixed
        ]
        if older:
            return (
                f"this config models CurrentAssignmentBuilder before {', '.join(older)}; Kafka {self._version} has "
                "those fixes, and the older releases' builder takes another API than this adapter calls"
            )
        if not config.wait_for_release:
            return (
                "wait_for_release=false is a what-if no Kafka release implements: CurrentAssignmentBuilder always "
                "withholds a partition whose epoch is not free"
            )
        return None

    # -- the step ------------------------------------------------------------------------------
    def compare_step(self, state: Kip848State, action: Action, next_state: Kip848State) -> Iterable[Comparison]:
        if action.name == "HandleHeartbeat":
            if action.args["error"] != NONE:
                return ()  # fenced or unknown: the epoch validation, not the builder
            hb = state.consumers[action.args["consumer"]].request
            assert hb is not None
            if hb.memberEpoch == LEAVE_EPOCH:
                return self._compare_removal(state, next_state, hb.memberId)
            return self._compare_reconciliation(state, action, next_state)
        if action.name in REMOVALS:
            return self._compare_removal(state, next_state, action.args["memberId"])
        return ()

    def _compare_reconciliation(self, state: Kip848State, action: Action, next_state: Kip848State) -> list[Comparison]:
        c = action.args["consumer"]
        hb = state.consumers[c].request
        assert hb is not None
        before_members = {m.memberId: m for m in state.coordinator.members}
        after_members = {m.memberId: m for m in next_state.coordinator.members}
        joined = set(after_members) - set(before_members)
        if hb.memberEpoch == JOIN_EPOCH and hb.memberId == "":
            [member_id] = joined
            before = MemberView(STABLE, JOIN_EPOCH, JOIN_EPOCH, frozenset(), frozenset())
        else:
            member_id = hb.memberId
            before = _view(before_members[member_id])
        after = _view(after_members[member_id])
        coord = next_state.coordinator  # the target the handler computed (if any) is the one it reconciled to
        call = BuildCall(
            memberId=member_id,
            member=before,
            targetAssignmentEpoch=coord.targetAssignmentEpoch,
            targetAssignment=dict(coord.targetAssignment).get(member_id, frozenset()),
            partitionEpochs=state.coordinator.partitionEpochs,
            ownedPartitions=hb.ownedPartitions,
        )
        theirs = self._built.get(call)
        if theirs is None:
            theirs = self._built[call] = self._ask_builder(call)
        inputs: dict[str, Any] = call._asdict()
        out = []
        for question in MEMBER_QUESTIONS:
            answer = theirs if isinstance(theirs, str) else getattr(theirs, question)
            out.append(Comparison(question, getattr(after, question), answer, inputs))
        others = tuple((m.memberId, _view(m)) for m in state.coordinator.members if m.memberId != member_id)
        existing = () if member_id not in before_members else ((member_id, before),)
        book = BookkeepingCall(members=tuple(sorted(others + existing)), update=(member_id, after), remove=None)
        out.append(self._compare_epochs(book, next_state))
        return out

    def _compare_removal(self, state: Kip848State, next_state: Kip848State, member_id: str) -> list[Comparison]:
        if not any(m.memberId == member_id for m in state.coordinator.members):
            return []  # a leave heartbeat of a member already gone: nothing is removed
        members = tuple(sorted((m.memberId, _view(m)) for m in state.coordinator.members))
        return [self._compare_epochs(BookkeepingCall(members=members, update=None, remove=member_id), next_state)]

    def _compare_epochs(self, call: BookkeepingCall, next_state: Kip848State) -> Comparison:
        theirs = self._epochs_after.get(call)
        if theirs is None:
            theirs = self._epochs_after[call] = self._ask_group(call)
        return Comparison("partitionEpochs", next_state.coordinator.partitionEpochs, theirs, call._asdict())

    # -- Kafka ---------------------------------------------------------------------------------
    def _partition_map(self, partitions: frozenset[int], epoch: int) -> Any:
        """``{topicId: {partition: assignment epoch}}`` (empty when no partition)."""
        out = self._hash_map()
        if partitions:
            inner = self._hash_map()
            for p in sorted(partitions):
                inner.put(self._integer(p), self._integer(epoch))
            out.put(self._topic_id, inner)
        return out

    def _member(self, member_id: str, m: MemberView) -> Any:
        key = (member_id, m)
        member = self._members.get(key)
        if member is None:
            member = self._members[key] = (
                self._member_builder(member_id)
                .setMemberEpoch(m.memberEpoch)
                .setPreviousMemberEpoch(m.previousMemberEpoch)
                .setState(getattr(self._member_state, m.state))
                .setSubscribedTopicNames(self._subscription)
                .setAssignedPartitions(self._partition_map(m.assignedPartitions, m.memberEpoch))
                .setPartitionsPendingRevocation(self._partition_map(m.partitionsPendingRevocation, m.memberEpoch))
                .build()
            )
        return member

    def _partitions(self, assignment: Mapping[Any, Any]) -> frozenset[int]:
        inner = assignment.get(self._topic_id)
        return frozenset() if inner is None else frozenset(int(p) for p in inner.keySet())

    def _ask_builder(self, call: BuildCall) -> MemberView | str:
        epochs = call.partitionEpochs
        target = self._hash_map()
        if call.targetAssignment:
            partitions = self._hash_set()
            for p in sorted(call.targetAssignment):
                partitions.add(self._integer(p))
            target.put(self._topic_id, partitions)
        owned = None
        if call.ownedPartitions is not None:
            owned = self._array_list()
            owned.add(
                self._topic_partitions()
                .setTopicId(self._topic_id)
                .setPartitions(self._array_list([self._integer(p) for p in sorted(call.ownedPartitions)]))
            )
        topic_id = self._topic_id

        integer = self._integer

        def current_partition_epoch(topic: Any, partition: Any) -> Any:
            return integer(epochs[int(partition)] if topic.equals(topic_id) else -1)  # a java.lang.Integer

        try:
            built = (
                self._builder(self._member(call.memberId, call.member))
                .withMetadataImage(self._image)
                .withTargetAssignment(call.targetAssignmentEpoch, self._assignment(target))
                .withCurrentPartitionEpoch(current_partition_epoch)
                .withOwnedTopicPartitions(owned)
                .build()
            )
        except Exception as exc:
            if jvm.is_java_exception(exc):
                return jvm.java_exception_text(exc)
            raise
        return MemberView(
            state=str(built.state().name()),
            memberEpoch=int(built.memberEpoch()),
            previousMemberEpoch=int(built.previousMemberEpoch()),
            assignedPartitions=self._partitions(built.assignedPartitions()),
            partitionsPendingRevocation=self._partitions(built.partitionsPendingRevocation()),
        )

    def _ask_group(self, call: BookkeepingCall) -> tuple[int, ...] | str:
        """A ``ConsumerGroup`` with the members before the step, then the step's update or removal:
        its partition epochs after."""
        try:
            group = self._group(self._log_context, self._snapshot_registry(self._log_context), "g")
            for member_id, m in call.members:
                group.updateMember(self._member(member_id, m))
            if call.update is not None:
                group.updateMember(self._member(*call.update))
            if call.remove is not None:
                group.removeMember(call.remove)
            return tuple(
                int(group.currentPartitionEpoch(self._topic_id, p)) for p in range(self.model.config.partitions)
            )
        except Exception as exc:
            if jvm.is_java_exception(exc):
                return jvm.java_exception_text(exc)
            raise
