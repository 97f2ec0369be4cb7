"""The progress line: its rate, and what is left under a bound, against a fake clock."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from kmc.checker.search import progress as progress_module
from kmc.checker.search.progress import Meter, PlainProgress, Progress, duration, make_progress


def clock(*times: float) -> Iterator[float]:
    """A clock that reads ``times`` in turn: the first is the start."""
    return iter(times)


def plain(*times: float, total: int | None = None, every: float = 10.0) -> tuple[PlainProgress, io.StringIO]:
    stream = io.StringIO()
    ticks = clock(*times)
    return PlainProgress(stream, every=every, total=total, clock=lambda: next(ticks)), stream


def test_a_line_with_a_bound_shows_the_rate_and_what_is_left() -> None:
    bar, out = plain(0.0, 0.5, 12.5, total=1_000_000)
    bar.update(distinct=4_000, generated=9_000, depth=3, queue=1_500)  # the first count: no line yet
    bar.update(distinct=100_000, generated=250_000, depth=9, queue=20_000)
    assert out.getvalue() == (
        "   12.5s  depth    9  distinct      100,000  generated       250,000  queue     20,000       "
        "8,000 states/s  at most 900,000 states left (1m 52s at this rate)\n"
    )


def test_a_line_without_a_bound_shows_the_rate_alone() -> None:
    bar, out = plain(0.0, 1.0, 11.0)
    bar.update(distinct=1_000, generated=2_000, depth=2, queue=10)
    bar.update(distinct=51_000, generated=99_000, depth=7, queue=300)
    assert out.getvalue() == (
        "   11.0s  depth    7  distinct       51,000  generated        99,000  queue        300       5,000 states/s\n"
    )


def test_the_rate_counts_from_the_first_update_not_from_zero() -> None:
    """A resumed search's first count holds its checkpoint's 600,000 states, found by an earlier run."""
    bar, out = plain(0.0, 0.2, 20.2, total=700_000)
    bar.update(distinct=600_000, generated=1_500_000, depth=14, queue=50_000)
    bar.update(distinct=640_000, generated=1_600_000, depth=14, queue=30_000)
    assert out.getvalue() == (
        "   20.2s  depth   14  distinct      640,000  generated     1,600,000  queue     30,000       "
        "2,000 states/s  at most 60,000 states left (30s at this rate)\n"
    )


def test_the_first_update_has_no_rate_yet() -> None:
    bar, out = plain(0.0, 10.0, total=50)
    bar.update(distinct=20, generated=30, depth=4, queue=5)
    assert out.getvalue() == (
        "   10.0s  depth    4  distinct           20  generated            30  queue          5           "
        "- states/s  at most 30 states left\n"
    )


def test_a_search_at_its_bound_says_so() -> None:
    bar, out = plain(0.0, 1.0, 11.0, total=5_000)
    bar.update(distinct=100, generated=150, depth=2, queue=40)
    bar.update(distinct=5_000, generated=9_000, depth=6, queue=0)
    assert out.getvalue() == (
        "   11.0s  depth    6  distinct        5,000  generated         9,000  queue          0         "
        "490 states/s  max states reached\n"
    )


def test_a_line_every_so_many_seconds() -> None:
    bar, out = plain(0.0, 1.0, 2.0, 3.5, 4.0, 6.0, every=2.0)
    for distinct in (10, 20, 30, 40, 50):
        bar.update(distinct=distinct, generated=distinct, depth=1, queue=0)
    assert [line.split()[0] for line in out.getvalue().splitlines()] == ["2.0s", "4.0s", "6.0s"]


def test_no_states_found_shows_no_time_left() -> None:
    """bmc counts depths, not states: a rate of 0 gives no estimate rather than a division by zero."""
    meter = Meter(total=10, clock=lambda: 0.0)
    meter.mark(0, 1.0)
    assert meter.line(distinct=0, generated=0, depth=3, queue=0, now=5.0).endswith(
        "         0 states/s  at most 10 states left"
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.4, "0s"),
        (59.4, "59s"),
        (60.0, "1m 00s"),
        (112.5, "1m 52s"),
        (3599.4, "59m 59s"),
        (3600, "1h 00m"),
        (90_000, "25h 00m"),
    ],
)
def test_duration(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_kmc_check_bounds_the_progress_by_max_states(
    kmc, toy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[int | None] = []

    def recording(label: str, enabled: bool = True, every: float = 10.0, total: int | None = None) -> Progress:
        made.append(total)
        return make_progress(label, enabled, every, total)

    monkeypatch.setattr("kmc.checker.cli.check.make_progress", recording)
    for bound in (["--max-states", "5"], []):
        assert kmc("check", f"{toy}:CounterGrid", *bound, "--out", tmp_path, "--no-trace")[0] == 0
    assert made == [5, None]


def test_make_progress_off_a_terminal_is_plain_and_bounded() -> None:
    bar = make_progress("kmc bfs", every=3.0, total=77)
    assert isinstance(bar, progress_module.PlainProgress)
    assert (bar.every, bar.meter.total) == (3.0, 77)
