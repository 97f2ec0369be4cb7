"""The executors' side of a search on Spark: the whole search as one barrier stage, each task
serving a share of the partitions (see Searcher)."""

from __future__ import annotations

import contextlib
import gc
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kmc.checker.engines.spark.job import Job, SparkOptions, built, coverage_counter
from kmc.checker.engines.spark.shards import (
    RESCALE,
    LevelProgress,
    await_files,
    exchange_dir,
    frontier_path,
    load_level_meta,
    owns_workdir,
    read_states,
    read_visited,
    save_level_meta,
    saved_files,
    stage_id,
    taken_over,
    write_progress,
    write_states,
    write_visited,
)
from kmc.checker.errors import UserError
from kmc.checker.model import State
from kmc.checker.properties import all_true, holds
from kmc.checker.search.kernel import (
    DEADLOCK,
    MODEL_BOUND,
    bounds_check,
    expand,
)
from kmc.checker.search.observers import CoverageReport
from kmc.checker.storage.checkpoint import (
    write_atomically,
)
from kmc.checker.storage.fingerprint import Candidates, candidates, fingerprint


class StopSearchError(Exception):
    """A task of the run met a user error: every task stops at the next exchange."""


def search_task(job: Job, options: SparkOptions, run_id: str, stage: int, tasks: int) -> Any:
    """The whole search, as one barrier stage of ``tasks`` tasks; see `Searcher`."""

    def run(_items: Iterable[Any]) -> Iterator[dict[str, Any]]:
        from pyspark import BarrierTaskContext

        gc_was_enabled = gc.isenabled()
        gc.disable()  # states are acyclic tuples: the collector only costs time here
        try:
            yield Searcher(job, options, BarrierTaskContext.get().partitionId(), run_id, stage, tasks).run()
        except StopSearchError as exc:
            yield {"error": str(exc)}
        finally:
            if gc_was_enabled:
                gc.enable()

    return run


Held = dict[int, tuple[Any, list[State]]]
"""Per owner partition: the candidates' fingerprints and parents (numpy, 2 x n) and their states."""


class Searcher:
    """One task of the search. It serves the partitions ``p`` with ``p % tasks == task``: as their
    expander it keeps their frontier in memory, as their owner their shard of the visited set.

    A level takes three steps, each closed by the tasks meeting (`_gather`):

    1. expand: check each frontier state, compute its successors, fingerprint those new within
       the partition, and write each owner its candidates' fingerprints and parents (16 bytes);
    2. dedupe, as owner: keep the least parent of each fingerprint, drop those in the shard,
       and tell each expander which of its candidates won. A winning state stays with the task
       that generated it, in memory: it is the next frontier, and it is never pickled;
    3. balance: a partition whose next frontier is larger than its share pickles the excess to
       those below theirs. Every task computes the same plan from the gathered counts.

    Once a minute (every level with ``--checkpoint``) each partition saves its frontier and shard
    and task 0 records the level in ``meta.json``: a new stage (after a lost executor, on more
    slots, or with ``--resume``) starts from there."""

    def __init__(self, job: Job, options: SparkOptions, task: int, run_id: str, stage: int, tasks: int) -> None:
        self.job, self.options, self.task, self.tasks = job, options, task, tasks
        self.stage_id = stage_id(run_id, stage)
        self.mine = [p for p in range(job.partitions) if p % tasks == self.task]
        self.exchange = exchange_dir(job.workdir, run_id, stage)
        self.exchange.mkdir(exist_ok=True)
        self.round = 0
        self.waited = 0.0  # seconds spent waiting for the other tasks
        self.moved = 0  # states sent to even out the frontiers
        self.frontier: dict[int, tuple[list[int], list[State]]] = {}
        self.visited: dict[int, tuple[Any, Any]] = {}

    # -- exchanges --------------------------------------------------------------------------
    def _gather(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """Every task's message, once all have sent theirs: an all-gather through small files.

        Spark's own ``allGather`` checks for completion once a second, which would cost seconds
        a level."""
        self.round += 1
        self._check_owner()
        paths = [self.exchange / f"sync-{self.round:06d}-{t:05d}.json" for t in range(self.tasks)]
        write_atomically(paths[self.task], lambda fh: fh.write(json.dumps(message).encode()))
        start = time.perf_counter()
        await_files(paths, self._check_owner)
        self.waited += time.perf_counter() - start
        replies = [json.loads(path.read_text()) for path in paths]
        with contextlib.suppress(FileNotFoundError):  # every task has read the previous round
            (self.exchange / f"sync-{self.round - 1:06d}-{self.task:05d}.json").unlink()
        errors = [r["error"] for r in replies if r.get("error")]
        if errors:
            raise StopSearchError(errors[0])
        return replies

    def _check_owner(self) -> None:
        """Stop before writing to a work directory that another run, or a later stage of this one, claimed."""
        if not owns_workdir(self.job.workdir, self.stage_id):
            raise StopSearchError(taken_over(self.job.workdir))

    def _step(self, work: Any, *args: Any) -> list[dict[str, Any]]:
        """Do this task's part of a step, then wait for every task's; a user error stops them all."""
        try:
            message = work(*args) or {}
        except UserError as exc:
            message = {"error": str(exc)}
        return self._gather(message)

    def _path(self, kind: str, level: int, source: int, target: int) -> Path:
        return self.exchange / f"{kind}-{level:05d}-{source:05d}-{target:05d}"

    # -- the search -------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        job, options = self.job, self.options
        prog = load_level_meta(job.workdir, job)
        saved = prog.level
        self._step(self._load, saved)
        last_save = time.monotonic()
        rescale = False
        while True:
            if prog.violations and not options.keep_going:
                break
            if prog.levels[-1] == 0:
                prog.done = True
                break
            level = prog.level
            at_state_bound = options.max_states is not None and prog.distinct >= options.max_states
            # At a bound the last level is still expanded (its states are checked as they are
            # expanded), but nothing is kept: it only tells whether anything lies beyond.
            probe = at_state_bound or (options.max_depth is not None and level >= options.max_depth)
            held: dict[int, Held] = {}
            expanded = self._step(self._expand_all, level, held)
            due = options.save_every_level or time.monotonic() - last_save >= options.save_interval_s
            deduped = self._step(self._dedupe_all, level, probe, due)
            level_generated = sum(r["generated"] for r in expanded)
            level_coverage = CoverageReport()
            for reply in expanded:
                level_coverage.merge(reply.get("coverage", {}))
            if any(r["cut"] for r in expanded) and prog.bound_reason is None:
                prog.bound_reason = MODEL_BOUND
            prog.violations.extend(first_per_property(v for r in expanded for v in r["violations"]))
            new = sum(r["new"] for r in deduped)
            if probe:
                # Kept apart: a run resumed from here expands this level again, and must not count it twice.
                prog.probe_generated, prog.probe_coverage = level_generated, level_coverage.to_json()
                if not new:
                    prog.done = True
                elif at_state_bound:
                    prog.bound_reason = f"max states {options.max_states}"
                else:
                    prog.bound_reason = f"max depth {options.max_depth}"
                break
            prog.generated += level_generated
            total = CoverageReport()
            total.merge(prog.coverage)
            total.merge(level_coverage.to_json())
            prog.coverage = total.to_json()
            prog.distinct += new
            prog.levels.append(new)
            prog.level = level + 1
            counts = [0] * job.partitions
            for reply in deduped:
                for source, won in reply["won"].items():
                    counts[int(source)] += won
            self._step(self._advance, level, held)
            del held
            moves = balancing_moves(counts)
            self.moved += sum(count for _source, _target, count in moves)
            if moves:
                self._step(self._send, level, moves)
                self._step(self._receive, level, moves)
            if deduped[0]["save"] or deduped[0]["rescale"]:
                self._save_level(prog, saved)
                saved, last_save = prog.level, time.monotonic()
            elif self.task == 0:
                write_progress(job.workdir, prog)
            if deduped[0]["rescale"]:  # the driver restarts the search on more tasks
                rescale = True
                break
        if saved != prog.level:  # the driver reads the shards to rebuild traces
            if options.save_every_level:
                self._save_level(prog, saved)
            else:
                self._step(self._save_shards, prog.level)
        elif options.save_every_level and self.task == 0:  # how the search ended
            save_level_meta(job.workdir, job, prog)
        shards = sum(fps.nbytes + parents.nbytes for fps, parents in self.visited.values())
        final = self._gather({"visited_bytes": shards, "wait_s": round(self.waited, 2)})
        return {
            "progress": asdict(prog),
            "visited_bytes": sum(r["visited_bytes"] for r in final),
            "task_wait_s": [r["wait_s"] for r in final],
            "moved_states": self.moved,
            "rescale": rescale,
        }

    def _load(self, level: int) -> None:
        built(self.job)  # imports the model's module, whose classes the pickled states name
        for p in self.mine:
            self.frontier[p] = read_states(frontier_path(self.job.workdir, p, level), self.job.key)
            self.visited[p] = read_visited(self.job.workdir, p, level, self.job.key)

    def _save_shards(self, level: int) -> None:
        for p in self.mine:
            write_visited(self.job.workdir, p, level, *self.visited[p], self.job.key)

    def _save_level(self, prog: LevelProgress, previous: int) -> None:
        """Save every partition's frontier and shard; then task 0 points meta.json at them."""

        def save() -> None:
            self._check_owner()  # before writing a level another run's stage may be loading
            self._save_shards(prog.level)
            for p in self.mine:
                write_states(frontier_path(self.job.workdir, p, prog.level), *self.frontier[p], self.job.key)

        self._step(save)
        if self.task == 0:
            self._check_owner()
            save_level_meta(self.job.workdir, self.job, prog)
            write_progress(self.job.workdir, prog)
            if previous != prog.level:
                self._check_owner()  # the level a new stage may be loading: never delete it
                for path in saved_files(self.job.workdir, self.job.partitions, previous):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()

    def _expand_all(self, level: int, held: dict[int, Held]) -> dict[str, Any]:
        summary: dict[str, Any] = {"generated": 0, "cut": 0, "violations": []}
        summary["coverage_counter"] = coverage_counter(self.job)
        for p in self.mine:
            held[p] = self._expand(level, p, summary)
        summary["violations"] = first_per_property(summary["violations"])
        summary["coverage"] = summary.pop("coverage_counter").counts()
        return summary

    def _expand(self, level: int, partition: int, summary: dict[str, Any]) -> Held:
        import numpy as np

        job = self.job
        model, invariants, steps, keyfn = built(job)
        within = bounds_check(model)
        coverage = summary["coverage_counter"]
        fps, states = self.frontier[partition]
        violations = summary["violations"]
        all_hold = all_true([pred for _name, pred in invariants]) if invariants else None
        # Per fingerprint of a successor, its least parent here and the successor it gave. Without
        # step properties or symmetry, a state's successors go in with one call, in C when the
        # encoder is (fingerprinting them and this bookkeeping are most of a task's own time).
        fast = not steps and keyfn is fingerprint
        gathered = candidates() if fast else Candidates()
        generated = 0
        for fp, state in zip(fps, states, strict=True):
            coverage.state(state)
            if all_hold is not None and not all_hold(state):
                for name, pred in invariants:  # again, through what reports a failure
                    if not holds(name, pred, state):
                        violations.append((name, "invariant", fp, None))
            if within is not None and not within(state):
                summary["cut"] += 1
                continue
            succs = expand(model, state)
            coverage.expanded(state, succs, True)
            generated += len(succs)
            if job.deadlock and not succs:
                violations.append((DEADLOCK, "deadlock", fp, None))
            if fast:
                gathered.add(succs, fp)
                continue
            for action, nxt in succs:
                nfp = keyfn(nxt)
                for name, pred in steps:
                    if not holds(name, pred, state, action, nxt):
                        violations.append((name, "step", fp, nfp))
                gathered.offer(nfp, fp, nxt)
        summary["generated"] += generated
        fps_bytes, parents_bytes, successors = gathered.take()
        del gathered
        new_fps = np.frombuffer(fps_bytes, dtype=np.uint64)
        parents = np.frombuffer(parents_bytes, dtype=np.uint64)
        owner = new_fps % np.uint64(job.partitions)
        held: Held = {}
        for q in range(job.partitions):
            chosen = np.flatnonzero(owner == q)
            table = np.stack([new_fps[chosen], parents[chosen]])
            path = self._path("candidates", level, partition, q)
            write_atomically(path, lambda fh, t=table: np.save(fh, t))
            held[q] = (table, [successors[i] for i in chosen.tolist()])
        return held

    def _dedupe_all(self, level: int, probe: bool, save_due: bool) -> dict[str, Any]:
        won: dict[int, int] = {}
        new = 0
        for q in self.mine:
            new += self._dedupe(level, q, probe, won)
        # Whether to save this level is task 0's call: the tasks' clocks need not agree. So is
        # whether to stop after it, because the driver has found more slots than there are tasks.
        return {"new": new, "won": won, "save": save_due, "rescale": (self.exchange / RESCALE).exists()}

    def _dedupe(self, level: int, partition: int, probe: bool, won_by: dict[int, int]) -> int:
        """Keep, of every expander's candidates for this partition, those not yet visited."""
        import numpy as np

        paths = [self._path("candidates", level, p, partition) for p in range(self.job.partitions)]
        tables = [np.load(path) for path in paths]
        for path in paths:
            path.unlink()
        fps = np.concatenate([t[0] for t in tables])
        parents = np.concatenate([t[1] for t in tables])
        origin = np.concatenate([np.full(t.shape[1], p, dtype=np.int64) for p, t in enumerate(tables)])
        index = np.concatenate([np.arange(t.shape[1], dtype=np.int64) for t in tables])
        order = np.lexsort((parents, fps))  # by fingerprint, then parent: the least parent first
        sorted_fps = fps[order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = sorted_fps[1:] != sorted_fps[:-1]
        chosen = order[first]  # in fingerprint order
        visited, visited_parents = self.visited[partition]
        if len(visited):
            pos = np.searchsorted(visited, fps[chosen])
            pos[pos == len(visited)] = 0
            chosen = chosen[visited[pos] != fps[chosen]]
        if probe:
            return len(chosen)
        new_fps = fps[chosen]
        at = np.searchsorted(visited, new_fps)
        self.visited[partition] = (np.insert(visited, at, new_fps), np.insert(visited_parents, at, parents[chosen]))
        for p in range(self.job.partitions):
            won = np.sort(index[chosen[origin[chosen] == p]])
            won_by[p] = won_by.get(p, 0) + len(won)
            write_atomically(self._path("winners", level, partition, p), lambda fh, w=won: np.save(fh, w))
        return len(chosen)

    def _advance(self, level: int, held: dict[int, Held]) -> None:
        """The candidates each partition generated that their owners kept become its frontier."""
        import numpy as np

        for p in self.mine:
            fps: list[int] = []
            states: list[State] = []
            for q in range(self.job.partitions):
                path = self._path("winners", level, q, p)
                won = np.load(path)
                path.unlink()
                table, candidates = held[p][q]
                fps.extend(table[0][won].tolist())
                states.extend([candidates[i] for i in won.tolist()])
            self.frontier[p] = (fps, states)

    def _send(self, level: int, moves: list[tuple[int, int, int]]) -> None:
        for source, target, count in moves:
            if source in self.mine:
                fps, states = self.frontier[source]
                write_states(self._path("moved", level, source, target), fps[-count:], states[-count:], self.job.key)
                del fps[-count:], states[-count:]

    def _receive(self, level: int, moves: list[tuple[int, int, int]]) -> None:
        for source, target, _count in moves:
            if target in self.mine:
                path = self._path("moved", level, source, target)
                fps, states = read_states(path, self.job.key)
                path.unlink()
                self.frontier[target][0].extend(fps)
                self.frontier[target][1].extend(states)


def first_per_property(violations: Iterable[Any]) -> list[list[Any]]:
    """Of a level's violations, the least of each property: the one a trace is rebuilt for."""
    first: dict[str, list[Any]] = {}
    for v in sorted(tuple(v) for v in violations):
        first.setdefault(v[0], list(v))
    return list(first.values())


BALANCE_SLACK = 1 / 32
"""A partition keeps up to this much more than its share of the next frontier before moving any."""


def balancing_moves(counts: list[int]) -> list[tuple[int, int, int]]:
    """(source, target, how many) moves that even out the partitions' next frontiers.

    A state stays, by default, with the partition that generated it; the frontiers drift apart
    (the first level is all one partition's), and the level waits for the slowest task."""
    total = sum(counts)
    share = -(-total // len(counts))
    keep = share + int(share * BALANCE_SLACK)
    give = [(p, n - share) for p, n in enumerate(counts) if n > keep]
    take = [[p, share - n] for p, n in enumerate(counts) if n < share]
    moves = []
    for source, surplus in give:
        for slot in take:
            if not surplus:
                break
            count = min(surplus, slot[1])
            if count:
                moves.append((source, slot[0], count))
                slot[1] -= count
                surplus -= count
    return moves
