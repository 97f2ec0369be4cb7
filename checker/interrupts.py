"""Ctrl-C and SIGTERM end a long command the same way: a KeyboardInterrupt that the engines turn into
partial statistics. Which of the two it was decides the words ("interrupted (SIGTERM)") and the exit
code (130 for Ctrl-C, 143 for SIGTERM), as a shell reports a process ended by the signal.

An exception raised by a signal handler is lost when it lands in code that ignores exceptions (a
garbage-collector callback, as Hypothesis registers one, or a ``__del__``): Python hands it to
``sys.unraisablehook`` instead. There the interrupt is delivered again, so it reaches the command.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import Any

_received: list[str] = []
REDELIVERY_S = 0.01


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the main thread is, so every ``except KeyboardInterrupt`` handles it."""


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    _received.append("SIGTERM")
    raise Terminated()


def _deliver_again(unraisable: Any, previous: Any = sys.unraisablehook) -> None:
    """An interrupt swallowed by a callback: its signal is raised again from another thread, a moment
    later, so that the handler runs in the main thread once the callback has returned; anything else
    goes to the hook there was."""
    lost = unraisable.exc_value
    if isinstance(lost, Terminated):
        threading.Timer(REDELIVERY_S, signal.raise_signal, (signal.SIGTERM,)).start()
    elif isinstance(lost, KeyboardInterrupt) and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        threading.Timer(REDELIVERY_S, signal.raise_signal, (signal.SIGINT,)).start()
    else:
        previous(unraisable)


def install() -> None:
    """SIGTERM ends the command as Ctrl-C does (the `kmc` command's main thread only), and an interrupt
    lost in a callback is delivered again."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    if sys.unraisablehook is not _deliver_again:
        sys.unraisablehook = _deliver_again


def sigterm_received() -> bool:
    """Whether SIGTERM arrived: an exception a library raised while unwinding from it (Hypothesis can
    fail an internal assertion when interrupted mid-example) is that interrupt, not a bug."""
    return bool(_received)


def reason() -> str:
    """What stopped the run, as its summary says it."""
    return "SIGTERM" if _received else "Ctrl-C"


def exit_code() -> int:
    return 128 + signal.SIGTERM if _received else 128 + signal.SIGINT
