"""Level-synchronous BFS on PySpark: the same search as `bfs`, across Spark executors.

Design (see docs/spark.md): every state belongs to partition ``fingerprint % P``. Each partition
owns a shard of the visited set on disk -- sorted 64-bit fingerprints with their parents'
fingerprints, 16 bytes per state -- and expands the states of each level whose parent's
fingerprint it is named by. A level is one Spark job, a barrier stage with a task per slot, each
task serving its share of the partitions:

1. expand: check the frontier's states, compute successors and step properties, and write each
   owner partition the new fingerprints and their parents;
2. dedupe, as owner: keep the least parent per fingerprint, drop what the shard has seen, write
   the next shard and tell each source which of its candidates won;
3. ship: pickle the winning states, held in memory since step 1, into the next frontier of the
   partition their parent names, so that siblings, which share most of their parts, travel
   together.

The steps meet at level-numbered files written atomically with deterministic contents, so a
retried stage rewrites the same bytes. The driver collects only counts and violations. It
rebuilds a trace by following parent fingerprints through the shards, then re-executing the
model forward, as TLC does. Reading inputs from files also cuts Spark's lineage at every level,
and a run with ``--checkpoint DIR`` can be resumed with ``--resume DIR``.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import pickle
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .bfs import DEADLOCK, MODEL_BOUND, bounds_check, current_rss, expand, peak_rss, search_result
from .errors import UserError
from .fingerprint import collision_probability, fingerprint
from .model import Model, State
from .path import trace_from_keys
from .progress import NoProgress, Progress
from .properties import PropertySet, holds, select_properties
from .registry import load_model_class
from .result import CheckResult, Stats, Trace, Violation

LOG4J2 = """\
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
rootLogger.level = error
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
    max_depth: int | None = None
    max_states: int | None = None
    symmetry: bool = False
    deadlock: bool = False
    keep_going: bool = False


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

    def signature(self) -> dict[str, Any]:
        sig = asdict(self)
        sig.pop("workdir")
        return sig


# -- executor side ------------------------------------------------------------------------------
_BUILT: dict[str, tuple[Model, list[tuple[str, Any]], list[tuple[str, Any]], Any]] = {}


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
    return _BUILT[key]


def _frontier_path(workdir: str, partition: int, level: int, source: int) -> Path:
    """The states of depth ``level`` that ``partition`` expands, generated in ``source``."""
    return Path(workdir) / f"frontier-{partition:05d}-{level:05d}-{source:05d}.pkl"


def _visited_path(workdir: str, partition: int, level: int) -> Path:
    return Path(workdir) / f"visited-{partition:05d}-{level:05d}.npz"


def _candidates_path(workdir: str, level: int, source: int, partition: int) -> Path:
    """Fingerprints and parents of the successors ``source`` found for ``partition``."""
    return Path(workdir) / f"candidates-{level:05d}-{source:05d}-{partition:05d}.npy"


def _winners_path(workdir: str, level: int, partition: int, source: int) -> Path:
    """Which of those candidates ``partition`` had not seen: the states ``source`` ships to it."""
    return Path(workdir) / f"winners-{level:05d}-{partition:05d}-{source:05d}.npy"


def _abort_path(workdir: str, level: int) -> Path:
    return Path(workdir) / f"abort-{level:05d}.txt"


def _level_files(workdir: str, partitions: int, level: int) -> Iterator[Path]:
    for p in range(partitions):
        yield _visited_path(workdir, p, level)
        for q in range(partitions):
            yield _frontier_path(workdir, p, level, q)
            yield _candidates_path(workdir, level, p, q)
            yield _winners_path(workdir, level, p, q)
    yield _abort_path(workdir, level)


def _write_atomically(path: Path, write: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        write(fh)
    os.replace(tmp, path)


@functools.cache
def _rebuildable(cls: type) -> bool:
    """A plain tuple or a NamedTuple: nothing but its items, so ``tuple.__new__`` remakes it."""
    return cls is tuple or (issubclass(cls, tuple) and hasattr(cls, "_fields") and cls.__dictoffset__ == 0)


def _interned(states: list[State]) -> list[State]:
    """The states with equal top-level fields made one object, so the pickle writes each once.

    Successors of different parents often hold equal but distinct parts (a log, an ISR); pickle
    shares only identical objects. Only tuple states (NamedTuples included) are rebuilt, and a
    part is only replaced by one of its own type."""
    pool: dict[Any, Any] = {}
    intern = pool.setdefault
    out = []
    for state in states:
        cls = type(state)
        if _rebuildable(cls):
            try:
                parts = [intern(part, part) for part in state]
            except TypeError:  # an unhashable part: the state is kept as it is
                out.append(state)
                continue
            if list(map(type, parts)) != list(map(type, state)):  # equal, yet not alike: 1 and True
                alike = zip(state, parts, strict=True)
                parts = [shared if type(shared) is type(mine) else mine for mine, shared in alike]
            state = tuple.__new__(cls, parts)
        out.append(state)
    return out


def _write_frontier(path: Path, fps: list[int], states: list[State]) -> None:
    # One pickle per file: parts the states share are written once.
    import numpy as np

    piece = (np.array(fps, dtype=np.uint64), _interned(states))
    _write_atomically(path, lambda fh: pickle.dump(piece, fh, protocol=pickle.HIGHEST_PROTOCOL))


def _read_frontier(workdir: str, partition: int, level: int, partitions: int) -> tuple[list[int], list[State]]:
    fps: list[int] = []
    states: list[State] = []
    for source in range(partitions):
        path = _frontier_path(workdir, partition, level, source)
        try:
            with open(path, "rb") as fh:
                piece_fps, piece_states = pickle.load(fh)
        except FileNotFoundError:
            raise UserError(f"spark: {path} is missing (damaged work directory)") from None
        fps.extend(piece_fps.tolist())
        states.extend(piece_states)
    return fps, states


def _read_visited(workdir: str, partition: int, level: int) -> tuple[Any, Any]:
    import numpy as np

    path = _visited_path(workdir, partition, level)
    if not path.exists():
        empty = np.zeros(0, dtype=np.uint64)
        return empty, empty
    with np.load(path) as data:
        return data["fps"], data["parents"]


class _AbortedError(Exception):
    """Another task of the level met a user error; this one stops waiting for it."""


def _await(paths: list[Path], abort: Path) -> None:
    """Wait until every file exists: the tasks of a barrier stage all run at once, so they will."""
    delay = 0.001
    while paths := [p for p in paths if not p.exists()]:
        if abort.exists():
            raise _AbortedError
        time.sleep(delay)
        delay = min(2 * delay, 0.05)


def _level_task(job: Job, level: int, tasks: int, probe: bool) -> Any:
    """One task of a level: it owns the partitions ``p`` with ``p % tasks == task``.

    1. expand: check each frontier state, compute its successors, fingerprint those new within
       the partition and write each owner its fingerprints and parents (16 bytes a candidate);
    2. dedupe, as owner: keep the least parent of each fingerprint, drop those in the visited
       shard, write the next shard and tell each source which of its candidates won;
    3. ship: pickle the winning states, still in memory since step 1, into the next frontier
       of the partition their parent names. A duplicate is never pickled.

    The three steps meet at files, so the stage runs in barrier mode: all tasks at once. Every
    file depends only on the level's inputs, so a retried stage rewrites the same bytes."""

    def run(_items: Iterable[Any]) -> Iterator[dict[str, Any]]:
        from pyspark import BarrierTaskContext

        task = BarrierTaskContext.get().partitionId()
        mine = [p for p in range(job.partitions) if p % tasks == task]
        gc_was_enabled = gc.isenabled()
        gc.disable()  # states are acyclic tuples: the collector only costs time here
        summary: dict[str, Any] = {"new": 0, "generated": 0, "violations": [], "cut": 0}
        abort = _abort_path(job.workdir, level)
        try:
            held = {p: _expand(job, level, p, summary) for p in mine}
            for q in mine:
                summary["new"] += _dedupe(job, level, q, probe, abort)
            if not probe:
                for p in mine:
                    _ship(job, level, p, held[p], abort)
        except UserError as exc:
            abort.write_text(str(exc))
            summary["error"] = str(exc)
        except _AbortedError:
            summary["aborted"] = True
        finally:
            if gc_was_enabled:
                # What the task leaves (the model's caches) would otherwise be rescanned by the
                # next collection; frozen, it never is.
                gc.freeze()
                gc.enable()
        yield summary

    return run


Held = dict[int, tuple[Any, list[State]]]
"""Per owner partition: the candidates' fingerprints and parents (numpy, 2 x n) and their states."""


def _expand(job: Job, level: int, partition: int, summary: dict[str, Any]) -> Held:
    import numpy as np

    model, invariants, steps, keyfn = _build(job)
    within = bounds_check(model)
    fps, states = _read_frontier(job.workdir, partition, level, job.partitions)
    violations = summary["violations"]
    parent_of: dict[int, int] = {}  # per new fingerprint, its least parent here
    state_of: dict[int, State] = {}
    for fp, state in zip(fps, states, strict=True):
        for name, pred in invariants:
            if not holds(name, pred, state):
                violations.append((name, "invariant", fp, None))
        if within is not None and not within(state):
            summary["cut"] += 1
            continue
        succs = expand(model, state)
        summary["generated"] += len(succs)
        if job.deadlock and not succs:
            violations.append((DEADLOCK, "deadlock", fp, None))
        for action, nxt in succs:
            nfp = keyfn(nxt)
            for name, pred in steps:
                if not holds(name, pred, state, action, nxt):
                    violations.append((name, "step", fp, nfp))
            seen = parent_of.get(nfp)
            if seen is None or fp < seen:  # the least parent: every attempt keeps the same
                parent_of[nfp] = fp
                state_of[nfp] = nxt
    count = len(parent_of)
    new_fps = np.fromiter(parent_of.keys(), dtype=np.uint64, count=count)
    parents = np.fromiter(parent_of.values(), dtype=np.uint64, count=count)
    successors = list(state_of.values())  # in the same order: both dicts saw the same insertions
    owner = new_fps % np.uint64(job.partitions)
    held: Held = {}
    for q in range(job.partitions):
        mine = np.flatnonzero(owner == q)
        table = np.stack([new_fps[mine], parents[mine]])
        _write_atomically(_candidates_path(job.workdir, level, partition, q), lambda fh, t=table: np.save(fh, t))
        held[q] = (table, [successors[i] for i in mine.tolist()])
    return held


def _dedupe(job: Job, level: int, partition: int, probe: bool, abort: Path) -> int:
    """Keep, of every source's candidates for this partition, those not yet visited."""
    import numpy as np

    sources = [_candidates_path(job.workdir, level, p, partition) for p in range(job.partitions)]
    _await(sources, abort)
    tables = [np.load(path) for path in sources]
    fps = np.concatenate([t[0] for t in tables])
    parents = np.concatenate([t[1] for t in tables])
    origin = np.concatenate([np.full(t.shape[1], p, dtype=np.int64) for p, t in enumerate(tables)])
    index = np.concatenate([np.arange(t.shape[1], dtype=np.int64) for t in tables])
    order = np.lexsort((parents, fps))  # by fingerprint, then parent: the least parent first
    sorted_fps = fps[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = sorted_fps[1:] != sorted_fps[:-1]
    chosen = order[first]
    visited, visited_parents = _read_visited(job.workdir, partition, level)
    if len(visited):
        pos = np.searchsorted(visited, fps[chosen])
        pos[pos == len(visited)] = 0
        chosen = chosen[visited[pos] != fps[chosen]]
    if probe:
        return len(chosen)
    new_fps = fps[chosen]
    at = np.searchsorted(visited, new_fps)
    merged_fps = np.insert(visited, at, new_fps)
    merged_parents = np.insert(visited_parents, at, parents[chosen])
    _write_atomically(
        _visited_path(job.workdir, partition, level + 1),
        lambda fh: np.savez(fh, fps=merged_fps, parents=merged_parents),
    )
    for p in range(job.partitions):
        won = np.sort(index[chosen[origin[chosen] == p]])
        _write_atomically(_winners_path(job.workdir, level, partition, p), lambda fh, w=won: np.save(fh, w))
    return len(chosen)


def _ship(job: Job, level: int, partition: int, held: Held, abort: Path) -> None:
    """Write the states this partition generated that their owners kept.

    A state is expanded next by the partition its parent's fingerprint picks, not by its owner:
    the successors of one state then travel in one file, where the parts they share are pickled
    once, and the frontier is still spread evenly over the partitions."""
    import numpy as np

    paths = {q: _winners_path(job.workdir, level, q, partition) for q in range(job.partitions)}
    _await(list(paths.values()), abort)
    outgoing: dict[int, tuple[list[int], list[State]]] = {d: ([], []) for d in range(job.partitions)}
    for q, path in paths.items():
        won = np.load(path)
        table, states = held[q]
        for fp, parent, i in zip(table[0][won].tolist(), table[1][won].tolist(), won.tolist(), strict=True):
            fps_d, states_d = outgoing[parent % job.partitions]
            fps_d.append(fp)
            states_d.append(states[i])
    for d, (fps_d, states_d) in outgoing.items():
        _write_frontier(_frontier_path(job.workdir, d, level + 1, partition), fps_d, states_d)


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


CHECKPOINT_FORMAT = 2
"""Bumped whenever the files of a level change shape; a checkpoint of another format is refused."""


def _save_meta(workdir: str, job: Job, prog: _Progress) -> None:
    doc = {"format": CHECKPOINT_FORMAT, "job": job.signature(), "progress": asdict(prog)}
    path = Path(workdir) / "meta.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str))
    os.replace(tmp, path)


def _load_meta(workdir: str, job: Job) -> _Progress:
    path = Path(workdir) / "meta.json"
    if not path.exists():
        raise UserError(f"--resume {workdir}: no checkpoint there (meta.json is missing)")
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"--resume {workdir}: meta.json is unreadable ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != CHECKPOINT_FORMAT:
        raise UserError(
            f"--resume {workdir}: the checkpoint was written by another version of kmc "
            f"(format {doc.get('format', 1) if isinstance(doc, dict) else '?'}, this one reads {CHECKPOINT_FORMAT}); "
            "start the check again without --resume"
        )
    if doc["job"] != json.loads(json.dumps(job.signature(), default=str)):
        raise UserError(
            f"--resume {workdir}: the checkpoint is of a different check "
            f"({doc['job']['model_ref']} {doc['job']['config']}); rerun with the same model, config, "
            "properties, symmetry, deadlock and partitions"
        )
    return _Progress(**doc["progress"])


def _parent_lookup(workdir: str, partitions: int, level: int) -> Any:
    import numpy as np

    shards: dict[int, tuple[Any, Any]] = {}

    def parent(fp: int) -> int | None:
        p = fp % partitions
        if p not in shards:
            shards[p] = _read_visited(workdir, p, level)
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
) -> CheckResult:
    progress = progress or NoProgress()
    start = time.perf_counter()
    rss_start = current_rss()
    if options.symmetry and model.symmetry is None:
        raise UserError(f"model {model.name} defines no symmetry(); run without --symmetry")
    own_context = sc is None
    if own_context:
        sc = spark_context(options.master, options.driver_memory, options.verbose)
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
        )
        try:
            result = _search(sc, model, props, job, options, progress, resume=options.resume)
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
    result.stats.bytes_per_state = (max(current_rss() - rss_start, 0) / distinct) if distinct else None
    return result


def _initial_level(model: Model, job: Job, keyfn: Any) -> _Progress:
    """Depth 1: the initial states, written as the first frontier (checked when expanded)."""
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
        _write_atomically(_visited_path(job.workdir, p, 1), lambda fh, fps=fps: np.savez(fh, fps=fps, parents=fps))
        for source in range(job.partitions):  # every frontier has one piece per source partition
            piece = (fps_p, states_p) if source == 0 else ([], [])
            _write_frontier(_frontier_path(job.workdir, p, 1, source), *piece)
    prog.distinct = len(seen)
    prog.levels = [len(seen)]
    return prog


LEVEL_ATTEMPTS = 4
"""A level whose job fails (an executor lost, and too few slots left to rerun its barrier stage)
is run again, split over the slots there are then."""


def _slots(sc: Any) -> int:
    """How many tasks the cluster can run at once now (a barrier stage needs them all)."""
    try:
        jsc = sc._jsc.sc()
        return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile()))
    except Exception:  # an API private to Spark: fall back to what it reports at start
        return int(sc.defaultParallelism)


def _wait_for_slots(sc: Any, timeout: float = 120.0) -> int:
    """A standalone cluster's executors register after the context starts: wait for the first."""
    deadline = time.monotonic() + timeout
    while (slots := _slots(sc)) < 1:
        if time.monotonic() > deadline:
            raise UserError(f"spark: no executor registered within {timeout:.0f} s; is the cluster up?")
        time.sleep(0.2)
    return slots


def _failure(exc: Exception) -> str:
    java = getattr(exc, "java_exception", None)
    text = str(java.getMessage() if java is not None else exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


class _SlotsLostError(Exception):
    def __str__(self) -> str:
        return "an executor was lost and the slots left cannot run the stage"


def _collect_watched(sc: Any, rdd: Any, tasks: int, group: str) -> list[Any]:
    """Collect a barrier stage, cancelling it if the cluster loses the slots it runs on.

    Spark retries a failed barrier stage only on as many slots as it had, and waits for them
    without end; the engine instead reruns the level on the slots that are left."""
    from pyspark import InheritableThread

    outcome: dict[str, Any] = {}

    def collect() -> None:
        sc.setJobGroup(group, "kmc BFS level", interruptOnCancel=True)
        try:
            outcome["value"] = rdd.collect()
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = InheritableThread(target=collect, name=group, daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.5)
            if thread.is_alive() and _slots(sc) < tasks:
                sc.cancelJobGroup(group)
                thread.join()
                raise _SlotsLostError
    except BaseException:
        sc.cancelJobGroup(group)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _run_level(sc: Any, job: Job, level: int, probe: bool) -> list[dict[str, Any]]:
    _abort_path(job.workdir, level).unlink(missing_ok=True)  # left by an earlier run's user error
    for attempt in range(1, LEVEL_ATTEMPTS + 1):
        tasks = min(job.partitions, _wait_for_slots(sc))
        rdd = sc.parallelize(range(tasks), tasks).barrier().mapPartitions(_level_task(job, level, tasks, probe))
        try:
            summaries = _collect_watched(sc, rdd, tasks, f"kmc-level-{level}-{attempt}")
        except Exception as exc:
            if attempt == LEVEL_ATTEMPTS:
                raise
            time.sleep(attempt)  # let the cluster notice what it lost
            print(f"kmc spark: level {level} failed ({_failure(exc)}); running it again", file=sys.stderr)
            continue
        errors = [s["error"] for s in summaries if "error" in s]
        if errors:
            raise UserError(errors[0])
        return summaries
    raise AssertionError("unreachable")


def _search(
    sc: Any, model: Model, props: PropertySet, job: Job, options: SparkOptions, progress: Progress, resume: bool
) -> CheckResult:
    _model, _inv, _steps, keyfn = _build(job)
    prog = _load_meta(job.workdir, job) if resume else _initial_level(model, job, keyfn)
    if not resume:
        _save_meta(job.workdir, job, prog)
    while not prog.done:
        if prog.violations and not options.keep_going:
            break
        if prog.levels[-1] == 0:
            prog.done = True
            break
        level = prog.level
        at_state_bound = options.max_states is not None and prog.distinct >= options.max_states
        # At a bound the last level is still expanded (its states are checked as they are expanded),
        # but nothing is written: it only tells whether anything lies beyond.
        probe = at_state_bound or (options.max_depth is not None and level >= options.max_depth)
        summaries = _run_level(sc, job, level, probe)
        new = sum(s["new"] for s in summaries)
        generated = sum(s["generated"] for s in summaries)
        violations = sorted(v for s in summaries for v in s["violations"])
        prog.generated += generated
        if any(s["cut"] for s in summaries) and prog.bound_reason is None:
            prog.bound_reason = MODEL_BOUND
        if probe:
            prog.violations.extend(list(v) for v in violations)
            if not new:
                prog.done = True
            elif at_state_bound:
                prog.bound_reason = f"max states {options.max_states}"
            else:
                prog.bound_reason = f"max depth {options.max_depth}"
            break
        prog.violations.extend(list(v) for v in violations)
        prog.distinct += new
        prog.levels.append(new)
        prog.level = level + 1
        _save_meta(job.workdir, job, prog)
        for path in _level_files(job.workdir, job.partitions, level):  # no longer needed
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        progress.update(distinct=prog.distinct, generated=prog.generated, depth=prog.level, queue=new)
    progress.close()
    return _result(model, props, job, options, prog, keyfn)


def _result(
    model: Model, props: PropertySet, job: Job, options: SparkOptions, prog: _Progress, keyfn: Any
) -> CheckResult:
    parent_of = _parent_lookup(job.workdir, job.partitions, prog.level)

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
    stats = Stats(
        distinct_states=prog.distinct,
        generated_states=prog.generated,
        depth=depth,
        storage="fingerprints",
        collision_probability=collision_probability(prog.distinct, prog.generated),
        extra={"partitions": job.partitions, "states_per_level": prog.levels},
    )
    return search_result(
        "spark", model, props, options.deadlock, options.symmetry, list(found.values()),
        complete=complete, stats=stats, bound_reason=prog.bound_reason, preset=None,
    )  # fmt: skip
