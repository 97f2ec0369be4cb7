"""Liveness: `eventually` and `leads_to` under weak and strong fairness, checked on the explored
state graph, with lasso counterexamples (a prefix, then a loop repeated forever).

A behaviour violates ``eventually(goal)`` if it never reaches a goal state; it violates
``leads_to(p, q)`` if it reaches a p-state after which q never holds. Only fair behaviours
count: under weak fairness of an action family A, a behaviour may not keep A enabled forever
without taking it; under strong fairness, it may not have A enabled infinitely often without
taking it. As in TLA+, a behaviour may also stop (stutter forever) in any state where no action
under fairness is enabled: with no fairness declared, that is every state.

The search (after Emerson and Lei): restrict the graph to states where the goal does not hold,
split it into strongly connected components, and refine each component until it is fair. A
component is strongly fair for A if it takes an A step inside, or, after removing the states
where A is enabled, a smaller component is; it is weakly fair for A if it takes an A step inside
or has a state where A is disabled. A fair component reachable from the start gives the lasso:
the shortest path to it, then a cycle through it that takes the steps fairness needs.

Everything runs on the graph as the search kept it (:class:`~.bfs.ExploredGraph`: state numbers,
successor rows and action numbers in flat arrays) with byte masks for sets of states, so a graph
of millions of states costs a few bytes a state here, and no recursion deepens with the graph.
"""

from __future__ import annotations

import fnmatch
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kmc.checker.model import Action, Model, State
from kmc.checker.properties import PropertySet, holds
from kmc.checker.result import Trace, Violation
from kmc.checker.search.explored import ExploredGraph, explore_rows


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
    """Memo of :meth:`matches`: a graph has few distinct actions, and checks ask about each often."""

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


def expand_fairness(graph: ExploredGraph, fairness: Sequence[Fairness]) -> list[Fairness]:
    """Split each ``each`` constraint into one per distinct action of its family that the graph
    takes between expanded states (an action only ever leading past a bound is no cycle's step)."""
    result: list[Fairness] = []
    distinct: set[Action] = set()
    if any(f.each for f in fairness):
        np = _numpy()
        targets = np.frombuffer(graph.targets, dtype=np.int32)
        cut = np.frombuffer(graph.cut, dtype=np.uint8)
        ids = _ids(graph)
        inside = ids[cut[targets] == 0] if len(targets) else ids
        distinct = {graph.actions[i] for i in np.unique(inside).tolist()}
    for fair in fairness:
        if not fair.each:
            result.append(fair)
            continue
        actions = sorted((a for a in distinct if fair.matches(a)), key=repr)
        result.extend(Fairness(fair.kind, a.name, a[1]) for a in actions)
    return result


def _numpy() -> Any:
    import numpy  # only a liveness check needs it, not every kmc start-up

    return numpy


def _ids(graph: ExploredGraph) -> Any:
    """The edges' action numbers as a numpy view (no copy)."""
    np = _numpy()
    dtype = {"B": np.uint8, "H": np.uint16, "i": np.int32}[graph.action_ids.typecode]
    return np.frombuffer(graph.action_ids, dtype=dtype)


@dataclass
class Lasso:
    states: list[State]
    actions: list[Action | None]
    loop: int

    def trace(self) -> Trace:
        return Trace(states=self.states, actions=self.actions, loop=self.loop)


Steps = list[tuple[int, int]]
"""Steps of a path as (action number or -1 for the first state, state number)."""


class LivenessSearch:
    """The fair-cycle search for one list of fairness constraints on one explored graph.

    Sets of states are byte masks over the state numbers; the strongly connected components are
    found by Pearce's iterative algorithm (one array of ``rindex``, no recursion), so the memory
    is a few bytes a state and a path of millions of states needs no deeper a Python stack than a
    path of two."""

    def __init__(self, graph: ExploredGraph, inits: list[int], fairness: Sequence[Fairness]) -> None:
        self.graph = graph
        self.inits = inits
        self.fairness = list(fairness)
        self.offsets = graph.offsets
        self.targets = graph.targets
        self.action_ids = graph.action_ids
        self.cut = graph.cut
        self.n = graph.n
        actions = graph.actions
        self.matching = [frozenset(i for i, a in enumerate(actions) if f.matches(a)) for f in self.fairness]
        """Per constraint, the numbers of the actions it covers."""
        fair = bytearray(len(actions))
        for ids in self.matching:
            for i in ids:
                fair[i] = 1
        self.stutters = self._rows_without(fair)
        """Per state, 1 if no action under fairness is enabled there: a behaviour may stop in it."""
        self.rindex = array("i", [0]) * self.n
        """Scratch space of the component search, reset for the states of each call."""

    def _rows_without(self, per_action: bytearray) -> bytearray:
        """Per state, 1 if none of its edges has an action marked in ``per_action``."""
        np = _numpy()
        n = self.n
        offsets = np.frombuffer(self.offsets, dtype=np.int64 if self.offsets.typecode == "q" else np.int32)
        if not len(self.targets):
            return bytearray(b"\x01" * n)
        marked = np.frombuffer(per_action, dtype=np.uint8)[_ids(self.graph)]
        marked = np.append(marked, np.uint8(0))  # reduceat needs every row start inside the array
        starts = offsets[:-1]
        any_marked = np.maximum.reduceat(marked, starts)
        any_marked[offsets[1:] == starts] = 0  # an empty row: reduceat gave the next row's first edge
        return bytearray((any_marked == 0).astype(np.uint8).tobytes())

    # -- sets of states ----------------------------------------------------------------------------
    def region(self, starts: Iterable[int], avoid: bytearray) -> tuple[array, bytearray]:
        """The states reachable from ``starts`` through expanded states where ``avoid`` is 0: their
        numbers (in the order found) and their mask."""
        offsets, targets, cut = self.offsets, self.targets, self.cut
        inside = bytearray(self.n)
        nodes = array("i")
        for s in starts:
            if not avoid[s] and not inside[s]:
                inside[s] = 1
                nodes.append(s)
        i = 0
        while i < len(nodes):
            s = nodes[i]
            i += 1
            for t in targets[offsets[s] : offsets[s + 1]]:
                if not inside[t] and not avoid[t] and not cut[t]:
                    inside[t] = 1
                    nodes.append(t)
        return nodes, inside

    def components(self, nodes: Sequence[int], inside: bytearray) -> Iterator[tuple[int, int, array]]:
        """The strongly connected components of the graph restricted to ``inside`` that hold a cycle
        (more than one state, or one with a step to itself), as (smallest number, component id,
        states), by smallest number. The id is the states' ``rindex`` until the next call.

        Pearce's algorithm (PEA_FIND_SCC2), iterative: a state's ``rindex`` is its visiting index
        while it is open and its component id once done; ids count down from above every index."""
        offsets, targets, rindex = self.offsets, self.targets, self.rindex
        for v in nodes:
            rindex[v] = 0
        index = 1
        component = len(nodes) + 1
        # The components found, flat: their states one after the other (no object per component).
        members = array("i")
        starts = array("i")
        smallests = array("i")
        ids = array("i")
        dfs = array("i")  # the open states, each with its next edge and whether it is still a root
        edge = array(offsets.typecode)
        root = bytearray()
        done = array("i")  # Pearce's stack S: finished states whose component is still open
        for start in nodes:
            if rindex[start]:
                continue
            rindex[start] = index
            index += 1
            dfs.append(start)
            edge.append(offsets[start])
            root.append(1)
            while dfs:
                v = dfs[-1]
                e = edge[-1]
                end = offsets[v + 1]
                low = rindex[v]
                is_root = root[-1]
                descended = False
                while e < end:
                    w = targets[e]
                    e += 1
                    if not inside[w]:
                        continue
                    rw = rindex[w]
                    if rw == 0:  # a new state: open it, come back to v's next edge later
                        edge[-1] = e
                        rindex[v] = low
                        root[-1] = is_root
                        rindex[w] = index
                        index += 1
                        dfs.append(w)
                        edge.append(offsets[w])
                        root.append(1)
                        descended = True
                        break
                    if rw < low:
                        low = rw
                        is_root = 0
                if descended:
                    continue
                dfs.pop()
                edge.pop()
                root.pop()
                if is_root:
                    index -= 1
                    if done and low <= rindex[done[-1]]:
                        starts.append(len(members))
                        ids.append(component)
                        members.append(v)
                        smallest = v
                        while done and low <= rindex[done[-1]]:
                            w = done.pop()
                            rindex[w] = component
                            index -= 1
                            members.append(w)
                            if w < smallest:
                                smallest = w
                        smallests.append(smallest)
                    elif v in targets[offsets[v] : offsets[v + 1]]:
                        starts.append(len(members))
                        ids.append(component)
                        members.append(v)
                        smallests.append(v)
                    rindex[v] = component
                    component -= 1
                    low = rindex[v]
                else:
                    rindex[v] = low
                    done.append(v)
                if dfs and low < rindex[dfs[-1]]:
                    rindex[dfs[-1]] = low
                    root[-1] = 0
        starts.append(len(members))
        np = _numpy()
        for position in np.argsort(np.frombuffer(smallests, dtype=np.int32), kind="stable"):
            c = int(position)
            yield smallests[c], ids[c], members[starts[c] : starts[c + 1]]

    def enabled(self, state: int, covered: frozenset[int]) -> bool:
        """Whether an action of ``covered`` is enabled in ``state`` (an edge past a bound counts)."""
        return not covered.isdisjoint(self.action_ids[self.offsets[state] : self.offsets[state + 1]])

    # -- the fair-cycle search ---------------------------------------------------------------------
    def fair_component(self, nodes: Sequence[int], inside: bytearray) -> array | None:
        """States holding a fair cycle (sorted), or a single state that may stutter forever; None if none."""
        stutters = self.stutters
        first = min((v for v in nodes if stutters[v]), default=None)
        if first is not None:
            return array("i", [first])  # the first in BFS order: the same lasso every run
        for _smallest, component, states in self.components(nodes, inside):
            found = self._refine(states, component, inside)
            if found is not None:
                return found
        return None

    def _refine(self, states: array, component: int, inside: bytearray) -> array | None:
        offsets, targets, action_ids, rindex = self.offsets, self.targets, self.action_ids, self.rindex
        taken: set[int] = set()  # the actions of the steps inside the component
        for v in states:
            lo, hi = offsets[v], offsets[v + 1]
            for t, a in zip(targets[lo:hi], action_ids[lo:hi], strict=True):
                if rindex[t] == component and inside[t]:
                    taken.add(a)
        for fair, covered in zip(self.fairness, self.matching, strict=True):
            if fair.kind != "strong" or not covered.isdisjoint(taken):
                continue
            rest = array("i", (v for v in states if not self.enabled(v, covered)))
            if len(rest) < len(states):  # visit the others infinitely often and A must be taken: avoid them
                smaller = bytearray(self.n)
                for v in rest:
                    smaller[v] = 1
                return self.fair_component(rest, smaller)
        # Weak fairness of A fails if A is never taken inside yet enabled in every state: keep the
        # constraints not taken, and drop each at the first state where it is disabled.
        single: set[int] = set()
        several: list[frozenset[int]] = []
        for fair, covered in zip(self.fairness, self.matching, strict=True):
            if fair.kind == "weak" and covered and covered.isdisjoint(taken):
                if len(covered) == 1:
                    single |= covered
                else:
                    several.append(covered)
        for v in states:
            if not single and not several:
                break
            labels = set(action_ids[offsets[v] : offsets[v + 1]])
            single &= labels
            several = [c for c in several if not c.isdisjoint(labels)]
        if single or several:
            return None
        return array("i", sorted(states))

    # -- the lasso ---------------------------------------------------------------------------------
    def find_lasso(self, start_states: Sequence[int], avoid: bytearray) -> tuple[Steps, Steps] | None:
        """A fair behaviour from one of ``start_states`` that stays in states where ``avoid`` is 0
        forever, as a prefix from an initial state and a loop back to the prefix's last state; None
        if there is none."""
        nodes, region = self.region(start_states, avoid)
        if not nodes:
            return None
        comp = self.fair_component(nodes, region)
        if comp is None:
            return None
        in_comp = bytearray(self.n)
        for v in comp:
            in_comp[v] = 1
        # prefix: initial state -> a start state (through anything) -> the component (avoiding the goal)
        reach = self._reaching(nodes, region, comp)
        wanted = bytearray(self.n)
        for s in start_states:
            if region[s] and reach[s]:
                wanted[s] = 1
        to_start = self._shortest_path(self.inits, wanted, None)
        assert to_start is not None
        to_comp = self._shortest_path([to_start[-1][1]], in_comp, region)
        assert to_comp is not None
        return to_start + to_comp[1:], self._cycle(to_comp[-1][1], comp, in_comp)

    def _reaching(self, nodes: array, region: bytearray, comp: array) -> bytearray:
        """The states of ``region`` from which ``comp`` can be reached inside ``region``."""
        np = _numpy()
        offsets = np.frombuffer(self.offsets, dtype=np.int64 if self.offsets.typecode == "q" else np.int32)
        targets = np.frombuffer(self.targets, dtype=np.int32)
        inside = np.frombuffer(region, dtype=np.uint8).astype(bool)
        sources = np.repeat(np.arange(self.n, dtype=np.int32), np.diff(offsets))
        keep = inside[sources] & inside[targets]
        sources, ends = sources[keep], targets[keep]
        order = np.argsort(ends, kind="stable")
        back = sources[order]  # predecessors, grouped by the state they lead to
        back_offsets = np.concatenate(([0], np.cumsum(np.bincount(ends, minlength=self.n))))
        seen = bytearray(self.n)
        queue = deque(comp)
        for v in comp:
            seen[v] = 1
        while queue:
            t = queue.popleft()
            for s in back[back_offsets[t] : back_offsets[t + 1]].tolist():
                if not seen[s]:
                    seen[s] = 1
                    queue.append(s)
        return seen

    def _shortest_path(self, sources: Iterable[int], targets: bytearray, allowed: bytearray | None) -> Steps | None:
        """BFS from any source to any target through allowed states (all, for None): the first edge
        in row order wins, so the path is the same every run."""
        offsets, succ, action_ids, cut = self.offsets, self.targets, self.action_ids, self.cut
        parent: dict[int, tuple[int, int]] = {}
        queue: deque[int] = deque()
        for s in sources:
            if s not in parent and (allowed is None or allowed[s]):
                parent[s] = (-1, -1)
                queue.append(s)
        while queue:
            s = queue.popleft()
            if targets[s]:
                path: Steps = []
                cur = s
                while cur != -1:
                    up, action = parent[cur]
                    path.append((action, cur))
                    cur = up
                return path[::-1]
            for e in range(offsets[s], offsets[s + 1]):
                t = succ[e]
                if not cut[t] and t not in parent and (allowed is None or allowed[t]):
                    parent[t] = (s, action_ids[e])
                    queue.append(t)
        return None

    def _cycle(self, start: int, comp: array, in_comp: bytearray) -> Steps:
        """Steps from ``start`` back to ``start`` inside ``comp`` that take what fairness requires."""
        if len(comp) == 1 and self.stutters[start]:
            return []  # the loop is the state stuttering
        offsets, succ, action_ids = self.offsets, self.targets, self.action_ids
        steps: Steps = []
        here = start
        visited = [start]
        taken: set[int] = set()

        def satisfied(fair: Fairness, covered: frozenset[int]) -> bool:
            if not covered.isdisjoint(taken):
                return True
            return fair.kind == "weak" and any(not self.enabled(s, covered) for s in visited)

        def walk(target: int) -> None:
            nonlocal here
            goal = bytearray(self.n)
            goal[target] = 1
            path = self._shortest_path([here], goal, in_comp)
            assert path is not None
            for a, s in path[1:]:
                steps.append((a, s))
                taken.add(a)
                visited.append(s)
            here = target

        for fair, covered in zip(self.fairness, self.matching, strict=True):
            if satisfied(fair, covered):
                continue
            edge = next(
                (
                    (s, action_ids[e], succ[e])
                    for s in comp
                    for e in range(offsets[s], offsets[s + 1])
                    if action_ids[e] in covered and in_comp[succ[e]]
                ),
                None,
            )
            if edge is not None:
                source, action, target = edge
                walk(source)
                steps.append((action, target))
                taken.add(action)
                visited.append(target)
                here = target
            else:  # weak fairness, met in a state where the family is disabled (_refine made sure one exists)
                walk(next(s for s in comp if not self.enabled(s, covered)))
        if here != start or not steps:
            # back to the start (at least one step, so a cycle)
            if here == start:
                e = next(e for e in range(offsets[start], offsets[start + 1]) if in_comp[succ[e]])
                steps.append((action_ids[e], succ[e]))
                here = succ[e]
            goal = bytearray(self.n)
            goal[start] = 1
            path = self._shortest_path([here], goal, in_comp)
            assert path is not None
            steps.extend(path[1:])
        return steps

    def lasso(self, found: tuple[Steps, Steps]) -> Lasso:
        """The states and actions of a prefix and loop of state numbers."""
        prefix, loop_steps = found
        numbers = [s for _a, s in prefix] + [s for _a, s in loop_steps]
        action_numbers = [a for a, _s in prefix] + [a for a, _s in loop_steps]
        loop_index = len(prefix) - 1
        if loop_steps:  # the last state is the entry again: drop it, the loop returns to the entry
            numbers.pop()
            action_numbers.pop()
        states = self.graph.states_at(numbers)
        actions = self.graph.actions
        return Lasso(
            states=[states[i] for i in numbers],
            actions=[None if a == -1 else actions[a] for a in action_numbers],
            loop=loop_index,
        )


@dataclass
class LivenessOutcome:
    violations: list[Violation]
    warnings: list[str]
    states: int
    complete: bool
    counts: dict[str, list[int]] = field(default_factory=dict)
    """Per property: [states evaluated, states where it was exercised (goal reached, trigger held)]."""


def check_liveness(
    model: Model,
    props: PropertySet,
    max_states: int | None = None,
    explored: ExploredGraph | tuple[dict[State, list[tuple[Action, State]]], set[State]] | None = None,
) -> LivenessOutcome:
    """Check every liveness property of ``props`` on the model's explored state graph (``explored``:
    the graph a search kept, as arrays or as adjacency lists and the states left unexpanded; by
    default, explored here)."""
    if explored is None:
        graph = explore_rows(model, max_states)
    elif isinstance(explored, ExploredGraph):
        graph = explored
    else:
        graph = ExploredGraph.from_adjacency(*explored)
    cut = graph.cut
    expanded = graph.n - cut.count(1)
    # An action into an unexpanded state stays enabled where it was (so no behaviour may stop there),
    # but no cycle can take it: nothing is known of that state's future.
    inits = [i for s in model.init_states() if (i := graph.number(s)) is not None and not cut[i]]
    search = LivenessSearch(graph, inits, expand_fairness(graph, props.fairness))
    warnings: list[str] = []
    if not graph.complete:
        warnings.append(
            f"liveness checked on {expanded:,} expanded states only (a bound cut the graph): "
            "a behaviour that leaves them is not considered, so a 'holds' is unsound"
        )
    violations: list[Violation] = []
    counts: dict[str, list[int]] = {}
    for prop in props.liveness:
        goal = prop.bind(model)
        name = prop.name
        reached = bytearray(holds(name, goal, s) for s in graph.states())
        if prop.kind == "eventually":
            if all(reached[i] for i in inits):
                warnings.append(f"{prop.name} is trivially true: it holds in every initial state")
            found = search.find_lasso(inits, reached)
            counts[prop.name] = [graph.n, reached.count(1)]
        else:
            trigger = prop.bind_trigger(model)
            triggered = array("i", (i for i, s in enumerate(graph.states()) if not cut[i] and holds(name, trigger, s)))
            if not triggered:
                warnings.append(f"{prop.name} is trivially true: its trigger holds in no reachable state")
            counts[prop.name] = [expanded, len(triggered)]
            starts = array("i", (i for i in triggered if not reached[i]))
            found = search.find_lasso(starts, reached) if starts else None
        if found is not None:
            violations.append(Violation(property=prop.name, kind="liveness", trace=search.lasso(found).trace()))
    return LivenessOutcome(violations, warnings, expanded, graph.complete, counts)
