"""Level-synchronous BFS on PySpark: the same search as `bfs`, across Spark executors.

Design (see docs/spark.md): every state belongs to partition ``fingerprint % P``. Each partition
owns a shard of the visited set on disk -- sorted 64-bit fingerprints with their parents'
fingerprints, 16 bytes per state -- and the frontier of each level is a file per partition.
A level is one Spark job:

1. expand: each task reads its partition's frontier file, computes successors and step
   properties on the executor, and emits ``(fingerprint, (parent, state))``;
2. the records are shuffled by fingerprint to the partition that owns them;
3. merge: each task reads its visited shard, keeps the fingerprints it has not seen, checks the
   invariants on those states, and writes the next frontier file and the next version of its
   shard (level-numbered files renamed atomically, so a retried task rewrites the same bytes).

The driver collects only counts and violations. It rebuilds a trace by following parent
fingerprints through the shards, then re-executing the model forward, as TLC does. Reading
inputs from files also cuts Spark's lineage at every level, so a lost executor costs one
task, and a run with ``--checkpoint DIR`` can be resumed with ``--resume DIR``.
"""

from __future__ import annotations

import contextlib
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
    """Shards of the visited set; default: 4 per core Spark reports."""
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


def owner(key: int) -> int:
    """Spark's partition function: states by fingerprint, per-task statistics by task index."""
    return key if key >= 0 else -key - 1


def _frontier_path(workdir: str, partition: int, level: int) -> Path:
    return Path(workdir) / f"frontier-{partition:05d}-{level:05d}.pkl"


def _visited_path(workdir: str, partition: int, level: int) -> Path:
    return Path(workdir) / f"visited-{partition:05d}-{level:05d}.npz"


def _write_atomically(path: Path, write: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        write(fh)
    os.replace(tmp, path)


def _read_frontier(workdir: str, partition: int, level: int) -> list[tuple[int, bytes]]:
    path = _frontier_path(workdir, partition, level)
    if not path.exists():
        return []
    with open(path, "rb") as fh:
        return pickle.load(fh)


def _read_visited(workdir: str, partition: int, level: int) -> tuple[Any, Any]:
    import numpy as np

    path = _visited_path(workdir, partition, level)
    if not path.exists():
        empty = np.zeros(0, dtype=np.uint64)
        return empty, empty
    with np.load(path) as data:
        return data["fps"], data["parents"]


def _expand_task(job: Job, level: int) -> Any:
    """Check the states of depth ``level`` and compute their successors.

    States travel as pickled bytes: the shuffle and the frontier files move bytes, and a state is
    unpickled once, here, where it is checked and expanded (duplicates are never unpickled)."""

    def run(partition: int, _items: Iterable[Any]) -> Iterator[tuple[int, Any]]:
        model, invariants, steps, keyfn = _build(job)
        gc_was_enabled = gc.isenabled()
        gc.disable()  # states are acyclic tuples: the collector only costs time here
        dumps, loads = pickle.dumps, pickle.loads
        try:
            generated = 0
            violations: list[tuple[str, str, int, int | None]] = []
            local: dict[int, tuple[int, State]] = {}
            cut = 0
            within = bounds_check(model)
            for fp, blob in _read_frontier(job.workdir, partition, level):
                state = loads(blob)
                for name, pred in invariants:
                    if not holds(name, pred, state):
                        violations.append((name, "invariant", fp, None))
                if within is not None and not within(state):
                    cut += 1
                    continue
                succs = expand(model, state)
                generated += len(succs)
                if job.deadlock and not succs:
                    violations.append((DEADLOCK, "deadlock", fp, None))
                for action, nxt in succs:
                    nfp = keyfn(nxt)
                    for name, pred in steps:
                        if not holds(name, pred, state, action, nxt):
                            violations.append((name, "step", fp, nfp))
                    seen = local.get(nfp)
                    if seen is None or fp < seen[0]:  # the least parent: every attempt writes the same
                        local[nfp] = (fp, nxt)
            for nfp, (parent, nxt) in local.items():
                yield nfp, (parent, dumps(nxt, pickle.HIGHEST_PROTOCOL))
            yield -partition - 1, ("stats", generated, violations, cut)
        finally:
            if gc_was_enabled:
                gc.enable()

    return run


def _merge_task(job: Job, level: int, probe: bool) -> Any:
    """Deduplicate the candidates for depth ``level + 1`` against the visited shard (as bytes)."""

    def run(partition: int, records: Iterable[tuple[int, Any]]) -> Iterator[dict[str, Any]]:
        import numpy as np

        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            generated = cut = 0
            violations: list[tuple[str, str, int, int | None]] = []
            candidates: dict[int, tuple[int, bytes]] = {}
            for key, value in records:
                if key < 0:
                    generated += value[1]
                    violations.extend(value[2])
                    cut += value[3]
                    continue
                seen = candidates.get(key)
                if seen is None or value[0] < seen[0]:
                    candidates[key] = value
            fps, parents = _read_visited(job.workdir, partition, level)
            cand = np.fromiter(candidates.keys(), dtype=np.uint64, count=len(candidates))
            cand.sort()
            if len(fps):
                pos = np.searchsorted(fps, cand)
                pos[pos == len(fps)] = 0
                new = cand[fps[pos] != cand] if len(cand) else cand
            else:
                new = cand
            new_states = [(fp, candidates[fp][1]) for fp in new.tolist()]  # checked when expanded
            if not probe:
                new_parents = np.fromiter((candidates[fp][0] for fp in new.tolist()), dtype=np.uint64, count=len(new))
                at = np.searchsorted(fps, new)
                merged_fps = np.insert(fps, at, new)
                merged_parents = np.insert(parents, at, new_parents)
                _write_atomically(
                    _visited_path(job.workdir, partition, level + 1),
                    lambda fh: np.savez(fh, fps=merged_fps, parents=merged_parents),
                )
                _write_atomically(
                    _frontier_path(job.workdir, partition, level + 1),
                    lambda fh: pickle.dump(new_states, fh, protocol=pickle.HIGHEST_PROTOCOL),
                )
            yield {
                "partition": partition,
                "new": len(new_states),
                "generated": generated,
                "violations": violations,
                "cut": cut,
            }
        finally:
            if gc_was_enabled:
                gc.enable()

    return run


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


def _save_meta(workdir: str, job: Job, prog: _Progress) -> None:
    doc = {"job": job.signature(), "progress": asdict(prog)}
    path = Path(workdir) / "meta.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=str))
    os.replace(tmp, path)


def _load_meta(workdir: str, job: Job) -> _Progress:
    path = Path(workdir) / "meta.json"
    if not path.exists():
        raise UserError(f"--resume {workdir}: no checkpoint there (meta.json is missing)")
    doc = json.loads(path.read_text())
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
        partitions = options.partitions or max(2, 4 * sc.defaultParallelism)
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
    frontier: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(job.partitions)}
    seen: set[int] = set()
    for state in model.init_states():
        prog.generated += 1
        fp = keyfn(state)
        if fp in seen:
            continue
        seen.add(fp)
        frontier[fp % job.partitions].append((fp, pickle.dumps(state, pickle.HIGHEST_PROTOCOL)))
    for p, items in frontier.items():
        fps = np.array(sorted(fp for fp, _ in items), dtype=np.uint64)
        _write_atomically(_visited_path(job.workdir, p, 1), lambda fh, fps=fps: np.savez(fh, fps=fps, parents=fps))
        _write_atomically(_frontier_path(job.workdir, p, 1), lambda fh, items=items: pickle.dump(items, fh))
    prog.distinct = len(seen)
    prog.levels = [len(seen)]
    return prog


def _search(
    sc: Any, model: Model, props: PropertySet, job: Job, options: SparkOptions, progress: Progress, resume: bool
) -> CheckResult:
    _model, _inv, _steps, keyfn = _build(job)
    prog = _load_meta(job.workdir, job) if resume else _initial_level(model, job, keyfn)
    if not resume:
        _save_meta(job.workdir, job, prog)
    seeds = sc.parallelize(range(job.partitions), job.partitions)
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
        summaries = (
            seeds.mapPartitionsWithIndex(_expand_task(job, level))
            .partitionBy(job.partitions, owner)
            .mapPartitionsWithIndex(_merge_task(job, level, probe))
            .collect()
        )
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
        for p in range(job.partitions):  # the previous level is no longer needed
            with contextlib.suppress(FileNotFoundError):
                _visited_path(job.workdir, p, level).unlink()
            with contextlib.suppress(FileNotFoundError):
                _frontier_path(job.workdir, p, level).unlink()
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
