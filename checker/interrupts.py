"""Ctrl-C and SIGTERM end a long command the same way: a KeyboardInterrupt that the engines turn into
partial statistics. Which of the two it was decides the words ("interrupted (SIGTERM)") and the exit
code (130 for Ctrl-C, 143 for SIGTERM), as a shell reports a process ended by the signal."""

from __future__ import annotations

import signal
from types import FrameType

_received: list[str] = []


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the main thread is, so every ``except KeyboardInterrupt`` handles it."""


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    _received.append("SIGTERM")
    raise Terminated()


def install() -> None:
    """SIGTERM ends the command as Ctrl-C does (the `kmc` command's main thread only)."""
    signal.signal(signal.SIGTERM, _on_sigterm)


def reason() -> str:
    """What stopped the run, as its summary says it."""
    return "SIGTERM" if _received else "Ctrl-C"


def exit_code() -> int:
    return 128 + signal.SIGTERM if _received else 128 + signal.SIGINT
