"""The `partition-change` oracle: kraft-replication's controller against Kafka's PartitionChangeBuilder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kmc.checker import Action
from kmc.checker.conformance.run import ConformResult, conform
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.traces.files import write_traces
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.kraft_replication.model import KraftReplicationModel
from kmc.models.kraft_replication.state import Controller, KraftReplicationState

needs_kafka = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="KMC_SKIP_KAFKA=1: no Kafka jars")

SMALL = {"max_leader_epoch": 1, "max_records": 1}
"""One leader change and one record: every controller step still happens, in seconds."""


class BrokenModel(KraftReplicationModel):
    """Elects an eligible leader replica but forgets to put it into the ISR: Kafka makes the ISR
    just the new leader."""

    def elect_leader(
        self, c: Controller, isr: frozenset[int], elr: frozenset[int]
    ) -> tuple[int, frozenset[int], frozenset[int]]:
        leader, new_isr, new_elr = super().elect_leader(c, isr, elr)
        if leader in elr:
            return leader, isr, new_elr
        return leader, new_isr, new_elr


def _conform(model: KraftReplicationModel) -> ConformResult:
    from kmc.oracles.partition_change import PartitionChangeOracle

    return conform(model, [PartitionChangeOracle(model)], BfsOptions())


def _counts(result: ConformResult) -> tuple[int, int, int, int]:
    [tally] = result.tallies
    return result.check.stats.distinct_states, tally.steps, tally.comparisons, tally.mismatches


@needs_kafka
def test_default_preset_conforms_on_a_small_config() -> None:
    result = _conform(KraftReplicationModel.build("kip-966", {**SMALL, "max_shutdowns": 1}))
    assert _counts(result) == (35680, 34053, 272424, 0)
    [tally] = result.tallies
    assert set(tally.by_action) == {
        "FenceBroker",
        "ControlledShutdown",
        "HandleAlterPartition",
        "UnfenceBroker",
        "BrokerRestart",
    }
    assert set(tally.by_question) == {
        "leader",
        "leaderEpoch",
        "isr",
        "elr",
        "partitionEpoch",
        "replicas",
        "addingReplicas",
        "removingReplicas",
    }


@needs_kafka
def test_unclean_election_conforms() -> None:
    """Two leader changes: enough for the unclean election after which the ELR must be empty."""
    result = _conform(KraftReplicationModel.build("unclean", {"max_leader_epoch": 2, "max_records": 0}))
    assert _counts(result) == (2698, 1899, 15192, 0)


@needs_kafka
def test_kafka_3_5_conforms_at_metadata_version_3_5() -> None:
    """v3.5 is compared at metadata.version 3.5-IV2, where the builder bumps the leader epoch on shrinks."""
    result = _conform(KraftReplicationModel.build("v3.5", SMALL))
    assert _counts(result) == (5373, 3510, 28080, 0)


@needs_kafka
def test_an_alter_partition_committed_before_a_controller_failover_conforms() -> None:
    """The controller that commits an AlterPartition and fails over unanswered is compared too."""
    result = _conform(KraftReplicationModel.build("controller-failover", {"max_records": 1}))
    assert _counts(result) == (13906, 9978, 79824, 0)
    [tally] = result.tallies
    assert tally.by_action["ControllerFailover"] == 5632


@needs_kafka
def test_a_reassignment_conforms() -> None:
    """AlterPartitionReassignments is asked of the builder with targetReplicas, targetAdding and
    targetRemoving, and every later change completes it (or not) as Kafka's builder does --
    including the completion below min ISR that leaves the removed replica in the ELR."""
    result = _conform(KraftReplicationModel.build("reassignment", {"max_records": 1}))
    assert _counts(result) == (21674, 6384, 51072, 0)
    [tally] = result.tallies
    assert tally.by_action["AlterPartitionReassignments"] == 146


@needs_kafka
def test_a_wrong_election_is_found_at_its_shortest_trace_and_replays(tmp_path: Path) -> None:
    model = BrokenModel.build("kip-966", {"max_leader_epoch": 2, "max_records": 0})
    result = _conform(model)
    [tally] = result.tallies
    assert tally.mismatches == 1
    assert (tally.first_mismatch.question, tally.first_mismatch.ours, tally.first_mismatch.theirs) == (
        "isr",
        frozenset(),
        frozenset({1}),
    )
    [violation] = result.check.violations
    # Broker 1 leaves the ISR into the ELR; broker 0 is fenced and broker 1 is elected from the ELR.
    assert [a.name for a in violation.trace.actions[1:]] == ["ShrinkIsr", "HandleAlterPartition", "FenceBroker"]
    result.check.model_ref = f"{Path(__file__).resolve()}:BrokenModel"
    [path] = write_traces(result.check, tmp_path)
    done = replay(read_trace(path))
    assert type(done.model).__name__ == "BrokenModel"
    assert done.trace.states == violation.trace.states


@needs_kafka
def test_the_oracle_refuses_elr_with_the_old_shrink_epoch_bump() -> None:
    from kmc.oracles.partition_change import PartitionChangeOracle

    model = KraftReplicationModel.build("kip-966", {"shrink_keeps_leader_epoch": False})
    assert "no Kafka release" in PartitionChangeOracle(model).unsupported()


# -- the model fixes the oracle found ---------------------------------------------------------------
def _step(model: KraftReplicationModel, s: KraftReplicationState, name: str, **args: int) -> KraftReplicationState:
    return next(t for a, t in model.successors(s) if a == Action(name, **args))


def test_an_unclean_election_empties_the_elr() -> None:
    """Found by the oracle: the fenced leader of a one-member ISR joined the ELR although the new
    leader was elected uncleanly; Kafka's PartitionChangeBuilder empties the ELR then."""
    model = KraftReplicationModel.build("unclean")
    [s] = model.init_states()
    s = _step(model, s, "BrokerCrash", broker=0, logEndOffset=0)
    for name in ("FenceBroker", "BrokerRestart", "UnfenceBroker"):
        s = _step(model, s, name, broker=0)
    assert (s.controller.leader, s.controller.isr, s.controller.elr) == (1, {1}, set())
    s = _step(model, s, "FenceBroker", broker=1)
    assert (s.controller.leader, s.controller.isr, s.controller.elr) == (0, {0}, set())


def test_before_kafka_15021_a_shrink_bumps_the_leader_epoch() -> None:
    """Metadata versions before 3.6 bump the leader epoch when the ISR shrinks, with no new leader."""
    for preset, epoch in (("v3.5", 1), ("pre-kip-966", 0)):
        model = KraftReplicationModel.build(preset)
        [s] = model.init_states()
        s = _step(model, s, "FenceBroker", broker=1)
        assert (s.controller.leader, s.controller.leaderEpoch, s.controller.isr) == (0, epoch, {0})
