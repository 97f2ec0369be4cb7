"""The bfs engine: exhaustive, shortest counterexamples, every bound; in memory, or spilled to disk
past ``--memory`` and resumable from ``--checkpoint``."""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from kmc.checker.engines.api import Engine, EngineTask, OptionSpec, SearchBounds
from kmc.checker.engines.bfs.memory import MemorySearch
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.engines.bfs.parallel_checkpoint import refuse_other_search
from kmc.checker.errors import UserError
from kmc.checker.model import Model
from kmc.checker.properties import PropertySet
from kmc.checker.result import CheckResult
from kmc.checker.search.observers import SearchObserver
from kmc.checker.search.progress import Progress


def bfs(
    model: Model,
    props: PropertySet,
    options: BfsOptions = BfsOptions(),
    progress: Progress | None = None,
    preset: str | None = None,
    observers: Sequence[SearchObserver] = (),
    job: dict[str, Any] | None = None,
) -> CheckResult:
    """The breadth-first search. ``job`` names the check for a checkpoint's meta.json (model_ref,
    config, properties)."""
    # States are acyclic values: Python's cyclic garbage collector finds nothing to free in them, yet
    # it rescans the growing visited set again and again (about 15% of the run). Pause it.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if options.resume:
            refuse_other_search(options.checkpoint, options.workers)
        job = job or {"model_ref": model.name, "config": model.config_dict(), "properties": props.names()}
        if options.workers > 1:
            if options.memory is not None:
                raise UserError("bfs --workers keeps its visited set in memory: drop --memory, or run with --workers 1")
            from kmc.checker.engines.bfs.parallel import ParallelSearch

            return ParallelSearch(model, props, options, progress, preset, observers, job).run()
        if options.memory is not None or options.checkpoint is not None:  # runs larger than memory, or resumable
            from kmc.checker.engines.bfs.disk import disk_bfs

            return disk_bfs(model, props, options, progress, preset, observers, job)
        return MemorySearch(model, props, options, progress, preset, observers).run()
    finally:
        if was_enabled:
            gc.enable()


class BfsEngine(Engine):
    """The reference engine: exhaustive, shortest counterexamples, every bound."""

    name: ClassVar[str] = "bfs"
    bounds: ClassVar[frozenset[str]] = frozenset({"max_depth", "max_states", "symmetry", "deadlock", "keep_going"})
    options: ClassVar[tuple[OptionSpec, ...]] = (
        OptionSpec(
            "store",
            str,
            "states (exact) or fingerprints (64-bit, less memory).",
            default="states",
            choices=("states", "fingerprints"),
        ),
        OptionSpec("memory", str, "spill to disk past this much memory, e.g. 4g (with --store fingerprints)."),
        OptionSpec("checkpoint", str, "Keep each completed level in this directory.", path=True),
        OptionSpec("resume", str, "Continue the run checkpointed in this directory.", path=True),
        OptionSpec(
            "workers",
            int,
            "Processes that search together, one per core (states deduplicated by 64-bit fingerprint).",
            default=1,
            minimum=1,
        ),
    )
    exhaustive: ClassVar[bool] = True
    shortest: ClassVar[bool] = True
    liveness: ClassVar[bool] = True

    @classmethod
    def keeps_graph(cls, bounds: SearchBounds, options: Mapping[str, Any]) -> bool:
        """In memory, states stored exactly, every one kept: the search numbers them and keeps the edges."""
        return (
            options.get("store") == "states"
            and not bounds.symmetry
            and bounds.max_depth is None
            and (options.get("workers") or 1) == 1
        )

    def run(self, task: EngineTask) -> CheckResult:
        b, o = task.bounds, task.options
        if o["checkpoint"] and o["resume"] and Path(o["checkpoint"]).resolve() != Path(o["resume"]).resolve():
            raise UserError("--checkpoint and --resume name different directories: give the one to continue")
        options = BfsOptions(
            max_depth=b.max_depth,
            max_states=b.max_states,
            symmetry=b.symmetry,
            deadlock=b.deadlock,
            keep_going=b.keep_going,
            store=o["store"],
            memory=_memory(o["memory"]),
            checkpoint=o["resume"] or o["checkpoint"],
            resume=o["resume"] is not None,
            workers=o["workers"],
        )
        job = {
            "engine": "bfs",
            "model_ref": task.model_ref,
            "config": task.model.config_dict(),
            "spec_files": [str(Path(s).resolve()) for s in task.spec_files],
            "properties": task.props.names(),
            "symmetry": b.symmetry,
            "deadlock": b.deadlock,
        }
        return bfs(task.model, task.props, options, task.progress, task.preset, task.observers, job)


def _memory(size: str | None) -> int | None:
    """--memory in bytes; numpy (which the disk store needs) is imported only for a run that spills."""
    if size is None:
        return None
    from kmc.checker.storage.fpset import parse_size

    return parse_size(size)
