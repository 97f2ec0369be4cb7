"""Oracles for the toy models: a reference that says every step adds exactly one to a counter."""

from __future__ import annotations

from collections.abc import Iterator

from kmc.checker import Action
from kmc.checker.conformance.oracle import Comparison, InputOracle, Oracle
from toy_models import CounterGrid, Grid


class IncrementOracle(Oracle):
    """The reference implementation of CounterGrid's steps: IncX adds one to x, IncY one to y."""

    name = "increment"
    model_name = "counter-grid"
    reference = ("reference.Increment",)
    description = "each Inc step adds exactly one to its counter"

    def compare_step(self, state: Grid, action: Action, next_state: Grid) -> Iterator[Comparison]:
        field = {"IncX": "x", "IncY": "y"}[action.name]
        expected = getattr(state, field) + 1
        yield Comparison(question=f"{field} after {action.name}", ours=getattr(next_state, field), theirs=expected)


class BoundOracle(Oracle):
    """A state-level question: the reference says neither counter passes n."""

    name = "bound"
    model_name = "counter-grid"
    reference = ("reference.Bound",)

    def compare_state(self, state: Grid) -> Iterator[Comparison]:
        yield Comparison(question="within n", ours=max(state) <= self.model.config.n, theirs=True)


class SilentOracle(Oracle):
    """Decides no step at all (a conformance run with it must not pass)."""

    name = "silent"
    model_name = "counter-grid"


class SkippingGrid(CounterGrid):
    """A broken CounterGrid: from x == 2 IncX jumps by two."""

    name = "skipping-grid"

    def successors(self, s: Grid):  # type: ignore[override]
        for action, t in super().successors(s):
            if action.name == "IncX" and s.x == 2:
                t = Grid(s.x + 2, s.y)
            yield action, t


class SquareOracle(InputOracle):
    """A table: ours computes n*n by addition; the reference multiplies (``--set broken=true`` breaks ours)."""

    name = "square"
    reference = ("reference.Square",)

    def cases(self) -> Iterator[tuple[str, int]]:
        for n in range(int(self.settings.get("upto", "50"))):
            yield ("even" if n % 2 == 0 else "odd"), n

    def compare(self, case: int) -> Iterator[Comparison]:
        ours = sum(case for _ in range(case))
        if self.settings.get("broken") == "true" and case == 7:
            ours += 1
        yield Comparison(question="n*n", ours=ours, theirs=case * case, inputs={"n": case})
