"""The Hypothesis engine: any model as a RuleBasedStateMachine, checked at random and shrunk.

For state spaces too big to exhaust: Hypothesis chooses an initial state and then, at each step,
one of the current state's successors; the invariants are checked after every step and the step
properties on every transition. A failure is shrunk to a minimal sequence of choices and written
as the same ITF trace as every other engine, so it replays and renders.

No per-model code: the machine has one ``@initialize`` rule (pick an initial state), one
``@rule`` per action family found by a short exploration (pick one of the current state's
successors of that family), and one ``@invariant`` (all the model's invariants).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, InMemoryExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from .bfs import DEADLOCK, bounds_check, expand, peak_rss
from .errors import UserError
from .fingerprint import fingerprint
from .model import Action, Model, State
from .properties import PropertySet, holds
from .result import CheckResult, Stats, Trace, Violation
from .simulation import sampling_result


@dataclass(frozen=True)
class HypothesisOptions:
    seed: int | None = None
    examples: int = 200
    """How many runs (sequences of steps) Hypothesis tries before it gives up."""
    steps: int = 60
    """The most steps in one run."""
    database: str | None = None
    """A directory to keep failing examples in, so the next run tries them first; None: in memory."""
    deadlock: bool = False


class PropertyViolationError(AssertionError):
    def __init__(self, name: str, kind: str) -> None:
        super().__init__(f"{name} violated")
        self.name = name
        self.kind = kind


def machine_for(model: Model, props: PropertySet, deadlock: bool = False) -> type[RuleBasedStateMachine]:
    """A RuleBasedStateMachine class for the model; each instance records the trace it walked."""
    action_names_found, all_found = discover_actions(model)
    invariants = [(p.name, p.bind(model)) for p in props.invariants]
    steps = [(p.name, p.bind(model)) for p in props.steps]
    within = bounds_check(model)
    inits = list(model.init_states())
    if not inits:
        raise UserError(f"model {model.name} has no initial states")

    class ModelMachine(RuleBasedStateMachine):
        last_failure: tuple[Trace, str, str] | None = None
        runs = 0
        states_seen: set[int] = set()  # noqa: RUF012 - shared across runs on purpose
        steps_taken = 0
        longest = 0

        def __init__(self) -> None:
            super().__init__()
            self.trace: Trace | None = None
            self.succs: list[tuple[Action, State]] = []
            type(self).runs += 1

        def _fail(self, name: str, kind: str) -> None:
            assert self.trace is not None
            type(self).last_failure = (Trace(list(self.trace.states), list(self.trace.actions)), name, kind)
            raise PropertyViolationError(name, kind)

        def _arrive(self, state: State) -> None:
            type(self).states_seen.add(fingerprint(state))
            if within is not None and not within(state):
                self.succs = []  # beyond the model's bounds: only stuttering from here
                return
            self.succs = expand(model, state)
            if deadlock and not self.succs:
                self._fail(DEADLOCK, "deadlock")

        @initialize(index=st.integers(min_value=0, max_value=len(inits) - 1))
        def start(self, index: int) -> None:
            state = inits[index]
            self.trace = Trace([state], [None])
            self._arrive(state)

        def _take(self, action: Action, nxt: State) -> None:
            assert self.trace is not None
            before = self.trace.states[-1]
            self.trace.states.append(nxt)
            self.trace.actions.append(action)
            type(self).steps_taken += 1
            type(self).longest = max(type(self).longest, len(self.trace))
            for name, pred in steps:
                ok = holds(name, pred, before, action, nxt)
                if not ok:
                    self._fail(name, "step")
            self._arrive(nxt)

        @precondition(lambda self: self.trace is not None and not self.succs)
        @rule()
        def stutter(self) -> None:
            """A state without successors: nothing happens (Hypothesis needs some rule to run)."""

        @invariant()
        def properties_hold(self) -> None:
            if self.trace is None:
                return
            state = self.trace.states[-1]
            for name, pred in invariants:
                ok = holds(name, pred, state)
                if not ok:
                    self._fail(name, "invariant")

    for action_name in action_names_found:
        setattr(ModelMachine, f"step_{action_name}", _action_rule(action_name))
    if not all_found:  # only then: an extra rule would change which runs a seed makes
        ModelMachine.step_unlisted = _unlisted_rule(frozenset(action_names_found))
    ModelMachine.__name__ = ModelMachine.__qualname__ = f"{type(model).__name__}Machine"
    return ModelMachine


def _action_rule(action_name: str) -> Any:
    """One rule per action family: Hypothesis's swarm testing then switches whole families off in
    some runs, which reaches deep interleavings that a uniform choice among successors rarely does."""

    def enabled(self: Any) -> bool:
        return any(a.name == action_name for a, _ in self.succs)

    @precondition(enabled)
    @rule(data=st.data())
    def take(self: Any, data: st.DataObject) -> None:
        choices = [(a, t) for a, t in self.succs if a.name == action_name]
        action, nxt = data.draw(st.sampled_from(choices), label=action_name)
        self._take(action, nxt)

    take.__name__ = f"step_{action_name}"
    return take


def _unlisted_rule(known: frozenset[str]) -> Any:
    """Actions the short exploration in :func:`discover_actions` did not meet (a large configuration):
    one rule for all of them, so a state is never left with no rule to run."""

    def enabled(self: Any) -> bool:
        return any(a.name not in known for a, _ in self.succs)

    @precondition(enabled)
    @rule(data=st.data())
    def take(self: Any, data: st.DataObject) -> None:
        choices = [(a, t) for a, t in self.succs if a.name not in known]
        action, nxt = data.draw(st.sampled_from(choices), label="unlisted action")
        self._take(action, nxt)

    take.__name__ = "step_unlisted"
    return take


def discover_actions(model: Model, budget_states: int = 20_000) -> tuple[list[str], bool]:
    """The action names a short breadth-first exploration meets, and whether it explored every
    reachable state (then no other action exists). The budget is a number of states, never a time:
    the rules, and so the runs a seed makes, must not depend on how busy the machine is."""
    names: dict[str, None] = {}
    frontier = list(model.init_states())
    seen = set(frontier)
    while frontier and len(seen) < budget_states:
        nxt_frontier = []
        for state in frontier:
            for action, nxt in expand(model, state):
                names.setdefault(action.name, None)
                if nxt not in seen:
                    seen.add(nxt)
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return list(names), not frontier


def machine_settings(options: HypothesisOptions) -> settings:
    database = (
        DirectoryBasedExampleDatabase(options.database) if options.database is not None else InMemoryExampleDatabase()
    )
    return settings(
        max_examples=options.examples,
        stateful_step_count=options.steps,
        database=database,
        deadline=None,
        phases=[Phase.reuse, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    )


def hypothesis_check(
    model: Model,
    props: PropertySet,
    options: HypothesisOptions = HypothesisOptions(),
    preset: str | None = None,
) -> CheckResult:
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**32)
    machine = machine_for(model, props, options.deadlock)
    hypothesis.seed(seed)(machine)
    start = time.perf_counter()
    violation = None
    try:
        run_state_machine_as_test(machine, settings=machine_settings(options))
    except PropertyViolationError:
        assert machine.last_failure is not None
        trace, name, kind = machine.last_failure
        violation = Violation(property=name, kind=kind, trace=trace)
    except Flaky as exc:
        raise UserError(
            f"model {model.name}: Hypothesis saw a failure it could not reproduce "
            f"(successors() and the properties must be deterministic): {exc}"
        ) from None
    stats = Stats(
        distinct_states=len(machine.states_seen),
        generated_states=machine.steps_taken,
        depth=machine.longest,
        elapsed_s=time.perf_counter() - start,
        peak_memory_bytes=peak_rss(),
        storage="fingerprints",
        extra={"runs": machine.runs, "examples": options.examples, "steps": options.steps},
    )
    return sampling_result(
        "hypothesis", model, props, options.deadlock, [violation] if violation else [], stats,
        bound_reason=f"{options.examples} Hypothesis examples of at most {options.steps} steps",
        seed=seed, preset=preset,
    )  # fmt: skip
