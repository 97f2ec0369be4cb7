"""The share-group-membership coordinator against Kafka's classes (the pinned release, 4.3.1): exact
counts and 0 mismatches, a broken variant that must mismatch, and the rules of Kafka 4.1 (before
KAFKA-19468 and KAFKA-19233) told apart from 4.3.1's."""

from __future__ import annotations

import os

import pytest
from kmc.checker.conformance.run import conform
from kmc.models.share_group_membership.model import ShareGroupMembershipModel
from kmc.models.share_group_membership.state import ShareGroup, ShareGroupMember

pytestmark = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="needs the Kafka jars")

QUESTIONS = {
    "memberEpochAccepted",
    "initializedAssignmentPending",
    "targetAssignment",
    "memberEpoch",
    "previousMemberEpoch",
    "assignedPartitions",
}


def _conform(model: ShareGroupMembershipModel):  # type: ignore[no-untyped-def]
    from kmc.oracles.share_group_membership import ShareGroupMembershipOracle

    result = conform(model, [ShareGroupMembershipOracle(model)])
    [tally] = result.tallies
    return result, tally


@pytest.mark.parametrize(
    ("preset", "states", "steps", "decisions"),
    [("kafka-4.2", 36661, 19218, 73446), ("lost-responses", 12915, 7812, 25634)],
)
def test_kafka_agrees_with_every_heartbeat(preset: str, states: int, steps: int, decisions: int) -> None:
    result, tally = _conform(ShareGroupMembershipModel.build(preset))
    assert result.check.stats.distinct_states == states
    assert (tally.steps, tally.comparisons, tally.mismatches) == (steps, decisions, 0)
    assert set(tally.by_question) == QUESTIONS


class PreviousEpochForgotten(ShareGroupMembershipModel):
    """Broken on purpose: the coordinator's reconciliation moves the member to the target's epoch but keeps
    its old previous epoch (``updateMemberEpoch`` sets both)."""

    def _reconcile(self, member: ShareGroupMember, group: ShareGroup, bumped: bool) -> ShareGroupMember:
        return super()._reconcile(member, group, bumped)._replace(previousMemberEpoch=member.previousMemberEpoch)


def test_oracle_catches_a_reconciliation_that_keeps_the_previous_epoch() -> None:
    result, tally = _conform(PreviousEpochForgotten(ShareGroupMembershipModel.make_config("kafka-4.2")))
    assert tally.mismatches == 1
    assert tally.first_mismatch.question == "previousMemberEpoch"
    assert tally.first_mismatch.ours == tally.first_mismatch.inputs["member"].previousMemberEpoch
    assert tally.first_mismatch.theirs == tally.first_mismatch.inputs["member"].memberEpoch
    [violation] = result.check.violations
    assert violation.trace.actions[-1].name == "HandleHeartbeat"


def test_kafka_4_3_1_does_not_rebalance_for_an_unsubscribed_topic_the_4_1_rule_did() -> None:
    """KAFKA-19468: with the 4.1 rule the model finds initialized partitions waiting where 4.3.1 finds none."""
    _, tally = _conform(ShareGroupMembershipModel.build("pre-kafka-19468"))
    assert tally.mismatches == 1
    assert tally.first_mismatch.question == "initializedAssignmentPending"
    assert (tally.first_mismatch.ours, tally.first_mismatch.theirs) == (True, False)


def test_kafka_4_3_1_fences_no_rejoin_the_4_1_rule_fenced() -> None:
    """KAFKA-19233: with the 4.1 rule the model fences a rejoin that 4.3.1 accepts."""
    _, tally = _conform(ShareGroupMembershipModel.build("pre-kafka-19233"))
    assert tally.mismatches == 1
    assert tally.first_mismatch.question == "memberEpochAccepted"
    assert (tally.first_mismatch.ours, tally.first_mismatch.theirs) == (False, True)
    assert tally.first_mismatch.inputs["memberEpoch"] == 0
