"""The exit codes of every `kmc` command: the verdict, never a guess.

0 holds (or every CI entry as expected), 1 violated (or a CI entry differs, a trace no longer shows
its bug), 2 bad input or error, 3 holds but the run was bounded and --require-complete was given,
130 interrupted by Ctrl-C, 143 ended by SIGTERM (kmc.checker.interrupts).
"""

from __future__ import annotations

from kmc.checker.result import CheckResult

EXIT_HOLDS, EXIT_VIOLATED, EXIT_BAD_INPUT, EXIT_INCOMPLETE = 0, 1, 2, 3


class InterruptedCheckError(Exception):
    """Ctrl-C during a check: the partial result (if the engine kept one) is printed, exit 130."""

    def __init__(self, result: CheckResult | None) -> None:
        super().__init__("interrupted")
        self.result = result
