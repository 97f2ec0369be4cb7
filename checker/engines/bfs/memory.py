"""Exhaustive breadth-first search in memory: the reference every other exhaustive engine must agree with.

Counterexamples are shortest because states are discovered level by level and each state's parent
is on the previous level. The visited set maps each state's key (the state itself, its symmetry
representative or its fingerprint) to its parent's key. When a liveness check follows, the search
keeps the explored graph itself, as arrays (ExploredGraph): the visited set then maps a state to
its number, and a state's parent is the source of the first edge to it.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Hashable, Iterator, Sequence
from itertools import count
from typing import Any

from kmc.checker import interrupts
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.model import Model, State
from kmc.checker.properties import PropertySet, violated_steps
from kmc.checker.result import CheckResult, Stats, Trace
from kmc.checker.search.explored import GraphRows
from kmc.checker.search.kernel import (
    DEADLOCK,
    MODEL_BOUND,
    PropertyChecks,
    bounds_check,
    check_determinism,
    current_rss,
    expand,
    initial_states,
    make_keyfn,
    peak_rss,
    search_result,
)
from kmc.checker.search.observers import GraphRecorder, SearchObserver
from kmc.checker.search.path import key_chain, step_trace, trace_from_keys
from kmc.checker.search.progress import NoProgress, Progress
from kmc.checker.storage import visited
from kmc.checker.storage.fingerprint import collision_probability


class Frontier:
    """One level: its states and their keys in discovery order, as two lists rather than a list of
    pairs (a pair costs a tuple, and a fingerprint an int object, a state). Fingerprints sit in an
    array of uint64. A state is let go once it is expanded: the parts its successors share with it
    stay, the rest is freed while the next level grows."""

    __slots__ = ("keys", "states")

    def __init__(self, fingerprints: bool) -> None:
        self.states: list[State | None] = []
        self.keys: Any = array("Q") if fingerprints else []

    def __len__(self) -> int:
        return len(self.states)


FIRST_NUMBERS = 2**62
"""While the initial states are numbered, every state counts as one of them."""


class MemorySearch:
    """One in-memory search; ``run`` returns its result."""

    def __init__(
        self,
        model: Model,
        props: PropertySet,
        options: BfsOptions,
        progress: Progress | None,
        preset: str | None,
        observers: Sequence[SearchObserver],
    ) -> None:
        self.model, self.props, self.options, self.preset = model, props, options, preset
        self.progress = progress or NoProgress()
        self.keyfn = make_keyfn(model, options.symmetry, options.store)
        self.key = self.keyfn or (lambda s: s)
        self.checks = PropertyChecks(model, props, options.keep_going)
        # Keyed by fingerprint, the visited set is one C table (16 bytes a slot) rather than a dict.
        in_table = options.store == "fingerprints" and visited.IN_C
        self.parents: Any = visited.VisitedFingerprints() if in_table else {}
        self.add_key = self.parents.add if in_table else self.parents.setdefault
        """Keeps a key with its parent's unless it is there: the dict's or the table's way."""
        recorder = next((o for o in observers if isinstance(o, GraphRecorder)), None)
        if self.keyfn is not None or options.max_depth is not None:
            recorder = None  # its own hooks record the graph (and the liveness check explores its own)
        self.recorder = recorder
        self.rows = GraphRows() if recorder is not None else None
        self.unexpanded = array("i")
        self.beyond: dict[State, int] = {}
        observers = [o for o in observers if o is not recorder]
        self.seen_hooks = [o.state for o in observers]
        self.expand_hooks = [o.expanded for o in observers]
        self.within = bounds_check(model)
        self.cap = options.max_states if options.max_states is not None else -1  # -1: never a dict's size
        self.generated = 0
        self.expanded = 0
        self.depth = 0
        self.bounded_by: str | None = None
        self.initial = FIRST_NUMBERS
        self.determinism_checks = options.determinism_checks
        self.careful_expansion = options.deadlock or bool(self.checks.steps) or options.max_depth is not None
        """Whether an expansion has more to check than the states it finds."""

    # -- traces ---------------------------------------------------------------------------------
    def trace_to(self, k: Hashable) -> Trace:
        if self.rows is None:
            return trace_from_keys(self.model, key_chain(self.parents, k), self.key)
        chain = [k]
        while chain[-1] >= self.initial:
            chain.append(self.rows.discoverer(chain[-1]))
        wanted = set(chain)
        found: dict[int, State] = {}
        for i, s in enumerate(self.parents):  # once per violation: no list of the states is kept
            if i in wanted:
                found[i] = s
                if len(found) == len(wanted):
                    break
        return trace_from_keys(self.model, [found[i] for i in reversed(chain)], self.key)

    def step_violated(self, name: str, ks: Hashable, s: State, a: Any, t: State, pred: Any) -> None:
        self.checks.record(name, "step", lambda: step_trace(self.model, self.trace_to(ks), s, a, t, pred))

    def _bounded(self, reason: str) -> None:
        self.bounded_by, self.checks.stop = reason, True

    # -- the search -----------------------------------------------------------------------------
    def run(self) -> CheckResult:
        start = time.perf_counter()
        rss_start = current_rss()
        frontier = self.initial_level()
        interrupted = False
        try:
            while len(frontier) and not self.checks.stop:
                if self.rows is not None:
                    frontier = self.expand_level_numbered(frontier)
                else:
                    frontier = self.expand_level(frontier)
                if len(frontier) and not self.checks.stop:
                    self.depth += 1
        except KeyboardInterrupt:  # Ctrl-C: report what was explored, never as complete
            interrupted = True
            self.bounded_by = f"interrupted ({interrupts.reason()})"
        finally:
            self.progress.close()
        result = self.result(time.perf_counter() - start, rss_start)
        result.interrupted = interrupted
        return result

    def initial_level(self) -> Frontier:
        parents, checks = self.parents, self.checks
        frontier = self.new_level()
        for s in initial_states(self.model):
            self.generated += 1
            k = self.key(s)
            if k in parents:
                continue
            if len(parents) == self.cap:
                self._bounded(f"max states {self.options.max_states}")
                break
            if self.rows is not None:
                parents[k] = len(parents)
                k = parents[k]
            else:
                self.add_key(k, None)
            frontier.states.append(s)
            frontier.keys.append(k)
            for hook in self.seen_hooks:
                hook(s)
            checks.check_state(s, lambda k=k: self.trace_to(k))
            if checks.stop:
                break
        self.initial = len(parents)  # the initial states' numbers are those below
        self.depth = 1 if len(frontier) else 0
        return frontier

    def new_level(self) -> Frontier:
        return Frontier(self.options.store == "fingerprints" and self.rows is None)

    def expansions(self, frontier: Frontier) -> Iterator[tuple[State, Hashable, list[Any], bool]]:
        """Each state of a level whose successors are to be followed, with them: expanded, observed,
        checked for determinism and, where the search has any, for a deadlock, the step properties
        and the depth bound. The last item says the progress is due (every 1024 expansions). The
        counts are kept in locals, and stored when they are due and when the level ends: this runs
        once a state."""
        model, within, hooks, careful = self.model, self.within, self.expand_hooks, self.careful_expansion
        determinism_checks = self.determinism_checks
        expanded, generated = self.expanded, self.generated
        states = frontier.states
        try:
            for i, s, ks in zip(count(), states, frontier.keys):
                states[i] = None  # let go: the next level keeps what it shares with this state
                if within is not None and not within(s):
                    self.cut_off(ks)
                    continue
                succs = expand(model, s)
                for hook in hooks:
                    hook(s, succs, True)
                expanded += 1
                if expanded <= determinism_checks or expanded % 4096 == 0:
                    check_determinism(model, s, succs)
                generated += len(succs)
                due = expanded & 1023 == 0
                if due or careful:
                    self.expanded, self.generated = expanded, generated
                if careful and self.check_expansion(s, ks, succs) is None:
                    if self.checks.stop:
                        return
                    continue
                yield s, ks, succs, due
        finally:
            self.expanded, self.generated = expanded, generated

    def cut_off(self, ks: Hashable) -> None:
        """A state beyond the model's bounds: checked, never expanded."""
        self.bounded_by = self.bounded_by or MODEL_BOUND
        if self.rows is not None:
            self.rows.end_row()
            self.unexpanded.append(ks)  # type: ignore[arg-type]

    def check_expansion(self, s: State, ks: Hashable, succs: list[Any]) -> list[Any] | None:
        """A deadlock, the step properties and the depth bound, for a search that has any of them."""
        checks = self.checks
        if self.options.deadlock and not succs and DEADLOCK not in checks.violations:
            checks.record(DEADLOCK, "deadlock", lambda: self.trace_to(ks))
            if checks.stop:
                return None
        if checks.steps:  # each evaluated once (an oracle counts its calls)
            violations = checks.violations
            steps = [step for step in checks.steps if step[0] not in violations] if violations else checks.steps
            for index, name, pred in violated_steps(steps, s, succs):
                a, t = succs[index]
                self.step_violated(name, ks, s, a, t, pred)
            if checks.stop:
                return None
        max_depth = self.options.max_depth
        if max_depth is not None and self.depth >= max_depth:
            if self.bounded_by is None and any(self.key(t) not in self.parents for _, t in succs):
                self.bounded_by = f"max depth {max_depth}"
            return None
        return succs

    def expand_level(self, frontier: Frontier) -> Frontier:
        """Expand one level; the next, its states in the order they were found."""
        next_frontier = self.new_level()
        append_state, append_key = next_frontier.states.append, next_frontier.keys.append
        parents, keyfn, cap, checks = self.parents, self.keyfn, self.cap, self.checks
        setdefault = self.add_key
        seen_hooks = self.seen_hooks
        # The invariants not yet violated are checked in one quiet call; the careful path takes over
        # for a state where one fails or raises (with --continue, the search goes on past a
        # violation, and this level's quiet call then fails on it and leaves it to the careful one).
        all_hold = checks.quiet_check()
        careful = bool(checks.invariants)
        for _s, ks, succs, due in self.expansions(frontier):
            for _a, t in succs:
                k = t if keyfn is None else keyfn(t)
                size = len(parents)
                setdefault(k, ks)  # one hash of the state, whether it is new or not
                if len(parents) == size:
                    continue
                if size == cap:  # the state one beyond --max-states: not explored, not counted
                    del parents[k]
                    self._bounded(f"max states {self.options.max_states}")
                    break
                append_state(t)
                append_key(k)
                for hook in seen_hooks:
                    hook(t)
                if all_hold is not None and all_hold(t):
                    continue
                if careful:  # names the property, reports one that raises
                    checks.check_state(t, lambda k=k: self.trace_to(k))
                    if checks.stop:
                        break
            if checks.stop:
                break
            if due:
                self.progress.update(
                    distinct=len(parents), generated=self.generated, depth=self.depth, queue=len(next_frontier)
                )
        return next_frontier

    def expand_level_numbered(self, frontier: Frontier) -> Frontier:
        """The same level, numbering the states and keeping every edge as arrays for the liveness check."""
        rows = self.rows
        assert rows is not None
        next_frontier = self.new_level()
        append_state, append_key = next_frontier.states.append, next_frontier.keys.append
        parents, cap, checks = self.parents, self.cap, self.checks
        setdefault = parents.setdefault
        seen_hooks = self.seen_hooks
        all_hold = checks.quiet_check()
        careful = bool(checks.invariants)
        targets_append = rows.targets.append
        action_index = rows.action_index
        for _s, _ks, succs, due in self.expansions(frontier):
            action_ids = rows.action_ids
            for a, t in succs:
                size = len(parents)
                tid = setdefault(t, size)
                targets_append(tid)
                aid = action_index.get(a)
                if aid is None:
                    aid = rows.intern(a)
                    action_ids = rows.action_ids
                action_ids.append(aid)
                if tid != size:
                    continue
                if size == cap:  # as in expand_level; the row still gets every edge (see close_row)
                    del parents[t]
                    rows.targets.pop()
                    action_ids.pop()
                    rows.close_row(succs, parents, self.beyond)
                    self._bounded(f"max states {self.options.max_states}")
                    break
                append_state(t)
                append_key(tid)
                for hook in seen_hooks:
                    hook(t)
                if all_hold is not None and all_hold(t):
                    continue
                if careful:
                    checks.check_state(t, lambda tid=tid: self.trace_to(tid))
                    if checks.stop:
                        break
            else:
                rows.end_row()
            if checks.stop:
                break
            if due:
                self.progress.update(
                    distinct=len(parents), generated=self.generated, depth=self.depth, queue=len(next_frontier)
                )
        return next_frontier

    def result(self, elapsed: float, rss_start: int) -> CheckResult:
        distinct = len(self.parents)
        if self.recorder is not None and self.rows is not None:
            self.recorder.graph = self.rows.finish(
                self.parents, self.beyond, self.unexpanded, distinct + len(self.beyond)
            )
        options = self.options
        stats = Stats(
            distinct_states=distinct,
            generated_states=self.generated,
            depth=self.depth,
            elapsed_s=elapsed,
            peak_memory_bytes=peak_rss(),
            bytes_per_state=(max(current_rss() - rss_start, 0) / distinct) if distinct else None,
            collision_probability=(
                collision_probability(distinct, self.generated) if options.store == "fingerprints" else None
            ),
            storage=options.store,
        )
        # Complete only when nothing was cut off: no bound hit and no early stop at a violation.
        return search_result(
            "bfs",
            self.model,
            self.props,
            options.deadlock,
            options.symmetry,
            self.checks.found(),
            complete=self.bounded_by is None and not self.checks.stop,
            stats=stats,
            bound_reason=self.bounded_by,
            preset=self.preset,
        )
