"""`kraft-replication` as the metadata log shows it: one partition's registration (leader, leader
epoch, ISR, ELR) and the brokers that may not lead it (fenced, or in controlled shutdown).

Each partition is one observed trace. The model numbers brokers by the partition's replica order
(the first replica is the model's broker 0, the preferred leader), so every partition of a topic
maps onto the same model. What the log does not show -- the replicas' logs, fetches, high
watermarks, broker epochs, which fenced broker is down and which is only cut off -- is searched
over. The data plane matters only through who lags (an ISR shrink needs a follower behind the
leader's LEO), so the model writes one record at a time: once every replica holds the same log, all
of it below every high watermark, ``normalize`` forgets it (the logs empty, the record ids start
again) -- a fully replicated, committed prefix decides nothing the controller does next.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from kmc.cluster.observed import Observations, PartitionView
from kmc.models.kraft_replication.config import KraftReplicationConfig
from kmc.models.kraft_replication.model import KraftReplicationModel
from kmc.models.kraft_replication.state import NO_LEADER, UNDEFINED, KraftReplicationState

Projection = tuple[int, int, frozenset[int], frozenset[int], frozenset[int]]
"""(leader, leaderEpoch, isr, elr, fenced) in the model's broker numbers."""


class KraftReplicationMapping:
    model_name = "kraft-replication"
    depth = 6
    """Steps the search allows between two observed states (measured: docs/real-clusters.md)."""
    invariants = ("ValidIsrAndElr", "ValidAssignment", "ElrWithinReplicas")

    def traces(self, observations: Observations) -> dict[str, Sequence[PartitionView]]:
        """Every partition whose replicas the model can hold (2 to 4 of them)."""
        return {name: views for name, views in observations.partitions.items() if 2 <= len(views[0].replicas) <= 4}

    def model(self, name: str, trace: Sequence[PartitionView], observations: Observations) -> KraftReplicationModel:
        topic = name.rsplit("-", 1)[0]
        brokers = len(trace[0].replicas)
        min_isr = int(observations.topic_config(topic, "min.insync.replicas", "1"))
        unclean = observations.topic_config(topic, "unclean.leader.election.enable", "false") == "true"
        config = KraftReplicationConfig(
            brokers=brokers,
            min_insync_replicas=min(min_isr, brokers),
            max_records=1,
            max_leader_epoch=max(1, max(view.leaderEpoch for view in trace)),
            max_crashes=1,
            max_fences=1,
            max_shutdowns=brokers,
            crash="process",
            unclean_election=unclean,
            elr=observations.features.get("eligible.leader.replicas.version", 0) >= 1,
        )
        return KraftReplicationModel(config)

    def observe(self, view: PartitionView, trace: Sequence[PartitionView]) -> Projection:
        index = {broker: i for i, broker in enumerate(trace[0].replicas)}

        def mapped(brokers: frozenset[int]) -> frozenset[int]:
            return frozenset(index[b] for b in brokers if b in index)

        leader = index.get(view.leader, NO_LEADER)
        return (leader, view.leaderEpoch, mapped(view.isr), mapped(view.elr), mapped(view.fenced))

    def decisions(self, view: PartitionView) -> int:
        """How many of the controller's decisions the batch that made this state may hold: one per
        broker it fenced, unfenced, registered or began to shut down (a stopping cluster's last batch
        holds several), and at least one."""
        brokers = set()
        for r in view.records:
            data = r.data
            if r.type == "REGISTER_BROKER_RECORD" or (
                r.type == "BROKER_REGISTRATION_CHANGE_RECORD"
                and (data.get("fenced") in (1, -1) or data.get("inControlledShutdown") == 1)
            ):
                brokers.add(data["brokerId"])
        return max(1, len(brokers))

    def project(self, state: KraftReplicationState) -> Projection:
        c = state.controller
        return (c.leader, c.leaderEpoch, c.isr, c.elr, c.fenced)

    def normalize(self, state: KraftReplicationState) -> KraftReplicationState:
        """Fault counters and the properties' ghost history reset (nothing the model does reads
        them), and a log every replica holds in full, committed, forgotten."""
        if state.crashes or state.fences or state.shutdowns or state.acked or state.committed or state.consumed:
            state = state._replace(crashes=0, fences=0, shutdowns=0, committed=(), consumed=(), acked=frozenset())
        log = state.replicas[0].log
        if not log or any(f is not None for f in state.fetches):
            return state
        end = len(log)
        if any(r.log != log or r.highWatermark != end for r in state.replicas):
            return state
        replicas = tuple(
            r._replace(
                log=(),
                highWatermark=0,
                followerState=tuple(
                    (leo - end if leo >= end else UNDEFINED, epoch) if leo != UNDEFINED else (leo, epoch)
                    for leo, epoch in r.followerState
                ),
            )
            for r in state.replicas
        )
        return state._replace(replicas=replicas, nextRecordId=1)

    def lift(self, model: Any, projection: Hashable) -> KraftReplicationState:
        leader, leader_epoch, isr, elr, fenced = projection  # type: ignore[misc]
        init = model.init_states()[0]
        controller = init.controller._replace(leader=leader, leaderEpoch=leader_epoch, isr=isr, elr=elr, fenced=fenced)
        return init._replace(controller=controller)

    def snapshots(self, model: Any, observations: Observations) -> list[tuple[str, KraftReplicationState]]:
        return []

    def describe(self, projection: Hashable, trace: Sequence[PartitionView]) -> dict[str, Any]:
        """A projection in the cluster's broker ids, for reports."""
        leader, leader_epoch, isr, elr, fenced = projection  # type: ignore[misc]
        replicas = trace[0].replicas

        def real(brokers: frozenset[int]) -> list[int]:
            return sorted(replicas[b] for b in brokers)

        return {
            "leader": replicas[leader] if leader != NO_LEADER else NO_LEADER,
            "leaderEpoch": leader_epoch,
            "isr": real(isr),
            "elr": real(elr),
            "fenced": real(fenced),
        }
