"""The `group` model against Kafka's ClassicGroup: exact counts, and a broken model caught."""

from __future__ import annotations

import os

import pytest
from kmc.checker import BfsOptions
from kmc.checker.conformance.run import conform
from kmc.models.group.model import COMPLETING_REBALANCE, EMPTY, GroupModel, GroupState

pytestmark = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="needs Kafka's jars and a JDK")


def _oracle(model: GroupModel):  # type: ignore[no-untyped-def]
    from kmc.oracles.classic_group import ClassicGroupOracle

    return ClassicGroupOracle(model)


@pytest.mark.parametrize(
    ("preset", "states", "steps", "comparisons"),
    [("eager-range", 7360, 6339, 14190), ("static", 3592, 2750, 6146), ("slow-coordinator", 4192, 3392, 7720)],
)
def test_the_group_model_conforms_to_classic_group(preset: str, states: int, steps: int, comparisons: int) -> None:
    model = GroupModel.build(preset)
    result = conform(model, [_oracle(model)], BfsOptions())
    [tally] = result.tallies
    assert result.check.stats.distinct_states == states
    assert (tally.steps, tally.comparisons, tally.mismatches) == (steps, comparisons, 0)
    questions = {
        "transitionTo",
        "initNextGeneration",
        "maybeElectNewJoinedLeader",
        "hasAllMembersJoined",
        "validateMember",
        "validateOffsetCommit",
        "callbacks completed on unload",
        "hasSatisfiedHeartbeat",
        "isPendingMember",
    }
    assert questions <= set(tally.by_question)
    if preset != "eager-range":
        assert {"replaceStaticMember", "staticMemberId"} <= set(tally.by_question)
    else:
        assert {"supportsProtocols", "addPendingMember"} <= set(tally.by_question)


def test_a_join_that_does_not_wait_for_pending_members_is_caught() -> None:
    """Without pending-member gating the join completes while a KIP-394 member id is still out;
    Kafka's ``hasAllMembersJoined`` says not everyone has joined."""
    model = GroupModel.build("eager-range", {"pending_members_block_join": False})
    result = conform(model, [_oracle(model)], BfsOptions())
    [tally] = result.tallies
    assert tally.mismatches == 1
    mismatch = tally.first_mismatch
    assert mismatch is not None and (mismatch.question, mismatch.ours, mismatch.theirs) == (
        "hasAllMembersJoined",
        True,
        False,
    )
    assert result.check.violations[0].trace_length == 11


class SkipsPreparingRebalance(GroupModel):
    """Broken on purpose: the first member of an Empty group completes the join at once, from Empty
    straight to CompletingRebalance (no PreparingRebalance, so no KIP-134 initial delay either)."""

    def _maybe_prepare_rebalance(self, s: GroupState) -> GroupState:
        if s.group.state == EMPTY:
            return self._complete_join(s)
        return super()._maybe_prepare_rebalance(s)


def test_a_group_that_skips_a_state_is_caught_with_the_shortest_trace() -> None:
    model = SkipsPreparingRebalance(GroupModel.make_config("eager-range"))
    oracle = _oracle(model)
    result = conform(model, [oracle], BfsOptions())
    [tally] = result.tallies
    assert tally.mismatches == 1
    mismatch = tally.first_mismatch
    assert mismatch is not None and mismatch.question == "transitionTo"
    assert mismatch.ours == (EMPTY, COMPLETING_REBALANCE)
    assert mismatch.theirs[1].startswith("IllegalStateException")
    [violation] = result.check.violations
    trace = violation.trace
    # the first join: MEMBER_ID_REQUIRED, then the rejoin with the id goes Empty -> CompletingRebalance
    assert violation.trace_length == 6
    assert [a.name for a in trace.actions[1:]] == [
        "SendJoinGroup",
        "HandleJoinGroup",
        "ReceiveJoinGroup",
        "SendJoinGroup",
        "HandleJoinGroup",
    ]
    # the trace replays: every action leads from its state to the next, and the last step mismatches
    for before, action, after in zip(trace.states[:-1], trace.actions[1:], trace.states[1:], strict=True):
        assert (action, after) in model.successors(before)
    last = list(oracle.compare_step(trace.states[-2], trace.actions[-1], trace.states[-1]))
    assert [c.question for c in last if not c.agree] == ["transitionTo"]
