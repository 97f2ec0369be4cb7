"""The consumer-delivery model's config: the commit strategy and every flag named after the KIP or
JIRA that changed the behaviour, the presets that bundle them, and the names of every action's
arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kmc.checker import Preset, param
from kmc.models.consumer_delivery.state import Strategy


@dataclass(frozen=True)
class DeliveryConfig:
    consumers: int = param(2, "consumer processes in the group", min=1, max=3)
    records: int = param(2, "records in the input partition", min=1, max=4)
    commit: Strategy = param(
        "after-processing",
        "when offsets are committed: auto (enable.auto.commit, inside a later poll), commitSync before or after "
        "processing, none (only on revocation, if commit_on_revoke), or transactional (sendOffsetsToTransaction)",
    )
    commit_on_revoke: bool = param(False, "commitSync in ConsumerRebalanceListener.onPartitionsRevoked")
    group_protocol: Literal["classic", "consumer"] = param(
        "classic", "commits fenced by the generation (classic) or by the member epoch (KIP-848)"
    )
    kip_1251: bool = param(
        True,
        "KIP-1251 (KAFKA-20066, Kafka 4.3): a commit with an older member epoch is accepted for a partition the "
        "member has held since that epoch",
    )
    transactional_id: Literal["per-partition", "per-consumer"] = param(
        "per-consumer",
        "transactional.id per input partition (Streams exactly_once, KIP-98) or per consumer (exactly_once_v2)",
    )
    txn_group_metadata: bool = param(
        True, "KIP-447 (KAFKA-9365): TxnOffsetCommit carries member id and generation, and is fenced like a commit"
    )
    require_stable: bool = param(
        True, "KIP-447 (KAFKA-9346): OffsetFetch waits (UNSTABLE_OFFSET_COMMIT) while transactional offsets are pending"
    )
    timeouts: Literal["crashed", "any"] = param(
        "crashed", "session and transaction timeouts: only for stopped consumers, or at any moment (zombies)"
    )
    kafka_14196: bool = param(
        True,
        "KAFKA-14196 (3.2.3): while the auto-commit before an eager revocation is in flight, the partition is not "
        "fetched (before, from KAFKA-13310 in 3.2.0: the application goes on polling and processing)",
    )
    kafka_18641: bool = param(
        True,
        "KAFKA-18641 (4.0.0): the KIP-848 consumer auto-commits only as the application's poll starts (before, "
        "from 3.7: its background thread committed the consumed positions at any moment, records returned but "
        "not yet processed included)",
    )
    kafka_20332: bool = param(
        True,
        "KAFKA-20332 (4.2.1, 4.3.0): the KIP-848 consumer's poll() waits for the reconciliation it starts before "
        "it returns records (before, in 4.2.0: the background thread revoked a partition while poll() returned "
        "its buffered records)",
    )
    kafka_17507: bool = param(
        True,
        "KAFKA-17507 (3.9.1, 4.0.0): the classic group coordinator answers WriteTxnMarkers once the transaction's "
        "offsets are materialised in its cache; before, it materialised them after answering (handleTxnCompletion, "
        "scheduled), so the producer's next transaction could send offsets that the earlier marker then commits or "
        "discards",
    )
    max_faults: int = param(1, "crashes and expulsions of running consumers in all", min=0, max=3)


PROPERTIES = (
    "AtMostOnce",
    "AtLeastOnce",
    "ExactlyOnce",
    "ProcessedAtMostOnce",
    "NoFalseCommitFencing",
    "EventuallyAllCommitted",
)


def _violated(*names: str) -> dict[str, str]:
    """A preset's verdict on every property at its defaults: these are violated, the rest hold."""
    return {p: "violated" if p in names else "holds" for p in PROPERTIES}


PRESETS = {
    "auto-commit": Preset.of(
        "enable.auto.commit: a poll commits the position after the records of the previous poll",
        _violated("AtMostOnce", "ExactlyOnce", "ProcessedAtMostOnce"),
        commit="auto",
    ),
    "auto-commit-pre-kafka-14196": Preset.of(
        "auto-commit in 3.2.0-3.2.2, no crash: onJoinPrepare's commit is asynchronous (KAFKA-13310) and poll() "
        "goes on; the records processed meanwhile are processed again by the next owner (KAFKA-14196)",
        _violated("AtMostOnce", "ExactlyOnce", "ProcessedAtMostOnce"),
        commit="auto",
        max_faults=0,
        kafka_14196=False,
    ),
    "auto-commit-kip-848": Preset.of(
        "enable.auto.commit in a KIP-848 group (Kafka 4.0 and later): the commit is made as a poll starts",
        _violated("AtMostOnce", "ExactlyOnce", "ProcessedAtMostOnce"),
        commit="auto",
        group_protocol="consumer",
    ),
    "auto-commit-kip-848-pre-kafka-18641": Preset.of(
        "enable.auto.commit with the KIP-848 consumer of 3.7-3.9: the background thread commits the position "
        "of a record poll() returned but the application has not processed, and a crash loses the record",
        _violated("AtLeastOnce", "AtMostOnce", "ExactlyOnce", "ProcessedAtMostOnce"),
        commit="auto",
        group_protocol="consumer",
        kafka_18641=False,
    ),
    "commit-before-processing": Preset.of(
        "commitSync of the position before processing the record",
        _violated("AtLeastOnce", "ExactlyOnce"),
        commit="before-processing",
    ),
    "commit-after-processing": Preset.of(
        "commitSync of the position after processing the record",
        _violated("AtMostOnce", "ExactlyOnce", "ProcessedAtMostOnce"),
        commit="after-processing",
    ),
    "commit-on-revoke": Preset.of(
        "commits only in onPartitionsRevoked: a clean handover commits, a crash does not",
        _violated("AtMostOnce", "ExactlyOnce", "ProcessedAtMostOnce", "EventuallyAllCommitted"),
        commit="none",
        commit_on_revoke=True,
    ),
    "commit-before-processing-kip-848": Preset.of(
        "commitSync before processing, with KIP-848 member epochs fencing the commits",
        _violated("AtLeastOnce", "ExactlyOnce"),
        commit="before-processing",
        group_protocol="consumer",
    ),
    "commit-after-processing-kip-848": Preset.of(
        "commitSync after processing in a KIP-848 group (Kafka 4.3), no faults: nothing is processed twice",
        _violated(),
        commit="after-processing",
        group_protocol="consumer",
        max_faults=0,
    ),
    "commit-after-processing-kip-848-pre-kafka-20332": Preset.of(
        "commit after processing with the KIP-848 consumer of 4.2.0, no faults: the background thread revokes "
        "the partition while poll() returns a buffered record, and that record is processed by both members",
        _violated("AtMostOnce", "ExactlyOnce", "ProcessedAtMostOnce"),
        commit="after-processing",
        group_protocol="consumer",
        kafka_20332=False,
        max_faults=0,
    ),
    "commit-after-processing-kip-848-pre-kip-1251": Preset.of(
        "before KIP-1251: a commit sent before the heartbeat response that bumped the member epoch arrives is "
        "rejected with STALE_MEMBER_EPOCH, and the healthy consumer processes the record again",
        _violated("AtMostOnce", "ExactlyOnce", "ProcessedAtMostOnce", "NoFalseCommitFencing"),
        commit="after-processing",
        group_protocol="consumer",
        kip_1251=False,
        max_faults=0,
    ),
    "eos-v1": Preset.of(
        "Streams exactly_once (KIP-98, before KIP-447): a transactional.id per input partition fences the zombie",
        _violated("ProcessedAtMostOnce"),
        commit="transactional",
        transactional_id="per-partition",
        txn_group_metadata=False,
        require_stable=False,
        timeouts="any",
    ),
    "eos-v2": Preset.of(
        "Streams exactly_once_v2 (KIP-447, KIP-732): a producer per consumer, the group metadata fences the zombie",
        _violated("ProcessedAtMostOnce"),
        commit="transactional",
        timeouts="any",
    ),
    "eos-v2-kip-848": Preset.of(
        "exactly_once_v2 in a KIP-848 consumer group (member epochs)",
        _violated("ProcessedAtMostOnce"),
        commit="transactional",
        group_protocol="consumer",
        timeouts="any",
    ),
    "eos-pre-kip-447-zombie": Preset.of(
        "a producer per consumer without KIP-447: the expelled consumer's transaction commits its offsets anyway",
        _violated("AtMostOnce", "ExactlyOnce", "ProcessedAtMostOnce"),
        commit="transactional",
        txn_group_metadata=False,
        require_stable=False,
        timeouts="any",
    ),
    "eos-v2-pre-kafka-9346": Preset.of(
        "KIP-447's group metadata without requireStable: the new owner reads the offset before the pending one",
        _violated("AtMostOnce", "ExactlyOnce", "ProcessedAtMostOnce"),
        commit="transactional",
        require_stable=False,
        timeouts="any",
    ),
    "eos-v2-pre-kafka-9365": Preset.of(
        "KIP-447's requireStable without the group metadata: the zombie's offsets are accepted after the handover",
        _violated("AtMostOnce", "ExactlyOnce", "ProcessedAtMostOnce"),
        commit="transactional",
        txn_group_metadata=False,
        timeouts="any",
    ),
    "eos-v2-pre-kafka-17507": Preset.of(
        "exactly_once_v2 on the classic group coordinator of 2.0 to 3.9.0: a transaction's offsets are materialised "
        "after the transaction coordinator has been told the markers are written",
        _violated("AtLeastOnce", "ExactlyOnce", "ProcessedAtMostOnce"),
        commit="transactional",
        timeouts="any",
        kafka_17507=False,
    ),
}

ACTION_ARGS = {
    "ConsumerStart": ("consumer",),
    "ConsumerCrash": ("consumer",),
    "JoinGroup": ("consumer", "error"),
    "SyncGroup": ("consumer",),
    "CompleteRebalance": ("owner",),
    "Heartbeat": ("consumer", "error", "target"),
    "ReceiveHeartbeat": ("consumer", "error"),
    "SessionTimeout": ("memberId", "processAlive"),
    "InitProducerId": ("consumer", "transactionalId"),
    "OffsetFetch": ("consumer", "offset"),
    "Poll": ("consumer", "offset", "autoCommit", "error"),
    "AutoCommitBeforeRevocation": ("consumer", "offset", "error"),
    "BackgroundAutoCommit": ("consumer", "offset", "error"),
    "PollDuringRevocation": ("consumer", "offset"),
    "Process": ("consumer", "offset", "error"),
    "OffsetCommit": ("consumer", "memberId", "generationId", "offset", "error"),
    "SendOffsetsToTransaction": ("consumer", "memberId", "generationId", "offset", "error"),
    "CommitTransaction": ("consumer", "error"),
    "TransactionTimeout": ("transactionalId", "producerAlive"),
    "CompleteTxnOffsetCommit": ("transactionalId", "commit"),
}
