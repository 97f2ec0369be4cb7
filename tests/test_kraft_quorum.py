"""The KRaft quorum model: exact state counts, each bug before its fix, the rules underneath."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import BfsOptions, Check, bfs
from kmc.checker.itf import read_trace
from kmc.checker.properties import select_properties
from kmc.checker.replay import replay
from kmc.checker.result import Status
from kmc.models.kraft_quorum import (
    DATA,
    FOLLOWER,
    LEADER,
    LEADER_CHANGE,
    PROSPECTIVE,
    UNATTACHED,
    KraftQuorumModel,
    QuorumState,
    Record,
    end_offset_for_epoch,
)

ROOT = Path(__file__).resolve().parent.parent
TRACES = sorted((ROOT / "counterexamples" / "kraft-quorum").glob("*.itf.json"))
SAFETY = ["ElectionSafety", "LogMatching", "LeaderCompleteness", "Durability", "ReadCommitted",
          "HighWatermarkMonotonic"]  # fmt: skip


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
    assert len(TRACES) == 4
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
@pytest.mark.parametrize("preset", sorted(set(KraftQuorumModel.presets) - {"kip-996"}))  # kip-996: the CI suite
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
