"""`kraft-quorum` as the metadata log shows it: the leader of each epoch (its ``LeaderChange``
record) and the voter set (``KRaftVoters``, or the bootstrap set ``format --initial-controllers``
wrote).

The whole log is one observed trace. A state where no replica is leader shows nothing (elections,
votes and fetches leave no record), so the search passes through such states freely. The model
writes no data records (``max_records=0``): the metadata records only lengthen logs, and the
longest-log rule of elections is searched over through the model's own LeaderChange records.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from typing import Any

from kmc.cluster.observed import NO_LEADER, UNKNOWN_LEADER, Observations, QuorumView
from kmc.models.kraft_quorum.config import KraftQuorumConfig
from kmc.models.kraft_quorum.model import LEADER, KraftQuorumModel
from kmc.models.kraft_quorum.state import DATA, LEADER_CHANGE, VOTERS, QuorumState, Record, VotersRecord, last_voters

Projection = tuple[int, int, frozenset[tuple[int, int]]]
"""(epoch, leader, voters) in the model's replica numbers and directory numbers."""


class KraftQuorumMapping:
    model_name = "kraft-quorum"
    depth = 8
    """Steps the search allows between two observed states (measured: docs/real-clusters.md)."""
    invariants = ("LogMatching",)

    def traces(self, observations: Observations) -> dict[str, Sequence[QuorumView]]:
        """The log's quorum states; none when the decoder hides the leaders (4.0's prints no
        LeaderChange body): the validation is then reported as not exercised."""
        if not observations.quorum or any(view.leader == UNKNOWN_LEADER for view in observations.quorum):
            return {}
        return {"__cluster_metadata-0": observations.quorum}

    def model(self, name: str, trace: Sequence[QuorumView], observations: Observations) -> KraftQuorumModel:
        ids = self._ids(observations.bootstrap)
        directories = self._directories(trace, observations.bootstrap)
        changes = sum(1 for a, b in itertools.pairwise(trace) if a.voters != b.voters)
        config = KraftQuorumConfig(
            voters=len(ids),
            max_epoch=max(view.epoch for view in trace) + 1,
            max_records=0,
            max_partitions=1,
            max_restarts=1,
            max_voter_changes=min(3, changes),
            max_disk_losses=min(2, max((len(d) - 1 for d in directories.values()), default=0)),
        )
        return KraftQuorumModel(config)

    @staticmethod
    def _ids(bootstrap: Sequence[tuple[int, str]]) -> dict[int, int]:
        return {node: i for i, node in enumerate(sorted(node for node, _directory in bootstrap))}

    @staticmethod
    def _directories(trace: Sequence[QuorumView], bootstrap: Sequence[tuple[int, str]]) -> dict[int, list[str]]:
        """Each voter's directory ids in the order they appear (the bootstrap one is 0)."""
        seen: dict[int, list[str]] = {node: [directory] for node, directory in bootstrap}
        for view in trace:
            for node, directory in view.voters:
                known = seen.setdefault(node, [])
                if directory not in known:
                    known.append(directory)
        return seen

    def observe(self, view: QuorumView, trace: Sequence[QuorumView]) -> Projection:
        bootstrap = tuple(v for v in trace[0].voters)
        ids = self._ids(bootstrap)
        directories = self._directories(trace, bootstrap)
        voters = frozenset((ids[node], directories[node].index(directory)) for node, directory in view.voters)
        return (view.epoch, ids.get(view.leader, NO_LEADER), voters)

    def decisions(self, view: QuorumView) -> int:
        return 1

    def project(self, state: QuorumState) -> Projection | None:
        leader = max(((v.epoch, i) for i, v in enumerate(state.voters) if v.role == LEADER), default=None)
        if leader is None:
            return None
        epoch, i = leader
        bootstrap = frozenset((v, 0) for v in range(len(state.voters)))
        return (epoch, i, last_voters(state.voters[i].log, bootstrap))

    def normalize(self, state: QuorumState) -> QuorumState:
        if not (state.partitions or state.restarts or state.writes or state.voterChanges or state.diskLosses):
            return state
        return state._replace(partitions=0, restarts=0, writes=0, voterChanges=0, diskLosses=0)

    def lift(self, model: Any, projection: Hashable) -> QuorumState:
        return model.init_states()[0]

    def snapshots(self, model: Any, observations: Observations) -> list[tuple[str, QuorumState]]:
        """The nodes' logs as the model's voters' logs, as they are at the end: what LogMatching reads."""
        ids = self._ids(observations.bootstrap)
        init = model.init_states()[0]
        voters = list(init.voters)
        for node, log in observations.logs.items():
            if node in ids:
                records = tuple(_record(r.epoch, r.type, r.data) for r in log.records)
                voters[ids[node]] = voters[ids[node]]._replace(log=records)
        return [("the nodes' metadata logs at the end", init._replace(voters=tuple(voters)))]

    def describe(self, projection: Hashable, trace: Sequence[QuorumView]) -> dict[str, Any]:
        epoch, leader, voters = projection  # type: ignore[misc]
        nodes = sorted(node for node, _directory in trace[0].voters)
        return {
            "epoch": epoch,
            "leader": nodes[leader] if leader != NO_LEADER else NO_LEADER,
            "voters": sorted(nodes[v] for v, _d in voters),
        }


def _record(epoch: int, kind: str, data: dict[str, Any]) -> Record | VotersRecord:
    if kind == "LeaderChange":
        return Record(epoch, LEADER_CHANGE)
    if kind == "KRaftVoters":
        return VotersRecord(epoch, VOTERS, frozenset((v["voterId"], 0) for v in data["voters"]))
    return Record(epoch, DATA)
