"""How a model is drawn: the small hook the renderer uses, so it never tests a model's name.

A model may return a :class:`Drawing` from ``Model.drawing()``. It says which lanes (brokers,
controller, consumers, coordinator) the message-sequence chart has, which lanes each action
involves, and which tables describe a state (for example every replica's log with LEO, HW and
ISR). Models without one are drawn with one lane and their changed fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kmc.checker.model import Action, State


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


def mark_changes(before: list[Table], after: list[Table]) -> list[Table]:
    """Highlight the cells of ``after`` that differ from the same cell of ``before``."""
    for old, new in zip(before, after, strict=False):
        for r, row in enumerate(new.rows):
            for c, cell in enumerate(row):
                if r >= len(old.rows) or c >= len(old.rows[r]) or old.rows[r][c] != cell:
                    new.highlight.add((r, c))
    return after


def describe(value: Any) -> str:
    if isinstance(value, frozenset | set):
        return "{" + ", ".join(str(v) for v in sorted(value)) + "}"
    return str(value)
