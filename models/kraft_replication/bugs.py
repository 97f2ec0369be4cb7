"""The Kafka bugs the kraft-replication presets reproduce: the broker's truncation and ISR rules from
KIP-101 to KIP-903, the last replica standing that KIP-966 fixed, a stale KRaft controller's answers,
and a finding the partition-change oracle confirmed on Kafka's own PartitionChangeBuilder."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KIP-101",
        "A follower truncates to its own highWatermark when it starts following: after two power losses "
        "and an unclean election, two isr members keep different records below both high watermarks.",
        also=("KAFKA-1211",),
        component="replication",
        since="0.8.0",
        fixed_in="0.11.0",
        preset="pre-kip-101",
        violates="LogMatching",
        fixed_preset="pre-kip-101",
        fixed_settings={"truncation": "diverging_epoch"},
    ),
    kafka_bug(
        "KAFKA-7128",
        "A follower joins the isr once it reaches the leader's highWatermark, which lags after a leader "
        "change: an old leader that lost a committed record below the leader epoch start offset rejoins.",
        component="replication",
        since="0.8.0",
        fixed_in="2.0.1",
        preset="pre-kafka-7128",
        violates="LeaderCandidateCompleteness",
        fixed_preset="kip-966",
    ),
    kafka_bug(
        "KAFKA-15584",
        "The last isr member stays in the isr when it is fenced; after a power loss takes its unflushed "
        "records it is elected again, and an acknowledged write is gone (no ELR to elect the replica that has it).",
        also=("KIP-966",),
        component="controller",
        since="0.8.0",
        fixed_in="4.0.0",
        preset="v3.5",
        violates="AcknowledgedWriteNeverLost",
        fixed_preset="kip-966",
    ),
    kafka_bug(
        "KAFKA-6880",
        "Fetch carries no currentLeaderEpoch: a follower that missed two leader changes fetches by offset "
        "from a leader that rewrote its log, the highWatermark counts it, and an isr member lacks a committed record.",
        also=("KIP-320",),
        component="replication",
        since="2.0.0",
        fixed_in="2.1.0",
        preset="pre-kip-320",
        violates="LeaderCandidateCompleteness",
        fixed_preset="kip-320",
    ),
    kafka_bug(
        "KAFKA-13141",
        "The leader records the fetch offset of a Fetch it answers with a divergingEpoch, so a follower "
        "whose log diverges joins the isr and counts for the highWatermark; elected, it loses an acknowledged write.",
        component="replication",
        since="2.8.0",
        fixed_in="2.8.1",
        preset="pre-kafka-13141",
        violates=("LeaderCandidateCompleteness", "AcknowledgedWriteNeverLost"),
        fixed_preset="kip-966",
    ),
    kafka_bug(
        "KAFKA-14154",
        "A KRaft controller that failed over answers AlterPartition from its stale image with "
        "INVALID_UPDATE_VERSION; the leader keeps its pending isr, waits for metadata that never comes, "
        "and stays under-replicated.",
        component="controller",
        since="2.8.0",
        fixed_in="3.3.0",
        preset="pre-kafka-14154",
        violates="PendingIsrChangeResolved",
        fixed_preset="kafka-14154",
    ),
    kafka_bug(
        "KAFKA-14617",
        "AlterPartition carries no broker epochs: the leader proposes a follower for the isr on fetch "
        "state from before an unclean restart that lost records, the controller accepts, and an isr member "
        "lacks a committed record.",
        also=("KIP-903",),
        component="replication",
        since="2.8.0",
        fixed_in="3.5.0",
        preset="pre-kip-903",
        violates="LeaderCandidateCompleteness",
        fixed_preset="kip-966",
    ),
    kafka_bug(
        "finding",
        "A reassignment that completes with the isr below min.insync.replicas puts the removed replica "
        "into the ELR: PartitionChangeBuilder names a broker outside the replicas as eligible leader.",
        component="controller",
        since="4.0.0",
        fixed_in=None,
        preset="reassignment",
        violates="ElrWithinReplicas",
    ),
    kafka_bug(
        "KAFKA-8836",
        "If the leader's highWatermark counted an isr shrink while its AlterPartition is in flight, the "
        "controller could elect the dropped follower without a committed record; KIP-497's maximal isr prevents it.",
        also=("KIP-497",),
        component="replication",
        since=None,
        fixed_in="2.7.0",
        preset="pre-kip-497",
        violates=("ReplicationQuorumSuperset", "LeaderCompleteness"),
        fixed_preset="kip-966",
    ),
    kafka_bug(
        "KAFKA-15583",
        "With ELR, a highWatermark that advances while the isr is below min.insync.replicas commits a record "
        "an ELR member lacks; the guard shipped in 3.7.0, before ELR could be enabled.",
        component="replication",
        since=None,
        fixed_in="3.7.0",
        preset="pre-kafka-15583",
        violates="LeaderCandidateCompleteness",
        fixed_preset="kip-966",
    ),
)
