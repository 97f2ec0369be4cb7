"""The share-group model's records against Kafka's InFlightState: exact counts, 0 mismatches (the two
findings' presets included), a broken variant that must mismatch, the releases' rules refused."""

from __future__ import annotations

import os

import pytest
from kmc.checker.conformance.run import conform
from kmc.checker.errors import UserError
from kmc.models.share_group.model import ShareGroupModel
from kmc.models.share_group.state import ACQUIRED, AVAILABLE, ShareGroupState

pytestmark = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="needs the Kafka jars")


def _conform(model: ShareGroupModel):  # type: ignore[no-untyped-def]
    from kmc.oracles.in_flight_state import InFlightStateOracle

    result = conform(model, [InFlightStateOracle(model)])
    [tally] = result.tallies
    return result, tally


@pytest.mark.parametrize(
    ("preset", "overrides", "states", "steps"),
    [
        ("kafka-4.2", {}, 454, 494),
        ("kafka-4.2-log-start", {}, 1049, 845),
        ("kafka-4.2", {"delivery_count_limit": 3}, 2080, 2222),
    ],
)
def test_kafka_agrees_with_every_record_transition(preset: str, overrides: dict, states: int, steps: int) -> None:
    result, tally = _conform(ShareGroupModel.build(preset, overrides))
    assert result.check.stats.distinct_states == states
    assert (tally.steps, tally.comparisons, tally.mismatches) == (steps, steps, 0)


class RollbackIgnoresTheExpiredLock(ShareGroupModel):
    """Broken on purpose: a failed write gives the record back to its owner even when its lock has
    run out (KAFKA-19476's second race, which Kafka's InFlightState no longer has)."""

    def _complete_transition(self, s: ShareGroupState, offset: int, ok: bool, write):  # type: ignore[no-untyped-def]
        record = s.records[offset]
        if ok or record.rollback is None or record.terminal:
            return super()._complete_transition(s, offset, ok, write)
        back = record._replace(state=record.rollback.state, memberId=record.rollback.memberId, rollback=None)
        return s._replace(records=tuple(back if i == offset else r for i, r in enumerate(s.records)))


def test_oracle_catches_a_rollback_that_ignores_the_expired_lock() -> None:
    model = RollbackIgnoresTheExpiredLock(ShareGroupModel.make_config("kafka-4.2"))
    result, tally = _conform(model)
    assert tally.mismatches >= 1
    assert tally.first_mismatch.question == "completeStateTransition(False)"
    assert (tally.first_mismatch.ours[0], tally.first_mismatch.theirs[0]) == (ACQUIRED, AVAILABLE)
    [violation] = result.check.violations
    trace = violation.trace
    assert trace.actions[-1].name == "WriteShareGroupStateResponse"
    assert len(trace.states) == 5  # fetch, acknowledge, the lock runs out, the write fails


def test_the_rules_before_the_fixes_are_the_model_s_alone() -> None:
    from kmc.oracles.in_flight_state import InFlightStateOracle

    model = ShareGroupModel.build("kafka-4.1")
    assert "kafka_19476_terminal" in (InFlightStateOracle(model).unsupported() or "")
    with pytest.raises(UserError, match="cannot compare this config"):
        conform(model, [InFlightStateOracle(model)])
