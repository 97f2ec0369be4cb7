"""The share-group model (KIP-932): the fixed protocol holds with exact state counts, each race of
KAFKA-18084 and KAFKA-19476 is a shortest counterexample, and each fix, alone, removes its race on
the very steps that showed it."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import Check
from kmc.checker.result import Status
from kmc.checker.testing import retake
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.share_group.model import ShareGroupModel
from kmc.models.share_group.state import ACQUIRED, ARCHIVED, AVAILABLE, ShareGroupState
from suite_entries import searched_by_suite

TRACES = Path(__file__).resolve().parent.parent / "counterexamples" / "share-group"


@pytest.mark.parametrize(
    ("preset", "overrides", "states"),
    [
        ("kafka-4.2", {}, 454),
        ("kafka-4.2-log-start", {}, 1049),
        ("kafka-4.2", {"max_write_failures": 0}, 218),
        ("kafka-4.2", {"consumers": 3}, 916),
    ],
)
def test_the_fixed_protocol_holds(preset: str, overrides: dict, states: int) -> None:
    result = Check("share-group", preset=preset, overrides=overrides).run()
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == states
    taken = {name for name, (_distinct, generated) in result.coverage["actions"].items() if generated}
    assert taken == set(ShareGroupModel.actions) - set(result.coverage["inactive"])


def _replayed_with(trace: str, **flags: bool) -> list[ShareGroupState]:
    """The trace's actions taken again by the model with ``flags`` changed: the fixed model follows
    the same steps as far as they stay enabled."""
    return retake(TRACES / trace, **flags)


def test_the_log_start_race_gives_back_an_archived_record_and_its_fix_keeps_it_archived() -> None:
    trace = "pre-kafka-19476-terminal-FinishedStaysFinished.itf.json"
    before = _replayed_with(trace)
    fixed = _replayed_with(trace, kafka_19476_terminal=True)
    # RELEASE in flight, the log start moves past the record, the write fails
    assert (before[3].records[0].state, before[4].records[0].state) == (ARCHIVED, ACQUIRED)
    assert (fixed[3].records[0].state, fixed[4].records[0].state) == (ARCHIVED, ARCHIVED)


def test_the_expired_lock_race_leaves_a_record_acquired_with_no_lock_and_its_fix_releases_it() -> None:
    trace = "pre-kafka-19476-expired-lock-AcquiredRecordHasLock.itf.json"
    before = _replayed_with(trace)[-1]
    fixed = _replayed_with(trace, kafka_19476_expired_lock=True)[-1]
    record = before.records[0]
    assert (record.state, record.memberId) == (ACQUIRED, "m0")
    assert before.timers[record.timer].handled  # the lock that should release it has already run
    assert (fixed.records[0].state, fixed.records[0].memberId) == (AVAILABLE, "")


def test_the_cancelled_lock_race_releases_the_next_consumer_and_its_fix_does_not() -> None:
    trace = "pre-kafka-19476-cancelled-lock-NoRecordUnderTwoLocks.itf.json"
    done = replay(read_trace(TRACES / trace))
    handler = done.trace.actions[6]
    assert handler is not None and handler.name == "AcquisitionLockTimeout"
    assert done.trace.states[5].timers[handler.args["timer"]].cancelled  # cancelled before its handler ran
    with pytest.raises(AssertionError, match="is not enabled"):
        # with the fix the handler returns: consumer 0 keeps the record, so consumer 1 cannot fetch it
        _replayed_with(trace, kafka_19476_cancelled_lock=True)


def test_kafka_18084_re_acquisition_during_a_write_is_refused_by_its_fix() -> None:
    trace = "pre-kafka-18084-AcquiredRecordHasLock.itf.json"
    before = _replayed_with(trace)
    assert before[3].records[0].rollback is not None  # acquired while its release was being written
    with pytest.raises(AssertionError, match="ShareFetch"):
        _replayed_with(trace, kafka_18084=True)


def test_the_drawing_has_a_lane_per_consumer_and_for_each_of_the_leader_s_actors() -> None:
    model = ShareGroupModel.build("kafka-4.2")
    done = replay(read_trace(TRACES / "pre-kafka-18084-AcquiredRecordHasLock.itf.json"))
    drawing = model.drawing()
    assert drawing.lanes() == ["consumer 0", "consumer 1", "share-partition leader", "lock timer", "share coordinator"]
    arrow = drawing.arrow(done.trace.actions[4], done.trace.states[3], done.trace.states[4])
    assert (arrow.source, arrow.targets, arrow.note) == (
        "share coordinator",
        ("share-partition leader",),
        "write (acknowledge): NONE",
    )
    assert drawing.tables(done.trace.states[4])[0].title.startswith("share partition (SPSO 0")


def test_a_record_left_available_below_the_start_offset_holds_every_later_fetch() -> None:
    """kafka-4.2-stale-available: record 0's acceptance is written while its lock runs out and the log
    start passes it; the write fails and the rollback makes it AVAILABLE below the SPSO. The next
    fetch offset is the first available record of the cache -- record 0, gone from the log -- so
    record 1, released, is never fetched again."""
    done = replay(read_trace(TRACES / "kafka-4.2-stale-available-EveryRecordFinished.itf.json"))
    last = done.trace.states[-1]
    assert [r.state for r in last.records] == [AVAILABLE, AVAILABLE]
    assert (last.startOffset, last.logStartOffset) == (1, 1)
    model = ShareGroupModel(ShareGroupModel.make_config("kafka-4.2-stale-available", {}))
    assert model.next_fetch_offset(last) == 0
    assert not [a for a, _t in model.successors(last) if a.name == "ShareFetch"]


def test_an_acceptance_written_after_the_log_start_passed_the_cache_moves_the_start_offset_back() -> None:
    done = replay(read_trace(TRACES / "kafka-4.2-start-offset-back-StartOffsetNeverMovesBack.itf.json"))
    before, after = done.trace.states[-2:]
    assert (before.startOffset, after.startOffset) == (2, 1)  # maybeUpdateCachedStateAndOffsets: last cached + 1
    assert done.trace.actions[-1].name == "WriteShareGroupStateResponse"
    # the next fetch, at offset 1, is out of range: the leader learns the log start and moves forward
    model = ShareGroupModel(ShareGroupModel.make_config("kafka-4.2-start-offset-back", {}))
    healed = [t for a, t in model.successors(after) if a.name == "ShareFetch"]
    assert healed and all(t.startOffset == 2 for t in healed)


@pytest.mark.parametrize("preset", sorted(ShareGroupModel.presets))
def test_presets_verdicts_are_what_kmc_list_says(preset: str) -> None:
    expected = ShareGroupModel.presets[preset].expected
    if searched_by_suite("share-group", preset, expected):
        return
    result = Check("share-group", preset=preset, settings={"keep_going": True}).run()
    assert result.complete
    violated = {v.property for v in result.violations}
    assert violated == {name for name, verdict in expected.items() if verdict == "violated"}


def test_a_new_leader_loads_the_last_written_delivery_count_not_the_acquisitions() -> None:
    """The crash's trace: released once (written: delivery 1), acquired again (delivery 2, not written),
    the leader crashes, and the new leader hands the record out a third time at delivery 2."""
    done = replay(read_trace(TRACES / "kafka-4.2-leader-change-DeliveriesWithinTheLimit.itf.json"))
    states, actions = done.trace.states, done.trace.actions
    change = next(i for i, a in enumerate(actions) if a is not None and a.name == "LeaderChange")
    before, after = states[change - 1], states[change]
    assert (before.records[0].state, before.records[0].deliveryCount, before.persisted[0]) == (
        ACQUIRED,
        2,
        (AVAILABLE, 1),
    )
    assert (after.records[0].state, after.records[0].deliveryCount, after.timers) == (AVAILABLE, 1, ())
    assert states[-1].deliveries[0] == 3 and states[-1].records[0].deliveryCount == 2


def test_kafka_19972_a_session_release_takes_a_delivery_back_and_its_fix_archives_at_the_limit() -> None:
    trace = "pre-kafka-19972-DeliveriesWithinTheLimit.itf.json"
    before = _replayed_with(trace)
    release = next(i for i, _ in enumerate(before) if i and before[i].sessionReleases > before[i - 1].sessionReleases)
    model = ShareGroupModel(ShareGroupModel.make_config("pre-kafka-19972", {"kafka_19972": True}))
    [(_, fixed)] = [(a, t) for a, t in model.successors(before[release - 1]) if a.name == "ShareSessionRelease"]
    assert (before[release].records[0].state, before[release].records[0].deliveryCount) == (AVAILABLE, 1)
    assert (fixed.records[0].state, fixed.records[0].deliveryCount) == (ARCHIVED, 2)
