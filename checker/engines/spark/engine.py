"""Level-synchronous BFS on PySpark: the same search as `bfs`, across Spark executors.

Design (see docs/spark.md): every state belongs to partition ``fingerprint % P``, which owns a
shard of the visited set -- sorted 64-bit fingerprints with their parents' fingerprints, 16 bytes
per state. The whole search is one Spark job: a barrier stage of a task per slot, each serving
its share of the partitions and keeping their shards and frontiers in memory from level to level.
At each level a task expands its frontiers and sends each owner the new fingerprints and their
parents; the owners say which are new; a new state stays, unpickled, in the task that generated
it, and only the states that even out the frontiers' sizes move. The tasks meet at small files.

Once a minute (every level with ``--checkpoint DIR``) the partitions save their frontiers and
shards and ``meta.json`` records the level: a lost executor restarts the search from there, and
``--resume DIR`` too. The driver collects only counts and violations. It rebuilds a trace by
following parent fingerprints through the shards, then re-executing the model forward, as TLC
does.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import pickle
import re
import shutil
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kmc.checker.engines.bfs import DEADLOCK, MODEL_BOUND, bounds_check, expand, peak_rss, search_result
from kmc.checker.errors import UserError
from kmc.checker.model import Model, State
from kmc.checker.properties import PropertySet, all_true, holds, select_properties
from kmc.checker.registry import load_model_class
from kmc.checker.result import CheckResult, Stats, Trace, Violation
from kmc.checker.search.observers import Coverage, CoverageReport, SearchObserver
from kmc.checker.search.path import trace_from_keys
from kmc.checker.search.progress import NoProgress, Progress
from kmc.checker.storage.checkpoint import (
    check_resumable,
    checkpoint_key,
    interned,
    load_meta,
    opened,
    save_meta,
    sealed,
    write_atomically,
)
from kmc.checker.storage.fingerprint import Candidates, candidates, collision_probability, fingerprint

LOG4J2 = """\
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
rootLogger.level = off
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


@dataclass(frozen=True)
class SparkOptions:
    master: str = "local[*]"
    partitions: int | None = None
    """Shards of the visited set; default: one per core Spark reports (at least 2)."""
    checkpoint: str | None = None
    """Keep each completed level in this directory so the run can be resumed."""
    resume: bool = False
    driver_memory: str = "2g"
    verbose: bool = False
    """Leave Spark's own logging at WARN (and its UI on) instead of quiet."""
    save_interval_s: float = 60.0
    """Without ``checkpoint``, how often a level is saved, to restart from if an executor is lost."""
    max_depth: int | None = None
    max_states: int | None = None
    symmetry: bool = False
    deadlock: bool = False
    keep_going: bool = False

    @property
    def save_every_level(self) -> bool:
        """A checkpoint holds every completed level; otherwise one is saved every ``save_interval_s``."""
        return self.checkpoint is not None


@dataclass(frozen=True)
class Job:
    """What an executor needs to rebuild the model and its properties: small and picklable."""

    model_ref: str
    config: dict[str, Any]
    spec_files: tuple[str, ...]
    property_names: tuple[str, ...]
    symmetry: bool
    deadlock: bool
    partitions: int
    workdir: str
    key: bytes = field(default=b"", repr=False)
    """The user's checkpoint key: every file of the work directory carries an HMAC made with it."""

    def signature(self) -> dict[str, Any]:
        sig = asdict(self)
        sig.pop("workdir")
        sig.pop("key")
        return sig


# -- executor side ------------------------------------------------------------------------------
_BUILT: dict[str, tuple[Model, list[tuple[str, Any]], list[tuple[str, Any]], Any]] = {}
_PROPS: dict[str, PropertySet] = {}


def _build(job: Job) -> tuple[Model, list[tuple[str, Any]], list[tuple[str, Any]], Any]:
    """The model, invariants, step properties and key function, built once per Python worker."""
    key = json.dumps(job.signature(), sort_keys=True, default=str)
    if key not in _BUILT:
        cls = load_model_class(job.model_ref)
        model = cls.build(None, job.config)
        props = select_properties(cls, job.spec_files, job.property_names)
        invariants = [(p.name, p.bind(model)) for p in props.invariants]
        steps = [(p.name, p.bind(model)) for p in props.steps]
        if job.symmetry:
            canon = model.symmetry
            keyfn = lambda s: fingerprint(canon(s))  # noqa: E731
        else:
            keyfn = fingerprint
        _BUILT[key] = (model, invariants, steps, keyfn)
        _PROPS[key] = props
    return _BUILT[key]


def _coverage(job: Job) -> Coverage:
    """A fresh coverage counter for one level of this task's work (summed by every task)."""
    model = _build(job)[0]
    return Coverage(model, _PROPS[json.dumps(job.signature(), sort_keys=True, default=str)])


def _frontier_path(workdir: str, partition: int, level: int) -> Path:
    """The saved frontier of depth ``level`` that ``partition`` expands."""
    return Path(workdir) / f"frontier-{partition:05d}-{level:05d}.pkl"


def _visited_path(workdir: str, partition: int, level: int) -> Path:
    return Path(workdir) / f"visited-{partition:05d}-{level:05d}.npz"


def _saved_files(workdir: str, partitions: int, level: int) -> Iterator[Path]:
    for p in range(partitions):
        yield _frontier_path(workdir, p, level)
        yield _visited_path(workdir, p, level)


def _await(paths: list[Path]) -> None:
    """Wait until every file exists. The tasks of a barrier stage all run at once, so they will;
    if one fails, Spark ends the stage and its other tasks with it."""
    delay = 0.001
    while paths := [p for p in paths if not p.exists()]:
        time.sleep(delay)
        delay = min(2 * delay, 0.02)


def _write_states(path: Path, fps: list[int], states: list[State], key: bytes) -> None:
    # One pickle per file: parts the states share are written once.
    import numpy as np

    piece = (np.array(fps, dtype=np.uint64), interned(states))
    payload = pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL)
    write_atomically(path, lambda fh: fh.write(sealed(key, payload)))


def _read_states(path: Path, key: bytes) -> tuple[list[int], list[State]]:
    fps, states = pickle.loads(opened(key, path))  # authenticated above: this user's own file
    return fps.tolist(), states


def _read_visited(workdir: str, partition: int, level: int, key: bytes) -> tuple[Any, Any]:
    import numpy as np

    path = _visited_path(workdir, partition, level)
    with np.load(io.BytesIO(opened(key, path)), allow_pickle=False) as data:
        return data["fps"], data["parents"]


def _write_visited(workdir: str, partition: int, level: int, fps: Any, parents: Any, key: bytes) -> None:
    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, fps=fps, parents=parents)
    write_atomically(_visited_path(workdir, partition, level), lambda fh: fh.write(sealed(key, buffer.getvalue())))


RESCALE = "rescale"
"""A file the driver puts in the exchange directory when more slots than tasks are there."""


class _StopError(Exception):
    """A task of the run met a user error: every task stops at the next exchange."""


def _search_task(job: Job, options: SparkOptions, attempt: str, tasks: int) -> Any:
    """The whole search, as one barrier stage of ``tasks`` tasks; see `_Searcher`."""

    def run(_items: Iterable[Any]) -> Iterator[dict[str, Any]]:
        from pyspark import BarrierTaskContext

        gc_was_enabled = gc.isenabled()
        gc.disable()  # states are acyclic tuples: the collector only costs time here
        try:
            yield _Searcher(job, options, BarrierTaskContext.get().partitionId(), attempt, tasks).run()
        except _StopError as exc:
            yield {"error": str(exc)}
        finally:
            if gc_was_enabled:
                gc.enable()

    return run


Held = dict[int, tuple[Any, list[State]]]
"""Per owner partition: the candidates' fingerprints and parents (numpy, 2 x n) and their states."""


class _Searcher:
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

    def __init__(self, job: Job, options: SparkOptions, task: int, attempt: str, tasks: int) -> None:
        self.job, self.options, self.task, self.tasks = job, options, task, tasks
        self.mine = [p for p in range(job.partitions) if p % tasks == self.task]
        # A directory of this attempt's own, so files of an abandoned attempt never mix in. Spark
        # does not retry the stage itself (see spark_context); the driver does, naming each one.
        self.exchange = Path(job.workdir) / f"exchange-{attempt}"
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
        paths = [self.exchange / f"sync-{self.round:06d}-{t:05d}.json" for t in range(self.tasks)]
        write_atomically(paths[self.task], lambda fh: fh.write(json.dumps(message).encode()))
        start = time.perf_counter()
        _await(paths)
        self.waited += time.perf_counter() - start
        replies = [json.loads(path.read_text()) for path in paths]
        with contextlib.suppress(FileNotFoundError):  # every task has read the previous round
            (self.exchange / f"sync-{self.round - 1:06d}-{self.task:05d}.json").unlink()
        errors = [r["error"] for r in replies if r.get("error")]
        if errors:
            raise _StopError(errors[0])
        return replies

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
        prog = _load_meta(job.workdir, job)
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
            prog.violations.extend(_first_per_property(v for r in expanded for v in r["violations"]))
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
            moves = _balancing_moves(counts)
            self.moved += sum(count for _source, _target, count in moves)
            if moves:
                self._step(self._send, level, moves)
                self._step(self._receive, level, moves)
            if deduped[0]["save"] or deduped[0]["rescale"]:
                self._save_level(prog, saved)
                saved, last_save = prog.level, time.monotonic()
            elif self.task == 0:
                _write_progress(job.workdir, prog)
            if deduped[0]["rescale"]:  # the driver restarts the search on more tasks
                rescale = True
                break
        if saved != prog.level:  # the driver reads the shards to rebuild traces
            if options.save_every_level:
                self._save_level(prog, saved)
            else:
                self._step(self._save_shards, prog.level)
        elif options.save_every_level and self.task == 0:  # how the search ended
            _save_meta(job.workdir, job, prog)
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
        _build(self.job)  # imports the model's module, whose classes the pickled states name
        for p in self.mine:
            self.frontier[p] = _read_states(_frontier_path(self.job.workdir, p, level), self.job.key)
            self.visited[p] = _read_visited(self.job.workdir, p, level, self.job.key)

    def _save_shards(self, level: int) -> None:
        for p in self.mine:
            _write_visited(self.job.workdir, p, level, *self.visited[p], self.job.key)

    def _save_level(self, prog: _Progress, previous: int) -> None:
        """Save every partition's frontier and shard; then task 0 points meta.json at them."""

        def save() -> None:
            self._save_shards(prog.level)
            for p in self.mine:
                _write_states(_frontier_path(self.job.workdir, p, prog.level), *self.frontier[p], self.job.key)

        self._step(save)
        if self.task == 0:
            _save_meta(self.job.workdir, self.job, prog)
            _write_progress(self.job.workdir, prog)
            if previous != prog.level:
                for path in _saved_files(self.job.workdir, self.job.partitions, previous):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()

    def _expand_all(self, level: int, held: dict[int, Held]) -> dict[str, Any]:
        summary: dict[str, Any] = {"generated": 0, "cut": 0, "violations": [], "coverage_counter": _coverage(self.job)}
        for p in self.mine:
            held[p] = self._expand(level, p, summary)
        summary["violations"] = _first_per_property(summary["violations"])
        summary["coverage"] = summary.pop("coverage_counter").counts()
        return summary

    def _expand(self, level: int, partition: int, summary: dict[str, Any]) -> Held:
        import numpy as np

        job = self.job
        model, invariants, steps, keyfn = _build(job)
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
                _write_states(self._path("moved", level, source, target), fps[-count:], states[-count:], self.job.key)
                del fps[-count:], states[-count:]

    def _receive(self, level: int, moves: list[tuple[int, int, int]]) -> None:
        for source, target, _count in moves:
            if target in self.mine:
                path = self._path("moved", level, source, target)
                fps, states = _read_states(path, self.job.key)
                path.unlink()
                self.frontier[target][0].extend(fps)
                self.frontier[target][1].extend(states)


def _first_per_property(violations: Iterable[Any]) -> list[list[Any]]:
    """Of a level's violations, the least of each property: the one a trace is rebuilt for."""
    first: dict[str, list[Any]] = {}
    for v in sorted(tuple(v) for v in violations):
        first.setdefault(v[0], list(v))
    return list(first.values())


BALANCE_SLACK = 1 / 32
"""A partition keeps up to this much more than its share of the next frontier before moving any."""


def _balancing_moves(counts: list[int]) -> list[tuple[int, int, int]]:
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


# -- driver side --------------------------------------------------------------------------------
def spark_context(master: str, driver_memory: str = "2g", verbose: bool = False, app: str = "kmc") -> Any:
    """A SparkContext that runs this Python everywhere, binds to loopback and stays quiet."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    from pyspark import SparkConf, SparkContext

    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName(app)
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.driver.memory", driver_memory)
        .set("spark.pyspark.python", sys.executable)
        .set("spark.executorEnv.PYTHONHASHSEED", "0")
        .set("spark.python.worker.reuse", "true")
        .set("spark.ui.showConsoleProgress", "false")
        # A level is a barrier stage; if an executor is lost and the rest cannot run it, give up
        # in seconds (not Spark's ten minutes) so the engine reruns it on the slots left.
        .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s")
        .set("spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures", "3")
        # A failed search stage comes back to the engine, which restarts it from the last saved
        # level in a fresh exchange directory: Spark must not rerun it on its own.
        .set("spark.stage.maxConsecutiveAttempts", "1")
    )
    pythonpath = os.environ.get("PYTHONPATH")
    if pythonpath:
        conf.set("spark.executorEnv.PYTHONPATH", pythonpath)
    if not verbose:
        log_config = Path(tempfile.gettempdir()) / "kmc-spark-log4j2.properties"
        log_config.write_text(LOG4J2)
        java_opt = f"-Dlog4j2.configurationFile=file:{log_config}"
        conf.set("spark.ui.enabled", "false")
        conf.set("spark.driver.extraJavaOptions", java_opt)
        conf.set("spark.executor.extraJavaOptions", java_opt)
    if SparkContext._active_spark_context is not None or verbose:
        sc = SparkContext.getOrCreate(conf)
    else:
        sc = SparkContext(conf=conf, gateway=_quiet_gateway(conf))
    sc.setLogLevel("WARN" if verbose else "ERROR")
    return sc


JVM_NOISE = ("WARNING: Using incubator modules",)


def _quiet_gateway(conf: Any) -> Any:
    """Launch the driver JVM with its stderr filtered: the JVM's own start-up notices are dropped."""
    import subprocess
    import threading

    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    proc = getattr(gateway, "proc", None)
    if proc is None or proc.stderr is None:
        return gateway

    def forward() -> None:
        for raw in iter(proc.stderr.readline, b""):
            line = raw.decode(errors="replace")
            if not line.startswith(JVM_NOISE):
                sys.stderr.write(line)
                sys.stderr.flush()

    threading.Thread(target=forward, name="kmc-spark-stderr", daemon=True).start()
    return gateway


@dataclass
class _Progress:
    level: int = 1
    distinct: int = 0
    generated: int = 0
    levels: list[int] = field(default_factory=list)
    violations: list[list[Any]] = field(default_factory=list)
    done: bool = False
    bound_reason: str | None = None
    coverage: dict[str, Any] = field(default_factory=dict)
    """Coverage counts of the levels expanded so far (a resumed run continues them)."""
    probe_generated: int = 0
    probe_coverage: dict[str, Any] = field(default_factory=dict)
    """What expanding the level at a bound found: counted in this run's result only."""


CHECKPOINT_FORMAT = 4
"""Bumped whenever the files of a level change shape; a checkpoint of another format is refused."""


def _save_meta(workdir: str, job: Job, prog: _Progress) -> None:
    save_meta(workdir, job.key, CHECKPOINT_FORMAT, job.signature(), asdict(prog))


def _load_meta(workdir: str, job: Job) -> _Progress:
    same = "model, config, properties, symmetry, deadlock and partitions"
    progress = load_meta(workdir, job.key, CHECKPOINT_FORMAT, job.signature(), same)
    try:
        return _Progress(**progress)
    except TypeError as exc:
        raise UserError(f"--resume {workdir}: meta.json is malformed ({exc})") from None


def _check_resumable(workdir: str) -> None:
    """A checkpoint directory whose meta.json exists, parses and carries this user's HMAC."""
    check_resumable(workdir, CHECKPOINT_FORMAT, checkpoint_key())


def _parent_lookup(workdir: str, partitions: int, level: int, key: bytes) -> Any:
    import numpy as np

    shards: dict[int, tuple[Any, Any]] = {}

    def parent(fp: int) -> int | None:
        p = fp % partitions
        if p not in shards:
            shards[p] = _read_visited(workdir, p, level, key)
        fps, parents = shards[p]
        i = int(np.searchsorted(fps, np.uint64(fp)))
        if i >= len(fps) or int(fps[i]) != fp:
            raise UserError(f"spark: fingerprint {fp:#x} missing from its visited shard (damaged work directory)")
        up = int(parents[i])
        return None if up == fp else up

    return parent


def spark_bfs(
    model: Model,
    props: PropertySet,
    *,
    model_ref: str,
    spec_files: tuple[str, ...] = (),
    options: SparkOptions = SparkOptions(),
    progress: Progress | None = None,
    preset: str | None = None,
    sc: Any = None,
    observers: Sequence[SearchObserver] = (),
) -> CheckResult:
    progress = progress or NoProgress()
    start = time.perf_counter()
    if options.symmetry and model.symmetry is None:
        raise UserError(f"model {model.name} defines no symmetry(); run without --symmetry")
    own_context = sc is None
    if own_context:
        try:
            sc = spark_context(options.master, options.driver_memory, options.verbose)
        except Exception as exc:  # the JVM refused the master or the settings: one line, not its stack
            raise UserError(f"spark could not start on {options.master}: {_failure(exc)}") from None
    try:
        partitions = options.partitions or max(2, sc.defaultParallelism)
        temporary = options.checkpoint is None
        workdir = tempfile.mkdtemp(prefix="kmc-spark-") if temporary else options.checkpoint
        Path(workdir).mkdir(parents=True, exist_ok=True)
        job = Job(
            model_ref=model_ref,
            config=model.config_dict(),
            spec_files=tuple(str(Path(s).resolve()) for s in spec_files),
            property_names=tuple(props.names()),
            symmetry=options.symmetry,
            deadlock=options.deadlock,
            partitions=partitions,
            workdir=str(Path(workdir).resolve()),
            key=os.urandom(32) if temporary else checkpoint_key(),
        )
        try:
            result = _search(sc, model, props, job, options, progress, resume=options.resume)
            observed = result.stats.extra.pop("coverage", {})
            for observer in observers:  # what the executors observed reaches the driver's coverage
                if isinstance(observer, Coverage):
                    observer.carried.merge(observed)
        finally:
            if temporary:
                shutil.rmtree(workdir, ignore_errors=True)
    finally:
        if own_context:
            sc.stop()
    result.preset = preset
    result.stats.elapsed_s = time.perf_counter() - start
    result.stats.peak_memory_bytes = peak_rss()
    distinct = result.stats.distinct_states
    # What a state costs is on the executors (the driver's own memory stays flat): the visited set.
    result.stats.bytes_per_state = result.stats.extra["visited_bytes"] / distinct if distinct else None
    return result


def _initial_level(model: Model, job: Job, keyfn: Any) -> _Progress:
    """Depth 1: the initial states, saved as the first level (they are checked when expanded)."""
    import numpy as np

    prog = _Progress()
    frontier: dict[int, tuple[list[int], list[State]]] = {p: ([], []) for p in range(job.partitions)}
    seen: set[int] = set()
    for state in model.init_states():
        prog.generated += 1
        fp = keyfn(state)
        if fp in seen:
            continue
        seen.add(fp)
        fps_p, states_p = frontier[fp % job.partitions]
        fps_p.append(fp)
        states_p.append(state)
    for p, (fps_p, states_p) in frontier.items():
        fps = np.array(sorted(fps_p), dtype=np.uint64)
        _write_visited(job.workdir, p, 1, fps, fps, job.key)  # an initial state is its own parent
        _write_states(_frontier_path(job.workdir, p, 1), fps_p, states_p, job.key)
    prog.distinct = len(seen)
    prog.levels = [len(seen)]
    return prog


def _write_progress(workdir: str, prog: _Progress) -> None:
    path = Path(workdir) / "progress.json"
    write_atomically(path, lambda fh: fh.write(json.dumps(asdict(prog), default=str).encode()))


def _read_progress(workdir: str) -> _Progress | None:
    try:
        return _Progress(**json.loads((Path(workdir) / "progress.json").read_text()))
    except (OSError, ValueError, TypeError):
        return None


RUN_ATTEMPTS = 4
"""A search whose stage fails (an executor lost, and too few slots left to rerun it) is started
again from its last saved level, split over the slots there are then."""


def _slots(sc: Any) -> int:
    """How many tasks the cluster can run at once now (a barrier stage needs them all)."""
    try:
        jsc = sc._jsc.sc()
        return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile()))
    except Exception:  # an API private to Spark: fall back to what it reports at start
        return int(sc.defaultParallelism)


def _wait_for_slots(sc: Any, wanted: int, timeout: float = 25.0, settle: float = 1.0) -> int:
    """The slots to run on. A cluster's executors register after the context starts, one by one:
    wait for the first, then until there are ``wanted`` or none has come for ``settle`` seconds.
    (One that comes later still gets work: the search rescales onto it.)"""
    deadline = time.monotonic() + timeout
    while (slots := _slots(sc)) < 1:
        if sc._jsc is None or sc._jsc.sc().isStopped():
            raise UserError(f"spark: the context on {sc.master} stopped (the master refused the application)")
        if time.monotonic() > deadline:
            raise UserError(f"spark: no executor registered within {timeout:.0f} s; is the cluster up?")
        time.sleep(0.2)
    if sc.master.startswith("local"):
        return slots
    last_change = time.monotonic()
    while slots < wanted and time.monotonic() - last_change < settle:
        time.sleep(0.1)
        if (now := _slots(sc)) != slots:
            slots, last_change = now, time.monotonic()
    return slots


def _failure(exc: Exception) -> str:
    java = getattr(exc, "java_exception", None)
    text = str(java.getMessage() if java is not None else exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


class _SlotsLostError(Exception):
    def __str__(self) -> str:
        return "an executor was lost and the slots left cannot run the stage"


def _collect_watched(sc: Any, rdd: Any, tasks: int, group: str, tick: Any) -> list[Any]:
    """Collect a barrier stage, cancelling it if the cluster loses the slots it runs on.

    Spark retries a failed barrier stage only on as many slots as it had, and waits for them
    without end; the engine instead reruns the search on the slots that are left. ``tick`` is
    called twice a second meanwhile, with the slots there are."""
    from pyspark import InheritableThread

    outcome: dict[str, Any] = {}

    def collect() -> None:
        sc.setJobGroup(group, "kmc BFS", interruptOnCancel=True)
        try:
            outcome["value"] = rdd.collect()
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = InheritableThread(target=collect, name=group, daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.5)
            slots = _slots(sc)
            tick(slots)
            if thread.is_alive() and slots < tasks:
                sc.cancelJobGroup(group)
                thread.join()
                raise _SlotsLostError
    except BaseException:
        sc.cancelJobGroup(group)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _run_search(sc: Any, job: Job, options: SparkOptions, progress: Progress) -> tuple[dict[str, Any], int]:
    """The search's outcome (from task 0) and how many times it was restarted after a failure.

    The stage runs on the slots there are when it starts; if more appear (a standalone cluster's
    executors register one by one), it saves the level it is at and starts again on them all."""
    shown = 0
    tasks = 0
    exchange = Path(job.workdir)

    def tick(slots: int) -> None:
        nonlocal shown
        prog = _read_progress(job.workdir)
        if prog is not None and prog.level > shown:
            shown = prog.level
            queue = prog.levels[-1] if prog.levels else 0
            progress.update(distinct=prog.distinct, generated=prog.generated, depth=prog.level, queue=queue)
        if tasks < job.partitions and slots > tasks:
            with contextlib.suppress(FileNotFoundError):  # the stage may just have ended
                (exchange / RESCALE).touch()

    for stale in Path(job.workdir).glob("exchange-*"):  # left by a run that was killed
        shutil.rmtree(stale, ignore_errors=True)
    run_id = uuid.uuid4().hex[:12]
    failures = stages = 0
    while True:
        stages += 1
        tasks = min(job.partitions, _wait_for_slots(sc, job.partitions))
        name = f"{run_id}-{stages}"
        exchange = Path(job.workdir) / f"exchange-{name}"
        rdd = sc.parallelize(range(tasks), tasks).barrier().mapPartitions(_search_task(job, options, name, tasks))
        try:
            summaries = _collect_watched(sc, rdd, tasks, f"kmc-search-{name}", tick)
        except Exception as exc:
            failures += 1
            if failures == RUN_ATTEMPTS:
                raise
            time.sleep(failures)  # let the cluster notice what it lost
            level = _load_meta(job.workdir, job).level
            print(f"kmc spark: the search failed ({_failure(exc)}); resuming it from level {level}", file=sys.stderr)
            continue
        finally:
            shutil.rmtree(exchange, ignore_errors=True)
        errors = [s["error"] for s in summaries if "error" in s]
        if errors:
            raise UserError(errors[0])
        if not summaries[0]["rescale"]:
            tick(tasks)
            return summaries[0], failures


def _search(
    sc: Any, model: Model, props: PropertySet, job: Job, options: SparkOptions, progress: Progress, resume: bool
) -> CheckResult:
    _model, _inv, _steps, keyfn = _build(job)
    if resume:
        # Refuse a checkpoint of another check before starting Spark's job. The resumed run reports
        # its own bounds: how the earlier run ended (a bound it hit, its probe of the level beyond) goes.
        prog = _load_meta(job.workdir, job)
        prog.done, prog.bound_reason, prog.probe_generated, prog.probe_coverage = False, None, 0, {}
        _save_meta(job.workdir, job, prog)
    else:
        _save_meta(job.workdir, job, _initial_level(model, job, keyfn))
    outcome, restarts = _run_search(sc, job, options, progress)
    progress.close()
    result = _result(model, props, job, options, _Progress(**outcome["progress"]), keyfn)
    result.stats.extra.update(
        visited_bytes=outcome["visited_bytes"],
        moved_states=outcome["moved_states"],  # since the last (re)start
        task_wait_s=outcome["task_wait_s"],
        restarts=restarts,
    )
    return result


def _result(
    model: Model, props: PropertySet, job: Job, options: SparkOptions, prog: _Progress, keyfn: Any
) -> CheckResult:
    parent_of = _parent_lookup(job.workdir, job.partitions, prog.level, job.key)

    def trace_to(fp: int) -> Trace:
        chain = [fp]
        while (up := parent_of(chain[-1])) is not None:
            chain.append(up)
        chain.reverse()
        return trace_from_keys(model, chain, keyfn)

    found: dict[str, Violation] = {}
    steps = {p.name: p.bind(model) for p in props.steps}
    for name, kind, fp, _next_fp in prog.violations:
        if name in found:
            continue
        if kind == "step":
            trace = trace_to(fp)
            last = trace.states[-1]
            pred = steps[name]
            action, nxt = next(((a, t) for a, t in model.successors(last) if not pred(last, a, t)))
            trace.states.append(nxt)
            trace.actions.append(action)
        else:
            trace = trace_to(fp)
        found[name] = Violation(property=name, kind=kind, trace=trace)
    stopped_early = bool(found) and not options.keep_going and not prog.done
    complete = prog.done and prog.bound_reason is None and not stopped_early
    depth = len([n for n in prog.levels if n])
    generated = prog.generated + prog.probe_generated
    coverage = CoverageReport()
    coverage.merge(prog.coverage)
    coverage.merge(prog.probe_coverage)
    stats = Stats(
        distinct_states=prog.distinct,
        generated_states=generated,
        depth=depth,
        storage="fingerprints",
        collision_probability=collision_probability(prog.distinct, generated),
        extra={"partitions": job.partitions, "states_per_level": prog.levels, "coverage": coverage.to_json()},
    )
    return search_result(
        "spark", model, props, options.deadlock, options.symmetry, list(found.values()),
        complete=complete, stats=stats, bound_reason=prog.bound_reason, preset=None,
    )  # fmt: skip


_LOCAL_MASTER = re.compile(r"local(\[(\*|[1-9][0-9]*)(,\s*[0-9]+)?\])?")
_MEMORY = re.compile(r"[1-9][0-9]*[kmgtKMGT]?")
MASTER_CONNECT_TIMEOUT_S = 5.0


def check_master(master: str, driver_memory: str) -> None:
    """Refuse a master Spark cannot use before a JVM starts: a malformed one at once, a standalone
    master nobody answers at within seconds -- one line each, never a Java stack or a hang."""
    if not _MEMORY.fullmatch(driver_memory):
        raise UserError(f"bad --driver-memory {driver_memory!r}: use a size such as 512m or 2g")
    if _LOCAL_MASTER.fullmatch(master) or master == "yarn" or master.startswith(("k8s://", "mesos://")):
        return
    if not master.startswith("spark://"):
        raise UserError(f"bad --spark-master {master!r}: use local[*], local[N] or spark://HOST:PORT")
    for address in master.removeprefix("spark://").split(","):
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UserError(f"bad --spark-master {master!r}: {address!r} is not HOST:PORT")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=MASTER_CONNECT_TIMEOUT_S):
                return  # one master that answers is enough (the others are standbys)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
    raise UserError(f"cannot reach the Spark master {master} ({reason}); is the cluster up?")


class SparkEngine:
    """The BFS across Spark executors: the same states, counts and verdicts as bfs."""

    name: ClassVar[str] = "spark"
    bounds: ClassVar[frozenset[str]] = frozenset({"max_depth", "max_states", "symmetry", "deadlock", "keep_going"})
    defaults: ClassVar[dict[str, Any]] = {
        "master": "local[*]", "partitions": None, "checkpoint": None, "resume": None, "driver_memory": "2g",
        "spark_verbose": False,
    }  # fmt: skip
    observes: ClassVar[bool] = True
    exhaustive: ClassVar[bool] = True

    def run(self, task: Any) -> CheckResult:
        o, b = task.options, task.bounds
        if o["checkpoint"] and o["resume"] and Path(o["checkpoint"]).resolve() != Path(o["resume"]).resolve():
            raise UserError("--checkpoint and --resume name different directories: give the one to continue")
        if o["resume"] is not None:
            _check_resumable(o["resume"])  # before a JVM starts: a missing or foreign checkpoint is one line
        if task.runtime.get("spark_context") is None:
            check_master(o["master"], o["driver_memory"])
        options = SparkOptions(
            master=o["master"], partitions=o["partitions"], checkpoint=o["resume"] or o["checkpoint"],
            resume=o["resume"] is not None, driver_memory=o["driver_memory"], verbose=o["spark_verbose"],
            max_depth=b.max_depth, max_states=b.max_states, symmetry=b.symmetry, deadlock=b.deadlock,
            keep_going=b.keep_going, save_interval_s=task.runtime.get("save_interval_s", 60.0),
        )  # fmt: skip
        return spark_bfs(
            task.model, task.props, model_ref=task.model_ref, spec_files=task.spec_files, options=options,
            progress=task.progress, preset=task.preset, sc=task.runtime.get("spark_context"),
            observers=task.observers,
        )  # fmt: skip
