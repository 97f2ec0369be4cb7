"""The KRaft quorum model: exact state counts, each bug before its fix, the rules underneath."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import BfsOptions, Check, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.kraft_quorum.model import (
    CANDIDATE,
    DATA,
    FOLLOWER,
    LEADER,
    LEADER_CHANGE,
    PROSPECTIVE,
    RESIGNED,
    UNATTACHED,
    VOTERS,
    KraftQuorumModel,
    QuorumState,
    Record,
    VotersRecord,
    end_offset_for_epoch,
)

ROOT = Path(__file__).resolve().parent.parent
TRACES = sorted((ROOT / "counterexamples" / "kraft-quorum").glob("*.itf.json"))
SAFETY = [
    "ElectionSafety",
    "LogMatching",
    "LeaderCompleteness",
    "Durability",
    "ReadCommitted",
    "HighWatermarkMonotonic",
]


def test_safety_state_counts_at_small_bounds() -> None:
    result = Check("kraft-quorum", overrides={"max_epoch": 1}, property_names=SAFETY).run()
    assert result.status is Status.HOLDS_BOUNDED  # the epoch bound is a cut: never called complete
    assert (result.stats.distinct_states, result.stats.depth) == (27982, 20)


def test_liveness_holds_without_partitions() -> None:
    result = Check("kraft-quorum", overrides={"max_partitions": 0}).run()
    assert result.status is Status.HOLDS_BOUNDED, result.violations
    assert result.stats.distinct_states == 4571


@pytest.mark.parametrize(
    ("preset", "prop", "length", "loop"),
    [
        ("kip-595", "DeposedLeaderResigns", 9, 8),
        ("pre-kafka-16144", "ResignOnlyWithoutQuorum", 3, None),
        ("raft-figure-8", "LeaderCompleteness", 19, None),
        ("kip-595", "NoDisruptiveCandidate", 7, None),
        ("no-voter-change-guard", "LeaderCompleteness", 13, None),
        ("pre-kip-853", "ElectionSafety", 8, None),
        ("pre-kafka-16530", "LeaderCompleteness", 18, None),
        ("pre-kafka-16530", "Durability", 23, None),
    ],
)
def test_bugs_before_their_fix(preset: str, prop: str, length: int, loop: int | None) -> None:
    result = Check("kraft-quorum", preset=preset, property_names=[prop]).run()
    [violation] = result.violations
    assert (violation.property, violation.trace_length, violation.trace.loop) == (prop, length, loop)


def test_a_lone_leader_resigns_only_without_the_exemption() -> None:
    before = Check("kraft-quorum", preset="pre-kafka-16144", property_names=["ResignOnlyWithoutQuorum"]).run()
    assert [a.name for a in before.violations[0].trace.actions[1:]] == ["ElectionTimeout", "CheckQuorumResign"]
    after = Check("kraft-quorum", overrides={"voters": 1}, property_names=["ResignOnlyWithoutQuorum"]).run()
    assert after.status is Status.HOLDS_COMPLETE  # one voter: elected once, never again


def test_the_stale_leader_is_cut_off_and_stays_leader() -> None:
    """The lasso's loop: the old leader is still Leader of the older epoch, a newer one is elected."""
    stored = ROOT / "counterexamples" / "kraft-quorum" / "pre-kafka-15489-DeposedLeaderResigns.itf.json"
    trace = replay(read_trace(stored)).trace
    assert trace.loop is not None
    for state in trace.states[trace.loop :]:
        leaders = sorted((v.epoch, i) for i, v in enumerate(state.voters) if v.role == LEADER)
        assert len(leaders) == 2 and leaders[0][0] < leaders[1][0]
        assert leaders[0][1] in state.isolated


@pytest.mark.parametrize("trace", TRACES, ids=[t.name for t in TRACES])
def test_checked_in_counterexamples_replay(trace: Path) -> None:
    doc = read_trace(trace)
    done = replay(doc)
    prop = select_properties(KraftQuorumModel, names=[doc["#meta"]["property"]]).all()[0]
    states = done.trace.states
    if prop.kind == "invariant":
        check = prop.bind(done.model)
        assert not check(states[-1])
        assert all(check(s) for s in states[:-1])
    elif prop.kind == "step":
        check = prop.bind(done.model)
        assert not check(states[-2], done.trace.actions[-1], states[-1])
    else:  # a lasso: the trigger held and the goal never holds again, in the loop or before it
        goal, trigger = prop.bind(done.model), prop.bind_trigger(done.model)
        assert done.trace.loop is not None
        start = max(i for i, s in enumerate(states[: done.trace.loop + 1]) if trigger(s) and not goal(s))
        assert not any(goal(s) for s in states[start:])


def test_every_checked_in_counterexample_is_in_the_ci_suite() -> None:
    suite = (ROOT / "counterexamples" / "suite.toml").read_text()
    assert len(TRACES) == 11
    for trace in TRACES:
        assert f'replay = "kraft-quorum/{trace.name}"' in suite


# -- the rules underneath ------------------------------------------------------------------------
def _state(model: KraftQuorumModel, **voters: object) -> QuorumState:
    [init] = model.init_states()
    updated = list(init.voters)
    for key, changes in voters.items():
        i = int(key[1:])
        updated[i] = updated[i]._replace(**changes)  # type: ignore[arg-type]
    return init._replace(voters=tuple(updated))


def test_end_offset_for_epoch() -> None:
    log = (Record(1, LEADER_CHANGE), Record(1, DATA), Record(3, LEADER_CHANGE))
    assert end_offset_for_epoch(log, 1) == (1, 2)
    assert end_offset_for_epoch(log, 2) == (1, 2)  # no epoch 2: the largest below it
    assert end_offset_for_epoch(log, 3) == (3, 3)
    assert end_offset_for_epoch(log, 0) == (0, 0)


def test_a_fetch_truncates_a_diverging_follower() -> None:
    model = KraftQuorumModel.build("kip-996")
    lc1, lc2, lc3 = Record(1, LEADER_CHANGE), Record(2, LEADER_CHANGE), Record(3, LEADER_CHANGE)
    s = _state(
        model,
        v0=dict(role=LEADER, epoch=3, leaderId=0, log=(lc1, lc3), endOffsets=(2, 0, 0)),
        v1=dict(role=FOLLOWER, epoch=3, leaderId=0, log=(lc1, lc2)),
    )
    [(action, after)] = [(a, t) for a, t in model.successors(s) if a.name == "Fetch"]
    assert after.voters[1].log == (lc1,)  # epoch 2 is not on the leader: back to the end of epoch 1
    [(_, again)] = [(a, t) for a, t in model.successors(after) if a == action]
    assert again.voters[1].log == (lc1, lc3)
    assert again.voters[0].endOffsets == (2, 1, 0)


def test_the_high_watermark_waits_for_a_record_of_the_leaders_epoch() -> None:
    lc1, lc3 = Record(1, LEADER_CHANGE), Record(3, LEADER_CHANGE)
    leader = dict(role=LEADER, epoch=3, leaderId=0, log=(lc1, lc3), endOffsets=(2, 0, 0))
    follower = dict(role=FOLLOWER, epoch=3, leaderId=0, log=(lc1,))
    for preset, hw in (("kip-996", 0), ("raft-figure-8", 1)):
        model = KraftQuorumModel.build(preset)
        s = _state(model, v0=leader, v1=follower)
        [after] = [t for a, t in model.successors(s) if a.name == "Fetch"]
        assert after.voters[0].highWatermark == hw  # the follower has only the epoch-1 record


@pytest.mark.parametrize(("fix", "granted"), [(True, True), (False, False)])
def test_a_follower_that_never_fetched_grants_a_pre_vote_only_with_kafka_17641(fix: bool, granted: bool) -> None:
    model = KraftQuorumModel.build("kip-996", {"prevote_from_unfetched_follower": fix})
    s = _state(
        model,
        v1=dict(role=PROSPECTIVE, epoch=1, leaderId=0, votes=frozenset({1})),
        v2=dict(role=FOLLOWER, epoch=1, leaderId=0),
    )
    assert model.vote_response(s, 1, 2, pre_vote=True)[1] is granted
    fetched = s._replace(voters=(s.voters[0], s.voters[1], s.voters[2]._replace(hasFetched=True)))
    assert model.vote_response(fetched, 1, 2, pre_vote=True)[1] is False


def test_a_vote_from_a_higher_epoch_resets_the_voter_first() -> None:
    model = KraftQuorumModel.build("kip-595")
    s = _state(
        model,
        v0=dict(role=LEADER, epoch=1, leaderId=0, votedId=0, log=(Record(1, LEADER_CHANGE),), endOffsets=(1, 0, 0)),
        v1=dict(role="Candidate", epoch=2, votedId=1, votes=frozenset({1}), log=(Record(1, LEADER_CHANGE),)),
    )
    voter, granted = model.vote_response(s, 1, 0, pre_vote=False)
    assert (voter.role, voter.epoch, voter.votedId, granted) == (UNATTACHED, 2, 1, True)


@pytest.mark.slow
@pytest.mark.parametrize("preset", sorted(set(KraftQuorumModel.presets) - {"kip-996", "kip-853"}))  # the CI suite
def test_presets_verdicts_are_what_kmc_list_says(preset: str) -> None:
    expected = KraftQuorumModel.presets[preset].expected
    result = Check("kraft-quorum", preset=preset, property_names=list(expected), settings={"keep_going": True}).run()
    violated = {v.property for v in result.violations}
    assert violated == {name for name, verdict in expected.items() if verdict == "violated"}


def test_symmetry_is_a_renaming() -> None:
    model = KraftQuorumModel.build("kip-996", {"max_epoch": 1, "max_partitions": 0})
    plain = bfs(model, select_properties(KraftQuorumModel, names=["ElectionSafety"]))
    reduced = bfs(model, select_properties(KraftQuorumModel, names=["ElectionSafety"]), BfsOptions(symmetry=True))
    assert reduced.stats.distinct_states < plain.stats.distinct_states
    assert reduced.stats.depth == plain.stats.depth


# -- pre-vote's purpose ----------------------------------------------------------------------------
def test_a_voter_that_cannot_win_deposes_the_leader_only_without_pre_vote() -> None:
    """kip-595: voter 1 voted for 0 and never heard from it; its timer fires and it stands with an
    empty log against two voters holding the leader's LeaderChangeMessage, and its Vote request of
    epoch 2 makes the working leader step down."""
    result = Check("kraft-quorum", preset="kip-595", property_names=["NoDisruptiveCandidate"]).run()
    [violation] = result.violations
    trace = violation.trace
    assert [a.name for a in trace.actions[1:]] == [
        "ElectionTimeout",
        "RequestVote",
        "BeginQuorumEpoch",
        "Fetch",
        "ElectionTimeout",
        "RequestVote",
    ]
    before, after = trace.states[-2:]
    assert before.hopeless == frozenset({1}) and before.voters[1].role == CANDIDATE
    assert (before.voters[0].role, after.voters[0].role, after.voters[0].epoch) == (LEADER, UNATTACHED, 2)
    assert result.stats.distinct_states == 1031


def test_pre_vote_does_not_stop_a_candidate_that_could_win_when_it_stood() -> None:
    """What NoDisruptiveCandidate leaves out, on purpose: in kip-996 voter 1 passes pre-vote while
    voter 2 has not yet heard of the leader, the leader then establishes itself, and 1's Vote of
    epoch 2 deposes it although 1 can no longer win. Pre-vote judges the candidate once, when it
    stands; Kafka's voters then move to any higher epoch a Vote request carries."""
    model = KraftQuorumModel.build("kip-996", {"max_partitions": 0})
    steps = [
        ("ElectionTimeout", {"voter": 0}),
        ("RequestVote", {"candidate": 0, "voter": 1, "preVote": True}),
        ("RequestVote", {"candidate": 0, "voter": 1, "preVote": False}),
        ("ElectionTimeout", {"voter": 1}),
        ("RequestVote", {"candidate": 1, "voter": 2, "preVote": True}),
        ("BeginQuorumEpoch", {"leader": 0, "voter": 2}),
        ("Fetch", {"follower": 2, "leader": 0}),
        ("RequestVote", {"candidate": 1, "voter": 0, "preVote": False}),
    ]
    [s] = model.init_states()
    states = [s]
    for name, args in steps:
        [s] = [t for a, t in model.successors(s) if a.name == name and dict(a.args) == args]
        states.append(s)
    before, after = states[-2:]
    assert model.functioning(before, 0) and not model.functioning(after, 0)
    assert not model.could_win(before, 1)  # 0 and 2 hold LeaderChange(1); 1's log is empty
    assert model.could_win(states[4], 1) and not before.hopeless  # it could win when it stood


# -- KIP-853: dynamic voters ---------------------------------------------------------------------
def test_a_voter_change_takes_effect_when_appended() -> None:
    """The leader counts its HW over the voter set it just appended: removing voter 2 from three
    makes voter 1 alone (with the leader) a majority of the new set."""
    model = KraftQuorumModel.build("kip-853")
    lc1 = Record(1, LEADER_CHANGE)
    s = _state(
        model,
        v0=dict(role=LEADER, epoch=1, leaderId=0, log=(lc1,), highWatermark=1, hwKnown=True, endOffsets=(1, 1, 0)),
        v1=dict(role=FOLLOWER, epoch=1, leaderId=0, log=(lc1,), highWatermark=1, hasFetched=True),
        v2=dict(role=FOLLOWER, epoch=1, leaderId=0, hasFetched=True),
    )
    changes = {(a.name, a.args["voter"]): t for a, t in model.successors(s) if a.name in ("AddVoter", "RemoveVoter")}
    assert set(changes) == {("RemoveVoter", 0), ("RemoveVoter", 1), ("RemoveVoter", 2)}  # no observer to add
    leader = changes[("RemoveVoter", 2)].voters[0]
    assert leader.log[-1] == VotersRecord(1, VOTERS, frozenset({(0, 0), (1, 0)}))
    assert model.voters_of(leader) == frozenset({(0, 0), (1, 0)})
    assert model.voters_of(changes[("RemoveVoter", 2)].voters[1]) == model.bootstrap  # not fetched yet
    # uncommitted: no second change until voter 1 has it (one change at a time)
    after = changes[("RemoveVoter", 2)]
    assert not [a for a, _ in model.successors(after) if a.name in ("AddVoter", "RemoveVoter")]
    unguarded = KraftQuorumModel.build("no-voter-change-guard")
    assert [a for a, _ in unguarded.successors(after) if a.name == "RemoveVoter"]


def test_a_removed_leader_leads_until_the_removal_commits_then_resigns() -> None:
    model = KraftQuorumModel.build("kip-853")
    lc1 = Record(1, LEADER_CHANGE)
    removal = VotersRecord(1, VOTERS, frozenset({(1, 0), (2, 0)}))
    s = _state(
        model,
        v0=dict(
            role=LEADER, epoch=1, leaderId=0, log=(lc1, removal), highWatermark=1, hwKnown=True, endOffsets=(2, 1, 1)
        ),
        v1=dict(role=FOLLOWER, epoch=1, leaderId=0, log=(lc1,), highWatermark=1, hasFetched=True),
        v2=dict(role=FOLLOWER, epoch=1, leaderId=0, log=(lc1,), highWatermark=1, hasFetched=True),
    )
    assert not model.is_voter(0, s.voters[0])
    names = [a.name for a, _ in model.successors(s)]
    assert "ResignRemoved" not in names and "BeginQuorumEpoch" not in names  # still leads, uncommitted
    fetched = [t for a, t in model.successors(s) if a.name == "Fetch" and a.args["follower"] == 1]
    [s] = [t for a, t in model.successors(fetched[0]) if a.name == "Fetch" and a.args["follower"] == 1]
    assert s.voters[0].highWatermark == 1  # voter 1 has the record, but the leader's own copy does not count
    s = next(t for a, t in model.successors(s) if a.name == "Fetch" and a.args["follower"] == 2)
    [s] = [t for a, t in model.successors(s) if a.name == "Fetch" and a.args["follower"] == 2]
    assert s.voters[0].highWatermark == 2  # a majority of {1, 2}: the removal is committed
    [resigned] = [t for a, t in model.successors(s) if a.name == "ResignRemoved"]
    assert resigned.voters[0].role == RESIGNED
    [left] = [t for a, t in model.successors(resigned) if a.name == "ElectionTimeout" and a.args["voter"] == 0]
    assert (left.voters[0].role, left.voters[0].epoch) == (UNATTACHED, 2)  # pollResigned: not a voter


def test_voter_changes_hold_without_faults_and_a_restart_breaks_the_unguarded_change() -> None:
    guarded = Check("kraft-quorum", preset="kip-853", overrides={"max_restarts": 0}, property_names=SAFETY).run()
    assert guarded.status is Status.HOLDS_BOUNDED
    assert guarded.stats.distinct_states == 12353
    trace = read_trace(ROOT / "counterexamples" / "kraft-quorum" / "no-voter-change-guard-LeaderCompleteness.itf.json")
    names = [s["#meta"]["action"]["name"] for s in trace["states"][1:]]
    assert names[6:9] == ["RemoveVoter", "RemoveVoter", "Restart"]  # two changes in flight, then a crash


# -- KIP-853: a lost disk and directory ids ------------------------------------------------------
@pytest.mark.parametrize(("directory_ids", "granted"), [(True, False), (False, True)])
def test_a_reformatted_voter_votes_as_the_old_one_only_without_directory_ids(
    directory_ids: bool, granted: bool
) -> None:
    model = KraftQuorumModel.build("pre-kip-853", {"directory_ids": directory_ids})
    s = _state(model, v1=dict(role=CANDIDATE, epoch=1, votedId=1, votes=frozenset({1})))
    [wiped] = [t for a, t in model.successors(s) if a.name == "LoseDisk" and a.args["voter"] == 2]
    assert wiped.voters[2].directoryId == (1 if directory_ids else 0)
    voter, ok = model.vote_response(wiped, 1, 2, pre_vote=False)
    assert ok is granted and voter.epoch == 1  # the epoch moves first either way (INVALID_VOTER_KEY after)
    assert model.is_voter(2, wiped.voters[2]) is not directory_ids


def test_a_lost_disk_is_safe_with_directory_ids() -> None:
    result = Check("kraft-quorum", preset="pre-kip-853", overrides={"directory_ids": True}, property_names=SAFETY).run()
    assert result.status is Status.HOLDS_BOUNDED
    assert result.stats.distinct_states == 12587
