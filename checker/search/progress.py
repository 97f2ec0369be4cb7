"""Progress reporting: a rich status line on a terminal, plain periodic lines otherwise.

Both show the states found per second and, when a bound on the states is known (``--max-states``),
how many are left at most and how long they take at that rate.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Protocol, TextIO

from kmc.checker.errors import UserError

PROGRESS_EVERY_S = 10.0
"""Seconds between two plain progress lines, unless ``--progress-every`` says otherwise."""

Clock = Callable[[], float]
"""Seconds from an arbitrary start (time.perf_counter); tests pass a fake one."""


class Progress(Protocol):
    def update(self, *, distinct: int, generated: int, depth: int, queue: int) -> None: ...
    def close(self) -> None: ...


class NoProgress:
    def update(self, *, distinct: int, generated: int, depth: int, queue: int) -> None:
        pass

    def close(self) -> None:
        pass


def duration(seconds: float) -> str:
    """A time left as a person reads it: seconds, then minutes and seconds, then hours and minutes."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


class Meter:
    """The text of a progress line. The rate is measured from the first update rather than from zero
    states at the start: a resumed search's first count already holds its checkpoint's states."""

    def __init__(self, total: int | None = None, clock: Clock = time.perf_counter) -> None:
        self.total = total
        self.clock = clock
        self.start = clock()
        self.first: tuple[float, int] | None = None

    def mark(self, distinct: int, now: float) -> None:
        """Note the first count: the rate is measured from it."""
        if self.first is None:
            self.first = (now, distinct)

    def rate(self, distinct: int, now: float) -> float | None:
        """States per second since the first count; None before any time has passed since it."""
        self.mark(distinct, now)
        assert self.first is not None
        since, counted = self.first
        return (distinct - counted) / (now - since) if now > since else None

    def line(self, *, distinct: int, generated: int, depth: int, queue: int, now: float) -> str:
        rate = self.rate(distinct, now)
        text = (
            f"{now - self.start:7.1f}s  depth {depth:>4}  distinct {distinct:>12,}  generated {generated:>13,}  "
            f"queue {queue:>10,}  " + (f"{rate:>10,.0f}" if rate is not None else f"{'-':>10}") + " states/s"
        )
        if self.total is None:
            return text
        left = max(self.total - distinct, 0)
        if left == 0:
            return f"{text}  max states reached"
        text += f"  at most {left:,} states left"
        return text + (f" ({duration(left / rate)} at this rate)" if rate is not None and rate > 0 else "")


class PlainProgress:
    """One line every ``every`` seconds, for logs and CI."""

    def __init__(
        self,
        stream: TextIO | None = None,
        every: float = PROGRESS_EVERY_S,
        total: int | None = None,
        clock: Clock = time.perf_counter,
    ) -> None:
        self.stream = stream or sys.stderr
        self.every = every
        self.meter = Meter(total, clock)
        self.last = self.meter.start

    def update(self, *, distinct: int, generated: int, depth: int, queue: int) -> None:
        now = self.meter.clock()
        self.meter.mark(distinct, now)
        if now - self.last >= self.every:
            self.last = now
            line = self.meter.line(distinct=distinct, generated=generated, depth=depth, queue=queue, now=now)
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        pass


class RichProgress:
    """A live status line on a terminal."""

    def __init__(self, label: str, total: int | None = None, clock: Clock = time.perf_counter) -> None:
        from rich.console import Console
        from rich.live import Live

        self.meter = Meter(total, clock)
        self.label = label
        self.live = Live("", console=Console(stderr=True), refresh_per_second=4, transient=True)
        self.live.start()

    def update(self, *, distinct: int, generated: int, depth: int, queue: int) -> None:
        now = self.meter.clock()
        line = self.meter.line(distinct=distinct, generated=generated, depth=depth, queue=queue, now=now)
        self.live.update(f"[bold]{self.label}[/bold] {line}")

    def close(self) -> None:
        self.live.stop()


def make_progress(
    label: str, enabled: bool = True, every: float = PROGRESS_EVERY_S, total: int | None = None
) -> Progress:
    """A live line on a terminal; otherwise a plain line every ``every`` seconds (logs, CI, pipes).
    ``total`` is a bound on the distinct states (``--max-states``), if there is one."""
    if every <= 0:
        raise UserError(f"--progress-every takes a number of seconds above 0, not {every:g}")
    if not enabled:
        return NoProgress()
    if sys.stderr.isatty():
        return RichProgress(label, total)
    return PlainProgress(every=every, total=total)
