"""The history checkers on histories written by hand, each finding the operations it names, and
the fault schedules: reproducible from their seed, bounded as the guarantees assume."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from kmc.checker.errors import UserError
from kmc.cluster.checkers import FINAL_COMMITTED, FINAL_LOG, check_history, exercised
from kmc.cluster.history import History, read_history
from kmc.cluster.schedule import UNDO, Bounds, explicit, generate

ALL = ["AcknowledgedWriteNeverLost", "OffsetsStable", "NoDuplicates", "PerProducerOrder", "AtomicVisibility"]


def history(tmp_path: Path) -> History:
    return History(tmp_path / "history.jsonl")


def send(h: History, process: int, value: int, outcome: str, offset: int | None = None) -> None:
    h.record(process, "invoke", "send", [["send", "t-0", value]])
    done = [offset, value] if outcome == "ok" else value
    h.record(process, outcome, "send", [["send", "t-0", done]], error=None if outcome == "ok" else "timed out")


def final(h: History, reader: str, records: list[list[int]]) -> None:
    h.record(reader, "invoke", "poll", [["poll"]])
    h.record(reader, "ok", "poll", [["poll", {"t-0": records}]])


def test_an_acknowledged_write_missing_at_the_end_is_lost(tmp_path: Path) -> None:
    h = history(tmp_path)
    send(h, 0, 10, "ok", 0)
    send(h, 0, 11, "ok", 1)
    send(h, 1, 20, "info")  # unknown outcome: its absence is no finding
    final(h, FINAL_LOG, [[0, 10, 0]])
    [finding] = check_history(h.events, ["AcknowledgedWriteNeverLost"])
    assert finding.check == "AcknowledgedWriteNeverLost"
    assert finding.message == "value 11, acknowledged, is not in the log at the end"
    assert finding.operations == (2, 3, 7)
    assert exercised(h.events, ["AcknowledgedWriteNeverLost"]) == {"AcknowledgedWriteNeverLost": 2}


def test_duplicates_reordering_and_moved_offsets(tmp_path: Path) -> None:
    h = history(tmp_path)
    for value in (1, 2, 3):
        send(h, 0, value, "ok")
    h.record(5, "invoke", "poll", [["poll"]])
    h.record(5, "ok", "poll", [["poll", {"t-0": [[0, 1, 0], [1, 3, 0]]}]])
    final(h, FINAL_LOG, [[0, 1, 0], [1, 3, 0], [2, 2, 1], [3, 3, 0]])
    found = {(f.check, f.message) for f in check_history(h.events, ALL)}
    # Value 3 read at both of its copies is the duplicate, reported once, not also a moved offset.
    assert found == {
        ("NoDuplicates", "value 3 is in t-0 at offsets [1, 3]"),
        ("LeaderEpochsMonotonic", "t-0: offset 3 has leader epoch 0 after offset 2's 1"),
    }


def test_a_duplicated_value_read_where_neither_copy_is(tmp_path: Path) -> None:
    h = history(tmp_path)
    for value in (1, 3):
        send(h, 0, value, "ok")
    h.record(5, "invoke", "poll", [["poll"]])
    h.record(5, "ok", "poll", [["poll", {"t-0": [[0, 1, 0], [1, 3, 0]]}]])
    h.record(5, "invoke", "poll", [["poll"]])
    h.record(5, "ok", "poll", [["poll", {"t-0": [[1, 1, 1], [2, 3, 1]]}]])
    final(h, FINAL_LOG, [[0, 1, 0], [2, 3, 1], [3, 3, 1]])
    found = sorted(f.message for f in check_history(h.events, ["OffsetsStable", "NoDuplicates"]))
    assert found == [
        "value 1 was read at t-0:0 and at t-0:1",
        "value 3 is in t-0 at offsets [2, 3]",
        "value 3 was read at t-0:1, and the log holds it at t-0:2, t-0:3",
    ]


def test_an_idempotent_producer_s_order_broken_in_the_log(tmp_path: Path) -> None:
    h = history(tmp_path)
    for value in (1, 2, 3):
        send(h, 0, value, "ok")
    final(h, FINAL_LOG, [[0, 2, 0], [1, 1, 0], [2, 3, 0]])
    [finding] = check_history(h.events, ["PerProducerOrder"])
    assert finding.message == "producer 0 sent 1 before 2, but t-0 holds 2 at 0 before 1 at 1"
    assert finding.operations == (0, 2)


def test_transactions_torn_or_aborted_and_read(tmp_path: Path) -> None:
    h = history(tmp_path)
    sends = [["send", "t-0", 7], ["send", "t-0", 8]]
    h.record(0, "invoke", "txn", sends)
    h.record(0, "ok", "txn", sends)
    aborted = [["send", "t-0", 9]]
    h.record(0, "invoke", "txn", aborted)
    h.record(0, "fail", "txn", aborted, error="aborted on purpose")
    final(h, FINAL_LOG, [[0, 7, 0], [1, 8, 0], [2, 9, 0]])
    final(h, FINAL_COMMITTED, [[0, 7, 0], [2, 9, 0]])
    found = {(f.check, f.message) for f in check_history(h.events, ["AtomicVisibility", "AbortedNeverVisible"])}
    assert found == {
        ("AtomicVisibility", "transaction 0 is partly visible: [8] missing"),
        ("AbortedNeverVisible", "value 9 of an aborted transaction was read by a read_committed reader"),
    }


def test_a_check_with_nothing_to_look_at_is_not_exercised(tmp_path: Path) -> None:
    """No final read reached the end: nothing can be lost, and nothing was checked."""
    h = history(tmp_path)
    send(h, 0, 1, "ok", 0)
    assert check_history(h.events, ALL) == []
    assert exercised(h.events, ALL) == {
        "AcknowledgedWriteNeverLost": 0,
        "OffsetsStable": 0,
        "NoDuplicates": 0,
        "PerProducerOrder": 0,
        "AtomicVisibility": 0,
    }


def test_a_history_reads_back_as_written(tmp_path: Path) -> None:
    h = history(tmp_path)
    send(h, 0, 1, "ok", 0)
    h.fault("crash", [2])
    h.close()

    def fields(events: list) -> list:
        return [(e.index, round(e.time, 6), e.process, e.type, e.f, e.value, e.error) for e in events]

    assert fields(read_history(tmp_path / "history.jsonl")) == fields(h.events)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("not json\n", "history.jsonl:1: not a history: the line is not JSON"),
        ('{"type": "ok"}\n', "history.jsonl:1: not a history event (it needs type in invoke, ok, fail, info and f)"),
        ('{"type": "ok", "f": "send", "time": "x", "process": 0}\n', "needs a numeric time and a process"),
    ],
)
def test_a_file_that_is_not_a_history_is_one_error(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text(text)
    with pytest.raises(UserError, match=error.replace("(", r"\(").replace(")", r"\)")):
        read_history(path)


def test_a_seed_gives_one_schedule_with_one_fault_at_a_time() -> None:
    bounds = Bounds(kinds=("crash", "pause", "partition", "crash-leader"))
    schedule = generate(7, 60.0, 3, bounds)
    assert schedule == generate(7, 60.0, 3, bounds)
    assert schedule != generate(8, 60.0, 3, bounds)
    steps = schedule.steps
    assert len(steps) >= 8 and len(steps) % 2 == 0
    for fault, undo in zip(steps[::2], steps[1::2], strict=True):
        assert undo.action == UNDO[fault.action] and undo.node == fault.node
        assert bounds.fault_s[0] <= undo.at_s - fault.at_s <= bounds.fault_s[1]
    assert all(a.at_s < b.at_s for a, b in itertools.pairwise(steps))  # undone before the next
    assert steps[-1].at_s + bounds.gap_s[0] <= 60.0
    assert {s.node for s in steps if s.action == "crash-leader"} <= {None}  # found when it happens


@pytest.mark.parametrize(
    ("steps", "error"),
    [
        ([{"at_s": 1, "action": "explode", "node": 1}], "unknown action 'explode'"),
        ([{"at_s": 99, "action": "crash", "node": 1}], "at_s must be a time within the campaign's 30 s"),
        ([{"at_s": 1, "action": "crash", "node": 4}], "node must be one of 1..3"),
        ([{"at_s": 1, "action": "crash"}], "crash needs a node"),
        ([{"at_s": 5, "action": "heal"}, {"at_s": 1, "action": "partition-leader"}], "in time order"),
        ([{"at": 1}], "give at_s, action and optionally node"),
    ],
)
def test_a_written_schedule_is_checked(steps: list, error: str) -> None:
    with pytest.raises(UserError, match=error):
        explicit(steps, 30.0, 3, Bounds())


def test_bounds_outside_the_guarantees_are_refused() -> None:
    with pytest.raises(UserError, match="one node faulty at a time"):
        generate(1, 60.0, 3, Bounds(max_faulty=2))
    with pytest.raises(UserError, match="unknown fault meteor"):
        generate(1, 60.0, 3, Bounds(kinds=("meteor",)))
