"""Exhaustive breadth-first search on several processes (``--workers N``): the same search as the
one-process BFS, state for state.

The level's order is the one-process search's: the frontier is cut into consecutive slices, one
per worker (`expander.Expander`), and the concatenation of the slices, in worker order, is the
order one process would hold. Each worker expands its slice and sends the fingerprints of the
successors it found (the first of each), in the order it found them, with their parents'
positions. This process keeps the one visited set (each fingerprint with its parent's, in one
table, `storage.visited`) and takes, of each fingerprint, the candidate that comes first in the
level's order: the state, and the parent, that one process would have found first. So the
distinct states, the depth, every counterexample and its trace are those of the one-process
search, whatever the number of workers, on every run and under every ``PYTHONHASHSEED``. Where
one process would have stopped inside a level (its first violation, ``--max-states``), the counts
are those it had at that moment: each event of a level is ordered as one process meets it (a
state's deadlock, then its steps, then its new successors).

Dedup is by 64-bit fingerprint, so the result reports the collision probability as TLC does.
Workers are forked, so the model, the properties and the observers need not be pickled; states
cross processes only when a worker's slice grows past its share and the slices are evened out.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from kmc.checker import interrupts
from kmc.checker.engines.bfs.expander import Expander, serve
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.engines.bfs.parallel_checkpoint import LevelCheckpoint
from kmc.checker.errors import NondeterministicModelError, UserError
from kmc.checker.model import Model, State
from kmc.checker.properties import PropertySet
from kmc.checker.result import CheckResult, Stats, Trace
from kmc.checker.search.kernel import (
    DEADLOCK,
    MODEL_BOUND,
    PropertyChecks,
    current_rss,
    expand,
    initial_states,
    peak_rss,
    search_result,
)
from kmc.checker.search.observers import SearchObserver
from kmc.checker.search.path import step_trace, trace_from_keys
from kmc.checker.search.progress import NoProgress, Progress
from kmc.checker.storage.codec import StateCodec
from kmc.checker.storage.fingerprint import collision_probability, fingerprint
from kmc.checker.storage.visited import VisitedFingerprints

BALANCE_SLACK = 1 / 32
"""A worker keeps up to this much more than its share of the next level before states move."""
INVARIANT_PHASE = 2
"""Events of one state, in the order one process meets them: deadlock (0), steps (1), new successors (2)."""

Event = tuple[int, int, int, int]
"""(the level position of the expanded state, phase, successor or candidate index, property order)."""


class Workers:
    """The forked worker processes and their pipes: a request goes to all, and every reply comes back."""

    def __init__(self, count: int, make: Callable[[], Expander]) -> None:
        # Forked with os.fork, not multiprocessing.Process: the search may itself run in a daemonic
        # pool process (`kmc ci --jobs`), which multiprocessing forbids to have children.
        self.connections: list[Connection] = []
        self.pids: list[int] = []
        for _ in range(count):
            mine, theirs = multiprocessing.Pipe()
            self.connections.append(mine)
            pid = os.fork()
            if pid == 0:  # the worker: it ends here, never returning into the coordinator's code
                status = 1
                try:
                    for end in self.connections:  # its copies of the coordinator's ends: EOF when those close
                        end.close()
                    serve(theirs, make)
                    status = 0
                finally:
                    os._exit(status)
            theirs.close()
            self.pids.append(pid)

    def __len__(self) -> int:
        return len(self.connections)

    def ask(self, command: str, per_worker: Sequence[tuple[Any, ...]]) -> list[Any]:
        self.send(command, per_worker)
        return self.replies()

    def send(self, command: str, per_worker: Sequence[tuple[Any, ...]]) -> None:
        """A request to every worker; ``replies`` collects the answers (meanwhile, this process works)."""
        for connection, args in zip(self.connections, per_worker, strict=True):
            connection.send((command, args))

    def replies(self) -> list[Any]:
        return [self.answer(connection) for connection in self.connections]

    def ask_all(self, command: str, *args: Any) -> list[Any]:
        return self.ask(command, [args] * len(self))

    def answer(self, connection: Connection) -> Any:
        try:
            status, reply = connection.recv()
        except EOFError:
            raise UserError(
                "a bfs worker process ended unexpectedly (out of memory?): run with fewer --workers"
            ) from None
        if status == "ok":
            return reply
        kind, message = reply
        if kind == "nondeterministic":
            raise NondeterministicModelError(message)
        if kind == "user":
            raise UserError(message)
        if kind == "type":
            raise TypeError(message)
        raise RuntimeError(f"a bfs worker failed:\n{message}")

    def close(self) -> None:
        """Every worker ends: at once when it was asked to finish, else when it reads EOF; one that does
        not within a few seconds is killed. None is left behind."""
        for connection in self.connections:
            connection.close()
        deadline = time.monotonic() + 5
        for pid in self.pids:
            while os.waitpid(pid, os.WNOHANG) == (0, 0):
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    break
                time.sleep(0.01)


class ParallelSearch:
    """One search on ``options.workers`` processes; ``run`` returns its result."""

    def __init__(
        self,
        model: Model,
        props: PropertySet,
        options: BfsOptions,
        progress: Progress | None,
        preset: str | None,
        observers: Sequence[SearchObserver],
        job: dict[str, Any] | None = None,
    ) -> None:
        self.model, self.props, self.options, self.preset = model, props, options, preset
        self.checkpoint = LevelCheckpoint(options.checkpoint, job or {}, options.resume) if options.checkpoint else None
        self.progress = progress or NoProgress()
        spawned = [o.spawn() for o in observers]
        refused = [type(o).__name__ for o, s in zip(observers, spawned, strict=True) if s is None]
        if refused:
            raise UserError(f"bfs --workers cannot run with the observer {refused[0]}: run with --workers 1")
        self.observers, self.spawned = list(observers), spawned
        canon = model.symmetry if options.symmetry else None
        if options.symmetry and canon is None:
            raise UserError(f"model {model.name} defines no symmetry(); run without --symmetry")
        self.fingerprint_of: Callable[[State], int] = (
            fingerprint if canon is None else (lambda s: fingerprint(canon(s)))  # type: ignore[misc]
        )
        self.checks = PropertyChecks(model, props, options.keep_going)
        self.step_preds = dict(self.checks.steps)
        self.visited = VisitedFingerprints()
        self.initial: set[int] = set()
        self.frontier_fps: list[np.ndarray] = []
        self.generated = 0
        self.depth = 0
        self.bounded_by: str | None = None
        self.cap = options.max_states
        self.stopped_at: int | None = None
        """The distinct states one process would hold where it stopped inside a level."""

    # -- traces -----------------------------------------------------------------------------------
    def trace_to(self, fp: int) -> Trace:
        chain = [fp]
        while chain[-1] not in self.initial:
            chain.append(self.visited.parent_of(chain[-1]))
        chain.reverse()
        return trace_from_keys(self.model, chain, self.fingerprint_of)

    def step_trace_to(self, fp: int, successor: int, pred: Any) -> Trace:
        """The trace to a state and on by the step that violates ``pred``: its ``successor``-th, or under
        symmetry (where the rebuilt state may be a permutation of the one explored) the first that does."""
        trace = self.trace_to(fp)
        last = trace.states[-1]
        succs = expand(self.model, last)
        a, t = succs[successor] if successor < len(succs) else succs[0]
        if pred(last, a, t) is not False:
            a, t = next(((b, u) for b, u in succs if pred(last, b, u) is False), (a, t))
        return step_trace(self.model, trace, last, a, t, pred)

    # -- the search -------------------------------------------------------------------------------
    def run(self) -> CheckResult:
        start = time.perf_counter()
        rss_start = current_rss()
        if self.options.resume:
            frontier = self.resume()
        else:
            if self.checkpoint is not None:
                self.checkpoint.start_afresh()
            frontier = self.initial_level()
            if self.checkpoint is not None:
                fps = self.frontier_fps[0]
                self.checkpoint.add_visited(1, fps, np.zeros(len(fps), dtype=np.uint64))
        workers: Workers | None = None
        finished: list[dict[str, Any]] = []
        interrupted = False
        try:
            if frontier and not self.checks.stop:
                options, model, props, spawned = self.options, self.model, self.props, self.spawned
                workers = Workers(options.workers, lambda: Expander(model, props, options, spawned))
                self.deal(workers, frontier)
                del frontier
                while any(len(f) for f in self.frontier_fps) and not self.checks.stop:
                    if self.checkpoint is not None:
                        self.save(workers)
                    self.level(workers)
                    if any(len(f) for f in self.frontier_fps) and not self.checks.stop:
                        self.depth += 1
                finished = workers.ask_all("finish")
        except KeyboardInterrupt:  # Ctrl-C: report what was explored, never as complete
            interrupted = True
            self.bounded_by = f"interrupted ({interrupts.reason()})"
        finally:
            if workers is not None:
                workers.close()
            self.progress.close()
        for reply in finished:
            for observer, counts in zip(self.observers, reply["observers"], strict=True):
                if counts is not None:
                    observer.merge_counts(counts)
        result = self.result(time.perf_counter() - start, rss_start, finished)
        result.interrupted = interrupted
        return result

    def initial_level(self) -> list[State]:
        """Depth 1, here as in the one-process search: each new initial state observed and checked."""
        checks, seen_hooks = self.checks, [o.state for o in self.observers]
        frontier: list[State] = []
        fps: list[int] = []
        for s in initial_states(self.model):
            self.generated += 1
            fp = self.fingerprint_of(s)
            if fp in self.initial:
                continue
            if self.cap is not None and len(self.initial) == self.cap:
                self.bounded(f"max states {self.cap}")
                break
            self.initial.add(fp)
            frontier.append(s)
            fps.append(fp)
            for hook in seen_hooks:
                hook(s)
            checks.check_state(s, lambda fp=fp: self.trace_to(fp))
            if checks.stop:
                break
        self.frontier_fps = [np.array(fps, dtype=np.uint64)]
        self.visited.add_new(self.frontier_fps[0], np.zeros(len(fps), dtype=np.uint64))
        self.depth = 1 if frontier else 0
        return frontier

    def save(self, workers: Workers) -> None:
        """The level about to be expanded, and all it needs, in the checkpoint."""
        assert self.checkpoint is not None
        level = self.depth
        frontier = workers.ask(
            "save_frontier", [(str(self.checkpoint.frontier_path(level, w)),) for w in range(len(workers))]
        )
        counted = workers.ask_all("counts")
        observers = [
            [observer.shared_counts(), *[counts[i] for counts in counted]] for i, observer in enumerate(self.observers)
        ]
        progress = {
            "depth": self.depth,
            "generated": self.generated,
            "initial": sorted(self.initial),
            "bounded_by": self.bounded_by,
            "observers": observers,
        }
        self.checkpoint.save(level, progress, frontier, self.checks.found())

    def resume(self) -> list[State]:
        """The level a checkpoint holds, and the search as it stood before it."""
        assert self.checkpoint is not None
        progress, fps, parents, frontier, found = self.checkpoint.load()
        self.visited.add_new(fps, parents)
        try:
            self.initial = {int(fp) for fp in progress["initial"]}
            self.depth, self.generated = int(progress["depth"]), int(progress["generated"])
            self.bounded_by = progress["bounded_by"]
            pieces = progress["observers"]
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"--resume {self.options.checkpoint}: meta.json is malformed ({exc})") from None
        for observer, counts in zip(self.observers, pieces, strict=False):
            for piece in counts:
                if piece is not None:
                    observer.merge_counts(piece)
        self.checks.violations = {v.property: v for v in found}
        if found and not self.options.keep_going:
            self.checks.stop = True
        self.frontier_fps = [np.array([self.fingerprint_of(s) for s in frontier], dtype=np.uint64)]
        return frontier

    def bounded(self, reason: str) -> None:
        self.bounded_by, self.checks.stop = reason, True

    def deal(self, workers: Workers, frontier: list[State]) -> None:
        """The first level, cut into consecutive slices."""
        fps = self.frontier_fps[0]
        bounds = np.linspace(0, len(frontier), len(workers) + 1).astype(int)
        slices = list(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True))
        codec = StateCodec()
        workers.ask("take_frontier", [(codec.pack(frontier[a:b]),) for a, b in slices])
        self.frontier_fps = [fps[a:b] for a, b in slices]

    def level(self, workers: Workers) -> None:
        """Expand one level on every worker, keep its new states, and stop where one process would."""
        options, checks = self.options, self.checks
        probe = options.max_depth is not None and self.depth >= options.max_depth
        expanded = workers.ask_all("expand", probe, list(checks.violations))
        level = Level(self.frontier_fps, expanded)
        if any(r["cut"] for r in expanded) and self.bounded_by is None:
            self.bounded_by = MODEL_BOUND
        level.before = len(self.visited)
        if probe:  # nothing is kept beyond the depth bound
            stop = self.record_events(level, None)
            if stop is None and self.visited.any_new(level.fps) and self.bounded_by is None:
                self.bounded_by = f"max depth {options.max_depth}"
            self.generated += level.generated_until(stop)
            self.frontier_fps = [np.empty(0, dtype=np.uint64) for _ in self.frontier_fps]  # the search ends here
            return
        # Every new candidate joins the visited set; where one process would have stopped before
        # finding some, the search ends in this level, counting only those it would have found.
        parents = level.frontier_fps[level.candidate_parents]
        new = np.frombuffer(self.visited.add_new(level.fps, parents), dtype=np.int64)
        first_event = min(level.expansion_events, default=None)
        if first_event is not None and not options.keep_going:  # one process never finds what follows it
            new = new[level.candidate_parents[new] < first_event[0]]
        cap_event = None
        if self.cap is not None and level.before + len(new) > self.cap:
            c = int(new[self.cap - level.before])
            cap_event = (int(level.candidate_parents[c]), INVARIANT_PHASE, c, -1)
            new = new[: self.cap - level.before]
        chosen = [c.astype(np.int64).tobytes() for c in level.per_worker(new)]
        evened = first_event is None and cap_event is None  # a level one process stops in: no moves
        ranges = self.deal_new(workers, chosen, level.costs(new) if evened else None)
        if self.checkpoint is not None:  # while the workers check the new states
            self.checkpoint.add_visited(self.depth + 1, level.fps[new], parents[new])
        found = workers.replies()
        for w, found_here in enumerate(found):
            for name, position, order in found_here:
                c = int(new[ranges[w] + position])
                level.invariant_events.append(((int(level.candidate_parents[c]), INVARIANT_PHASE, c, order), name))
        stop = self.record_events(level, cap_event)
        self.generated += level.generated_until(stop)
        if stop is not None:
            self.checks.stop = True
            return
        self.frontier_fps = [level.fps[new[ranges[w] : ranges[w + 1]]] for w in range(len(workers))]
        self.progress.update(
            distinct=len(self.visited),
            generated=self.generated,
            depth=self.depth,
            queue=sum(len(f) for f in self.frontier_fps),
        )

    def record_events(self, level: Level, cap_event: Event | None) -> Event | None:
        """Record the level's violations as one process would meet them; the event it would stop at
        (None: it goes on to the next level)."""
        events: list[tuple[Event, str, str]] = [(e, name, kind) for e, name, kind in level.expansion_event_list]
        events += [(e, name, "invariant") for e, name in level.invariant_events]
        if cap_event is not None:
            events.append((cap_event, "", "cap"))
        events.sort(key=lambda item: item[0])
        checks = self.checks
        for event, name, kind in events:
            if kind == "cap":
                self.stopped_at = self.cap
                self.bounded(f"max states {self.cap}")
                return event
            if name in checks.violations:
                continue
            self.record(level, event, name, kind)
            if not self.options.keep_going:
                if kind == "step":  # one process checks every step of the state it stops at
                    for other, other_name, other_kind in events:
                        if other_kind == "step" and other[0] == event[0] and other_name not in checks.violations:
                            self.record(level, other, other_name, other_kind)
                self.stopped_at = level.before + level.kept_until(event)
                return event
        return None

    def record(self, level: Level, event: Event, name: str, kind: str) -> None:
        position, _phase, index, _order = event
        if kind == "invariant":
            fp = int(level.fps[index])
            self.checks.record(name, kind, lambda: self.trace_to(fp))
            return
        fp = int(level.frontier_fps[position])
        if kind == "deadlock":
            self.checks.record(DEADLOCK, kind, lambda: self.trace_to(fp))
            return
        pred = self.step_preds[name]
        self.checks.record(name, kind, lambda: self.step_trace_to(fp, index, pred))

    def deal_new(self, workers: Workers, chosen: list[bytes], costs: np.ndarray | None) -> list[int]:
        """Ask each worker to take the new states it found (``chosen``) as its slice of the next level
        and check them. Where a slice would cost more than its share (``costs``: an estimate per new
        state, in the level's order), the slices are evened out first, moving states between
        neighbours so that the level's order is kept. The slices' bounds in the level's order:
        worker w holds the new states ``ranges[w]:ranges[w + 1]``."""
        sizes = [len(c) // 8 for c in chosen]
        starts = np.cumsum([0, *sizes]).tolist()
        violated = list(self.checks.violations)
        targets = starts if costs is None or not len(costs) else cost_shares(costs, len(sizes))
        spent = np.concatenate([[0.0], np.cumsum(costs)]) if costs is not None and len(costs) else None
        if spent is None or max(spent[starts[w + 1]] - spent[starts[w]] for w in range(len(sizes))) <= (
            spent[-1] / len(sizes) * (1 + BALANCE_SLACK)
        ):
            workers.send("accept", [(c, violated) for c in chosen])
            return starts
        requests = []
        for w, mine in enumerate(chosen):
            a, b = starts[w], starts[w + 1]
            keep = (max(a, targets[w]) - a, max(min(b, targets[w + 1]), max(a, targets[w])) - a)
            out = []
            for target in range(len(sizes)):
                lo, hi = max(a, targets[target]), min(b, targets[target + 1])
                if target != w and lo < hi:
                    out.append((target, lo - a, hi - a))
            requests.append((mine, keep, out))
        sent = workers.ask("cut_frontier", requests)
        pastes = []
        for w in range(len(sizes)):
            before = [sent[s][w] for s in range(w) if w in sent[s]]
            after = [sent[s][w] for s in range(w + 1, len(sizes)) if w in sent[s]]
            pastes.append((before, after, violated))
        workers.send("paste_frontier", pastes)
        return targets

    def result(self, elapsed: float, rss_start: int, finished: list[dict[str, Any]]) -> CheckResult:
        distinct = len(self.visited) if self.stopped_at is None else self.stopped_at
        growth = max(current_rss() - rss_start, 0) + sum(r["rss_growth"] for r in finished)
        stats = Stats(
            distinct_states=distinct,
            generated_states=self.generated,
            depth=self.depth,
            elapsed_s=elapsed,
            peak_memory_bytes=peak_rss() + sum(r["peak_rss"] for r in finished),
            bytes_per_state=growth / distinct if distinct else None,
            collision_probability=collision_probability(distinct, self.generated),
            storage="fingerprints",
        )
        stats.extra["workers"] = self.options.workers
        return search_result(
            "bfs",
            self.model,
            self.props,
            self.options.deadlock,
            self.options.symmetry,
            self.checks.found(),
            complete=self.bounded_by is None and not self.checks.stop,
            stats=stats,
            bound_reason=self.bounded_by,
            preset=self.preset,
        )


def cost_shares(costs: np.ndarray, parts: int) -> list[int]:
    """Bounds that cut the states, in order, into ``parts`` slices of about equal cost."""
    spent = np.cumsum(costs)
    cuts = np.searchsorted(spent, spent[-1] * np.arange(1, parts) / parts, side="right")
    return [0, *cuts.tolist(), len(costs)]


class Level:
    """One level's candidates from every worker, laid end to end in the level's order."""

    def __init__(self, frontier_fps: list[np.ndarray], replies: list[dict[str, Any]]) -> None:
        self.frontier_fps = np.concatenate(frontier_fps) if frontier_fps else np.empty(0, dtype=np.uint64)
        frontier_offsets = np.cumsum([0, *[len(f) for f in frontier_fps]])
        self.frontier_offsets = frontier_offsets
        self.seconds = [r["seconds"] for r in replies]
        fps = [np.frombuffer(r["fps"], dtype=np.uint64) for r in replies]
        self.candidate_offsets = np.cumsum([0, *[len(f) for f in fps]]).tolist()
        self.fps = np.concatenate(fps)
        self.candidate_parents = np.concatenate(
            [np.frombuffer(r["parents"], dtype=np.int64) + frontier_offsets[w] for w, r in enumerate(replies)]
        )
        totals = 0
        upto = []
        for r in replies:
            mine = np.frombuffer(r["generated_upto"], dtype=np.int64)
            upto.append(mine + totals)
            totals += int(mine[-1]) if len(mine) else 0
        self.generated_upto = np.concatenate(upto)
        self.expansion_event_list: list[tuple[Event, str, str]] = []
        for w, r in enumerate(replies):
            for name, kind, position, index, order in r["violations"]:
                phase = 0 if kind == "deadlock" else 1
                self.expansion_event_list.append(
                    ((int(position + frontier_offsets[w]), phase, index, order), name, kind)
                )
        self.expansion_events = [e for e, _name, _kind in self.expansion_event_list]
        self.invariant_events: list[tuple[Event, str]] = []
        self.before = 0
        """The distinct states before this level."""
        self.accepted = np.empty(0, dtype=np.int64)

    def costs(self, new: np.ndarray) -> np.ndarray:
        """What expanding each new state will cost, estimated as what its parent's worker took a state
        in this level (states of one stretch of a level tend to cost alike)."""
        sizes = np.diff(self.frontier_offsets)
        per_state = np.array(self.seconds) / np.maximum(sizes, 1)
        worker_of_parent = np.searchsorted(self.frontier_offsets, self.candidate_parents[new], side="right") - 1
        return per_state[worker_of_parent]

    def per_worker(self, new: np.ndarray) -> list[np.ndarray]:
        """The new candidates' indices within each worker's own candidates."""
        self.accepted = new
        bounds = np.searchsorted(new, self.candidate_offsets)
        return [new[bounds[w] : bounds[w + 1]] - self.candidate_offsets[w] for w in range(len(bounds) - 1)]

    def kept_until(self, event: Event) -> int:
        """How many new states one process would hold when it meets ``event``."""
        position, phase, index, _order = event
        parents = self.candidate_parents[self.accepted]
        if phase == INVARIANT_PHASE:
            return int(np.count_nonzero(self.accepted <= index))
        return int(np.count_nonzero(parents < position))

    def generated_until(self, event: Event | None) -> int:
        """The successors one process would have generated in this level when it meets ``event``."""
        if not len(self.generated_upto):
            return 0
        if event is None:
            return int(self.generated_upto[-1])
        return int(self.generated_upto[event[0]])
