"""The `producer-state` oracle: the producer model's leader against Kafka's ProducerStateManager."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from kmc.checker.conformance.run import ConformResult, conform
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.traces.files import write_traces
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.producer.model import DUPLICATE, OUT_OF_ORDER_SEQUENCE_NUMBER, Batch, ProducerModel, Replica, entry_of

needs_kafka = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="KMC_SKIP_KAFKA=1: no Kafka jars")


class BrokenModel(ProducerModel):
    """Recognises a duplicate only in the newest cached batch (the 0.11 broker's one-batch check)."""

    def check_produce(self, replica: Replica, batch: Batch) -> tuple[str, int]:
        outcome = super().check_produce(replica, batch)
        entry = entry_of(replica, batch.producerId)
        if outcome[0] == DUPLICATE and entry.batchMetadata[-1].lastSeq != batch.baseSequence:
            return OUT_OF_ORDER_SEQUENCE_NUMBER, -1
        return outcome


def _conform(model: ProducerModel) -> ConformResult:
    from kmc.oracles.producer_state import ProducerStateOracle

    return conform(model, [ProducerStateOracle(model)], BfsOptions())


def _counts(result: ConformResult) -> tuple[int, int, int, int]:
    [tally] = result.tallies
    return result.check.stats.distinct_states, tally.steps, tally.comparisons, tally.mismatches


@needs_kafka
@pytest.mark.parametrize(
    ("preset", "counts"),
    [
        ("idempotent", (1505, 1931, 2456, 0)),
        ("kip-360", (211, 35, 66, 0)),
        ("pre-kafka-7190", (257, 147, 219, 0)),
        ("leader-change", (575, 273, 408, 0)),
        ("zombie", (8521, 8013, 11094, 0)),
    ],
)
def test_presets_conform(preset: str, counts: tuple[int, int, int, int]) -> None:
    """zombie reaches every answer: appended, duplicate, OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH."""
    result = _conform(ProducerModel.build(preset))
    assert _counts(result) == counts
    [tally] = result.tallies
    assert set(tally.by_question) == {"outcome", "producerState"}


@needs_kafka
def test_the_oracle_refuses_what_no_release_decides() -> None:
    from kmc.oracles.producer_state import ProducerStateOracle

    for preset, reason in (
        ("cache-1", "NUM_BATCHES_TO_RETAIN=5"),
        ("pre-kip-360", "KAFKA-8710"),
        ("non-idempotent", "no producer id"),
        ("kafka-15591", "Kafka 4.5"),
    ):
        assert reason in ProducerStateOracle(ProducerModel.build(preset)).unsupported()


@needs_kafka
def test_a_wrong_sequence_check_is_found_at_its_shortest_trace_and_replays(tmp_path: Path) -> None:
    model = BrokenModel.build("idempotent")
    result = _conform(model)
    [tally] = result.tallies
    assert tally.mismatches >= 1
    first = tally.first_mismatch
    assert (first.question, first.ours[0], first.theirs[0]) == ("outcome", OUT_OF_ORDER_SEQUENCE_NUMBER, DUPLICATE)
    [violation] = result.check.violations
    assert violation.trace.actions[-1].name == "HandleProduce"
    result.check.model_ref = f"{Path(__file__).resolve()}:BrokenModel"
    [path] = write_traces(result.check, tmp_path)
    done = replay(read_trace(path))
    assert type(done.model).__name__ == "BrokenModel"
    assert done.trace.states == violation.trace.states
