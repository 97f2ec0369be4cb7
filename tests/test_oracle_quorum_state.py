"""The `kraft-quorum` model against kafka-raft's epoch states: exact counts, and a broken model caught."""

from __future__ import annotations

import os

import pytest
from kmc.checker import BfsOptions
from kmc.checker.conformance.run import conform
from kmc.checker.errors import UserError
from kmc.models.kraft_quorum.model import LEADER, NONE, UNATTACHED, KraftQuorumModel, QuorumState, Record, Voter

pytestmark = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="needs Kafka's jars and a JDK")


def _oracle(model: KraftQuorumModel):  # type: ignore[no-untyped-def]
    from kmc.oracles.quorum_state import QuorumStateOracle

    return QuorumStateOracle(model)


def test_the_quorum_model_conforms_to_kafka_raft() -> None:
    """kip-996 (pre-vote, check-quorum, one partition) cut at epoch 1."""
    model = KraftQuorumModel.build("kip-996", {"max_epoch": 1})
    result = conform(model, [_oracle(model)], BfsOptions())
    [tally] = result.tallies
    assert result.check.stats.distinct_states == 27982
    assert (tally.steps, tally.comparisons, tally.mismatches) == (50403, 51315, 0)
    assert set(tally.by_question) == {
        "canGrantVote",
        "EpochElection.isVoteGranted",
        "LeaderState.highWatermark (new leader)",
        "updateLocalState → highWatermark",
        "updateReplicaState → highWatermark",
    }


def test_pre_fix_flags_are_not_compared_with_a_fixed_release() -> None:
    model = KraftQuorumModel.build("pre-kafka-17641")
    with pytest.raises(UserError, match="KAFKA-17641"):
        conform(model, [_oracle(model)], BfsOptions())


def test_a_pre_vote_of_a_newer_epoch_moves_a_stale_leader_to_that_epoch() -> None:
    """The mismatch this oracle found: handleVoteRequest moves the voter to Unattached in a newer
    epoch for a pre-vote too, so a leader cut off in an older epoch steps down and grants."""
    model = KraftQuorumModel.build("kip-996")
    fresh = Voter(UNATTACHED, 0, NONE, NONE, (), 0, frozenset(), (), False, False)
    leader = fresh._replace(
        role=LEADER, epoch=1, votedId=0, leaderId=0, log=(Record(1, "LeaderChange"),), endOffsets=(1, 0, 0)
    )
    prospective = fresh._replace(role="Prospective", epoch=2, votes=frozenset({1}), log=(Record(1, "LeaderChange"),))
    s = QuorumState((leader, prospective, fresh._replace(epoch=2)), frozenset(), (), 0, 0, 0)
    voter, granted = model.vote_response(s, 1, 0, pre_vote=True)
    assert (voter.role, voter.epoch, voter.votedId, granted) == (UNATTACHED, 2, NONE, True)
    oracle = _oracle(model)
    [vote, *_] = oracle._vote(s, 1, 0, True, s)
    assert vote.agree, vote


class GrantsToStaleLogs(KraftQuorumModel):
    """Broken on purpose: an Unattached voter with no vote grants a vote even to a candidate whose
    log is behind its own."""

    def vote_response(self, s: QuorumState, c: int, v: int, pre_vote: bool) -> tuple[Voter, bool]:
        me, granted = super().vote_response(s, c, v, pre_vote)
        fresh = me.role == UNATTACHED and me.votedId == NONE and me.leaderId == NONE
        if not granted and not pre_vote and fresh and s.voters[c].epoch >= s.voters[v].epoch:
            return me._replace(votedId=c), True
        return me, granted


def test_a_vote_for_a_stale_log_is_caught_with_the_shortest_trace() -> None:
    model = GrantsToStaleLogs(KraftQuorumModel.make_config("kip-996", {"max_partitions": 0}))
    oracle = _oracle(model)
    result = conform(model, [oracle], BfsOptions())
    [tally] = result.tallies
    assert tally.mismatches == 1
    mismatch = tally.first_mismatch
    assert mismatch is not None and mismatch.question == "canGrantVote"
    assert mismatch.inputs["isLogUpToDate"] is False
    assert mismatch.ours[-1] is True and mismatch.theirs[-1] is False
    [violation] = result.check.violations
    trace = violation.trace
    # voter 0 leads epoch 1 with its LeaderChangeMessage, voter 1 (empty log) pre-votes into a
    # Candidate of epoch 2 and asks voter 0, now Unattached, for its vote
    assert violation.trace_length == 7
    assert [a.name for a in trace.actions[1:]] == [
        "ElectionTimeout",
        "RequestVote",
        "RequestVote",
        "ElectionTimeout",
        "RequestVote",
        "RequestVote",
    ]
    for before, action, after in zip(trace.states[:-1], trace.actions[1:], trace.states[1:], strict=True):
        assert (action, after) in model.successors(before)
    last = list(oracle.compare_step(trace.states[-2], trace.actions[-1], trace.states[-1]))
    assert [c.question for c in last if not c.agree] == ["canGrantVote"]


@pytest.mark.parametrize(
    ("preset", "overrides", "states", "steps", "comparisons"),
    [
        ("kip-853", {"max_restarts": 0}, 12353, 20193, 25281),  # two voter changes, one at a time
        ("pre-kip-853", {"directory_ids": True}, 12587, 23535, 26283),  # a lost disk, a new directory id
    ],
)
def test_kip_853_conforms_to_kafka_raft(
    preset: str, overrides: dict[str, object], states: int, steps: int, comparisons: int
) -> None:
    """Voter sets from the log, AddVoter/RemoveVoter's checks and VoterSet, the voter-key check."""
    model = KraftQuorumModel.build(preset, overrides)
    result = conform(model, [_oracle(model)], BfsOptions())
    [tally] = result.tallies
    assert result.check.stats.distinct_states == states
    assert (tally.steps, tally.comparisons, tally.mismatches) == (steps, comparisons, 0)
    if preset == "kip-853":
        assert {"AddVoter/RemoveVoter: no uncommitted VotersRecord", "VoterSet.removeVoter"} <= set(tally.by_question)


@pytest.mark.parametrize(
    ("preset", "flag"), [("no-voter-change-guard", "one_voter_change_at_a_time"), ("pre-kip-853", "kraft.version 0")]
)
def test_what_ifs_and_kraft_version_0_are_not_compared(preset: str, flag: str) -> None:
    model = KraftQuorumModel.build(preset)
    with pytest.raises(UserError, match=flag):
        conform(model, [_oracle(model)], BfsOptions())
