"""The `consumer-delivery` model's commit fencing against Kafka's ClassicGroup and ConsumerGroup
offset-commit validation: exact counts, and a broken model caught."""

from __future__ import annotations

import os

import pytest
from kmc.checker import BfsOptions
from kmc.checker.conformance.run import conform
from kmc.models.consumer_delivery.model import NONE, UNKNOWN_MEMBER_ID, ConsumerDeliveryModel
from kmc.models.consumer_delivery.state import DeliveryState

pytestmark = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="needs Kafka's jars and a JDK")


def _oracle(model: ConsumerDeliveryModel):  # type: ignore[no-untyped-def]
    from kmc.oracles.offset_commit import OffsetCommitOracle

    return OffsetCommitOracle(model)


@pytest.mark.parametrize(
    ("preset", "overrides", "states", "steps", "actions"),
    [
        ("auto-commit", {}, 3397, 608, {"Poll", "JoinGroup"}),
        ("eos-v2", {}, 5671, 706, {"SendOffsetsToTransaction"}),
        ("commit-on-revoke", {"group_protocol": "consumer"}, 9293, 232, {"ReceiveHeartbeat"}),
        ("commit-before-processing-kip-848", {"timeouts": "any"}, 10271, 1494, {"OffsetCommit"}),
    ],
)
def test_commit_fencing_conforms_to_kafka(
    preset: str, overrides: dict, states: int, steps: int, actions: set[str]
) -> None:
    model = ConsumerDeliveryModel.build(preset, overrides)
    result = conform(model, [_oracle(model)], BfsOptions())
    [tally] = result.tallies
    assert result.check.stats.distinct_states == states
    assert (tally.steps, tally.comparisons, tally.mismatches) == (steps, steps, 0)
    assert set(tally.by_action) == actions


class Zombie(ConsumerDeliveryModel):
    """Broken on purpose: the coordinator forgets to check the member id, so an expelled consumer's
    commits are accepted."""

    def _validate(self, s: DeliveryState, member_id: str, generation_id: int, txn: bool) -> str:
        error = super()._validate(s, member_id, generation_id, txn)
        return NONE if error == UNKNOWN_MEMBER_ID else error


def test_a_coordinator_that_accepts_zombies_is_caught_with_the_shortest_trace() -> None:
    model = Zombie(ConsumerDeliveryModel.make_config("eos-v2"))
    oracle = _oracle(model)
    result = conform(model, [oracle], BfsOptions())
    [tally] = result.tallies
    assert tally.mismatches == 1
    mismatch = tally.first_mismatch
    assert mismatch is not None and (mismatch.ours, mismatch.theirs) == (NONE, UNKNOWN_MEMBER_ID)
    [violation] = result.check.violations
    trace = violation.trace
    # the consumer is expelled while it processes, then sends its offsets with its old member id
    assert violation.trace_length == 9
    assert [a.name for a in trace.actions[1:]] == [
        "JoinGroup",
        "CompleteRebalance",
        "SyncGroup",
        "OffsetFetch",
        "Poll",
        "Process",
        "SessionTimeout",
        "SendOffsetsToTransaction",
    ]
    for before, action, after in zip(trace.states[:-1], trace.actions[1:], trace.states[1:], strict=True):
        assert (action, after) in model.successors(before)
    [last] = oracle.compare_step(trace.states[-2], trace.actions[-1], trace.states[-1])
    assert not last.agree
