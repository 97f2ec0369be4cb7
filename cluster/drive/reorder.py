"""Steps that commute, moved so that what a broker does at once is one run of steps.

A model splits into steps what one broker does in one go -- a produce and the leader's verification
of it, the markers of a transaction and the coordinator's completion -- and a trace may put steps of
other actors between them. Two adjacent steps commute when the second is enabled without the first
and taking them the other way round reaches the same state: the trace with the two swapped is
another execution of the model that ends in the same state, so it shows the same violation. A
driver names the step each step must directly follow (``glued``); ``regroup`` brings them together
by such swaps, each one checked on the model, and says what it moved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kmc.checker.model import Action, Model
from kmc.checker.traces.itf import action_to_json

Glue = Callable[[Sequence[Action | None]], "int | None"]
"""The index of the step the last of these steps must directly follow, or None when it may follow any."""


@dataclass
class Regrouped:
    """A trace in the order the broker can take it, every state a state of the model."""

    states: list[Any]
    actions: list[Action | None]
    original: list[int]
    """The step of the trace as written that each step is (0 for the initial state)."""
    moved: list[str] = field(default_factory=list)
    """What was moved, in the trace's step numbers."""


def regroup(model: Model, states: Sequence[Any], actions: Sequence[Action | None], glued: Glue) -> Regrouped:
    """The trace with every glued step directly after its step, where swaps of commuting steps
    reach that; what cannot be brought together is left as it is (the driver refuses it)."""
    trace = Regrouped(list(states), list(actions), list(range(len(states))))
    for _round in range(len(states) ** 2):
        index = _first_apart(trace, glued)
        if index is None:
            break
        anchor = glued(trace.actions[: index + 1])
        assert anchor is not None
        step, follows = trace.original[index], trace.original[anchor]
        if _pull_back(model, trace, index, anchor + 1):
            trace.moved.append(f"step {step} taken right after step {follows}")
        elif _push_forward(model, trace, anchor, index, glued):
            trace.moved.append(f"step {follows} taken right before step {step}")
        else:
            break
    return trace


def _first_apart(trace: Regrouped, glued: Glue) -> int | None:
    for index in range(2, len(trace.actions)):
        anchor = glued(trace.actions[: index + 1])
        if anchor is not None and anchor != index - 1:
            return index
    return None


def _pull_back(model: Model, trace: Regrouped, index: int, target: int) -> bool:
    """Move step ``index`` back to position ``target``; on a swap that fails, undo and say False."""
    saved = _copy(trace)
    for position in range(index - 1, target - 1, -1):
        if not _swap(model, trace, position):
            _restore(trace, saved)
            return False
    return True


def _push_forward(model: Model, trace: Regrouped, anchor: int, index: int, glued: Glue) -> bool:
    """Move step ``anchor``, with the steps glued before it, forward until it is right before ``index``."""
    saved = _copy(trace)
    start = anchor
    while start > 1 and glued(trace.actions[: start + 1]) == start - 1:
        start -= 1
    end = anchor
    while end + 1 < index:
        # the step after the block goes back across it, one swap at a time
        for position in range(end, start - 1, -1):
            if not _swap(model, trace, position):
                _restore(trace, saved)
                return False
        start, end = start + 1, end + 1
    return True


def _swap(model: Model, trace: Regrouped, position: int) -> bool:
    """Swap steps ``position`` and ``position + 1`` if they commute on the model."""
    before, after = trace.states[position - 1], trace.states[position + 1]
    first, second = trace.actions[position], trace.actions[position + 1]
    want_first, want_second = action_to_json(first), action_to_json(second)
    for taken, middle in model.successors(before):
        if action_to_json(taken) != want_second:
            continue
        for then, reached in model.successors(middle):
            if action_to_json(then) == want_first and reached == after:
                trace.actions[position], trace.actions[position + 1] = taken, then
                trace.states[position] = middle
                trace.original[position], trace.original[position + 1] = (
                    trace.original[position + 1],
                    trace.original[position],
                )
                return True
    return False


def _copy(trace: Regrouped) -> tuple[list[Any], list[Action | None], list[int]]:
    return list(trace.states), list(trace.actions), list(trace.original)


def _restore(trace: Regrouped, saved: tuple[list[Any], list[Action | None], list[int]]) -> None:
    trace.states, trace.actions, trace.original = (list(part) for part in saved)
