"""What the metadata log shows, replayed into states: each partition's registration together with
the brokers' registrations, and the raft quorum's leaders and voters.

A state is observed after each *batch*: the controller appends the records of one decision (a
broker fenced and every partition it led moved away) as one batch, and every node applies a batch
atomically. A partition's leader epoch is not in its change records: as in Kafka's
``PartitionRegistration.merge``, a record that names a leader starts a new leader epoch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kmc.cluster.metadata import MetadataLog, MetadataRecord, most_up_to_date

NO_LEADER = -1
UNKNOWN_LEADER = -3
"""A LeaderChange whose body the release's decoder does not print: the epoch's leader is not shown."""
NO_LEADER_CHANGE = -2
"""PartitionChangeRecord's default leader: the leader does not change."""


@dataclass(frozen=True)
class PartitionView:
    """A partition's registration and the brokers that may not lead it, after one batch."""

    offset: int
    """The last offset of the batch that made this state."""
    raftEpoch: int
    leader: int
    leaderEpoch: int
    partitionEpoch: int
    replicas: tuple[int, ...]
    isr: frozenset[int]
    elr: frozenset[int]
    fenced: frozenset[int]
    """Brokers fenced or in controlled shutdown: neither is in an ISR or a leader any more."""
    records: tuple[MetadataRecord, ...] = ()
    """The records of the batch that touched the partition or a broker's registration."""

    def key(self) -> tuple[Any, ...]:
        return (self.leader, self.leaderEpoch, self.isr, self.elr, self.fenced)

    def to_json(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "raftEpoch": self.raftEpoch,
            "leader": self.leader,
            "leaderEpoch": self.leaderEpoch,
            "partitionEpoch": self.partitionEpoch,
            "replicas": list(self.replicas),
            "isr": sorted(self.isr),
            "elr": sorted(self.elr),
            "fenced": sorted(self.fenced),
        }


@dataclass(frozen=True)
class QuorumView:
    """The raft quorum after a control record: the leader of an epoch and the voter set."""

    offset: int
    epoch: int
    leader: int
    voters: tuple[tuple[int, str], ...]
    """(voter id, directory id) of each voter, as the last KRaftVoters record (or the bootstrap
    checkpoint, before one) has them; the directory id is "" before KIP-853."""
    record: MetadataRecord | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "epoch": self.epoch,
            "leader": self.leader,
            "voters": [list(v) for v in self.voters],
        }


@dataclass
class _Brokers:
    fenced: set[int] = field(default_factory=set)
    shutting_down: set[int] = field(default_factory=set)

    def apply(self, record: MetadataRecord) -> bool:
        """Apply a broker registration record; whether it was one."""
        data = record.data
        kind = record.type
        if kind == "REGISTER_BROKER_RECORD":
            broker = data["brokerId"]
            self.shutting_down.discard(broker)
            (self.fenced.add if data.get("fenced", True) else self.fenced.discard)(broker)
            if data.get("inControlledShutdown"):
                self.shutting_down.add(broker)
        elif kind == "BROKER_REGISTRATION_CHANGE_RECORD":
            broker = data["brokerId"]
            if data.get("fenced") == 1:
                self.fenced.add(broker)
            elif data.get("fenced") == -1:
                self.fenced.discard(broker)
            if data.get("inControlledShutdown") == 1:
                self.shutting_down.add(broker)
        elif kind in ("FENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD"):
            self.fenced.add(data["id"] if "id" in data else data["brokerId"])
        elif kind == "UNFENCE_BROKER_RECORD":
            self.fenced.discard(data["id"])
        else:
            return False
        return True

    def ineligible(self) -> frozenset[int]:
        return frozenset(self.fenced | self.shutting_down)


def partition_histories(log: MetadataLog) -> dict[str, list[PartitionView]]:
    """Every partition's states, by ``topic-partition``: one when it is created, one after each batch
    that changed its registration or the set of brokers that may not lead it."""
    topics: dict[str, str] = {}
    brokers = _Brokers()
    current: dict[str, PartitionView] = {}
    histories: dict[str, list[PartitionView]] = {}
    for batch in _batches(log):
        touched: dict[str, list[MetadataRecord]] = {}
        broker_records: list[MetadataRecord] = []
        for record in batch:
            if record.type == "TOPIC_RECORD":
                topics[record.data["topicId"]] = record.data["name"]
            elif brokers.apply(record):
                broker_records.append(record)
            elif record.type in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
                name = f"{topics.get(record.data['topicId'], record.data['topicId'])}-{record.data['partitionId']}"
                current[name] = _applied(current.get(name), record)
                touched.setdefault(name, []).append(record)
        ineligible = brokers.ineligible()
        last = batch[-1].offset
        for name, view in current.items():
            if name not in touched and view.fenced == ineligible:
                continue
            records = tuple(touched.get(name, ())) + tuple(broker_records)
            view = PartitionView(
                last,
                batch[-1].epoch,
                view.leader,
                view.leaderEpoch,
                view.partitionEpoch,
                view.replicas,
                view.isr,
                view.elr,
                ineligible,
                records,
            )
            current[name] = view
            history = histories.setdefault(name, [])
            if not history or history[-1].key() != view.key() or name in touched:
                history.append(view)
    return histories


def _applied(view: PartitionView | None, record: MetadataRecord) -> PartitionView:
    data = record.data
    if record.type == "PARTITION_RECORD" or view is None:
        return PartitionView(
            record.offset,
            record.epoch,
            data.get("leader", NO_LEADER),
            data.get("leaderEpoch", 0),
            data.get("partitionEpoch", 0),
            tuple(data.get("replicas", ())),
            frozenset(data.get("isr", ())),
            frozenset(data.get("eligibleLeaderReplicas") or ()),
            frozenset(),
        )
    leader, leader_epoch = view.leader, view.leaderEpoch
    if data.get("leader", NO_LEADER_CHANGE) != NO_LEADER_CHANGE:
        leader, leader_epoch = data["leader"], view.leaderEpoch + 1
    isr = frozenset(data["isr"]) if data.get("isr") is not None else view.isr
    elr = view.elr if data.get("eligibleLeaderReplicas") is None else frozenset(data["eligibleLeaderReplicas"])
    replicas = tuple(data["replicas"]) if data.get("replicas") is not None else view.replicas
    return PartitionView(
        record.offset, record.epoch, leader, leader_epoch, view.partitionEpoch + 1, replicas, isr, elr, view.fenced
    )


def _batches(log: MetadataLog) -> list[list[MetadataRecord]]:
    batches: list[list[MetadataRecord]] = []
    for record in log.records:
        if batches and batches[-1][0].batch == record.batch:
            batches[-1].append(record)
        else:
            batches.append([record])
    return batches


def quorum_history(log: MetadataLog, bootstrap: tuple[tuple[int, str], ...]) -> list[QuorumView]:
    """The raft quorum's states: one per LeaderChange record (a leader's first record in its epoch)
    and one per KRaftVoters record (a voter added or removed), in log order."""
    voters = bootstrap
    views: list[QuorumView] = []
    leader = NO_LEADER
    for record in log.records:
        if record.type == "LeaderChange":
            leader = record.data.get("leaderId", UNKNOWN_LEADER)
        elif record.type == "KRaftVoters" and "voters" in record.data:
            voters = tuple(sorted((v["voterId"], v.get("voterDirectoryId", "")) for v in record.data["voters"]))
            if views and views[-1].epoch == record.epoch and views[-1].voters == voters:
                continue
        else:
            continue
        views.append(QuorumView(record.offset, record.epoch, leader, voters, record))
    return views


@dataclass
class Observations:
    """Everything read back from a stopped cluster's run directory."""

    logs: dict[int, MetadataLog]
    """Every node's copy of the metadata log, by node id."""
    log: MetadataLog
    """The most up-to-date copy: the one the observed states are read from."""
    partitions: dict[str, list[PartitionView]]
    quorum: list[QuorumView]
    bootstrap: tuple[tuple[int, str], ...]
    configs: dict[tuple[int, str], dict[str, str]]
    """CONFIG_RECORDs: (resource type, resource name) -> name -> value (2: a topic, 4: the brokers)."""
    features: dict[str, int]
    settings: dict[str, str] = field(default_factory=dict)
    """The nodes' server.properties (static broker configs are not in the metadata log)."""

    def topic_config(self, topic: str, name: str, default: str) -> str:
        """A topic's setting, else the cluster's dynamic one, else the nodes' static one, else
        Kafka's default."""
        for resource in ((2, topic), (4, "")):
            value = self.configs.get(resource, {}).get(name)
            if value is not None:
                return value
        return self.settings.get(name, default)


def observations(
    logs: dict[int, MetadataLog], bootstrap: tuple[tuple[int, str], ...], settings: dict[str, str] | None = None
) -> Observations:
    log = most_up_to_date(logs)
    configs: dict[tuple[int, str], dict[str, str]] = {}
    features: dict[str, int] = {}
    for record in log.records:
        if record.type == "CONFIG_RECORD":
            resource = (record.data["resourceType"], record.data["resourceName"])
            if record.data.get("value") is None:
                configs.get(resource, {}).pop(record.data["name"], None)
            else:
                configs.setdefault(resource, {})[record.data["name"]] = record.data["value"]
        elif record.type == "FEATURE_LEVEL_RECORD":
            features[record.data["name"]] = record.data["featureLevel"]
    return Observations(
        logs,
        log,
        partition_histories(log),
        quorum_history(log, bootstrap),
        bootstrap,
        configs,
        features,
        dict(settings or {}),
    )
