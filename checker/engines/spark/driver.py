"""The driver's side of a search on Spark: the first level, the barrier stage run (and rerun after a
lost executor, or on more slots), and the result with its traces rebuilt from the shards."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kmc.checker import interrupts
from kmc.checker.engines.spark.context import failure_text, slots_available, spark_context, wait_for_slots
from kmc.checker.engines.spark.job import Job, SparkOptions, built
from kmc.checker.engines.spark.shards import (
    RESCALE,
    LevelProgress,
    claim_workdir,
    exchange_dir,
    frontier_path,
    load_level_meta,
    parent_lookup,
    read_progress,
    run_owns,
    save_level_meta,
    stage_id,
    taken_over,
    write_states,
    write_visited,
)
from kmc.checker.engines.spark.task import search_task
from kmc.checker.errors import UserError
from kmc.checker.model import Model, State
from kmc.checker.properties import PropertySet
from kmc.checker.result import CheckResult, Stats, Trace, Violation
from kmc.checker.search.kernel import (
    peak_rss,
    search_result,
)
from kmc.checker.search.observers import Coverage, CoverageReport, SearchObserver
from kmc.checker.search.path import trace_from_keys
from kmc.checker.search.progress import NoProgress, Progress
from kmc.checker.storage.checkpoint import (
    checkpoint_key,
)
from kmc.checker.storage.fingerprint import collision_probability


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
            raise UserError(f"spark could not start on {options.master}: {failure_text(exc)}") from None
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
            result = search(sc, model, props, job, options, progress, resume=options.resume)
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
    visited = result.stats.extra.get("visited_bytes")  # none after an interrupt
    result.stats.bytes_per_state = visited / distinct if distinct and visited is not None else None
    return result


def initial_level(model: Model, job: Job, keyfn: Any) -> LevelProgress:
    """Depth 1: the initial states, saved as the first level (they are checked when expanded)."""
    import numpy as np

    prog = LevelProgress()
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
        write_visited(job.workdir, p, 1, fps, fps, job.key)  # an initial state is its own parent
        write_states(frontier_path(job.workdir, p, 1), fps_p, states_p, job.key)
    prog.distinct = len(seen)
    prog.levels = [len(seen)]
    return prog


RUN_ATTEMPTS = 4
"""A search whose stage fails (an executor lost, and too few slots left to rerun it) is started
again from its last saved level, split over the slots there are then."""


class SlotsLostError(Exception):
    def __str__(self) -> str:
        return "an executor was lost and the slots left cannot run the stage"


def collect_watched(sc: Any, rdd: Any, tasks: int, group: str, tick: Any) -> list[Any]:
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
            slots = slots_available(sc)
            tick(slots)
            if thread.is_alive() and slots < tasks:
                sc.cancelJobGroup(group)
                thread.join()
                raise SlotsLostError
    except BaseException:
        sc.cancelJobGroup(group)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def run_search(sc: Any, job: Job, options: SparkOptions, progress: Progress, run_id: str) -> tuple[dict[str, Any], int]:
    """The search's outcome (from task 0) and how many times it was restarted after a failure.

    The stage runs on the slots there are when it starts; if more appear (a standalone cluster's
    executors register one by one), it saves the level it is at and starts again on them all."""
    shown = 0
    tasks = 0
    exchange = Path(job.workdir)

    def tick(slots: int) -> None:
        nonlocal shown
        prog = read_progress(job.workdir)
        if prog is not None and prog.level > shown:
            shown = prog.level
            queue = prog.levels[-1] if prog.levels else 0
            progress.update(distinct=prog.distinct, generated=prog.generated, depth=prog.level, queue=queue)
        if tasks < job.partitions and slots > tasks:
            with contextlib.suppress(FileNotFoundError):  # the stage may just have ended
                (exchange / RESCALE).touch()

    for stale in Path(job.workdir).glob("exchange-*"):  # left by a run that was killed
        shutil.rmtree(stale, ignore_errors=True)
    failures = stages = 0
    while True:
        stages += 1
        tasks = min(job.partitions, wait_for_slots(sc, job.partitions))
        name = stage_id(run_id, stages)
        if not run_owns(job.workdir, run_id):  # a second kmc claimed the checkpoint: it is that run's now
            raise UserError(taken_over(job.workdir))
        claim_workdir(job.workdir, name)
        exchange = exchange_dir(job.workdir, run_id, stages)
        rdd = (
            sc.parallelize(range(tasks), tasks)
            .barrier()
            .mapPartitions(search_task(job, options, run_id, stages, tasks))
        )
        try:
            summaries = collect_watched(sc, rdd, tasks, f"kmc-search-{name}", tick)
        except Exception as exc:
            failures += 1
            if failures == RUN_ATTEMPTS:
                raise
            time.sleep(failures)  # let the cluster notice what it lost
            level = load_level_meta(job.workdir, job).level
            reason = failure_text(exc)
            print(f"kmc spark: the search failed ({reason}); resuming it from level {level}", file=sys.stderr)
            continue
        finally:
            shutil.rmtree(exchange, ignore_errors=True)
        errors = [s["error"] for s in summaries if "error" in s]
        if errors:
            raise UserError(errors[0])
        if not summaries[0]["rescale"]:
            tick(tasks)
            return summaries[0], failures


def search(
    sc: Any, model: Model, props: PropertySet, job: Job, options: SparkOptions, progress: Progress, resume: bool
) -> CheckResult:
    _model, _inv, _steps, keyfn = built(job)
    run_id = uuid.uuid4().hex[:12]
    claim_workdir(job.workdir, stage_id(run_id, 0))  # before anything is written there
    if resume:
        # Refuse a checkpoint of another check before starting Spark's job. The resumed run reports
        # its own bounds: how the earlier run ended (a bound it hit, its probe of the level beyond) goes.
        prog = load_level_meta(job.workdir, job)
        prog.done, prog.bound_reason, prog.probe_generated, prog.probe_coverage = False, None, 0, {}
        save_level_meta(job.workdir, job, prog)
    else:
        save_level_meta(job.workdir, job, initial_level(model, job, keyfn))
    try:
        outcome, restarts = run_search(sc, job, options, progress, run_id)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the result of the levels saved, the counts reached
        progress.close()
        result = result_of(model, props, job, options, load_level_meta(job.workdir, job), keyfn)
        reached = read_progress(job.workdir)
        if reached is not None and reached.level > result.stats.depth:
            result.stats.distinct_states, result.stats.generated_states = reached.distinct, reached.generated
            result.stats.depth = reached.level
        result.interrupted = True
        result.bound_reason = f"interrupted ({interrupts.reason()})"
        return result
    progress.close()
    result = result_of(model, props, job, options, LevelProgress(**outcome["progress"]), keyfn)
    result.stats.extra.update(
        visited_bytes=outcome["visited_bytes"],
        moved_states=outcome["moved_states"],  # since the last (re)start
        task_wait_s=outcome["task_wait_s"],
        restarts=restarts,
    )
    return result


def result_of(
    model: Model, props: PropertySet, job: Job, options: SparkOptions, prog: LevelProgress, keyfn: Any
) -> CheckResult:
    parent_of = parent_lookup(job.workdir, job.partitions, prog.level, job.key)

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
        "spark",
        model,
        props,
        options.deadlock,
        options.symmetry,
        list(found.values()),
        complete=complete,
        stats=stats,
        bound_reason=prog.bound_reason,
        preset=None,
    )
