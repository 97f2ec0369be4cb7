"""Liveness: `eventually` and `leads_to` under weak and strong fairness, checked on the explored
state graph, with lasso counterexamples (a prefix, then a loop repeated forever).

A behaviour violates ``eventually(goal)`` if it never reaches a goal state; it violates
``leads_to(p, q)`` if it reaches a p-state after which q never holds. Only fair behaviours
count: under weak fairness of an action family A, a behaviour may not keep A enabled forever
without taking it; under strong fairness, it may not have A enabled infinitely often without
taking it. As in TLA+, a behaviour may also stop (stutter forever) in any state where no action
under fairness is enabled: with no fairness declared, that is every state.

The search (after Emerson and Lei): restrict the graph to states where the goal does not hold,
split it into strongly connected components (networkx), and refine each component until it is
fair. A component is strongly fair for A if it takes an A step inside, or, after removing the
states where A is enabled, a smaller component is; it is weakly fair for A if it takes an A step
inside or has a state where A is disabled. A fair component reachable from the start gives the
lasso: the shortest path to it, then a cycle through it that takes the steps fairness needs.
"""

from __future__ import annotations

import fnmatch
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import networkx as nx

from .bfs import explore
from .model import Action, Model, State
from .properties import PropertySet, holds
from .result import Trace, Violation

Graph = dict[Hashable, list[tuple[Action, Hashable]]]


@dataclass(frozen=True)
class Fairness:
    """Weak (WF) or strong (SF) fairness of the actions whose names match ``pattern`` (and whose
    arguments include ``args``). With ``each``, one constraint per distinct action of the family
    (TLA+'s \\A i: WF(A(i))) instead of one for the family as a whole (WF(\\E i: A(i)))."""

    kind: Literal["weak", "strong"]
    pattern: str
    args: tuple[tuple[str, Any], ...] = ()
    each: bool = False
    _matched: dict[Action, bool] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)
    """Memo of :meth:`matches`: a graph has few distinct actions, and the search asks about each
    one millions of times."""

    def matches(self, action: Action) -> bool:
        known = self._matched.get(action)
        if known is None:
            known = self._matched[action] = self._match(action)
        return known

    def _match(self, action: Action) -> bool:
        if not fnmatch.fnmatchcase(action.name, self.pattern):
            return False
        given = dict(action[1])
        return all(given.get(k) == v for k, v in self.args)

    def __str__(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.args)
        return f"{'WF' if self.kind == 'weak' else 'SF'}({self.pattern}{args}{', each' if self.each else ''})"


def WF(pattern: str, *, each: bool = False, **args: Any) -> Fairness:
    """Weak fairness of an action family: a name or a pattern (``Follower*``), optionally with arguments."""
    return Fairness("weak", pattern, tuple(args.items()), each)


def SF(pattern: str, *, each: bool = False, **args: Any) -> Fairness:
    """Strong fairness of an action family."""
    return Fairness("strong", pattern, tuple(args.items()), each)


def expand_fairness(graph: Graph, fairness: Sequence[Fairness]) -> list[Fairness]:
    """Split each ``each`` constraint into one per distinct action of its family in the graph."""
    result: list[Fairness] = []
    distinct = {a for edges in graph.values() for a, _ in edges} if any(f.each for f in fairness) else set()
    for fair in fairness:
        if not fair.each:
            result.append(fair)
            continue
        actions = sorted((a for a in distinct if fair.matches(a)), key=repr)
        result.extend(Fairness(fair.kind, a.name, a[1]) for a in actions)
    return result


@dataclass
class Lasso:
    states: list[State]
    actions: list[Action | None]
    loop: int

    def trace(self) -> Trace:
        return Trace(states=self.states, actions=self.actions, loop=self.loop)


class StateGraph:
    """The explored graph with the helpers the liveness search needs."""

    def __init__(
        self,
        model: Model,
        graph: Graph,
        complete: bool = True,
        labels: dict[Hashable, list[Action]] | None = None,
        inits: list[Hashable] | None = None,
    ) -> None:
        self.model = model
        self.edges = graph
        self.complete = complete
        self.labels = labels if labels is not None else {s: [a for a, _ in edges] for s, edges in graph.items()}
        """Every action enabled in a state, including those whose target a bound cut off."""
        self.inits = inits if inits is not None else [s for s in model.init_states() if s in graph]
        self.order = {s: i for i, s in enumerate(graph)}  # BFS order: deterministic, shortest first

        self._fair_actions: dict[int, tuple[Sequence[Fairness], frozenset[Action]]] = {}

    def enabled(self, state: Hashable, fairness: Fairness) -> bool:
        return any(fairness.matches(a) for a in self.labels[state])

    def fair_actions(self, fairness: Sequence[Fairness]) -> frozenset[Action]:
        """The actions of the graph that some constraint of ``fairness`` covers (one list per check)."""
        known = self._fair_actions.get(id(fairness))
        if known is None or known[0] is not fairness:
            distinct = {a for actions in self.labels.values() for a in actions}
            known = (fairness, frozenset(a for a in distinct if any(f.matches(a) for f in fairness)))
            self._fair_actions[id(fairness)] = known
        return known[1]

    def subgraph(self, nodes: set[Hashable]) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(nodes)
        edges = self.edges
        g.add_edges_from((s, t) for s in nodes for _a, t in edges[s] if t in nodes)
        return g


def can_stutter(sg: StateGraph, state: Hashable, fairness: Sequence[Fairness]) -> bool:
    """Whether a behaviour may stay in ``state`` forever: no action under fairness is enabled."""
    fair = sg.fair_actions(fairness)
    return not any(a in fair for a in sg.labels[state])


def _fair_component(sg: StateGraph, nodes: set[Hashable], fairness: Sequence[Fairness]) -> set[Hashable] | None:
    """A set of states containing a fair cycle, or a single state that may stutter forever; None if none."""
    stutters = [s for s in nodes if can_stutter(sg, s, fairness)]
    if stutters:
        return {min(stutters, key=sg.order.__getitem__)}  # the first in BFS order: the same lasso every run
    graph = sg.subgraph(nodes)
    for component in sorted(nx.strongly_connected_components(graph), key=lambda c: min(sg.order[s] for s in c)):
        comp = set(component)
        if len(comp) == 1:
            (only,) = comp
            if not graph.has_edge(only, only):
                continue
        found = _refine(sg, comp, fairness)
        if found is not None:
            return found
    return None


def _taken_inside(sg: StateGraph, comp: set[Hashable], fairness: Fairness) -> bool:
    return any(fairness.matches(a) and t in comp for s in comp for a, t in sg.edges[s])


def _refine(sg: StateGraph, comp: set[Hashable], fairness: Sequence[Fairness]) -> set[Hashable] | None:
    for fair in fairness:
        if fair.kind != "strong" or _taken_inside(sg, comp, fair):
            continue
        enabled_here = {s for s in comp if sg.enabled(s, fair)}
        if enabled_here:  # visit those states infinitely often and A must be taken: avoid them
            return _fair_component(sg, comp - enabled_here, fairness)
    for fair in fairness:
        if fair.kind == "weak" and not _taken_inside(sg, comp, fair) and all(sg.enabled(s, fair) for s in comp):
            return None
    return comp


def _shortest_path(sg: StateGraph, sources: Iterable[Hashable], targets: set[Hashable],
                   allowed: Callable[[Hashable], bool]) -> list[tuple[Action | None, Hashable]] | None:  # fmt: skip
    """BFS from any source to any target through allowed states: [(None, s0), (a1, s1), ...]."""
    parent: dict[Hashable, tuple[Hashable | None, Action | None]] = {}
    queue: deque[Hashable] = deque()
    for s in sources:
        if s not in parent and allowed(s):
            parent[s] = (None, None)
            queue.append(s)
    while queue:
        s = queue.popleft()
        if s in targets:
            path: list[tuple[Action | None, Hashable]] = []
            cur: Hashable | None = s
            while cur is not None:
                up, action = parent[cur]
                path.append((action, cur))
                cur = up
            return path[::-1]
        for a, t in sg.edges[s]:
            if t not in parent and allowed(t):
                parent[t] = (s, a)
                queue.append(t)
    return None


def _reaching(sg: StateGraph, region: set[Hashable], comp: set[Hashable]) -> set[Hashable]:
    """The states of ``region`` from which ``comp`` can be reached inside ``region``."""
    reverse: dict[Hashable, list[Hashable]] = {}
    for s in region:
        for _a, t in sg.edges[s]:
            if t in region:
                reverse.setdefault(t, []).append(s)
    seen = set(comp)
    queue = deque(comp)
    while queue:
        t = queue.popleft()
        for s in reverse.get(t, ()):
            if s not in seen:
                seen.add(s)
                queue.append(s)
    return seen


def _cycle(sg: StateGraph, start: Hashable, comp: set[Hashable],
           fairness: Sequence[Fairness]) -> list[tuple[Action, Hashable]]:  # fmt: skip
    """Steps from ``start`` back to ``start`` inside ``comp`` that take what fairness requires."""
    if len(comp) == 1 and can_stutter(sg, start, fairness):
        return []  # the loop is the state stuttering
    inside = comp.__contains__
    steps: list[tuple[Action, Hashable]] = []
    here = start
    visited = [start]
    taken: list[Action] = []

    def satisfied(fair: Fairness) -> bool:
        if any(fair.matches(a) for a in taken):
            return True
        return fair.kind == "weak" and any(not sg.enabled(s, fair) for s in visited)

    def walk(target: Hashable) -> None:
        nonlocal here
        path = _shortest_path(sg, [here], {target}, inside)
        assert path is not None
        for a, s in path[1:]:
            steps.append((a, s))  # type: ignore[arg-type]
            taken.append(a)  # type: ignore[arg-type]
            visited.append(s)
        here = target

    ordered = sorted(comp, key=sg.order.__getitem__)  # never a set's order: the same lasso every run
    for fair in fairness:
        if satisfied(fair):
            continue
        edge = next(((s, a, t) for s in ordered for a, t in sg.edges[s] if fair.matches(a) and t in comp), None)
        if edge is not None:
            source, action, target = edge
            walk(source)
            steps.append((action, target))
            taken.append(action)
            visited.append(target)
            here = target
        else:  # weak fairness, met in a state where the family is disabled (_refine made sure one exists)
            walk(next(s for s in ordered if not sg.enabled(s, fair)))
    if here != start or not steps:
        # back to the start (at least one step, so a cycle)
        if here == start:
            a, t = next((a, t) for a, t in sg.edges[start] if t in comp)
            steps.append((a, t))
            here = t
        path = _shortest_path(sg, [here], {start}, inside)
        assert path is not None
        steps.extend((a, s) for a, s in path[1:])  # type: ignore[misc]
    return steps


def find_lasso(sg: StateGraph, start_states: Sequence[Hashable], avoid: Callable[[Hashable], bool],
               fairness: Sequence[Fairness]) -> Lasso | None:  # fmt: skip
    """A fair behaviour from one of ``start_states`` that stays in states where ``avoid`` is false
    forever, as a lasso whose prefix starts at an initial state, or None."""
    region: set[Hashable] = set()
    queue = deque(s for s in start_states if not avoid(s))
    region.update(queue)
    while queue:
        s = queue.popleft()
        for _a, t in sg.edges[s]:
            if t not in region and not avoid(t):
                region.add(t)
                queue.append(t)
    if not region:
        return None
    comp = _fair_component(sg, region, fairness)
    if comp is None:
        return None
    # prefix: initial state -> a start state (through anything) -> the component (avoiding the goal)
    starts = set(start_states) & region
    reach_comp = _reaching(sg, region, comp)
    to_start = _shortest_path(sg, sg.inits, starts & reach_comp, lambda _s: True)
    assert to_start is not None
    to_comp = _shortest_path(sg, [to_start[-1][1]], comp, lambda s: s in region)
    assert to_comp is not None
    prefix = to_start + to_comp[1:]
    entry = prefix[-1][1]
    loop_steps = _cycle(sg, entry, comp, fairness)
    states = [s for _a, s in prefix] + [s for _a, s in loop_steps]
    actions = [a for a, _s in prefix] + [a for a, _s in loop_steps]
    loop_index = len(prefix) - 1
    if loop_steps:  # the last state is the entry again: drop it, the loop returns to the entry
        states.pop()
        actions.pop()
    return Lasso(states=states, actions=actions, loop=loop_index)


@dataclass
class LivenessOutcome:
    violations: list[Violation]
    warnings: list[str]
    states: int
    complete: bool
    counts: dict[str, list[int]] = field(default_factory=dict)
    """Per property: [states evaluated, states where it was exercised (goal reached, trigger held)]."""


def check_liveness(
    model: Model, props: PropertySet, max_states: int | None = None, explored: tuple[Any, set[Any]] | None = None
) -> LivenessOutcome:
    """Check every liveness property of ``props`` on the model's explored state graph (``explored``:
    the graph and its unexpanded states as a search kept them; by default, explored here)."""
    explored, unexpanded = explored if explored is not None else explore(model, max_states)
    complete = not unexpanded
    # The search runs on state numbers (in BFS order), not on the states: every set, dictionary and
    # networkx graph of it then hashes small ints instead of deep tuples.
    states = list(explored)
    number = {state: i for i, state in enumerate(states)}
    labels = {i: [a for a, _ in explored[state]] for i, state in enumerate(states)}
    """Every action enabled in a state, including those whose target a bound cut off."""
    cut = {number[state] for state in unexpanded}
    graph: Graph = {}
    for i, state in enumerate(states):
        if i not in cut:
            # An action into an unexpanded state stays enabled where it was (so no behaviour may stop
            # there), but no cycle can take it: nothing is known of that state's future.
            graph[i] = [(a, j) for a, t in explored[state] if (j := number[t]) not in cut]
    inits = [number[s] for s in model.init_states() if s in number and number[s] in graph]
    sg = StateGraph(model, graph, complete, labels, inits)
    fairness = expand_fairness(graph, props.fairness)
    warnings: list[str] = []
    if not complete:
        warnings.append(
            f"liveness checked on {len(graph):,} expanded states only (a bound cut the graph): "
            "a behaviour that leaves them is not considered, so a 'holds' is unsound"
        )
    violations: list[Violation] = []
    counts: dict[str, list[int]] = {}
    for prop in props.liveness:
        goal = prop.bind(model)
        reached = [holds(prop.name, goal, states[i]) for i in range(len(states))]
        if prop.kind == "eventually":
            if all(reached[i] for i in sg.inits):
                warnings.append(f"{prop.name} is trivially true: it holds in every initial state")
            lasso = find_lasso(sg, sg.inits, reached.__getitem__, fairness)
            counts[prop.name] = [len(states), sum(reached)]
        else:
            trigger = prop.bind_trigger(model)
            triggered = [i for i in graph if holds(prop.name, trigger, states[i])]
            if not triggered:
                warnings.append(f"{prop.name} is trivially true: its trigger holds in no reachable state")
            counts[prop.name] = [len(graph), len(triggered)]
            starts = [i for i in triggered if not reached[i]]
            lasso = find_lasso(sg, starts, reached.__getitem__, fairness) if starts else None
        if lasso is not None:
            lasso.states = [states[i] for i in lasso.states]
            violations.append(Violation(property=prop.name, kind="liveness", trace=lasso.trace()))
    return LivenessOutcome(violations, warnings, len(graph), complete, counts)
