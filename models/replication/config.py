"""The replication model's config: the four flags named after what changed in Kafka (truncation,
fetch fencing, the HW rule, the ISR rules), and the presets that are the five published
specifications."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kmc.checker import Preset, param

Truncation = Literal["hw", "leader_epoch", "matching_offset", "on_fetch", "fenced"]
FetchFencing = Literal["none", "last_fetched_epoch", "current_leader_epoch"]
HwAdvance = Literal["isr_offsets", "epoch_match", "current_epoch"]
IsrRules = Literal["offsets", "epoch_match", "current_epoch"]


@dataclass(frozen=True)
class ReplicationConfig:
    replicas: int = param(2, "Replicas: the replication factor", min=1, max=6)
    log_size: int = param(2, "LogSize: the most records a replica's log holds", min=1, max=8)
    max_records: int = param(2, "MaxRecords: how many records producers write in all", min=0, max=8)
    max_leader_epoch: int = param(
        2, "MaxLeaderEpoch: the largest leader epoch (epochs 0..max are handed out)", min=0, max=8
    )
    truncation: Truncation = param("fenced", "what a new follower does to its log")
    fetch_fencing: FetchFencing = param("current_leader_epoch", "what a follower's fetch is checked against")
    hw_advance: HwAdvance = param("current_epoch", "when the leader advances the high watermark")
    isr_rules: IsrRules = param("current_epoch", "when the leader shrinks or expands the ISR")


PRESETS = {
    "truncate-to-hw": Preset.of(
        "before KIP-101 (< 0.11): a new follower truncates to its high watermark",
        {"StrongIsr": "violated"},
        truncation="hw",
        fetch_fencing="none",
        hw_advance="isr_offsets",
        isr_rules="offsets",
    ),
    "kip-101": Preset.of(
        "KIP-101 (0.11): truncation by leader epoch (OffsetsForLeaderEpoch)",
        {"StrongIsr": "violated"},
        truncation="leader_epoch",
        fetch_fencing="none",
        hw_advance="isr_offsets",
        isr_rules="offsets",
    ),
    "kip-279": Preset.of(
        "KIP-279 (2.0): truncate after the last offset whose record matches the leader's",
        {"StrongIsr": "violated with replicas=3"},
        truncation="matching_offset",
        fetch_fencing="none",
        hw_advance="isr_offsets",
        isr_rules="offsets",
    ),
    "kip-320-first-try": Preset.of(
        "the first KIP-320 draft: truncate on a fetch error, fetches checked by last fetched epoch",
        {"StrongIsr": "violated with replicas=3"},
        truncation="on_fetch",
        fetch_fencing="last_fetched_epoch",
        hw_advance="epoch_match",
        isr_rules="epoch_match",
    ),
    "kip-320": Preset.of(
        "KIP-320 (2.1): fetches and truncation fenced by the current leader epoch",
        {"StrongIsr": "holds", "WeakIsr": "holds", "LeaderInIsr": "holds", "LogMatching": "holds"},
        truncation="fenced",
        fetch_fencing="current_leader_epoch",
        hw_advance="current_epoch",
        isr_rules="current_epoch",
    ),
}
