"""How a model is drawn: the small hook the renderer uses, so it never tests a model's name.

A model may return a :class:`Drawing` from ``Model.drawing()``. It says which lanes (brokers,
controller, consumers, coordinator) the message-sequence chart has, which lanes each action
involves, which tables describe a state (for example every replica's log with LEO, HW and
ISR), and, optionally, why a counterexample is a bug in the system's own words (which record is
lost, from which broker, after which step). Models without one are drawn with one lane and their
changed fields, and explained by the generic sentence alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kmc.checker.model import Action, State
from kmc.checker.result import Trace
from kmc.checker.traces.itf import format_action, to_itf, tuples_as_lists


@dataclass(frozen=True)
class Arrow:
    """One step in the chart: from one lane to others (the same lane for a local step)."""

    source: str
    targets: tuple[str, ...] = ()
    note: str = ""
    """A short description of the message, e.g. "LeaderAndIsr(epoch 2)"."""


@dataclass
class Table:
    """A small table drawn beside a step: a title, column headers, rows of cells."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    highlight: set[tuple[int, int]] = field(default_factory=set)
    """(row, column) cells to highlight, e.g. those that changed in this step."""


class Drawing:
    """The default drawing: one lane, no tables. Models override what they can say better."""

    def lanes(self) -> list[str]:
        return ["system"]

    def arrow(self, action: Action, before: State, after: State) -> Arrow:
        return Arrow(self.lanes()[0])

    def tables(self, state: State) -> list[Table]:
        return []

    def explain(self, violated: str, trace: Trace) -> str | None:
        """Why ``trace`` violates the property named ``violated``, in the system's own words: which
        record, acknowledged or committed at which step, is missing from which broker after which
        step. The HTML report prints it under the sentence naming the violating step, so a reader
        sees the bug, not only the changed fields. Name steps with :func:`step_text`, as the report's
        step list does. None (the default, and for a property the drawing does not know) adds nothing."""
        return None


def mark_changes(before: list[Table], after: list[Table]) -> list[Table]:
    """Highlight the cells of ``after`` that differ from the same cell of ``before``."""
    for old, new in zip(before, after, strict=False):
        for r, row in enumerate(new.rows):
            for c, cell in enumerate(row):
                if r >= len(old.rows) or c >= len(old.rows[r]) or old.rows[r][c] != cell:
                    new.highlight.add((r, c))
    return after


def action_text(action: Action | None) -> str:
    """An action as the report lists it: ``BecomeFollower(replica=1, leader=0, leaderEpoch=2)``,
    sequences in its arguments as lists; ``Init`` for the initial state."""
    if action is None:
        return "Init"
    return format_action({"name": action.name, "args": {k: tuples_as_lists(to_itf(v)) for k, v in action[1]}})


def step_text(trace: Trace, k: int) -> str:
    """How an explanation names a step: "step 8, LeaderIncHighWatermark(leader=0)"."""
    if k == 0:
        return "the initial state"
    return f"step {k}, {action_text(trace.actions[k])}"


def describe(value: Any) -> str:
    if isinstance(value, frozenset | set):
        return "{" + ", ".join(str(v) for v in sorted(value)) + "}"
    return str(value)
