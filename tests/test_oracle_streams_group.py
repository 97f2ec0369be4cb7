"""The streams-group coordinator against Kafka's classes (the pinned release, 4.3.1): exact counts and
0 mismatches, a broken variant that must mismatch, and the rules of other releases told apart."""

from __future__ import annotations

import os

import pytest
from kmc.checker.conformance.run import conform
from kmc.checker.errors import UserError
from kmc.models.streams_group.model import StreamsGroupModel
from kmc.models.streams_group.state import StreamsGroup, StreamsGroupMember, TasksTuple

pytestmark = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="needs the Kafka jars")

QUESTIONS = {
    "memberEpochAccepted",
    "targetAssignment",
    "state",
    "memberEpoch",
    "previousMemberEpoch",
    "assignedTasks",
    "tasksPendingRevocation",
    "taskOwners",
}


def _conform(model: StreamsGroupModel):  # type: ignore[no-untyped-def]
    from kmc.oracles.streams_group import StreamsGroupOracle

    result = conform(model, [StreamsGroupOracle(model)])
    [tally] = result.tallies
    return result, tally


@pytest.mark.parametrize(
    ("preset", "overrides", "states", "steps", "decisions"),
    [
        ("kafka-4.3", {}, 10033, 8310, 45210),
        ("heartbeat-after-reconciliation", {"kafka_20665": False, "max_faults": 2}, 2601, 2356, 8792),
        ("standby-replicas", {"kafka_20665": False}, 53861, 42251, 295757),
    ],
)
def test_kafka_agrees_with_every_heartbeat_and_removal(
    preset: str, overrides: dict, states: int, steps: int, decisions: int
) -> None:
    result, tally = _conform(StreamsGroupModel.build(preset, overrides))
    assert result.check.stats.distinct_states == states
    assert (tally.steps, tally.comparisons, tally.mismatches) == (steps, decisions, 0)
    assert set(tally.by_question) == QUESTIONS


class PreviousEpochKept(StreamsGroupModel):
    """Broken on purpose: a reconciliation that moves the member to a new epoch forgets to remember the
    old one as its previous epoch (``updateMemberEpoch`` sets both)."""

    def _compute_next(  # type: ignore[no-untyped-def]
        self, group: StreamsGroup, member: StreamsGroupMember, epoch: int, owned: TasksTuple | None
    ):
        return (
            super()._compute_next(group, member, epoch, owned)._replace(previousMemberEpoch=member.previousMemberEpoch)
        )


def test_oracle_catches_a_reconciliation_that_keeps_the_previous_epoch() -> None:
    model = PreviousEpochKept(StreamsGroupModel.make_config("kafka-4.3"))
    result, tally = _conform(model)
    assert tally.mismatches == 1
    assert tally.first_mismatch.question == "previousMemberEpoch"
    assert tally.first_mismatch.ours == tally.first_mismatch.inputs["member"].previousMemberEpoch
    assert tally.first_mismatch.theirs == tally.first_mismatch.inputs["member"].memberEpoch
    [violation] = result.check.violations
    assert violation.trace.actions[-1].name == "HandleHeartbeat"


def test_kafka_4_3_1_fences_no_rejoin_the_4_1_rule_fenced() -> None:
    """KAFKA-19233: with the 4.1 rule the model fences a rejoin that 4.3.1 accepts."""
    _, tally = _conform(StreamsGroupModel.build("pre-kafka-19233"))
    assert tally.mismatches == 1
    assert tally.first_mismatch.question == "memberEpochAccepted"
    assert (tally.first_mismatch.ours, tally.first_mismatch.theirs) == (False, True)
    assert tally.first_mismatch.inputs["memberEpoch"] == 0


def test_kafka_4_3_1_revokes_an_active_task_before_it_becomes_a_standby() -> None:
    """KAFKA-20665 (4.4.0) changes a member's own task's role in place; 4.3.1 does not."""
    _, tally = _conform(StreamsGroupModel.build("standby-replicas"))
    assert tally.mismatches == 1
    assert tally.first_mismatch.question == "assignedTasks"


def test_what_ifs_no_release_implements_are_refused() -> None:
    with pytest.raises(UserError, match="what-ifs no Kafka release implements"):
        _conform(StreamsGroupModel.build("no-release-wait"))
