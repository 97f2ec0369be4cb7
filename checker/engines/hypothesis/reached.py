"""What the runs of one Hypothesis check have reached, shared between them: the successors of every
expanded state, the states finished runs reached, paths to states with successors no run has taken,
and the shortest path to a failure among the transitions seen."""

from __future__ import annotations

from typing import Any

from kmc.checker.model import Action, State
from kmc.checker.result import Trace


class Reached:
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
