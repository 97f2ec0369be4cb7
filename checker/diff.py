"""What one configuration of a model allows and another forbids: the shortest behaviour that tells
them apart, as a step difference (a state both reach, and a step one takes there that the other's
successors do not produce) and as a verdict difference (a property that holds in one and not the
other, with its shortest counterexample). `kmc diff` prints both; a KIP's author reads in it what
the change forbids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kmc.checker.engines.api import EngineTask
from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model, State, setting_text
from kmc.checker.properties import Property, PropertySet
from kmc.checker.registry import load_model_class, model_reference
from kmc.checker.result import CheckResult, Trace
from kmc.checker.runner import Check
from kmc.checker.search.progress import Progress


@dataclass(frozen=True)
class Side:
    """One of the two configurations: a preset and settings of one model."""

    model_name: str
    preset: str | None
    overrides: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        preset = f"--preset {self.preset}" if self.preset else "(default preset)"
        return " ".join([preset, *(f"--set {k}={setting_text(v)}" for k, v in self.overrides.items())])

    def build(self) -> Model:
        return load_model_class(self.model_name).build(self.preset, self.overrides)


@dataclass
class StepDifference:
    """A step that ``taken_by`` takes from a state both configurations reach and that ``other``'s
    successors do not produce; ``trace`` is ``taken_by``'s shortest path to it, that step last.
    None as ``trace``: no such step among the states searched (``complete``: among all of them)."""

    taken_by: Side
    other: Side
    trace: Trace | None
    other_steps: list[tuple[Action, State]]
    """The other configuration's steps from the trace's last state but one."""
    distinct_states: int
    complete: bool
    skipped: int = 0
    """States outside the other configuration's own bounds: not compared (a bound is not a rule)."""


@dataclass
class VerdictDifference:
    property: str
    results: tuple[CheckResult, CheckResult]

    def verdict(self, side: int) -> str:
        result = self.results[side]
        violation = next((v for v in result.violations if v.property == self.property), None)
        if violation is not None:
            return f"violated ({len(violation.trace)} states)"
        return "holds" if result.complete else "holds within bounds"


def same_shape(a: Model, b: Model) -> str | None:
    """Why the two configurations' states cannot be compared one for one (None: they can): a step
    difference needs the same initial states, so that every state one reaches the other can step from."""
    inits_a, inits_b = list(a.init_states()), list(b.init_states())
    if set(inits_a) != set(inits_b):
        keys = [k for k, v in a.config_dict().items() if b.config_dict().get(k) != v]
        return (
            "their initial states differ (the configurations differ in " + ", ".join(keys) + "), so no state of one "
            "is a state of the other: only the verdicts are compared"
        )
    return None


def step_difference(taken_by: Side, other: Side, max_states: int, progress: Progress | None = None) -> StepDifference:
    """Breadth-first over ``taken_by``'s states (so the trace is shortest), each step checked against
    the other configuration's successors of the same state: the search's engine, with that check
    as its one step property."""
    model, other_model = taken_by.build(), other.build()
    engine, bounds, options = Check(model_name=taken_by.model_name, settings={"max_states": max_states}).plan()
    cache: dict[State, frozenset[State]] = {}
    skipped: set[State] = set()

    def other_makes_it(state: State, _action: Action, next_state: State) -> bool:
        if state in skipped:
            return True
        steps = cache.get(state)
        if steps is None:
            if not other_model.within_bounds(state):
                skipped.add(state)
                return True
            if len(cache) > 4096:  # the search asks about one state's successors at a time
                cache.clear()
            steps = cache[state] = frozenset(t for _a, t in other_model.successors(state))
        return next_state in steps

    name = "StepOfTheOtherConfig"
    prop = Property(name=name, kind="step", fn=other_makes_it, doc=f"a step {other.label} also takes")
    task = EngineTask(
        model=model,
        props=PropertySet.of([prop]),
        bounds=bounds,
        options=options,
        progress=progress,
        preset=taken_by.preset,
        model_ref=model_reference(taken_by.model_name),
    )
    result = engine().run(task)
    violation = next(iter(result.violations), None)
    trace = violation.trace if violation is not None else None
    other_steps = list(other_model.successors(trace.states[-2])) if trace is not None else []
    return StepDifference(
        taken_by=taken_by,
        other=other,
        trace=trace,
        other_steps=other_steps,
        distinct_states=result.stats.distinct_states,
        complete=result.complete and violation is None,
        skipped=len(skipped),
    )


def verdict_differences(
    a: Side, b: Side, properties: Sequence[str], max_states: int
) -> tuple[list[VerdictDifference], tuple[CheckResult, CheckResult]]:
    """Each property whose verdict is not the same in both (violated in one only, or violated in both
    by counterexamples of different lengths), from one search of each configuration that goes on
    past its first violation."""
    results = tuple(
        Check(
            model_name=side.model_name,
            preset=side.preset,
            overrides=side.overrides,
            property_names=properties,
            settings={"keep_going": True, "max_states": max_states},
        ).run()
        for side in (a, b)
    )
    pair = (results[0], results[1])
    names = list(dict.fromkeys([*pair[0].properties, *pair[1].properties]))
    rows = [VerdictDifference(p, pair) for p in names]
    return [row for row in rows if row.verdict(0) != row.verdict(1)], pair


def sides(
    model: str, presets: Sequence[str], common: Mapping[str, Any], set_a: Mapping[str, Any], set_b: Mapping[str, Any]
) -> tuple[Side, Side]:
    """The two configurations from the command line: two presets, or one (or the default) with two
    groups of settings; the same twice is an error."""
    if len(presets) > 2:
        raise UserError("kmc diff compares two configurations: give --preset at most twice")
    if len(presets) < 2 and not set_a and not set_b:
        given = f"one --preset ({presets[0]})" if presets else "no --preset"
        raise UserError(
            f"kmc diff compares two configurations, and {given} names one: give a second --preset, "
            "or settings for one side (--set-a k=v or --set-b k=v)"
        )
    first = presets[0] if presets else None
    second = presets[1] if len(presets) == 2 else first
    a = Side(model, first, {**common, **set_a})
    b = Side(model, second, {**common, **set_b})
    a.build(), b.build()  # every name and value checked before any search
    if a.build().config == b.build().config:
        raise UserError(
            f"{a.label} and {b.label} are the same configuration of {model}: give two presets "
            "(--preset A --preset B) or settings for each side (--set-a k=v, --set-b k=v)"
        )
    return a, b
