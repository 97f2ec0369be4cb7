"""The `consumer-delivery` model's commit fencing against Kafka's own offset-commit validation.

Every offset commit the model decides -- ``OffsetCommit`` (commitSync), an auto-commit inside
``Poll`` and ``SendOffsetsToTransaction`` (TxnOffsetCommit) -- is asked again of a real group built
from the state before the step: ``ClassicGroup.validateOffsetCommit`` for the classic protocol
(generation fencing) and ``ConsumerGroup.validateOffsetCommit`` for KIP-848 groups (member epochs,
and since Kafka 4.3 KIP-1251's per-partition assignment epochs, applied through the
``CommitPartitionValidator`` it returns). Kafka's answer is NONE or the error its exception maps to.
A commit the transaction coordinator rejects first (PRODUCER_FENCED) never reaches the group and
is not compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.checker.model import Action
from kmc.models.consumer_delivery.model import EMPTY, NONE, PREPARING_REBALANCE, STABLE, ConsumerDeliveryModel
from kmc.models.consumer_delivery.state import COMPLETING_REBALANCE, PRODUCER_FENCED, DeliveryState

from . import jvm

GROUP = "org.apache.kafka.coordinator.group."
TOPIC = "input"
OFFSET_COMMIT_VERSION = 9
"""OffsetCommit v9 (KIP-848): required of consumer-protocol members, accepted from classic ones."""
TXN_OFFSET_COMMIT_VERSION = 3
"""TxnOffsetCommit v3 (KIP-447): the first with member id and generation."""


class OffsetCommitOracle(Oracle):
    name = "offset-commit"
    model_name = "consumer-delivery"
    reference = (
        GROUP + "classic.ClassicGroup",
        GROUP + "modern.consumer.ConsumerGroup",
        GROUP + "CommitPartitionValidator",
    )
    description = "commit fencing (generation, member epoch, KIP-1251 assignment epoch) against the group classes"

    model: ConsumerDeliveryModel

    def __init__(self, model: ConsumerDeliveryModel, release: str | None = None) -> None:
        super().__init__(model, release)
        self.release = jvm.start(self.release)
        j = jvm.jclass
        self.ClassicGroup = j(GROUP + "classic.ClassicGroup")
        self.ClassicGroupMember = j(GROUP + "classic.ClassicGroupMember")
        state_enum = j(GROUP + "classic.ClassicGroupState")
        self.states = {
            EMPTY: state_enum.EMPTY,
            PREPARING_REBALANCE: state_enum.PREPARING_REBALANCE,
            COMPLETING_REBALANCE: state_enum.COMPLETING_REBALANCE,
            STABLE: state_enum.STABLE,
        }
        self.ConsumerGroup = j(GROUP + "modern.consumer.ConsumerGroup")
        self.MemberBuilder = j(GROUP + "modern.consumer.ConsumerGroupMember$Builder")
        self.SnapshotRegistry = j("org.apache.kafka.timeline.SnapshotRegistry")
        self.LogContext = j("org.apache.kafka.common.utils.LogContext")
        self.time = j("org.apache.kafka.common.utils.Time").SYSTEM
        self.Optional = j("java.util.Optional")
        self.Protocols = j("org.apache.kafka.common.message.JoinGroupRequestData$JoinGroupRequestProtocolCollection")
        self.Protocol = j("org.apache.kafka.common.message.JoinGroupRequestData$JoinGroupRequestProtocol")
        self.no_bytes = jvm.jclass("java.lang.String")("").getBytes()
        self.Errors = j("org.apache.kafka.common.protocol.Errors")
        self.HashMap = j("java.util.HashMap")
        self.Integer = j("java.lang.Integer")
        self.topic_id = j("org.apache.kafka.common.Uuid").fromString("AAAAAAAAAAAAAAAAAAAAAQ")

    def unsupported(self) -> str | None:
        if self.model.classic and not jvm.has_constructor(self.ClassicGroup, 9):
            return (
                f"Kafka {self.release}'s ClassicGroup constructors take a GroupCoordinatorMetricsShard (before 4.0), "
                "which this adapter does not build"
            )
        if not self.model.classic and not self.model.config.kip_1251:
            return "before KIP-1251 (Kafka 4.3): the pinned 4.3.1 ConsumerGroup validates with assignment epochs"
        return None

    # -- the question ------------------------------------------------------------------------------
    def compare_step(self, state: DeliveryState, action: Action, next_state: DeliveryState) -> Iterator[Comparison]:
        args = action.args
        if action.name in ("OffsetCommit", "SendOffsetsToTransaction"):
            member_id, generation, ours = args["memberId"], args["generationId"], args["error"]
        elif action.name == "Poll" and args["autoCommit"]:
            me = state.consumers[args["consumer"]]
            member_id, generation, ours = me.memberId, me.generationId, args["error"]
        elif action.name in ("JoinGroup", "ReceiveHeartbeat") and self._commits_on_revocation(state, action):
            me = state.consumers[args["consumer"]]
            generation = me.generationId if me.response is None else me.response[1]
            member_id = me.memberId
            # the step's error may be the join's own: ask the model's decision for the commit itself
            ours = self.model._validate(state, member_id, generation, txn=False)
        else:
            return
        if ours == PRODUCER_FENCED:
            return
        txn = action.name == "SendOffsetsToTransaction"
        theirs = self._validate(state, member_id, generation, txn)
        inputs = {"memberId": member_id, "generationId": generation, "transactional": txn}
        yield Comparison(f"{'TxnOffsetCommit' if txn else 'OffsetCommit'} accepted?", ours, theirs, inputs)

    def _commits_on_revocation(self, state: DeliveryState, action: Action) -> bool:
        """Whether the step runs onPartitionsRevoked with a commit (auto-commit or the listener's)."""
        config = self.model.config
        me = state.consumers[action.args["consumer"]]
        if not (me.owned and me.dirty and (config.commit == "auto" or config.commit_on_revoke)):
            return False
        if action.name == "JoinGroup":
            return True
        return me.response is not None and me.response[0] == NONE and not me.response[2]

    def _validate(self, s: DeliveryState, member_id: str, generation: int, txn: bool) -> str:
        version = TXN_OFFSET_COMMIT_VERSION if txn else OFFSET_COMMIT_VERSION
        try:
            if self.model.classic:
                group = self._classic_group(s)
                group.validateOffsetCommit(member_id, None, generation, txn, version)
            else:
                group = self._consumer_group(s)
                validator = group.validateOffsetCommit(member_id, None, generation, txn, version)
                validator.validate(TOPIC, self.topic_id, 0)
        except Exception as exc:
            if not jvm.is_java_exception(exc):
                raise
            code = self.Errors.forException(exc)
            if code != self.Errors.UNKNOWN_SERVER_ERROR:
                return str(code.name())
            return jvm.java_exception_text(exc)
        return NONE

    # -- Kafka's groups, built from the model's coordinator ---------------------------------------
    def _classic_group(self, s: DeliveryState) -> Any:
        """A ClassicGroup in the coordinator's state and generation with its members (the protocol
        and assignments do not enter the commit validation)."""
        coord = s.coordinator
        protocol = self.Optional.of("range") if coord.members else self.Optional.empty()
        leader = self.Optional.of(coord.members[0].memberId) if coord.members else self.Optional.empty()
        group = self.ClassicGroup(
            self.LogContext(),
            "group",
            self.states[coord.state],
            self.time,
            coord.generationId,
            self.Optional.of("consumer"),
            protocol,
            leader,
            self.Optional.of(0),
        )
        for m in coord.members:
            protocols = self.Protocols()
            protocols.add(self.Protocol().setName("range").setMetadata(self.no_bytes))
            member = self.ClassicGroupMember(
                m.memberId, self.Optional.empty(), "client", "host", 60000, 45000, "consumer", protocols
            )
            group.add(member, None)
        return group

    def _consumer_group(self, s: DeliveryState) -> Any:
        """A ConsumerGroup whose members have the model's member epochs; the holder of the input
        partition has it assigned (or pending revocation, when the target moved it) at its
        assignment epoch."""
        coord = s.coordinator
        group = self.ConsumerGroup(self.LogContext(), self.SnapshotRegistry(self.LogContext()), "group")
        for m in coord.members:
            builder = self.MemberBuilder(m.memberId).setMemberEpoch(m.memberEpoch).setPreviousMemberEpoch(m.memberEpoch)
            assigned, pending = self.HashMap(), self.HashMap()
            if coord.holder == m.memberId:
                partitions = self.HashMap()
                partitions.put(self.Integer(0), self.Integer(coord.assignmentEpoch))
                (assigned if coord.owner == m.memberId else pending).put(self.topic_id, partitions)
            builder.setAssignedPartitions(assigned).setPartitionsPendingRevocation(pending)
            group.updateMember(builder.build())
        return group
