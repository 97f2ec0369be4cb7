"""The nodes' ``__cluster_metadata`` logs, decoded by Kafka's own tool and read back as records.

``DumpLogSegments --cluster-metadata-decoder`` prints every batch (its offsets, the raft epoch it was
written in as ``partitionLeaderEpoch``, whether it is a control batch) and every record in it: the
control records (``LeaderChange``, ``KRaftVersion``, ``KRaftVoters``) and the metadata records as
``payload: {"type": ..., "data": {...}}``. One JVM decodes the segments of every node (about 1.4 s).
The output format is the one of Kafka 4.x (4.0's prints a LeaderChange by its control type alone).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kmc.checker.errors import UserError
from kmc.cluster.release import dump_log_segments

METADATA_PARTITION = "__cluster_metadata-0"
BATCH = re.compile(
    r"baseOffset: (\d+) lastOffset: (\d+) count: \d+ .*?partitionLeaderEpoch: (-?\d+) "
    r"isTransactional: \w+ isControl: (\w+)"
)
RECORD = re.compile(r"\| offset: (\d+) .*?headerKeys: \[[^\]]*\] (\w+):? (\{.*\})$")
CONTROL = re.compile(r"\| offset: (\d+) .*?controlType: (\w+)\(\d+\)$")
"""A control record printed by its type alone (4.0's decoder prints no LeaderChange body)."""
CONTROL_TYPES = {"LEADER_CHANGE": "LeaderChange", "KRAFT_VERSION": "KRaftVersion", "KRAFT_VOTERS": "KRaftVoters"}
START = re.compile(r"Log starting offset: (\d+)")
DUMPING = "Dumping "


@dataclass(frozen=True)
class MetadataRecord:
    """One record of the metadata log: its offset, the raft epoch of its batch, the batch's first
    offset (records of one batch are applied atomically), its type and its fields."""

    offset: int
    epoch: int
    batch: int
    type: str
    """A metadata record's type as Kafka names it (``PARTITION_CHANGE_RECORD``), or a control
    record's (``LeaderChange``, ``KRaftVersion``, ``KRaftVoters``)."""
    data: dict[str, Any]
    control: bool

    def to_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "epoch": self.epoch, "type": self.type, "data": self.data}


@dataclass
class MetadataLog:
    """One node's copy of the metadata log, as its segments hold it."""

    node: int
    start_offset: int = 0
    records: list[MetadataRecord] = field(default_factory=list)

    @property
    def end_offset(self) -> int:
        return self.records[-1].offset + 1 if self.records else self.start_offset

    def epochs(self) -> list[tuple[int, int]]:
        """(offset, raft epoch) of every record: what Raft's log matching compares."""
        return [(r.offset, r.epoch) for r in self.records]


def segment_files(node_folder: Path) -> list[Path]:
    return sorted((node_folder / "data" / "metadata" / METADATA_PARTITION).glob("*.log"))


def decode(run_dir: Path, jars: Path, java: str) -> dict[int, MetadataLog]:
    """Every node's metadata log under a cluster's run directory, by node id."""
    files: dict[Path, int] = {}
    for folder in sorted(run_dir.glob("node-*")):
        node = int(folder.name.split("-", 1)[1])
        for segment in segment_files(folder):
            files[segment] = node
    if not files:
        raise UserError(f"no metadata log under {run_dir}: is it a cluster's run directory?")
    paths = [str(path) for path in files]
    text = dump_log_segments(jars, java, paths, "--cluster-metadata-decoder", what="the metadata logs")
    return parse(text, {str(path): node for path, node in files.items()})


def parse(text: str, nodes_by_file: dict[str, int]) -> dict[int, MetadataLog]:
    """The decoder's output, split by the file each part dumps and merged per node."""
    logs: dict[int, MetadataLog] = {}
    log: MetadataLog | None = None
    batch = epoch = 0
    control = False
    for line in text.splitlines():
        if line.startswith(DUMPING):
            path = line[len(DUMPING) :].strip()
            node = nodes_by_file.get(path)
            if node is None:
                raise UserError(f"the decoder dumped a file that was not asked for: {path}")
            first = node not in logs
            log = logs.setdefault(node, MetadataLog(node))
            log.start_offset = log.start_offset if not first else -1
            continue
        if log is None:
            continue
        if (match := START.match(line)) is not None:
            if log.start_offset == -1:
                log.start_offset = int(match.group(1))
        elif (match := BATCH.match(line)) is not None:
            batch, epoch, control = int(match.group(1)), int(match.group(3)), match.group(4) == "true"
        elif line.startswith("|") and (match := RECORD.match(line)) is not None:
            offset, kind, body = int(match.group(1)), match.group(2), json.loads(match.group(3))
            if kind == "payload":
                kind, body = body["type"], body.get("data", {})
            log.records.append(MetadataRecord(offset, epoch, batch, kind, body, control))
        elif line.startswith("|") and (match := CONTROL.match(line)) is not None:
            kind = CONTROL_TYPES.get(match.group(2), match.group(2))
            log.records.append(MetadataRecord(int(match.group(1)), epoch, batch, kind, {}, True))
    for log in logs.values():
        log.start_offset = max(log.start_offset, 0)
    return logs


def most_up_to_date(logs: dict[int, MetadataLog]) -> MetadataLog:
    """The copy Raft's vote would call most up to date (the highest last epoch, then the longest):
    every committed record is on it."""
    if not logs:
        raise UserError("no metadata log was decoded")
    return max(logs.values(), key=lambda log: (log.records[-1].epoch if log.records else -1, log.end_offset, -log.node))
