"""Exhaustive breadth-first search: the reference engine.

Every other exhaustive engine must report the same distinct-state count. Counterexamples are
shortest because states are discovered level by level and each state's parent is on the
previous level.
"""

from __future__ import annotations

import gc
import resource
import time
from array import array
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kmc.checker.errors import NondeterministicModelError, PropertyError, PropertyTypeError, UserError
from kmc.checker.model import Action, Model, State
from kmc.checker.properties import SYMMETRY_WARNING, PropertySet, all_true, holds
from kmc.checker.result import CheckResult, Stats, Status, Trace, Violation
from kmc.checker.search.observers import GraphRecorder, SearchObserver
from kmc.checker.search.path import key_chain, trace_from_keys
from kmc.checker.search.progress import NoProgress, Progress
from kmc.checker.storage.fingerprint import collision_probability, fingerprint

DEADLOCK = "Deadlock"


@dataclass(frozen=True)
class BfsOptions:
    max_depth: int | None = None
    """Explore states up to this depth (in states; the initial states are depth 1)."""
    max_states: int | None = None
    symmetry: bool = False
    deadlock: bool = False
    keep_going: bool = False
    """Like TLC's -continue: report every violated property, each with its shortest trace."""
    store: str = "states"
    """"states" keeps every state (exact); "fingerprints" keeps 64-bit fingerprints (TLC-style)."""
    determinism_checks: int = 256
    """Successors of this many states (and of every 4096th after) are computed twice and compared."""
    memory: int | None = None
    """Bytes the visited set and the frontier may hold before they spill to disk (fingerprints only)."""
    checkpoint: str | None = None
    """Save each level here before expanding it, for ``resume`` (fingerprints only)."""
    resume: bool = False
    """Continue the run checkpointed in ``checkpoint``."""


def current_rss() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * resource.getpagesize()
    except OSError:
        return 0


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def make_keyfn(model: Model, symmetry: bool, store: str) -> Callable[[State], Hashable] | None:
    """How states are deduplicated; None means by the state itself (the fast path)."""
    if store not in ("states", "fingerprints"):
        raise UserError(f"unknown store {store!r}: use states or fingerprints")
    canon = model.symmetry if symmetry else None
    if symmetry and canon is None:
        raise UserError(f"model {model.name} defines no symmetry(); run without --symmetry")
    if store == "fingerprints":
        if canon is not None:
            return lambda s: fingerprint(canon(s))
        return fingerprint
    return canon


def _check_determinism(model: Model, state: State, first: list[tuple[Action, State]]) -> None:
    second = list(model.successors(state))
    if Counter(first) != Counter(second):
        raise NondeterministicModelError(
            f"model {model.name}: successors() returned different results in two calls on the same "
            f"state (successors must be a pure function of the state): {state!r}"
        )


MODEL_BOUND = "the model's own bounds (within_bounds)"


def bounds_check(model: Model) -> Callable[[State], bool] | None:
    """The model's ``within_bounds``, or None when it does not define one (nothing to check)."""
    return None if type(model).within_bounds is Model.within_bounds else model.within_bounds


def expand(model: Model, state: State) -> list[tuple[Action, State]]:
    """The successors of a state; a model that raises is reported, not a traceback."""
    try:
        succs = model.successors(state)
        return succs if type(succs) is list else list(succs)
    except UserError:
        raise
    except Exception as exc:
        raise UserError(
            f"model {model.name} raised {type(exc).__name__} in successors(): {exc} -- in state {state!r}"
        ) from exc


class ExploredGraph:
    """The state graph a search explored, as integer arrays: what the liveness check runs on.

    States are numbered in discovery (BFS) order and ``index`` maps a state to its number (it is
    the BFS's own visited set, so nothing is stored twice). The successors of state ``i`` are
    ``targets[offsets[i]:offsets[i + 1]]``, taken by ``actions[action_ids[e]]`` (compressed sparse
    rows: 4 bytes an edge and 1 for its action while a model has at most 256 distinct actions).
    ``cut`` marks the states no search expanded (a bound cut them off); their rows are empty."""

    def __init__(self, index: dict[State, int], extra: dict[State, int], offsets: array, targets: array,
                 action_ids: array, actions: list[Action], cut: bytearray) -> None:  # fmt: skip
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

    def finish(self, index: dict[State, int], extra: dict[State, int], unexpanded: Iterable[int],
               size: int) -> ExploredGraph:  # fmt: skip
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


def bfs(
    model: Model,
    props: PropertySet,
    options: BfsOptions = BfsOptions(),
    progress: Progress | None = None,
    preset: str | None = None,
    observers: Sequence[SearchObserver] = (),
    job: dict[str, Any] | None = None,
) -> CheckResult:
    """``job`` names the check for a checkpoint's meta.json (model_ref, config, properties)."""
    # States are acyclic values: Python's cyclic garbage collector finds nothing to free in them, yet
    # it rescans the growing visited set again and again (about 15% of the run). Pause it.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if options.memory is not None or options.checkpoint is not None:  # runs larger than memory, or resumable
            from kmc.checker.engines.bfs_disk import disk_bfs

            job = job or {"model_ref": model.name, "config": model.config_dict(), "properties": props.names()}
            return disk_bfs(model, props, options, progress, preset, observers, job)
        return _bfs(model, props, options, progress, preset, observers)
    finally:
        if was_enabled:
            gc.enable()


def _bfs(
    model: Model,
    props: PropertySet,
    options: BfsOptions,
    progress: Progress | None,
    preset: str | None,
    observers: Sequence[SearchObserver],
) -> CheckResult:
    progress = progress or NoProgress()
    start = time.perf_counter()
    rss_start = current_rss()
    keyfn = make_keyfn(model, options.symmetry, options.store)
    key = keyfn or (lambda s: s)
    invariants = [(p.name, p.bind(model)) for p in props.invariants]
    steps = [(p.name, p.bind(model)) for p in props.steps]

    parents: dict[Hashable, Any] = {}
    # With a liveness check to follow, the search keeps the graph itself, as arrays (ExploredGraph):
    # ``parents`` then maps a state to its number, and a state's parent is the source of the first
    # edge to it (the BFS numbers states as it finds them, and expands them in that order).
    recorder = next((o for o in observers if isinstance(o, GraphRecorder)), None)
    if keyfn is not None or options.max_depth is not None:
        recorder = None  # its own hooks record the graph (and the liveness check explores its own)
    rows = GraphRows() if recorder is not None else None
    unexpanded = array("i")
    beyond: dict[State, int] = {}
    observers = [o for o in observers if o is not recorder]
    seen_hooks = [o.state for o in observers]
    expand_hooks = [o.expanded for o in observers]
    violations: dict[str, Violation] = {}
    stop = False
    generated = 0
    bounded_by: str | None = None
    expanded = 0

    def trace_to(k: Hashable) -> Trace:
        if rows is None:
            return trace_from_keys(model, key_chain(parents, k), key)
        chain = [k]
        while chain[-1] >= initial:
            chain.append(_discoverer(rows, chain[-1]))
        wanted = set(chain)
        found: dict[int, State] = {}
        for i, s in enumerate(parents):  # once per violation: no list of the states is kept
            if i in wanted:
                found[i] = s
                if len(found) == len(wanted):
                    break
        return trace_from_keys(model, [found[i] for i in reversed(chain)], key)

    def step_trace(ks: Hashable, s: State, a: Action, t: State, pred: Callable[..., Any]) -> Trace:
        trace = trace_to(ks)
        last = trace.states[-1]
        if last != s:  # rebuilt as a symmetric variant: take its own violating transition
            a, t = next(((b, u) for b, u in model.successors(last) if not pred(last, b, u)), (a, t))
        trace.states.append(t)
        trace.actions.append(a)
        return trace

    def record(name: str, kind: str, trace: Trace) -> None:
        nonlocal stop
        if name not in violations:
            violations[name] = Violation(property=name, kind=kind, trace=trace)
            if not options.keep_going:
                stop = True

    def check_invariants(state: State, k: Hashable) -> None:
        for name, pred in invariants:
            if name in violations:
                continue
            ok = holds(name, pred, state)
            if not ok:
                record(name, "invariant", trace_to(k))
                if stop:
                    return

    max_states = options.max_states
    cap = max_states if max_states is not None else -1  # -1: never equal to a dict's size
    frontier: list[tuple[State, Hashable]] = []
    initial = 2**62  # while the initial states are numbered, every state is one
    try:
        inits: Iterable[State] = list(model.init_states())
    except Exception as exc:
        raise UserError(f"model {model.name} raised {type(exc).__name__} in init_states(): {exc}") from exc
    for s in inits:
        generated += 1
        k = key(s)
        if k in parents:
            continue
        if len(parents) == cap:
            bounded_by, stop = f"max states {max_states}", True
            break
        if rows is not None:
            parents[k] = len(parents)
            k = parents[k]
        else:
            parents[k] = None
        frontier.append((s, k))
        for hook in seen_hooks:
            hook(s)
        check_invariants(s, k)
        if stop:
            break

    initial = len(parents)  # the initial states' numbers are those below
    depth = 1 if frontier else 0
    max_depth = options.max_depth
    within = bounds_check(model)
    interrupted = False
    try:
        while frontier and not stop:
            at_depth_bound = max_depth is not None and depth >= max_depth
            next_frontier: list[tuple[State, Hashable]] = []
            append = next_frontier.append
            setdefault = parents.setdefault
            # The invariants not yet violated are checked in one quiet call; the careful path takes
            # over for a state where one fails or raises (with --continue, the search goes on past a
            # violation, and this level's quiet call then fails on it and leaves it to the careful one).
            unviolated = [pred for name, pred in invariants if name not in violations]
            all_hold = all_true(unviolated) if unviolated else None
            for s, ks in frontier:
                if within is not None and not within(s):
                    bounded_by = bounded_by or MODEL_BOUND
                    if rows is not None:
                        rows.end_row()
                        unexpanded.append(ks)
                    continue
                succs = expand(model, s)
                for hook in expand_hooks:
                    hook(s, succs, True)
                expanded += 1
                if expanded <= options.determinism_checks or expanded % 4096 == 0:
                    _check_determinism(model, s, succs)
                generated += len(succs)
                if options.deadlock and not succs and DEADLOCK not in violations:
                    record(DEADLOCK, "deadlock", trace_to(ks))
                    if stop:
                        break
                if steps:  # each evaluated once (an oracle counts its calls): holds() inlined
                    for a, t in succs:
                        for name, pred in steps:
                            if name in violations:
                                continue
                            try:
                                ok = pred(s, a, t)
                            except Exception as exc:
                                raise PropertyError(name, (s, a, t), exc) from exc
                            if ok is True:
                                continue
                            if ok is not False:
                                raise PropertyTypeError(name, (s, a, t), ok)
                            record(name, "step", step_trace(ks, s, a, t, pred))
                    if stop:
                        break
                if at_depth_bound:
                    if bounded_by is None and any(key(t) not in parents for _, t in succs):
                        bounded_by = f"max depth {max_depth}"
                    continue
                if rows is not None:  # the same loop, numbering states and keeping the edges as arrays
                    targets_append = rows.targets.append
                    action_index = rows.action_index
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
                        if size == cap:  # as below; the row still gets every edge (see _close_row)
                            del parents[t]
                            rows.targets.pop()
                            action_ids.pop()
                            _close_row(succs, rows, parents, beyond)
                            bounded_by, stop = f"max states {max_states}", True
                            break
                        append((t, tid))
                        for hook in seen_hooks:
                            hook(t)
                        if all_hold is not None and all_hold(t):
                            continue
                        if invariants:
                            check_invariants(t, tid)
                            if stop:
                                break
                    else:
                        rows.end_row()
                    if stop:
                        break
                    if expanded & 1023 == 0:
                        progress.update(
                            distinct=len(parents), generated=generated, depth=depth, queue=len(next_frontier)
                        )
                    continue
                for _a, t in succs:
                    k = t if keyfn is None else keyfn(t)
                    size = len(parents)
                    setdefault(k, ks)  # one hash of the state, whether it is new or not
                    if len(parents) == size:
                        continue
                    if size == cap:  # the state one beyond --max-states: not explored, not counted
                        del parents[k]
                        bounded_by, stop = f"max states {max_states}", True
                        break
                    append((t, k))
                    for hook in seen_hooks:
                        hook(t)
                    if all_hold is not None and all_hold(t):
                        continue
                    if invariants:  # the careful path: names the property, reports one that raises
                        check_invariants(t, k)
                        if stop:
                            break
                if stop:
                    break
                if expanded & 1023 == 0:
                    progress.update(distinct=len(parents), generated=generated, depth=depth, queue=len(next_frontier))
            frontier = next_frontier
            if frontier and not stop:
                depth += 1
    except KeyboardInterrupt:  # Ctrl-C: report what was explored, never as complete
        interrupted = True
        bounded_by = "interrupted (Ctrl-C)"
    finally:
        progress.close()

    elapsed = time.perf_counter() - start
    distinct = len(parents)
    if recorder is not None and rows is not None:
        recorder.graph = rows.finish(parents, beyond, unexpanded, distinct + len(beyond))
    stats = Stats(
        distinct_states=distinct,
        generated_states=generated,
        depth=depth,
        elapsed_s=elapsed,
        peak_memory_bytes=peak_rss(),
        bytes_per_state=(max(current_rss() - rss_start, 0) / distinct) if distinct else None,
        collision_probability=(collision_probability(distinct, generated) if options.store == "fingerprints" else None),
        storage=options.store,
    )
    # Complete only when nothing was cut off: no bound hit and no early stop at a violation.
    result = search_result(
        "bfs", model, props, options.deadlock, options.symmetry, list(violations.values()),
        complete=bounded_by is None and not stop, stats=stats, bound_reason=bounded_by, preset=preset,
    )  # fmt: skip
    result.interrupted = interrupted
    return result


def _discoverer(rows: GraphRows, state: int) -> int:
    """The state whose expansion found ``state``: the source of the first edge to it (for a trace)."""
    import numpy as np  # once per violation, not at start-up

    first = int(np.argmax(np.frombuffer(rows.targets, dtype=np.int32) == state))
    offsets = np.frombuffer(rows.offsets, dtype=np.int64 if rows.offsets.typecode == "q" else np.int32)
    return int(np.searchsorted(offsets, first, side="right")) - 1


def _close_row(succs: list[tuple[Action, State]], rows: GraphRows, parents: dict[Any, Any],
               beyond: dict[State, int]) -> None:  # fmt: skip
    """End the row of the state whose successors went past --max-states: it keeps every edge, and
    the states beyond are numbered after the others and never expanded."""
    for action, target in succs[len(rows.targets) - rows.offsets[-1] :]:
        tid = parents.get(target)
        if tid is None:
            tid = beyond.setdefault(target, len(parents) + len(beyond))
        rows.targets.append(tid)
        rows.append_action(action)
    rows.end_row()


class BfsEngine:
    """The reference engine: exhaustive, shortest counterexamples, every bound."""

    name: ClassVar[str] = "bfs"
    bounds: ClassVar[frozenset[str]] = frozenset({"max_depth", "max_states", "symmetry", "deadlock", "keep_going"})
    defaults: ClassVar[dict[str, Any]] = {"store": "states", "memory": None, "checkpoint": None, "resume": None}
    observes: ClassVar[bool] = True
    exhaustive: ClassVar[bool] = True

    def run(self, task: Any) -> CheckResult:
        from pathlib import Path

        b, o = task.bounds, task.options
        if o["checkpoint"] and o["resume"] and Path(o["checkpoint"]).resolve() != Path(o["resume"]).resolve():
            raise UserError("--checkpoint and --resume name different directories: give the one to continue")
        options = BfsOptions(max_depth=b.max_depth, max_states=b.max_states, symmetry=b.symmetry,
                             deadlock=b.deadlock, keep_going=b.keep_going, store=o["store"],
                             memory=_memory(o["memory"]),
                             checkpoint=o["resume"] or o["checkpoint"], resume=o["resume"] is not None)  # fmt: skip
        job = {
            "engine": "bfs", "model_ref": task.model_ref, "config": task.model.config_dict(),
            "spec_files": [str(Path(s).resolve()) for s in task.spec_files], "properties": task.props.names(),
            "symmetry": b.symmetry, "deadlock": b.deadlock,
        }  # fmt: skip
        return bfs(task.model, task.props, options, task.progress, task.preset, task.observers, job)


def _memory(size: str | None) -> int | None:
    """--memory in bytes; numpy (which the disk store needs) is imported only for a run that spills."""
    if size is None:
        return None
    from kmc.checker.storage.fpset import parse_size

    return parse_size(size)


def search_result(
    engine: str,
    model: Model,
    props: PropertySet,
    deadlock: bool,
    symmetry: bool,
    found: list[Violation],
    *,
    complete: bool,
    stats: Stats,
    bound_reason: str | None,
    preset: str | None,
) -> CheckResult:
    """The result of an exhaustive search, its status derived the same way for every engine."""
    if found:
        status = Status.VIOLATED
    elif complete:
        status = Status.HOLDS_COMPLETE
    else:
        status = Status.HOLDS_BOUNDED
    return CheckResult(
        engine=engine,
        model=model.name,
        config=model.config_dict(),
        preset=preset,
        properties=props.names() + ([DEADLOCK] if deadlock else []),
        status=status,
        complete=complete,
        stats=stats,
        violations=found,
        bound_reason=bound_reason,
        warnings=[SYMMETRY_WARNING] if symmetry else [],
    )


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
