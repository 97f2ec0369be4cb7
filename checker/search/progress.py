"""Progress reporting: a rich status line on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import Protocol, TextIO

from kmc.checker.errors import UserError

PROGRESS_EVERY_S = 10.0
"""Seconds between two plain progress lines, unless ``--progress-every`` says otherwise."""


class Progress(Protocol):
    def update(self, *, distinct: int, generated: int, depth: int, queue: int) -> None: ...
    def close(self) -> None: ...


class NoProgress:
    def update(self, *, distinct: int, generated: int, depth: int, queue: int) -> None:
        pass

    def close(self) -> None:
        pass


def _line(distinct: int, generated: int, depth: int, queue: int, elapsed: float) -> str:
    rate = distinct / elapsed if elapsed > 0 else 0.0
    return (
        f"{elapsed:7.1f}s  depth {depth:>4}  distinct {distinct:>12,}  generated {generated:>13,}  "
        f"queue {queue:>10,}  {rate:>10,.0f} states/s"
    )


class PlainProgress:
    """One line every ``every`` seconds, for logs and CI."""

    def __init__(self, stream: TextIO | None = None, every: float = PROGRESS_EVERY_S) -> None:
        self.stream = stream or sys.stderr
        self.every = every
        self.start = time.perf_counter()
        self.last = self.start

    def update(self, *, distinct: int, generated: int, depth: int, queue: int) -> None:
        now = time.perf_counter()
        if now - self.last >= self.every:
            self.last = now
            print(_line(distinct, generated, depth, queue, now - self.start), file=self.stream, flush=True)

    def close(self) -> None:
        pass


class RichProgress:
    """A live status line on a terminal."""

    def __init__(self, label: str) -> None:
        from rich.console import Console
        from rich.live import Live

        self.start = time.perf_counter()
        self.label = label
        self.live = Live("", console=Console(stderr=True), refresh_per_second=4, transient=True)
        self.live.start()

    def update(self, *, distinct: int, generated: int, depth: int, queue: int) -> None:
        line = _line(distinct, generated, depth, queue, time.perf_counter() - self.start)
        self.live.update(f"[bold]{self.label}[/bold] {line}")

    def close(self) -> None:
        self.live.stop()


def make_progress(label: str, enabled: bool = True, every: float = PROGRESS_EVERY_S) -> Progress:
    """A live line on a terminal; otherwise a plain line every ``every`` seconds (logs, CI, pipes)."""
    if every <= 0:
        raise UserError(f"--progress-every takes a number of seconds above 0, not {every:g}")
    if not enabled:
        return NoProgress()
    if sys.stderr.isatty():
        return RichProgress(label)
    return PlainProgress(every=every)
