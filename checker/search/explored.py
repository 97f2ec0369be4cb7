"""The state graph a search explored, kept as integer arrays: what the liveness check runs on and
what `kmc graph` projects; and the plain breadth-first exploration that builds one on its own."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import Any

from kmc.checker.model import Action, Model, State
from kmc.checker.search.kernel import bounds_check, expand


class ExploredGraph:
    """The state graph a search explored, as integer arrays: what the liveness check runs on.

    States are numbered in discovery (BFS) order and ``index`` maps a state to its number (it is
    the BFS's own visited set, so nothing is stored twice). The successors of state ``i`` are
    ``targets[offsets[i]:offsets[i + 1]]``, taken by ``actions[action_ids[e]]`` (compressed sparse
    rows: 4 bytes an edge and 1 for its action while a model has at most 256 distinct actions).
    ``cut`` marks the states no search expanded (a bound cut them off); their rows are empty."""

    def __init__(
        self,
        index: dict[State, int],
        extra: dict[State, int],
        offsets: array,
        targets: array,
        action_ids: array,
        actions: list[Action],
        cut: bytearray,
    ) -> None:
        self.index = index
        self.extra = extra
        """States reached but beyond ``--max-states``: numbered after ``index``, never expanded."""
        self.offsets = offsets
        self.targets = targets
        self.action_ids = action_ids
        self.actions = actions
        self.cut = cut

    @property
    def n(self) -> int:
        return len(self.index) + len(self.extra)

    @property
    def complete(self) -> bool:
        return 1 not in self.cut

    def states(self) -> Iterator[State]:
        """Every state, in number order."""
        yield from self.index
        yield from self.extra

    def number(self, state: State) -> int | None:
        found = self.index.get(state)
        return found if found is not None else self.extra.get(state)

    def states_at(self, numbers: Iterable[int]) -> dict[int, State]:
        """The states with these numbers (one pass over the visited set: for a trace, not in a loop)."""
        wanted = set(numbers)
        found: dict[int, State] = {}
        for i, state in enumerate(self.states()):
            if i in wanted:
                found[i] = state
                if len(found) == len(wanted):
                    break
        return found

    @classmethod
    def from_adjacency(cls, graph: dict[State, list[tuple[Action, State]]], unexpanded: set[State]) -> ExploredGraph:
        """The arrays of a graph held as adjacency lists (its order is the numbering)."""
        index = {state: i for i, state in enumerate(graph)}
        rows = GraphRows()
        for edges in graph.values():
            for action, target in edges:
                rows.targets.append(index[target])
                rows.append_action(action)
            rows.end_row()
        return rows.finish(index, {}, [index[s] for s in unexpanded], len(graph))


class GraphRows:
    """An ExploredGraph being built, one row (a state's successors) at a time, in number order."""

    def __init__(self) -> None:
        self.offsets = array("i", [0])
        self.targets = array("i")
        self.action_ids = array("B")
        self.action_index: dict[Action, int] = {}
        self.actions: list[Action] = []

    def intern(self, action: Action) -> int:
        """The number of an action not seen before; widens ``action_ids`` when it outgrows it."""
        aid = self.action_index[action] = len(self.actions)
        self.actions.append(action)
        if aid == 256 or aid == 65536:
            self.action_ids = array("H" if aid == 256 else "i", self.action_ids)
        return aid

    def append_action(self, action: Action) -> None:
        aid = self.action_index.get(action)
        self.action_ids.append(self.intern(action) if aid is None else aid)

    def end_row(self) -> None:
        try:
            self.offsets.append(len(self.targets))
        except OverflowError:  # past 2**31 edges
            self.offsets = array("q", self.offsets)
            self.offsets.append(len(self.targets))

    def finish(
        self, index: dict[State, int], extra: dict[State, int], unexpanded: Iterable[int], size: int
    ) -> ExploredGraph:
        """The graph of ``size`` states: rows past the last one ended are empty, and cut with ``unexpanded``."""
        rows = len(self.offsets) - 1
        last = self.offsets[-1]
        del self.targets[last:]  # a row a stop left half done (Ctrl-C): that state counts as unexpanded
        del self.action_ids[last:]
        self.offsets.extend(array(self.offsets.typecode, [last]) * (size - rows))
        cut = bytearray(size)
        cut[rows:] = b"\x01" * (size - rows)
        for i in unexpanded:
            cut[i] = 1
        return ExploredGraph(index, extra, self.offsets, self.targets, self.action_ids, self.actions, cut)

    def discoverer(self, state: int) -> int:
        """The state whose expansion found ``state``: the source of the first edge to it (for a trace)."""
        import numpy as np  # once per violation, not at start-up

        first = int(np.argmax(np.frombuffer(self.targets, dtype=np.int32) == state))
        offsets = np.frombuffer(self.offsets, dtype=np.int64 if self.offsets.typecode == "q" else np.int32)
        return int(np.searchsorted(offsets, first, side="right")) - 1

    def close_row(self, succs: list[tuple[Action, State]], numbers: dict[Any, int], beyond: dict[State, int]) -> None:
        """End the row of the state whose successors went past --max-states: it keeps every edge, and
        the states beyond (``beyond``) are numbered after the others and never expanded."""
        for action, target in succs[len(self.targets) - self.offsets[-1] :]:
            tid = numbers.get(target)
            if tid is None:
                tid = beyond.setdefault(target, len(numbers) + len(beyond))
            self.targets.append(tid)
            self.append_action(action)
        self.end_row()


def explore(model: Model, max_states: int | None = None) -> tuple[dict[Any, list[tuple[Action, Any]]], set[Any]]:
    """The reachable state graph as adjacency lists (in BFS order), and the states left
    unexpanded because ``max_states`` was reached or they lie beyond the model's bounds."""
    graph: dict[Any, list[tuple[Action, Any]]] = {}
    within = bounds_check(model)
    frontier = [s for s in model.init_states()]
    for s in frontier:
        graph.setdefault(s, [])
    pending = set(graph)
    while frontier:
        nxt = []
        for s in frontier:
            if max_states is not None and len(graph) >= max_states:
                return graph, pending
            if within is not None and not within(s):
                continue  # beyond the model's bounds: left unexpanded
            edges = expand(model, s)
            graph[s] = edges
            pending.discard(s)
            for _a, t in edges:
                if t not in graph:
                    graph[t] = []
                    pending.add(t)
                    nxt.append(t)
        frontier = nxt
    return graph, pending


def explore_graph(model: Model, max_states: int | None = None) -> dict[Any, list[tuple[Action, Any]]]:
    """The reachable state graph as adjacency lists."""
    return explore(model, max_states)[0]


def explore_rows(model: Model, max_states: int | None = None) -> ExploredGraph:
    """What :func:`explore` finds, kept as arrays: the liveness check's own search when the BFS
    kept no graph (symmetry, fingerprints or --max-depth there)."""
    index: dict[State, int] = {}
    for s in model.init_states():
        index.setdefault(s, len(index))
    rows = GraphRows()
    unexpanded = array("i")
    within = bounds_check(model)
    frontier = list(index)
    number = 0
    while frontier:
        following = []
        for s in frontier:
            if max_states is not None and len(index) >= max_states:
                return rows.finish(index, {}, unexpanded, len(index))
            if within is not None and not within(s):
                unexpanded.append(number)  # beyond the model's bounds: left unexpanded
            else:
                for action, t in expand(model, s):
                    size = len(index)
                    tid = index.setdefault(t, size)
                    rows.targets.append(tid)
                    rows.append_action(action)
                    if tid == size:
                        following.append(t)
            rows.end_row()
            number += 1
        frontier = following
    return rows.finish(index, {}, unexpanded, len(index))
