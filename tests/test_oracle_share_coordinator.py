"""The share-group model's persisted state against Kafka's share coordinator (PersisterStateBatchCombiner):
exact counts and 0 mismatches, the findings' presets included, and a broken merge that must mismatch."""

from __future__ import annotations

import os

import pytest
from kmc.checker.conformance.run import conform
from kmc.models.share_group.model import ShareGroupModel
from kmc.models.share_group.state import ShareGroupState

pytestmark = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="needs the Kafka jars")


def _conform(model: ShareGroupModel):  # type: ignore[no-untyped-def]
    from kmc.oracles.share_coordinator import ShareCoordinatorOracle

    result = conform(model, [ShareCoordinatorOracle(model)])
    [tally] = result.tallies
    return result, tally


@pytest.mark.parametrize(
    ("preset", "states", "steps"),
    [("kafka-4.2", 454, 298), ("kafka-4.2-log-start", 1049, 660), ("kafka-4.1", 938, 583)],
)
def test_kafka_merges_every_write_as_the_model_does(preset: str, states: int, steps: int) -> None:
    result, tally = _conform(ShareGroupModel.build(preset))
    assert result.check.stats.distinct_states == states
    assert (tally.steps, tally.comparisons, tally.mismatches) == (steps, 2 * steps, 0)


class WriteKeepsOldCounts(ShareGroupModel):
    """Broken on purpose: a write stores the records' new states but keeps their old delivery counts."""

    def _write_answered(self, s: ShareGroupState, error: str):  # type: ignore[no-untyped-def]
        action, after = super()._write_answered(s, error)
        kept = tuple((state, count) for (state, _), (_, count) in zip(after.persisted, s.persisted, strict=True))
        return action, after._replace(persisted=kept)


def test_oracle_catches_a_write_that_keeps_the_old_delivery_counts() -> None:
    result, tally = _conform(WriteKeepsOldCounts(ShareGroupModel.make_config("kafka-4.2")))
    assert tally.mismatches >= 1
    assert tally.first_mismatch.question == "persisted"
    [violation] = result.check.violations
    assert violation.trace.actions[-1].name == "WriteShareGroupStateResponse"
