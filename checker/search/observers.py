"""What a search observes, through one visitor interface every engine calls.

An engine reports the states it reaches, the states it expands (with their successors) and the
transitions it takes to :class:`SearchObserver` objects; it knows nothing of what they do with
them. Two observers ship: :class:`Coverage` (per action: enabled and taken; per property:
evaluated and exercised, TLC's coverage and more) and :class:`GraphRecorder` (the explored graph
the liveness check runs on). Hooks are called on the hot path, so they stay small.
"""

from __future__ import annotations

import ast
import inspect
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kmc.checker.extension import c_extension
from kmc.checker.model import Action, Model, State
from kmc.checker.properties import PropertySet, holds

if TYPE_CHECKING:
    from kmc.checker.result import CheckResult
    from kmc.checker.search.explored import ExploredGraph


_counts = c_extension("kmc.checker.search._counts")
_count_actions = _counts.count_actions if _counts is not None else None
"""The C twin of Coverage.expanded's exhaustive-search pass (checker/search/_c/counts.c); None, and the
Python below counts, where it was not built or KMC_PURE_PYTHON=1."""


class SearchObserver:
    """The visitor interface: every hook does nothing unless overridden.

    ``state``: a state the engine checks the invariants in (once per distinct state for an
    exhaustive engine, once per visit for a sampling one). ``expanded``: a state's successors were
    computed; ``all_taken`` says the engine follows every one of them (exhaustive search), otherwise
    it reports the one it follows through ``taken``."""

    def state(self, state: State) -> None:
        """A state reached and checked."""

    def expanded(self, state: State, successors: Sequence[tuple[Action, State]], all_taken: bool) -> None:
        """A state's successors were computed."""

    def taken(self, state: State, action: Action, next_state: State) -> None:
        """One transition followed (sampling engines; exhaustive ones pass ``all_taken``)."""

    def saved_counts(self) -> dict[str, Any] | None:
        """What this observer has counted, as plain values a checkpoint keeps (None: nothing to keep)."""
        return None

    def restore_counts(self, counts: dict[str, Any]) -> None:
        """Continue from the counts a checkpoint kept (a resumed run ends with the uninterrupted totals)."""

    def spawn(self) -> SearchObserver | None:
        """A fresh observer of the same kind, to watch another process of the same search (bfs
        ``--workers``); its ``shared_counts()`` come back to this one's ``merge_counts``. None: this
        observer cannot watch another process."""
        return None

    def shared_counts(self) -> dict[str, Any] | None:
        """What a spawned observer counted, as plain values, for the one it was spawned from."""
        return None

    def merge_counts(self, counts: dict[str, Any]) -> None:
        """Add the counts a spawned observer made in another process."""


def action_name(action: Any) -> str:
    """The family name of an action label: Action("Fetch", replica=2) -> "Fetch"."""
    if type(action) is Action:
        return action[0]
    name = getattr(action, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(action, tuple) and action and isinstance(action[0], str):
        return action[0]
    if isinstance(action, str):
        return action
    return type(action).__name__


def declared_actions(model: Model) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The action names the model can take, and those its config turns off.

    A model declares them as ``actions`` (a class attribute) and ``inactive_actions()`` (for this
    config); without a declaration, the module's ``ACTION_ARGS`` table or, failing that, the
    ``Action("Name", ...)`` literals in its source are taken, so that an action that is never even
    enabled can be reported."""
    cls = type(model)
    names: Iterable[str] = getattr(cls, "actions", ()) or ()
    if not names:
        module = sys.modules.get(cls.__module__)
        table = getattr(module, "ACTION_ARGS", None)
        names = list(table) if isinstance(table, Mapping) else _action_literals(cls)
    inactive = tuple(model.inactive_actions()) if hasattr(model, "inactive_actions") else ()
    return tuple(dict.fromkeys(names)), inactive


def _action_literals(cls: type) -> list[str]:
    try:
        tree = ast.parse(inspect.getsource(cls).strip() if cls.__module__ != "__main__" else "")
    except (OSError, TypeError, KeyError, SyntaxError):
        return []
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Action"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append(node.args[0].value)
    return found


@dataclass
class CoverageReport:
    """Counts, mergeable across processes (Spark tasks) and runs (a resumed checkpoint)."""

    actions: dict[str, list[int]] = field(default_factory=dict)
    """name -> [states it was enabled in, transitions taken]."""
    properties: dict[str, list[int]] = field(default_factory=dict)
    """name -> [times evaluated, times exercised (guard or trigger held)]."""

    def merge(self, other: Mapping[str, Any]) -> None:
        for section in ("actions", "properties"):
            mine = getattr(self, section)
            for name, counts in other.get(section, {}).items():
                have = mine.setdefault(name, [0, 0])
                have[0] += counts[0]
                have[1] += counts[1]

    def to_json(self) -> dict[str, Any]:
        return {
            "actions": {k: list(v) for k, v in self.actions.items()},
            "properties": {k: list(v) for k, v in self.properties.items()},
        }


class Coverage(SearchObserver):
    """Per action how often it was enabled and taken; per property how often it was evaluated and
    how often it was exercised: an invariant's ``guard``, a step property's ``trigger`` (every
    step, without one), a ``leads_to``'s trigger held."""

    def __init__(self, model: Model, props: PropertySet) -> None:
        self.model = model
        self.props = props
        self.universe, self.inactive = declared_actions(model)
        self.enabled: dict[str, int] = {}
        self.taken_count: dict[str, int] = {}
        self.states = 0
        self.transitions = 0
        self.guards = [
            (p.name, f"{p.name} (guard)", p.bind_guard(model)) for p in props.invariants if p.guard is not None
        ]
        self.guard_hits = dict.fromkeys((name for name, _label, _guard in self.guards), 0)
        self.triggers = [(p.name, p.bind_guard(model)) for p in props.steps if p.guard is not None]
        self.trigger_hits = dict.fromkeys((n for n, _ in self.triggers), 0)
        self.liveness: dict[str, list[int]] = {}
        self.carried = CoverageReport()
        """Counts made elsewhere (Spark tasks, the run a checkpoint resumes)."""

    # -- the hooks -----------------------------------------------------------------------------
    def state(self, state: State) -> None:
        self.states += 1
        for name, label, guard in self.guards:
            if holds(label, guard, state):
                self.guard_hits[name] += 1

    def expanded(self, state: State, successors: Sequence[tuple[Action, State]], all_taken: bool) -> None:
        if all_taken and not self.triggers:  # every state of an exhaustive search: one pass
            if (
                _count_actions is not None
                and type(successors) is list
                and _count_actions(successors, self.taken_count, self.enabled, Action)
            ):
                self.transitions += len(successors)
                return
            taken, names = self.taken_count, set()
            for action, _next in successors:
                name = action[0] if type(action) is Action else action_name(action)
                taken[name] = taken.get(name, 0) + 1
                names.add(name)
            for name in names:
                self.enabled[name] = self.enabled.get(name, 0) + 1
            self.transitions += len(successors)
            return
        enabled = self.enabled
        names = {action_name(a) for a, _ in successors}
        for name in names:
            enabled[name] = enabled.get(name, 0) + 1
        if all_taken:
            taken = self.taken_count
            for action, nxt in successors:
                name = action_name(action)
                taken[name] = taken.get(name, 0) + 1
                if self.triggers:
                    self._trigger(state, action, nxt)
            self.transitions += len(successors)

    def taken(self, state: State, action: Action, next_state: State) -> None:
        name = action_name(action)
        self.taken_count[name] = self.taken_count.get(name, 0) + 1
        self.transitions += 1
        if self.triggers:
            self._trigger(state, action, next_state)

    def _trigger(self, state: State, action: Action, nxt: State) -> None:
        for name, trigger in self.triggers:
            if holds(f"{name} (trigger)", trigger, state, action, nxt):
                self.trigger_hits[name] += 1

    def spawn(self) -> Coverage:
        return Coverage(self.model, self.props)

    def shared_counts(self) -> dict[str, Any]:
        return self.counts()

    def merge_counts(self, counts: dict[str, Any]) -> None:
        self.carried.merge(counts)

    def liveness_counts(self, name: str, evaluated: int, exercised: int) -> None:
        self.liveness[name] = [evaluated, exercised]

    # -- the report ----------------------------------------------------------------------------
    def report(self) -> CoverageReport:
        out = CoverageReport()
        for name in self.universe:
            out.actions[name] = [0, 0]
        for name in {*self.enabled, *self.taken_count}:
            out.actions.setdefault(name, [0, 0])
            out.actions[name][0] += self.enabled.get(name, 0)
            out.actions[name][1] += self.taken_count.get(name, 0)
        for prop in self.props.invariants:
            hits = self.guard_hits.get(prop.name, self.states)
            out.properties[prop.name] = [self.states, hits]
        for prop in self.props.steps:
            hits = self.trigger_hits.get(prop.name, self.transitions)
            out.properties[prop.name] = [self.transitions, hits]
        for prop in self.props.liveness:
            out.properties[prop.name] = list(self.liveness.get(prop.name, [0, 0]))
        out.merge(self.carried.to_json())
        return out

    def counts(self) -> dict[str, Any]:
        """Plain counts to ship to the driver or save in a checkpoint."""
        return self.report().to_json()


def vacuity(
    report: CoverageReport,
    inactive: Sequence[str] = (),
    judge_liveness: bool = True,
    complete: bool = True,
    recovery: Sequence[str] = (),
) -> list[str]:
    """One line per action never taken and per property never exercised; a search that stopped before
    the end (its first violation, a bound, an interrupt) says so: what it did not reach may be reachable.
    A recovery action (Model.recovery_actions) never taken was never needed: see never_needed."""
    out = []
    never = "never" if complete else "not"
    before = "" if complete else " before the search stopped"
    for name, (_enabled, taken) in report.actions.items():
        if taken == 0 and name not in inactive and name not in recovery:
            out.append(f"action {name} was {never} taken{before}")
        elif taken and name in inactive:  # the model's declaration is wrong: its config does not turn it off
            out.append(f"action {name} was taken {taken:,} times, though the model declares it inactive in this config")
    for name, (evaluated, exercised) in report.properties.items():
        if evaluated and exercised == 0:
            why = f"its guard or trigger never held in {evaluated:,} checks"
            out.append(f"property {name} was {never} exercised{before} ({why})")
        elif not evaluated and judge_liveness:
            out.append(f"property {name} was never evaluated")
    return out


def never_needed(report: CoverageReport, recovery: Sequence[str]) -> list[str]:
    """The recovery actions the search never took: nothing it reached called for them."""
    return [name for name, (_enabled, taken) in report.actions.items() if taken == 0 and name in recovery]


def vacuity_failures(result: CheckResult, allowed: Sequence[str] = ()) -> list[str]:
    """What --fail-on-vacuity fails on: a run that found a violation stopped early (and exits 1
    anyway), so only a run without one is judged. ``allowed``: names declared vacuous on purpose."""
    if result.violations:
        return []
    return [line for line in result.vacuity if line.split(" ")[1] not in allowed]


class GraphRecorder(SearchObserver):
    """The explored graph, for the liveness check that follows a search: every expanded state's
    successors, in discovery order, and the states reached but not expanded."""

    def __init__(self) -> None:
        self.order: dict[State, None] = {}
        self.edges: dict[State, Sequence[tuple[Action, State]]] = {}
        self.graph: ExploredGraph | None = None
        """Set by an engine that keeps the graph itself, as integer arrays (bfs); its hooks then record nothing."""

    def state(self, state: State) -> None:
        self.order[state] = None

    def expanded(self, state: State, successors: Sequence[tuple[Action, State]], all_taken: bool) -> None:
        self.edges[state] = successors

    def explored(self) -> ExploredGraph | tuple[dict[State, list[tuple[Action, State]]], set[State]]:
        """The graph in discovery order, and the states not expanded: those a bound cut off,
        including successors the search saw but did not keep (beyond --max-states)."""
        if self.graph is not None:
            return self.graph
        graph = {s: list(self.edges.get(s, ())) for s in self.order}
        for edges in self.edges.values():
            for _action, target in edges:
                if target not in graph:
                    graph[target] = []
        return graph, {s for s in graph if s not in self.edges}
