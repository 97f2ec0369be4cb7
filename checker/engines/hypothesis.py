"""The Hypothesis engine: any model as a RuleBasedStateMachine, checked at random and shrunk.

For state spaces too big to exhaust: Hypothesis chooses an initial state and then, at each step,
one of the current state's successors; the invariants are checked after every step and the step
properties on every transition. A failure is shrunk to a minimal sequence of choices and written
as the same ITF trace as every other engine, so it replays and renders.

No per-model code: the machine has one ``@initialize`` rule (pick an initial state and the run's
swarm) and one ``@rule`` that takes up to ``BURST`` successors, each chosen by bytes of a single
draw, checking the invariants after every step and the step properties on every transition.
Hypothesis's cost is per rule call, so many model steps per call make a run several times faster.
Swarm testing is done by hand: a run may leave out whole action families (no producer writes in
this one, no controller actions in that one). Hypothesis's own swarm over one rule per family
would end a run whenever the families it kept had nothing enabled, so its runs averaged fewer
than ten steps.

Guided, by default, as a coverage-guided fuzzer is: the runs of one check share what earlier runs
reached (:class:`Explored`). A step prefers successors no run has reached yet, a run may start
from the end of an earlier run's path that still has unexplored successors, and a failure's
trace is cut to the shortest path to a violation among the transitions the runs have seen.
Hypothesis requires a run to be a function of its choices alone, so the examples are drawn in
rounds (one Hypothesis test each, with a seed derived from the check's): what earlier runs reached
is fixed during a round and taken in between rounds.
"""

from __future__ import annotations

import contextlib
import random
import time
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import hypothesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, InMemoryExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    rule,
    run_state_machine_as_test,
)
from kmc.checker.engines.bfs import DEADLOCK, bounds_check, expand, peak_rss
from kmc.checker.engines.simulate import sampling_result
from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model, State
from kmc.checker.properties import PropertySet, holds
from kmc.checker.result import CheckResult, Stats, Trace, Violation
from kmc.checker.search.observers import SearchObserver
from kmc.checker.storage.fingerprint import fingerprint


@dataclass(frozen=True)
class HypothesisOptions:
    seed: int | None = None
    examples: int = 1000
    """How many runs (sequences of steps) Hypothesis tries before it gives up."""
    steps: int = 60
    """The most steps in one run."""
    database: str | None = None
    """A directory to keep failing examples in, so the next run tries them first; None: in memory."""
    deadlock: bool = False
    guided: bool = True
    """Prefer successors no earlier run reached and restart from earlier runs' frontiers."""


class Explored:
    """What the runs of one check have reached: every expanded state's successors, the states
    reached by finished runs, and paths to states with successors no run has taken yet."""

    def __init__(self, inits: list[State], expand_state: Any = None) -> None:
        self.inits = inits
        self.expand_state = expand_state
        """Computes a state's successors when a shortest-path search needs one no run expanded."""
        self.successors: dict[State, list[tuple[Action, State]]] = {}
        self.visited: set[State] = set()
        self.frontier: list[Trace] = []
        """Paths (from an initial state) to states that still have unvisited successors."""
        self.pending: list[tuple[Trace, set[State]]] = []
        self.budget = 0
        """States the current shortest-path search may still expand beyond those already expanded."""

    def forget(self) -> None:
        self.successors, self.visited, self.frontier, self.pending = {}, set(), [], []

    def unexplored(self, state: State) -> bool:
        return any(nxt not in self.visited for _, nxt in self.successors.get(state, ()))

    def finish_run(self, trace: Trace, reached: set[State]) -> None:
        """A run ended without failing; what it reached is taken in when the round ends."""
        self.pending.append((trace, reached))

    def end_round(self) -> None:
        """What this round's runs reached counts as visited from now on, and the last state on each
        run's path with an unvisited successor becomes a place to start from."""
        for _, reached in self.pending:
            self.visited |= reached
        self.frontier = [t for t in self.frontier if self.unexplored(t.states[-1])]
        for trace, _ in self.pending:
            for i in range(len(trace.states) - 1, -1, -1):
                if self.unexplored(trace.states[i]):
                    self.frontier.append(Trace(trace.states[: i + 1], trace.actions[: i + 1]))
                    break
        self.pending = []

    def shortest(self, trace: Trace, bad_state: Any = None, bad_step: Any = None, budget: int = 0) -> Trace:
        """The shortest path from an initial state to a state that ``bad_state`` judges bad or over
        a transition that ``bad_step`` does: breadth-first over the transitions seen, and over the
        successors of up to ``budget`` states no run expanded. The given trace if none is shorter;
        it is among the transitions seen, so this never lengthens it. Within the budget, the path
        is the shortest there is."""
        self.budget = budget
        found = self._search(self.inits, len(trace.states), bad_state, bad_step)
        return found[0] if found is not None else trace

    def shortcut(self, trace: Trace, bad_state: Any = None, bad_step: Any = None, budget: int = 0) -> Trace:
        """Shorten a failing trace piece by piece, for state spaces too large for ``shortest`` to
        reach its end: from each of its states in turn, a breadth-first search for a failure, or for
        a later state of the trace, in fewer steps than the trace takes to get there; the best find
        replaces that stretch. ``budget`` bounds the states expanded beyond those the runs expanded."""
        self.budget = budget
        i = 0
        while i < len(trace.states) - 1 and self.budget > 0:
            states = trace.states
            remaining = {state: len(states) - 1 - j for j, state in enumerate(states) if j > i}
            found = self._search([states[i]], len(states) - i, bad_state, bad_step, remaining)
            if found is not None:
                path, failed = found
                rest = range(0) if failed else range(len(states) - remaining[path.states[-1]], len(states))
                trace = Trace(
                    [*states[:i], *path.states, *(states[j] for j in rest)],
                    [*trace.actions[: i + 1], *path.actions[1:], *(trace.actions[j] for j in rest)],
                )
            i += 1
        return trace

    def _search(
        self,
        starts: list[State],
        steps: int,
        bad_state: Any,
        bad_step: Any,
        remaining: dict[State, int] | None = None,
    ) -> tuple[Trace, bool] | None:
        """Breadth-first from ``starts`` for the shortest way to a failure -- or, given how many steps
        each of some states still is from a failure (``remaining``), to one of them -- in fewer than
        ``steps`` states in all. The path from a start and whether it ends in the failure, or None."""
        parent: dict[State, tuple[State | None, Action | None]] = {}
        best: tuple[int, State] | None = None  # the shortest way through a state of ``remaining``
        level: list[State] = []
        for state in starts:
            if state not in parent:
                parent[state] = (None, None)
                if bad_state is not None and bad_state(state):
                    return self._path(parent, state), True
                level.append(state)
        depth = 1  # states on a path so far
        while level and depth + 1 < (best[0] if best else steps):
            nxt_level = []
            for state in level:
                succs = self.successors.get(state)
                if succs is None:
                    if self.budget <= 0 or self.expand_state is None:
                        continue
                    self.budget -= 1
                    succs = self.successors[state] = self.expand_state(state)
                for action, nxt in succs:
                    if bad_step is not None and bad_step(state, action, nxt):
                        path = self._path(parent, state)
                        return Trace([*path.states, nxt], [*path.actions, action]), True
                    if nxt in parent:
                        continue
                    parent[nxt] = (state, action)
                    if bad_state is not None and bad_state(nxt):
                        return self._path(parent, nxt), True
                    length = depth + 1 + remaining[nxt] if remaining and nxt in remaining else None
                    if length is not None and length < (best[0] if best else steps):
                        best = (length, nxt)
                    nxt_level.append(nxt)
            level = nxt_level
            depth += 1
        return (self._path(parent, best[1]), False) if best is not None else None

    @staticmethod
    def _path(parent: dict[State, tuple[State | None, Action | None]], state: State) -> Trace:
        states: list[State] = []
        actions: list[Action | None] = []
        cursor: State | None = state
        while cursor is not None:
            before, action = parent[cursor]
            states.append(cursor)
            actions.append(action)
            cursor = before
        return Trace(states[::-1], actions[::-1])


class PropertyViolationError(AssertionError):
    def __init__(self, name: str, kind: str) -> None:
        super().__init__(f"{name} violated")
        self.name = name
        self.kind = kind


def machine_for(
    model: Model,
    props: PropertySet,
    deadlock: bool = False,
    guided: bool = True,
    steps_per_run: int = 60,
    observers: Sequence[SearchObserver] = (),
) -> type[RuleBasedStateMachine]:
    """A RuleBasedStateMachine class for the model; each instance records the trace it walked and
    takes at most ``steps_per_run`` steps of the model."""
    invariants = [(p.name, p.bind(model)) for p in props.invariants]
    steps = [(p.name, p.bind(model)) for p in props.steps]
    within = bounds_check(model)
    inits = list(model.init_states())
    if not inits:
        raise UserError(f"model {model.name} has no initial states")
    explored = Explored(inits, lambda state: [] if within is not None and not within(state) else expand(model, state))

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
            self.fresh: list[tuple[Action, State]] = []
            """The successors that no finished run and not this one has reached (guided runs only)."""
            self.reached: set[State] = set()
            self.off: dict[str, bool] = {}
            """Swarm testing: the action families this run leaves out."""
            self.swarm = 0
            self.taken = 0
            type(self).runs += 1

        def _fail(self, name: str, kind: str) -> None:
            assert self.trace is not None
            type(self).last_failure = (Trace(list(self.trace.states), list(self.trace.actions)), name, kind)
            raise PropertyViolationError(name, kind)

        def _arrive(self, state: State) -> None:
            type(self).states_seen.add(fingerprint(state))
            succs = explored.successors.get(state)
            if succs is None:
                succs = explored.expand_state(state)
                if guided:
                    explored.successors[state] = succs
            self.succs = succs
            for observer in observers:
                observer.expanded(state, succs, False)
            if guided:
                self.reached.add(state)
                self.fresh = [(a, t) for a, t in succs if self._new(t)]
            if deadlock and not succs and (within is None or within(state)):
                self._fail(DEADLOCK, "deadlock")

        @initialize(data=st.data())
        def start(self, data: st.DataObject) -> None:
            """An initial state or, when guided, the end of an earlier run's path that still leads
            somewhere new (Hypothesis shrinks the choice towards the first initial state), and the
            run's swarm: the bits of one number say which action families it leaves out."""
            resume = guided and bool(explored.frontier) and data.draw(st.booleans(), label="resume a path")
            if resume:  # half the runs: the frontier grows large, yet shallow bugs need fresh starts
                path = data.draw(st.integers(min_value=0, max_value=len(explored.frontier) - 1), label="path")
            else:
                init = inits[data.draw(st.integers(min_value=0, max_value=len(inits) - 1), label="initial state")]
            self.swarm = data.draw(st.integers(min_value=0, max_value=2**SWARM_BITS - 1), label="swarm")
            if resume:
                self._resume(path)  # its states were checked by the run that reached them
            else:
                self.trace = Trace([init], [None])
                self._check(init)
                self._arrive(init)

        @rule(choices=st.binary(min_size=4 * BURST, max_size=4 * BURST))
        def step(self, choices: bytes) -> None:
            """Take up to BURST steps, each chosen by four of the bytes Hypothesis drew: a new
            successor if there is one (when guided), of a family this run keeps if there is one.
            One draw for many steps: Hypothesis's cost per rule call is what bounds a run's speed."""
            for at in range(0, len(choices), 4):
                if self.taken >= steps_per_run:
                    return
                pick = int.from_bytes(choices[at : at + 2], "little")
                restart = int.from_bytes(choices[at + 2 : at + 4], "little")
                if guided and not self.fresh and restart & 1 and not self._backtrack(restart >> 1):
                    return  # else, half the time, walk on through states already reached
                pool = self.fresh if self.fresh else self.succs
                if not pool:
                    return  # a state without successors stutters
                if self.swarm:
                    kept = [(a, t) for a, t in pool if not self._left_out(a.name)]
                    pool = kept or pool
                action, nxt = pool[pick % len(pool)]
                self._take(action, nxt)

        def _left_out(self, family: str) -> bool:
            off = self.off.get(family)
            if off is None:
                off = self.off[family] = bool(self.swarm >> (zlib.crc32(family.encode()) % SWARM_BITS) & 1)
            return off

        def _backtrack(self, restart: int) -> bool:
            """Nothing new from here: go back along this run's path to the latest state with a
            successor nobody has reached, or else to a path an earlier round left unfinished (a
            depth-first search, so a run's steps are spent on new states while there are any)."""
            assert self.trace is not None
            states = self.trace.states
            for i in range(len(states) - 2, -1, -1):
                if any(self._new(t) for _, t in explored.successors.get(states[i], ())):
                    del states[i + 1 :], self.trace.actions[i + 1 :]
                    self._arrive(states[i])
                    return True
            if not explored.frontier:
                return False
            self._resume(restart % len(explored.frontier))
            return bool(self.fresh)

        def _new(self, state: State) -> bool:
            """Reached by no finished run and not by this one."""
            return state not in explored.visited and state not in self.reached

        def _resume(self, index: int) -> None:
            """Continue an unfinished path of an earlier round, the newest first."""
            path = explored.frontier[-1 - index]
            self.trace = Trace(list(path.states), list(path.actions))
            self._arrive(path.states[-1])

        def _take(self, action: Action, nxt: State) -> None:
            assert self.trace is not None
            before = self.trace.states[-1]
            self.trace.states.append(nxt)
            self.trace.actions.append(action)
            self.taken += 1
            type(self).steps_taken += 1
            type(self).longest = max(type(self).longest, len(self.trace))
            for observer in observers:
                observer.taken(before, action, nxt)
            for name, pred in steps:
                ok = holds(name, pred, before, action, nxt)
                if not ok:
                    self._fail(name, "step")
            self._check(nxt)
            self._arrive(nxt)

        def _check(self, state: State) -> None:
            for observer in observers:
                observer.state(state)
            for name, pred in invariants:
                ok = holds(name, pred, state)
                if not ok:
                    self._fail(name, "invariant")

        def teardown(self) -> None:
            if guided and self.trace is not None and type(self).last_failure is None:
                explored.finish_run(self.trace, self.reached)

    ModelMachine.__name__ = ModelMachine.__qualname__ = f"{type(model).__name__}Machine"
    ModelMachine.explored = explored
    ModelMachine.shortest = staticmethod(
        lambda trace, name, kind: _shortest(explored, trace, name, kind, invariants, steps) if guided else trace
    )
    return ModelMachine


def _shortest(
    explored: Explored,
    trace: Trace,
    name: str,
    kind: str,
    invariants: list[tuple[str, Any]],
    steps: list[tuple[str, Any]],
) -> Trace:
    """Cut a failing trace to the shortest path to the same property's failure among the transitions
    the runs have seen and a budget of others; then shorten what is left of it stretch by stretch."""
    if kind == "invariant":
        pred = dict(invariants)[name]
        bad = {"bad_state": lambda s: not holds(name, pred, s)}
    elif kind == "step":
        pred = dict(steps)[name]
        bad = {"bad_step": lambda b, a, t: not holds(name, pred, b, a, t)}
    else:
        return trace
    trace = explored.shortest(trace, budget=SHORTEST_BUDGET, **bad)
    while True:
        shorter = explored.shortcut(trace, budget=SHORTCUT_BUDGET, **bad)
        if len(shorter) == len(trace):
            return trace
        trace = shorter


ROUND = 20
"""Examples per round of a guided check."""
BURST = 10
"""Steps of the model per call of the step rule."""
SWARM_BITS = 32
"""Action families are left out by one bit each (a family's bit: its name's CRC modulo this)."""
SHORTEST_BUDGET = 100_000
"""States a failing trace's shortest-path search may expand beyond those the runs expanded."""
SHORTCUT_BUDGET = 50_000
"""The same, for each pass of shortening the trace stretch by stretch."""


def machine_settings(options: HypothesisOptions, examples: int | None = None) -> settings:
    database = (
        DirectoryBasedExampleDatabase(options.database) if options.database is not None else InMemoryExampleDatabase()
    )
    return settings(
        max_examples=examples or options.examples,
        stateful_step_count=-(-options.steps // BURST),
        database=database,
        deadline=None,
        phases=[Phase.reuse, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    )


@contextlib.contextmanager
def _own_constants_only() -> Iterator[None]:
    """Hypothesis draws a few integers from constants in the source of the "local" modules loaded at
    the time. Which modules are loaded, and whether the toolkit is installed or a checkout, would then
    change what a seed draws; during a check Hypothesis draws from its own constants only, so a seed
    means the same run wherever it is given. (Hypothesis internals: left alone if they change.)"""
    from hypothesis.internal.conjecture import providers

    try:
        empty = providers.Constants(
            integers=providers.SortedSet(),
            floats=providers.SortedSet(key=providers.float_to_int),
            bytes=providers.SortedSet(),
            strings=providers.SortedSet(),
        )
        saved = providers._get_local_constants, providers.CONSTANTS_CACHE
    except AttributeError:
        yield
        return
    providers._get_local_constants, providers.CONSTANTS_CACHE = (lambda: empty), {}
    try:
        yield
    finally:
        providers._get_local_constants, providers.CONSTANTS_CACHE = saved


def hypothesis_check(
    model: Model,
    props: PropertySet,
    options: HypothesisOptions = HypothesisOptions(),
    preset: str | None = None,
    observers: Sequence[SearchObserver] = (),
) -> CheckResult:
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**32)
    machine = machine_for(model, props, options.deadlock, options.guided, options.steps, observers)
    start = time.perf_counter()
    violation = None
    rounds = [options.examples] if not options.guided else [ROUND] * (options.examples // ROUND)
    if options.guided and options.examples % ROUND:
        rounds.append(options.examples % ROUND)
    try:
        with _own_constants_only():
            for number, examples in enumerate(rounds):
                hypothesis.seed(seed if number == 0 else hash((seed, number)))(machine)
                run_state_machine_as_test(machine, settings=machine_settings(options, examples))
                machine.explored.end_round()
    except PropertyViolationError:
        assert machine.last_failure is not None
        trace, name, kind = machine.last_failure
        violation = Violation(property=name, kind=kind, trace=machine.shortest(trace, name, kind))
    except Flaky as exc:
        raise UserError(
            f"model {model.name}: Hypothesis saw a failure it could not reproduce "
            f"(successors() and the properties must be deterministic): {exc}"
        ) from None
    finally:
        machine.explored.forget()  # Hypothesis keeps the machine class; the states need not outlive the check
    stats = Stats(
        distinct_states=len(machine.states_seen),
        generated_states=machine.steps_taken,
        depth=machine.longest,
        elapsed_s=time.perf_counter() - start,
        peak_memory_bytes=peak_rss(),
        storage="fingerprints",
        extra={"runs": machine.runs, "examples": options.examples, "steps": options.steps, "guided": options.guided},
    )
    return sampling_result(
        "hypothesis", model, props, options.deadlock, [violation] if violation else [], stats,
        bound_reason=f"{options.examples} Hypothesis examples of at most {options.steps} steps",
        seed=seed, preset=preset,
    )  # fmt: skip


class HypothesisEngine:
    """Hypothesis drives the model's actions and shrinks a failure: never complete."""

    name: ClassVar[str] = "hypothesis"
    bounds: ClassVar[frozenset[str]] = frozenset({"deadlock"})
    defaults: ClassVar[dict[str, Any]] = {
        "seed": None, "examples": HypothesisOptions.examples, "steps": HypothesisOptions.steps,
        "database": None, "guide": True,
    }  # fmt: skip
    observes: ClassVar[bool] = True
    exhaustive: ClassVar[bool] = False

    def run(self, task: Any) -> CheckResult:
        o = task.options
        options = HypothesisOptions(seed=o["seed"], examples=o["examples"], steps=o["steps"], database=o["database"],
                                    deadlock=task.bounds.deadlock, guided=o["guide"])  # fmt: skip
        return hypothesis_check(task.model, task.props, options, task.preset, task.observers)
