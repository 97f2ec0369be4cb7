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
reached (:class:`Reached`). A step prefers successors no run has reached yet, a run may start
from the end of an earlier run's path that still has unexplored successors, and a failure's
trace is cut to the shortest path to a violation among the transitions the runs have seen.
Hypothesis requires a run to be a function of its choices alone, so the examples are drawn in
rounds (one Hypothesis test each, with a seed derived from the check's): what earlier runs reached
is fixed during a round and taken in between rounds.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule
from kmc.checker.engines.hypothesis.reached import Reached
from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model, State
from kmc.checker.properties import PropertySet, holds
from kmc.checker.result import Trace
from kmc.checker.search.kernel import DEADLOCK, PropertyChecks, bounds_check, expand
from kmc.checker.search.observers import SearchObserver
from kmc.checker.storage.fingerprint import fingerprint

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


class PropertyViolationError(AssertionError):
    def __init__(self, name: str, kind: str) -> None:
        super().__init__(f"{name} violated")
        self.name = name
        self.kind = kind


@dataclass
class MachineSpec:
    """What every run of one check's machine shares: the model and its properties, the runs'
    shared exploration, and how runs are bounded and guided."""

    checks: PropertyChecks
    observers: Sequence[SearchObserver]
    explored: Reached
    inits: list[State]
    within: Callable[[State], bool] | None
    deadlock: bool
    guided: bool
    steps_per_run: int


class ModelMachine(RuleBasedStateMachine):
    """Any model as a state machine; :func:`machine_for` makes a subclass per check, whose class
    attributes hold the check (``spec``) and what its runs found."""

    spec: ClassVar[MachineSpec]
    explored: ClassVar[Reached]
    last_failure: ClassVar[tuple[Trace, str, str] | None] = None
    runs: ClassVar[int] = 0
    states_seen: ClassVar[set[int]]
    steps_taken: ClassVar[int] = 0
    longest: ClassVar[int] = 0

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

    @classmethod
    def shortest(cls, trace: Trace, name: str, kind: str) -> Trace:
        """A failing trace cut to the shortest found (guided checks only)."""
        spec = cls.spec
        if not spec.guided:
            return trace
        return _shortest(spec.explored, trace, name, kind, spec.checks.invariants, spec.checks.steps)

    def _fail(self, name: str, kind: str) -> None:
        assert self.trace is not None
        type(self).last_failure = (Trace(list(self.trace.states), list(self.trace.actions)), name, kind)
        raise PropertyViolationError(name, kind)

    def _arrive(self, state: State) -> None:
        spec = self.spec
        type(self).states_seen.add(fingerprint(state))
        succs = spec.explored.successors.get(state)
        if succs is None:
            succs = spec.explored.expand_state(state)
            if spec.guided:
                spec.explored.successors[state] = succs
        self.succs = succs
        for observer in spec.observers:
            observer.expanded(state, succs, False)
        if spec.guided:
            self.reached.add(state)
            self.fresh = [(a, t) for a, t in succs if self._new(t)]
        if spec.deadlock and not succs and (spec.within is None or spec.within(state)):
            self._fail(DEADLOCK, "deadlock")

    @initialize(data=st.data())
    def start(self, data: st.DataObject) -> None:
        """An initial state or, when guided, the end of an earlier run's path that still leads
        somewhere new (Hypothesis shrinks the choice towards the first initial state), and the
        run's swarm: the bits of one number say which action families it leaves out."""
        spec = self.spec
        frontier = spec.explored.frontier
        resume = spec.guided and bool(frontier) and data.draw(st.booleans(), label="resume a path")
        if resume:  # half the runs: the frontier grows large, yet shallow bugs need fresh starts
            path = data.draw(st.integers(min_value=0, max_value=len(frontier) - 1), label="path")
        else:
            choice = data.draw(st.integers(min_value=0, max_value=len(spec.inits) - 1), label="initial state")
            init = spec.inits[choice]
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
        guided = self.spec.guided
        for at in range(0, len(choices), 4):
            if self.taken >= self.spec.steps_per_run:
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
        explored = self.spec.explored
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
        return state not in self.spec.explored.visited and state not in self.reached

    def _resume(self, index: int) -> None:
        """Continue an unfinished path of an earlier round, the newest first."""
        path = self.spec.explored.frontier[-1 - index]
        self.trace = Trace(list(path.states), list(path.actions))
        self._arrive(path.states[-1])

    def _take(self, action: Action, nxt: State) -> None:
        assert self.trace is not None
        before = self.trace.states[-1]
        self.trace.states.append(nxt)
        self.trace.actions.append(action)
        self.taken += 1
        cls = type(self)
        cls.steps_taken += 1
        cls.longest = max(cls.longest, len(self.trace))
        for observer in self.spec.observers:
            observer.taken(before, action, nxt)
        for name, pred in self.spec.checks.steps:
            if not holds(name, pred, before, action, nxt):
                self._fail(name, "step")
        self._check(nxt)
        self._arrive(nxt)

    def _check(self, state: State) -> None:
        for observer in self.spec.observers:
            observer.state(state)
        for name, pred in self.spec.checks.invariants:
            if not holds(name, pred, state):
                self._fail(name, "invariant")

    def teardown(self) -> None:
        if self.spec.guided and self.trace is not None and type(self).last_failure is None:
            self.spec.explored.finish_run(self.trace, self.reached)


def machine_for(
    model: Model,
    props: PropertySet,
    deadlock: bool = False,
    guided: bool = True,
    steps_per_run: int = 60,
    observers: Sequence[SearchObserver] = (),
) -> type[ModelMachine]:
    """A RuleBasedStateMachine class for the model; each instance records the trace it walked and
    takes at most ``steps_per_run`` steps of the model."""
    within = bounds_check(model)
    inits = list(model.init_states())
    if not inits:
        raise UserError(f"model {model.name} has no initial states")
    explored = Reached(inits, lambda state: [] if within is not None and not within(state) else expand(model, state))
    spec = MachineSpec(
        checks=PropertyChecks(model, props),
        observers=observers,
        explored=explored,
        inits=inits,
        within=within,
        deadlock=deadlock,
        guided=guided,
        steps_per_run=steps_per_run,
    )
    name = f"{type(model).__name__}Machine"
    fields: dict[str, Any] = {"spec": spec, "explored": explored, "states_seen": set(), "__qualname__": name}
    return type(name, (ModelMachine,), fields)


def _shortest(
    explored: Reached,
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
