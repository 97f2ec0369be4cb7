"""The group-kip848 model's config: every flag named after the KIP or JIRA that changed the
behaviour, the presets that bundle them, and the names of every action's arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kmc.checker import Preset, param


@dataclass(frozen=True)
class Kip848Config:
    consumers: int = param(2, "consumer processes", min=1, max=4)
    partitions: int = param(2, "partitions of the one subscribed topic", min=0, max=6)
    wait_for_release: bool = param(
        True, "give a partition only once its partition epoch is free (the previous owner revoked it)"
    )
    partition_epoch_bookkeeping: bool = param(
        True, "KAFKA-16147: a member update removes all its old partition epochs before it adds the new ones"
    )
    reclaim_pending_revocation: bool = param(
        False,
        "early-2024 reconciliation: a revoking member whose new target returns partitions it still "
        "holds takes them back at once",
    )
    revoke_only_owned: bool = param(
        True,
        "KAFKA-16615 (Kafka 3.8): partitions the heartbeat does not list as owned are dropped without waiting "
        "for their revocation; before (KAFKA-16249's builder), every revocation waited for the member",
    )
    release_own_pending_revocation: bool = param(
        True,
        "KAFKA-19449 (Kafka 4.0.2, 4.1.2, 4.2): a partition the member itself has pending revocation is not "
        "withheld as unreleased when its target gives it back",
    )
    bump_epoch_after_revocation: bool = param(
        False,
        "before KAFKA-19974 (Kafka 4.2): a member that has revoked what it must reconciles from its epoch + 1, "
        "so it may stay UNREVOKED_PARTITIONS one epoch later",
    )
    max_faults: int = param(1, "consumer crashes and leaves in all", min=0, max=3)
    timeouts: Literal["crashed", "any"] = param(
        "crashed", "session and rebalance timeouts: only for stopped consumers, or at any moment"
    )
    max_group_epoch: int = param(8, "bound on the group epoch (within_bounds)", min=1, max=16)


PRESETS = {
    "kip-848": Preset.of(
        "the KIP-848 protocol as in Kafka 4.2 and later (4.3.1 is the pinned release); a heartbeat that reports "
        "an older completed reconciliation lets the coordinator give away a partition the consumer is taking",
        {"NoDoubleClientAssignment": "violated", "ValidPartitionEpoch": "holds", "EventuallyConverges": "holds"},
    ),
    "kafka-4.0": Preset.of(
        "Kafka 4.0.0-4.0.1 and 4.1.0-4.1.1: before KAFKA-19449 and KAFKA-19974",
        {"NoDoubleClientAssignment": "violated", "ValidPartitionEpoch": "holds", "EventuallyConverges": "holds"},
        release_own_pending_revocation=False,
        bump_epoch_after_revocation=True,
    ),
    "pre-kafka-16615": Preset.of(
        "today's protocol with KAFKA-16249's rule that every revocation waits for the member (never released: "
        "KAFKA-16615 dropped unlisted partitions before 3.8.0); holds with one fault, not with two",
        {"NoDoubleClientAssignment": "holds", "ValidPartitionEpoch": "holds", "EventuallyConverges": "holds"},
        revoke_only_owned=False,
    ),
    "no-release-wait": Preset.of(
        "the coordinator assigns a partition before its previous owner has revoked it",
        {"NoDoubleClientAssignment": "violated"},
        wait_for_release=False,
    ),
    "pre-kafka-16147": Preset.of(
        "early 2024: a revoking member takes back partitions its new target returns, and the partition "
        "epochs are updated set by set, so the epoch of such a partition is lost",
        {"NoDoubleClientAssignment": "violated", "ValidPartitionEpoch": "violated"},
        partition_epoch_bookkeeping=False,
        reclaim_pending_revocation=True,
        revoke_only_owned=False,
        release_own_pending_revocation=False,
        bump_epoch_after_revocation=True,
    ),
    "slow-member": Preset.of(
        "timeouts at any moment: a member fenced for being slow keeps processing until it learns",
        {"NoDoubleClientAssignment": "violated"},
        timeouts="any",
        max_faults=0,
    ),
}

ACTION_ARGS = {
    "SendHeartbeat": ("consumer",),
    "HandleHeartbeat": ("consumer", "error"),
    "ReceiveHeartbeat": ("consumer", "error"),
    "RevokePartitions": ("consumer",),
    "AssignPartitions": ("consumer",),
    "StartReconciliation": ("consumer",),
    "Subscribe": ("consumer",),
    "Unsubscribe": ("consumer",),
    "ConsumerCrash": ("consumer",),
    "SessionTimeout": ("memberId",),
    "RebalanceTimeout": ("memberId",),
    "OffsetCommit": ("consumer", "memberEpoch", "error"),
}
