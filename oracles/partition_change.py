"""The `kraft-replication` controller held to Kafka's ``PartitionChangeBuilder``.

Every controller step of the model that changes the partition (fencing, controlled shutdown, an
unclean re-registration, unfencing, an accepted AlterPartition, one committed just before a
controller failover) is asked again of Kafka's
``org.apache.kafka.controller.PartitionChangeBuilder``: the model's controller state becomes a
``PartitionRegistration``, the step becomes the builder call ``ReplicationControlManager`` makes for
it (target ISR, unclean-shutdown replicas, election type, which brokers are acceptable leaders),
and the ``PartitionChangeRecord`` that ``build()`` returns, merged into the registration, is
compared field by field with the model's next controller state.

Which brokers are acceptable and when ``ReplicationControlManager`` calls the builder at all (only
for partitions with the broker in the ISR, or without a leader on unfencing) is written here after
Kafka's code; the decision itself -- who leads, the new ISR and ELR, the epochs -- is Kafka's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from kmc.checker import Action
from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.models.kraft_replication.model import KraftReplicationModel
from kmc.models.kraft_replication.state import (
    ERROR_NONE,
    NO_LEADER,
    Controller,
    KraftReplicationState,
    dense_partition_epochs,
)
from kmc.oracles import jvm

BUILDER = "org.apache.kafka.controller.PartitionChangeBuilder"
REGISTRATION = "org.apache.kafka.metadata.PartitionRegistration"

ONLINE = "ONLINE"
UNCLEAN = "UNCLEAN"

QUESTIONS = ("leader", "leaderEpoch", "isr", "elr", "partitionEpoch", "replicas", "addingReplicas", "removingReplicas")
"""The fields of the partition both sides keep, compared after every controller step."""

CONTROLLER_STEPS = (
    "FenceBroker",
    "ControlledShutdown",
    "BrokerRestart",
    "UnfenceBroker",
    "HandleAlterPartition",
    "ControllerFailover",
    "AlterPartitionReassignments",
)


class BuilderCall(NamedTuple):
    """Everything PartitionChangeBuilder is given: the registration, the caller's settings and targets.
    It is also the key of the cache of Kafka's answers, so it must hold every input."""

    replicas: tuple[int, ...]
    leader: int
    leaderEpoch: int
    partitionEpoch: int
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    lastKnownElr: tuple[int, ...]
    acceptableLeaders: tuple[int, ...]
    targetIsr: tuple[int, ...]
    uncleanShutdownReplicas: tuple[int, ...] | None
    targetLeaderRecoveryState: str | None
    """AlterPartition carries the leader's recovery state: RECOVERED (Partition.scala always sends it)."""
    election: str
    minIsr: int
    eligibleLeaderReplicasEnabled: bool
    metadataVersion: str
    addingReplicas: tuple[int, ...] = ()
    removingReplicas: tuple[int, ...] = ()
    targetReplicas: tuple[int, ...] | None = None
    """With the two below, what changePartitionReassignment sets from PartitionReassignmentReplicas."""
    targetAdding: tuple[int, ...] | None = None
    targetRemoving: tuple[int, ...] | None = None


class PartitionAfter(NamedTuple):
    """The registration after the builder's record is merged (the same registration when it is empty)."""

    leader: int
    leaderEpoch: int
    isr: frozenset[int]
    elr: frozenset[int]
    partitionEpoch: int
    lastKnownElr: tuple[int, ...]
    leaderRecoveryState: str
    changed: bool
    replicas: tuple[int, ...] = ()
    addingReplicas: frozenset[int] = frozenset()
    removingReplicas: frozenset[int] = frozenset()


class PartitionChangeOracle(Oracle):
    name = "partition-change"
    model_name = "kraft-replication"
    reference = (BUILDER, REGISTRATION, "org.apache.kafka.common.metadata.PartitionChangeRecord")
    description = "each controller step's leader, epochs, ISR and ELR are what PartitionChangeBuilder.build() writes"

    model: KraftReplicationModel

    def __init__(self, model: KraftReplicationModel, release: str | None = None) -> None:
        super().__init__(model, release)
        self.release = jvm.start(self.release)
        import jpype

        self._jpype = jpype
        self._builder = jvm.jclass(BUILDER)
        self._elr_in_constructor = jvm.has_constructor(self._builder, 7)
        """4.3 takes the ELR switch in the constructor; 3.7 to 4.2 through setEligibleLeaderReplicasEnabled."""
        self._registration = jvm.jclass(REGISTRATION + "$Builder")
        self._election = jvm.jclass(BUILDER + "$Election")
        self._recovered = jvm.jclass("org.apache.kafka.metadata.LeaderRecoveryState").RECOVERED
        self._integer = jvm.jclass("java.lang.Integer")
        self._array_list = jvm.jclass("java.util.ArrayList")
        directory_id = jvm.jclass("org.apache.kafka.common.DirectoryId")
        self._migrating = directory_id.MIGRATING
        self._directory_id = directory_id
        self._topic_id = jvm.jclass("org.apache.kafka.common.Uuid")(0x6B6D63, 1)
        metadata_version = jvm.jclass("org.apache.kafka.server.common.MetadataVersion")
        # Before KAFKA-15021 (metadata.version 3.6-IV0) the builder bumps the leader epoch on a shrink:
        # the model's flag for it selects the last metadata version that did.
        if model.config.shrink_keeps_leader_epoch:
            self._metadata_version = metadata_version.latestProduction()
        else:
            self._metadata_version = metadata_version.IBP_3_5_IV2
        self._partition_after_by_call: dict[BuilderCall, PartitionAfter | str] = {}
        """Kafka's answer for each distinct builder input: the same input recurs in many states."""

    def unsupported(self) -> str | None:
        config = self.model.config
        if config.elr and not config.shrink_keeps_leader_epoch:
            return (
                "no Kafka release has both eligible leader replicas (metadata.version 4.0) and the leader "
                "epoch bump on ISR shrinks (before 3.6)"
            )
        return None

    # -- the step ------------------------------------------------------------------------------
    def compare_step(
        self, state: KraftReplicationState, action: Action, next_state: KraftReplicationState
    ) -> Iterable[Comparison]:
        if action.name not in CONTROLLER_STEPS:
            return ()
        c = state.controller
        call = self._builder_call(state, action, next_state)
        if call is None:
            return ()
        ours = self._model_controller(state, action, next_state)
        if call == "unchanged":
            unchanged = PartitionAfter(
                c.leader,
                c.leaderEpoch,
                c.isr,
                c.elr,
                c.partitionEpoch,
                (),
                "RECOVERED",
                False,
                c.replicas,
                c.addingReplicas,
                c.removingReplicas,
            )
            inputs: dict[str, Any] = {"builder": "not called: ReplicationControlManager leaves this partition alone"}
            return self._comparisons(ours, unchanged, inputs)
        out = []
        for last_known_elr in self._last_known_elr_values(c):
            asked = call._replace(lastKnownElr=last_known_elr)
            theirs = self._partition_after_by_call.get(asked)
            if theirs is None:
                theirs = self._ask_kafka(asked)
                self._partition_after_by_call[asked] = theirs
            inputs = asked._asdict()
            if isinstance(theirs, PartitionAfter):
                inputs["kafka.lastKnownElr"] = theirs.lastKnownElr
                inputs["kafka.leaderRecoveryState"] = theirs.leaderRecoveryState
            out.extend(self._comparisons(ours, theirs, inputs))
        return out

    def _last_known_elr_values(self, c: Controller) -> tuple[tuple[int, ...], ...]:
        """The lastKnownElr values to give Kafka. The model does not keep the field: Kafka sets it to
        the last leader when the ISR becomes empty and reads it only to elect that leader when both
        the ISR and the ELR are empty (KIP-966's balanced recovery). Elsewhere its value cannot change
        the fields compared, so it is empty; in those states Kafka is asked under every value it can
        hold, and the model must agree with each answer."""
        if self.model.config.elr and not c.isr and not c.elr:
            return ((), (NO_LEADER,), *((b,) for b in self.model.ids))
        return ((),)

    @staticmethod
    def _comparisons(ours: Controller, theirs: PartitionAfter | str, inputs: dict[str, Any]) -> list[Comparison]:
        out = []
        for question in QUESTIONS:
            answer = theirs if isinstance(theirs, str) else getattr(theirs, question)
            out.append(Comparison(question, getattr(ours, question), answer, inputs))
        return out

    def _model_controller(
        self, state: KraftReplicationState, action: Action, next_state: KraftReplicationState
    ) -> Controller:
        """The model's controller after the step, before partition epochs are re-ranked: the same
        step generated again by the model's own method, so both sides count epochs from the same base."""
        out: list[tuple[Action, KraftReplicationState]] = []
        if action.name == "ControllerFailover":
            self.model._controller_failover(state, out)
        elif action.name == "AlterPartitionReassignments":
            self.model._alter_partition_reassignments(state, out)
        else:
            method = {
                "FenceBroker": self.model._fence,
                "ControlledShutdown": self.model._controlled_shutdown,
                "BrokerRestart": self.model._restart,
                "UnfenceBroker": self.model._unfence,
                "HandleAlterPartition": self.model._handle_alter_partition,
            }[action.name]
            method(state, next(iter(action.args.values())), out)
        for generated, raw in out:
            if generated == action and dense_partition_epochs(raw) == next_state:
                return raw.controller
        raise AssertionError(f"the model does not generate {action} again from the same state")

    def _builder_call(
        self, state: KraftReplicationState, action: Action, next_state: KraftReplicationState
    ) -> BuilderCall | str | None:
        """How ReplicationControlManager would call the builder for this step: a BuilderCall, or
        "unchanged" when it would not touch the partition, or None when there is nothing to ask
        (an AlterPartition the controller rejected: its validation is not the builder's)."""
        config = self.model.config
        c = state.controller
        ids = self.model.ids
        live = [r for r in ids if r not in c.fenced]
        name = action.name
        broker = next(iter(action.args.values()))
        unclean_shutdown: tuple[int, ...] | None = None
        reassignment: dict[str, tuple[int, ...]] = {}
        if name == "AlterPartitionReassignments":
            # changePartitionReassignment: PartitionReassignmentReplicas of the current and the target
            # replicas gives the merged replicas (target, then removing) and the adding and removing
            # sets; the builder completes the move at once if the target is already in the ISR.
            adding, removing = action.args["adding"], action.args["removing"]
            target_replicas = (*(r for r in c.replicas if r != removing), adding)
            reassignment = {
                "targetReplicas": (*target_replicas, removing),
                "targetAdding": (adding,),
                "targetRemoving": (removing,),
            }
            acceptable = live
            target = c.isr
        elif name in ("FenceBroker", "ControlledShutdown"):
            # handleBrokerFenced / handleBrokerInControlledShutdown: partitions with the broker in the ISR.
            if broker not in c.isr:
                return "unchanged"
            acceptable = [r for r in live if r != broker]
            target = c.isr - {broker}
        elif name == "BrokerRestart":
            # registerBroker -> handleBrokerShutdown: with ELR, an unclean shutdown (previousBrokerEpoch
            # is not the last registration's) takes the broker out of every ISR and ELR; otherwise
            # the broker leaves the ISRs it is still in.
            replica = state.replicas[broker]
            unclean = config.elr and replica.cleanShutdownEpoch != c.brokerEpochs[broker]
            involved = broker in c.isr or (unclean and broker in c.elr)
            if not involved:
                return "unchanged"
            acceptable = [r for r in live if r != broker]
            target = c.isr - {broker}
            if unclean:
                unclean_shutdown = (broker,)
        elif name == "UnfenceBroker":
            # handleBrokerUnfenced: partitions without a leader; the broker counts as active already.
            if c.leader != NO_LEADER:
                return "unchanged"
            acceptable = [r for r in ids if r not in c.fenced or r == broker]
            target = c.isr
        elif name == "ControllerFailover":
            # A failover right after the controller committed an AlterPartition it did not answer.
            if broker == NO_LEADER:
                return "unchanged"
            acceptable = live
            target = state.replicas[broker].pendingAlterPartition.isr
        else:  # HandleAlterPartition
            request = state.replicas[broker].pendingAlterPartition
            leader = state.replicas[broker]
            if (
                request.sentTo != state.failovers
                or self.model._alter_partition_error(c, broker, leader, request) != ERROR_NONE
            ):
                return None  # rejected by ReplicationControlManager's validation, or NOT_CONTROLLER
            acceptable = live
            target = request.isr
        return BuilderCall(
            replicas=c.replicas,
            leader=c.leader,
            leaderEpoch=c.leaderEpoch,
            partitionEpoch=c.partitionEpoch,
            isr=tuple(sorted(c.isr)),
            elr=tuple(sorted(c.elr)),
            lastKnownElr=(),
            acceptableLeaders=tuple(acceptable),
            targetIsr=tuple(sorted(target)),
            uncleanShutdownReplicas=unclean_shutdown,
            targetLeaderRecoveryState="RECOVERED" if name == "HandleAlterPartition" else None,
            election=UNCLEAN if config.unclean_election else ONLINE,
            minIsr=config.min_insync_replicas,
            eligibleLeaderReplicasEnabled=config.elr,
            metadataVersion=str(self._metadata_version),
            addingReplicas=tuple(sorted(c.addingReplicas)),
            removingReplicas=tuple(sorted(c.removingReplicas)),
            **reassignment,
        )

    # -- Kafka ---------------------------------------------------------------------------------
    def _ints(self, values: Iterable[int]) -> Any:
        return self._jpype.JArray(self._jpype.JInt)(list(values))

    def _int_list(self, values: Iterable[int]) -> Any:
        out = self._array_list()
        for v in values:
            out.add(self._integer(v))
        return out

    def _ask_kafka(self, call: BuilderCall) -> PartitionAfter | str:
        """Build the registration, run the builder, merge its record: Kafka's partition after the change."""
        integer = self._integer
        try:
            partition = (
                self._registration()
                .setReplicas(self._ints(call.replicas))
                .setDirectories(self._directory_id.migratingArray(len(call.replicas)))
                .setAddingReplicas(self._ints(call.addingReplicas))
                .setRemovingReplicas(self._ints(call.removingReplicas))
                .setIsr(self._ints(call.isr))
                .setElr(self._ints(call.elr))
                .setLastKnownElr(self._ints(call.lastKnownElr))
                .setLeader(integer(call.leader))
                .setLeaderEpoch(integer(call.leaderEpoch))
                .setPartitionEpoch(integer(call.partitionEpoch))
                .setLeaderRecoveryState(self._recovered)
                .build()
            )
            acceptable = frozenset(call.acceptableLeaders)
            args = (partition, self._topic_id, 0, lambda replica: replica in acceptable, self._metadata_version)
            if self._elr_in_constructor:
                builder = self._builder(*args, call.minIsr, call.eligibleLeaderReplicasEnabled)
            else:
                builder = self._builder(*args, call.minIsr)
                builder.setEligibleLeaderReplicasEnabled(call.eligibleLeaderReplicasEnabled)
            builder.setElection(getattr(self._election, call.election))
            builder.setDefaultDirProvider(lambda broker_id: self._migrating)
            if call.uncleanShutdownReplicas is not None:
                builder.setUncleanShutdownReplicas(self._int_list(call.uncleanShutdownReplicas))
            builder.setTargetIsr(self._int_list(call.targetIsr))
            if call.targetReplicas is not None:
                builder.setTargetReplicas(self._int_list(call.targetReplicas))
                builder.setTargetAdding(self._int_list(call.targetAdding or ()))
                builder.setTargetRemoving(self._int_list(call.targetRemoving or ()))
            if call.targetLeaderRecoveryState is not None:
                builder.setTargetLeaderRecoveryState(self._recovered)
            record = builder.build()
            changed = bool(record.isPresent())
            after = partition.merge(record.get().message()) if changed else partition
        except Exception as exc:
            if jvm.is_java_exception(exc):
                return jvm.java_exception_text(exc)
            raise
        return PartitionAfter(
            leader=int(after.leader),
            leaderEpoch=int(after.leaderEpoch),
            isr=frozenset(int(r) for r in after.isr),
            elr=frozenset(int(r) for r in after.elr),
            partitionEpoch=int(after.partitionEpoch),
            lastKnownElr=tuple(int(r) for r in after.lastKnownElr),
            leaderRecoveryState=str(after.leaderRecoveryState),
            changed=changed,
            replicas=tuple(int(r) for r in after.replicas),
            addingReplicas=frozenset(int(r) for r in after.addingReplicas),
            removingReplicas=frozenset(int(r) for r in after.removingReplicas),
        )
