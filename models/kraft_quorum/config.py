"""The kraft-quorum model's config: every flag named after the KIP or JIRA that changed the
behaviour, the presets that bundle them, and the names of every action's arguments."""

from __future__ import annotations

from dataclasses import dataclass

from kmc.checker import Preset, param

ACTION_ARGS = {
    "ElectionTimeout": ("voter",),
    "FetchTimeout": ("voter",),
    "RequestVote": ("candidate", "voter", "preVote"),
    "BeginQuorumEpoch": ("leader", "voter"),
    "Fetch": ("follower", "leader"),
    "ClientWrite": ("leader",),
    "CheckQuorumResign": ("leader",),
    "Isolate": ("voter",),
    "Heal": ("voter",),
    "Restart": ("voter",),
    "AddVoter": ("leader", "voter"),
    "RemoveVoter": ("leader", "voter"),
    "ResignRemoved": ("leader",),
    "LoseDisk": ("voter",),
}
"""Every action of the model and the names of its arguments."""


@dataclass(frozen=True)
class KraftQuorumConfig:
    voters: int = param(3, "how many voters (controllers) form the quorum", min=1, max=5)
    max_epoch: int = param(2, "states with an epoch beyond this are not expanded (within_bounds)", min=1, max=6)
    max_records: int = param(1, "how many metadata records the active controllers write in all", min=0, max=4)
    max_partitions: int = param(1, "how many times a voter may be cut off from the others", min=0, max=3)
    max_restarts: int = param(0, "how many times a voter may restart (durable log and quorum-state)", min=0, max=3)
    fetch_max_records: int = param(0, "the most records one Fetch response carries (0: all it has)", min=0, max=4)
    pre_vote: bool = param(True, "KIP-996: an election starts with pre-votes that bump no epoch")
    check_quorum: bool = param(True, "KAFKA-15489: a leader not fetched from by a majority resigns")
    single_voter_exemption: bool = param(True, "KAFKA-16144: a one-voter quorum never fails check-quorum")
    prevote_from_unfetched_follower: bool = param(
        True, "KAFKA-17641: a follower that has not fetched from its leader grants pre-votes"
    )
    hw_needs_current_epoch: bool = param(True, "the leader's HW moves only over a record of its own epoch")
    observers: int = param(0, "replicas outside the bootstrap voter set, fetching as observers (KIP-853)", min=0, max=2)
    max_voter_changes: int = param(
        0, "AddVoter/RemoveVoter records the leaders append in all (KIP-853; 0: a static voter set)", min=0, max=3
    )
    max_disk_losses: int = param(0, "how many times a replica may come back with an empty log directory", min=0, max=2)
    directory_ids: bool = param(True, "KIP-853: a voter is (id, directory id); a re-formatted disk is not the voter")
    kafka_16530: bool = param(
        True,
        "KAFKA-16530 (3.8): the leader counts its high watermark over its latest voter set (before: the voter set "
        "it was elected with)",
    )
    one_voter_change_at_a_time: bool = param(
        True, "KIP-853: no AddVoter/RemoveVoter while the last VotersRecord is uncommitted"
    )


ALL_HOLD = {
    "ElectionSafety": "holds",
    "LogMatching": "holds",
    "LeaderCompleteness": "holds",
    "Durability": "holds",
    "ReadCommitted": "holds",
    "ResignOnlyWithoutQuorum": "holds",
    "HighWatermarkMonotonic": "holds",
    "EventuallyLeaderElected": "holds",
    "NotStuckInProspective": "holds",
    "DeposedLeaderResigns": "holds",
    "NoDisruptiveCandidate": "holds",
}


PRESETS = {
    "kip-996": Preset.of("Kafka 4.0: pre-vote, check-quorum and every fix below", ALL_HOLD),
    "kip-595": Preset.of(
        "Kafka 3.0 to 3.6: KIP-595 elections without pre-vote or check-quorum",
        {"DeposedLeaderResigns": "violated", "NoDisruptiveCandidate": "violated"},
        pre_vote=False,
        check_quorum=False,
    ),
    "pre-kafka-15489": Preset.of(
        "Kafka 4.0 without check-quorum: a leader cut off from the quorum never resigns",
        {"DeposedLeaderResigns": "violated", "EventuallyLeaderElected": "holds"},
        check_quorum=False,
    ),
    "pre-kafka-16144": Preset.of(
        "Kafka 3.7.0: check-quorum expires a single voter's timer",
        {"ResignOnlyWithoutQuorum": "violated"},
        voters=1,
        single_voter_exemption=False,
    ),
    "pre-kafka-17641": Preset.of(
        "the first KIP-996 code: followers of a dead leader refuse each other's pre-votes",
        {"EventuallyLeaderElected": "violated", "NotStuckInProspective": "violated"},
        prevote_from_unfetched_follower=False,
    ),
    "raft-figure-8": Preset.of(
        "a leader that commits a record of an older epoch by counting replicas (Raft paper, Figure 8)",
        {"LeaderCompleteness": "violated"},
        hw_needs_current_epoch=False,
        max_epoch=4,
        max_partitions=0,
        fetch_max_records=1,
    ),
    "kip-853": Preset.of(
        "Kafka 3.9 and 4.x dynamic voters: RemoveVoter/AddVoter, one change at a time, a controller restart",
        {**ALL_HOLD, "EventuallyLeaderElected": "violated"},
        max_voter_changes=2,
        max_records=0,
        max_partitions=0,
        max_restarts=1,
    ),
    "no-voter-change-guard": Preset.of(
        "what if AddVoter/RemoveVoter did not wait for the last VotersRecord to commit (never a Kafka release)",
        {"LeaderCompleteness": "violated"},
        max_voter_changes=2,
        max_records=0,
        max_partitions=0,
        max_restarts=1,
        one_voter_change_at_a_time=False,
    ),
    "pre-kafka-16530": Preset.of(
        "KIP-853's leader before KAFKA-16530 (3.8, before dynamic voters shipped in 3.9): the high watermark is "
        "counted over the voter set the leader was elected with, and a record only removed voters have is committed",
        {
            **ALL_HOLD,
            "LeaderCompleteness": "violated",
            "ReadCommitted": "violated",
            "HighWatermarkMonotonic": "violated",
            "Durability": "violated",
            "EventuallyLeaderElected": "violated",
        },
        max_voter_changes=2,
        max_records=1,
        max_partitions=0,
        kafka_16530=False,
    ),
    "pre-kip-853": Preset.of(
        "Kafka 3.x static voters (kraft.version 0): a controller whose disk is lost votes again as the old voter",
        {"ElectionSafety": "violated", "Durability": "violated"},
        max_disk_losses=1,
        max_records=0,
        max_partitions=0,
        directory_ids=False,
    ),
}
