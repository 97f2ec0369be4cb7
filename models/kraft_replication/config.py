"""The kraft-replication model's config: every flag named after the KIP or JIRA that changed the
behaviour, the presets that bundle them, and the names of every action's arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kmc.checker import Preset, param

ACTION_ARGS = {
    "Produce": ("leader", "id"),
    "SendFetch": ("follower", "leader"),
    "HandleFetch": ("leader", "follower"),
    "HandleFetchResponse": ("follower", "leader"),
    "SendOffsetsForLeaderEpoch": ("follower", "leader"),
    "HandleOffsetsForLeaderEpoch": ("leader", "follower"),
    "HandleOffsetsForLeaderEpochResponse": ("follower", "leader"),
    "ShrinkIsr": ("leader", "replicas"),
    "ExpandIsr": ("leader", "replica"),
    "HandleAlterPartition": ("leader",),
    "ApplyMetadata": ("broker",),
    "BrokerCrash": ("broker", "logEndOffset"),
    "ControlledShutdown": ("broker",),
    "FenceBroker": ("broker",),
    "BrokerRestart": ("broker",),
    "UnfenceBroker": ("broker",),
    "ControllerFailover": ("committed",),
    "AlterPartitionReassignments": ("adding", "removing"),
}
"""Every action of the model and the names of its arguments."""


Acks = Literal["0", "1", "all"]


Truncation = Literal["hw", "offsets_for_leader_epoch", "diverging_epoch"]


Crash = Literal["power", "process", "disk"]


@dataclass(frozen=True)
class KraftReplicationConfig:
    brokers: int = param(2, "replication factor: every broker holds a replica", min=2, max=4)
    min_insync_replicas: int = param(2, "min.insync.replicas", min=1, max=4)
    acks: Acks = param("all", "the producer's acks")
    max_records: int = param(2, "how many produce requests are written in all", min=0, max=4)
    max_leader_epoch: int = param(3, "elections stop at this leader epoch (the first leader has epoch 0)", min=0, max=8)
    max_crashes: int = param(1, "unclean shutdowns in all (power loss, kill -9, lost disk)", min=0, max=4)
    max_fences: int = param(1, "times the controller fences a running broker (missed heartbeats)", min=0, max=4)
    max_shutdowns: int = param(0, "controlled (clean) shutdowns in all", min=0, max=4)
    crash: Crash = param("power", "what a crash loses: power (any unflushed suffix), process (nothing), disk (all)")
    unclean_election: bool = param(False, "unclean.leader.election.enable")
    truncation: Truncation = param(
        "diverging_epoch", "KIP-101/279: diverging epoch in Fetch (KAFKA-10554), OffsetsForLeaderEpoch, or to the HW"
    )
    fetch_fencing: bool = param(True, "KIP-320: fetches carry currentLeaderEpoch and are fenced by it")
    maximal_isr: bool = param(True, "KIP-497/KAFKA-8836: the HW counts the ISR being proposed too")
    isr_expand_leso: bool = param(True, "KAFKA-7128: a new ISR member has reached the leader epoch start offset")
    isr_fetch_in_leader_epoch: bool = param(
        True,
        "Partition.makeLeader's resetReplicaState: in a new leader epoch a follower joins the ISR only on a fetch "
        "of that epoch (an ablation: off, a re-elected leader keeps its followers' fetch state)",
    )
    isr_broker_epoch: bool = param(True, "KIP-903/KAFKA-14617: a new ISR member's fetch has its current broker epoch")
    hw_min_isr: bool = param(True, "KAFKA-15583: no HW advance while the ISR is below min.insync.replicas")
    elr: bool = param(True, "KIP-966/KAFKA-15584: eligible leader replicas")
    diverging_fetch_not_counted: bool = param(
        True, "KAFKA-13141: a fetch answered with a diverging epoch does not update the follower's fetch state"
    )
    max_controller_failovers: int = param(
        0,
        "failovers of the active controller, each possibly after committing an AlterPartition it never answers",
        min=0,
        max=3,
    )
    alter_partition_awaits_metadata: bool = param(
        False,
        "Partition.handleAlterPartitionError: a stale-epoch error keeps the pending ISR until metadata arrives "
        "(off: it is dropped at once)",
    )
    kafka_14154: bool = param(
        True,
        "KAFKA-14154 (3.3.0): a controller that failed over answers NOT_CONTROLLER to an AlterPartition whose "
        "epochs are ahead of its image (before: FENCED_LEADER_EPOCH or INVALID_UPDATE_VERSION, and the leader "
        "gives up its ISR change)",
    )
    shrink_keeps_leader_epoch: bool = param(
        True, "KAFKA-15021 (metadata.version 3.6): an ISR shrink does not bump the leader epoch"
    )
    max_reassignments: int = param(
        0,
        "AlterPartitionReassignments moving one replica to a broker without one (with any, the partition "
        "starts on all brokers but the last)",
        min=0,
        max=2,
    )

    def __post_init__(self) -> None:
        if self.min_insync_replicas > self.brokers:
            raise ValueError(f"min_insync_replicas={self.min_insync_replicas} exceeds brokers={self.brokers}")


_HOLDS = "holds"


_ALL_HOLD = {
    name: _HOLDS
    for name in (
        "AcknowledgedWriteNeverLost",
        "LeaderCompleteness",
        "LeaderCandidateCompleteness",
        "LogMatching",
        "ReplicationQuorumSuperset",
        "NoCommittedRecordLostGlobally",
        "ConsistentRead",
        "HighWatermarkMonotonic",
        "ValidIsrAndElr",
    )
}


_PRE_KIP_966 = {"elr": False, "hw_min_isr": False}


_REASSIGNMENT = {"max_reassignments": 1, "brokers": 3, "max_crashes": 0, "max_fences": 0, "max_leader_epoch": 2}


_FAILOVER = {"max_controller_failovers": 1, "brokers": 3, "max_leader_epoch": 0, "max_crashes": 0, "max_fences": 0}


_STALE_CONTROLLER = {
    **_FAILOVER,
    **_PRE_KIP_966,
    "brokers": 2,
    "max_records": 1,
    "max_fences": 1,
    "max_leader_epoch": 1,
    "isr_broker_epoch": False,
    "alter_partition_awaits_metadata": True,
}
"""Kafka 3.2 in KRaft mode (before KIP-903 and KIP-966) after a controller failover, on 2 brokers with one
record and one fence of a running broker. ISR shrinks keep the leader epoch (metadata.version 3.6): with
3.2's bump on every shrink the leader-epoch bound would cut a shrink's AlterPartition and leave it pending
for no Kafka reason, which a liveness property cannot tell from the bug."""


PRESETS = {
    "kip-966": Preset.of(
        "Kafka 4.x: eligible leader replicas and every earlier fix, acks=all, unclean election off",
        _ALL_HOLD,
    ),
    "unclean": Preset.of(
        "kip-966 with unclean.leader.election.enable=true: an out-of-sync replica may become leader",
        {"LeaderCompleteness": "violated", "AcknowledgedWriteNeverLost": "violated"},
        unclean_election=True,
    ),
    "acks-1": Preset.of(
        "kip-966 with acks=1: the leader acknowledges a write before any follower has it",
        {"AcknowledgedWriteNeverLost": "violated"},
        acks="1",
    ),
    "v3.5": Preset.of(
        "Kafka 3.5 (KRaft, before KIP-966): the last replica standing is re-elected after losing data",
        {"LeaderCompleteness": "violated", "AcknowledgedWriteNeverLost": "violated"},
        **_PRE_KIP_966,
        shrink_keeps_leader_epoch=False,
    ),
    "pre-kip-966": Preset.of(
        "kip-966 without eligible leader replicas (KAFKA-15584), HW guard kept",
        {"LeaderCompleteness": "violated"},
        elr=False,
    ),
    "pre-kafka-15583": Preset.of(
        "kip-966 without KAFKA-15583: the HW advances while the ISR is below min.insync.replicas",
        {"LeaderCandidateCompleteness": "violated"},
        hw_min_isr=False,
    ),
    "pre-kip-497": Preset.of(
        "kip-966 without the maximal ISR (KAFKA-8836): the HW counts a proposed ISR shrink at once",
        {"ReplicationQuorumSuperset": "violated", "LeaderCompleteness": "violated"},
        maximal_isr=False,
    ),
    "pre-kafka-7128": Preset.of(
        "kip-966 without KAFKA-7128: a follower joins the ISR below the leader epoch start offset",
        {"LeaderCandidateCompleteness": "violated"},
        isr_expand_leso=False,
    ),
    "pre-kip-903": Preset.of(
        "kip-966 without KIP-903: the ISR is expanded on the fetch state of an earlier incarnation",
        {"LeaderCandidateCompleteness": "violated"},
        isr_broker_epoch=False,
    ),
    "pre-kafka-13141": Preset.of(
        "kip-966 without KAFKA-13141: a fetch answered with a diverging epoch still counts as the follower's LEO",
        {
            "LeaderCandidateCompleteness": "violated",
            "AcknowledgedWriteNeverLost": "violated",
            "LeaderCompleteness": "violated",
        },
        diverging_fetch_not_counted=False,
    ),
    "controller-failover": Preset.of(
        "kip-966 with a failover of the active controller, which may commit an AlterPartition and never answer "
        "it; NOT_CONTROLLER is retried, a stale-epoch error keeps the pending ISR until metadata arrives "
        "(3 brokers, leader epoch 0, no crashes or fences)",
        {**_ALL_HOLD, "PendingIsrChangeResolved": _HOLDS},
        **_FAILOVER,
        alter_partition_awaits_metadata=True,
    ),
    "drop-pending-on-error": Preset.of(
        "controller-failover, but a stale-epoch error drops the pending ISR at once (no Kafka release did): "
        "after a lost answer the leader forgets an ISR expansion the controller committed",
        {"ReplicationQuorumSuperset": "violated", "LeaderCandidateCompleteness": "violated"},
        **_FAILOVER,
    ),
    "pre-kafka-14154": Preset.of(
        "KRaft 3.0 to 3.2 (before KAFKA-14154, KIP-903 and KIP-966), 2 brokers, a controller failover and one "
        "fence: the controller that failed over and has not yet learned it answers an AlterPartition from its "
        "stale image, and the leader gives up its ISR change until the next metadata, which never comes",
        {**_ALL_HOLD, "PendingIsrChangeResolved": "violated"},
        **_STALE_CONTROLLER,
        kafka_14154=False,
    ),
    "kafka-14154": Preset.of(
        "pre-kafka-14154 with KAFKA-14154 (3.3.0): the stale controller answers NOT_CONTROLLER and the leader "
        "sends its AlterPartition again to the active one",
        {**_ALL_HOLD, "PendingIsrChangeResolved": _HOLDS},
        **_STALE_CONTROLLER,
    ),
    "reassignment": Preset.of(
        "kip-966 with one partition reassignment: a replica moves from one of brokers 0-1 to broker 2; the "
        "reassignment completes once broker 2 is in the ISR, and a leader that is removed moves "
        "(3 brokers, no crashes)",
        {**_ALL_HOLD, "ValidAssignment": _HOLDS, "ElrWithinReplicas": "violated"},
        **_REASSIGNMENT,
    ),
    "kip-320": Preset.of(
        "kip-966 with truncation by a separate OffsetsForLeaderEpoch request (brokers 2.1 to 2.6), fenced by "
        "the current leader epoch of KIP-320",
        _ALL_HOLD,
        truncation="offsets_for_leader_epoch",
    ),
    "pre-kip-320": Preset.of(
        "kip-320 without the fencing (2.0), 3 brokers: a follower that missed two leader changes fetches by "
        "offset from a leader that rewrote its log, and the HW counts it",
        {"LeaderCandidateCompleteness": "violated"},
        truncation="offsets_for_leader_epoch",
        fetch_fencing=False,
        brokers=3,
        max_leader_epoch=2,
        crash="disk",
    ),
    "pre-kip-101": Preset.of(
        "before KIP-101 (0.10): a new follower truncates to its HW; unclean election and acks=1 were the "
        "defaults; two brokers lose power and their logs diverge for good",
        {"LogMatching": "violated"},
        truncation="hw",
        unclean_election=True,
        acks="1",
        max_crashes=2,
        max_fences=0,
    ),
}
