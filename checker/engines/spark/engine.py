"""The spark engine: the BFS across Spark executors, the same states, counts and verdicts as bfs.
PySpark is imported when a check runs."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from kmc.checker.engines.api import Engine, EngineTask, OptionSpec
from kmc.checker.errors import UserError
from kmc.checker.result import CheckResult

MAX_PARTITIONS = 4096
"""Shards of the visited set: each is a file per level and a task's share of memory; more than this
only costs (a partition per core is the default)."""


class SparkEngine(Engine):
    """The BFS across Spark executors: the same states, counts and verdicts as bfs."""

    name: ClassVar[str] = "spark"
    bounds: ClassVar[frozenset[str]] = frozenset({"max_depth", "max_states", "symmetry", "deadlock", "keep_going"})
    options: ClassVar[tuple[OptionSpec, ...]] = (
        OptionSpec(
            "master", str, "local[*] (default) or spark://HOST:7077.", default="local[*]", flag="--spark-master"
        ),
        OptionSpec(
            "partitions",
            int,
            f"Shards of the visited set (at most {MAX_PARTITIONS}).",
            minimum=1,
            maximum=MAX_PARTITIONS,
        ),
        OptionSpec("checkpoint", str, "Keep each completed level in this directory.", path=True),
        OptionSpec("resume", str, "Continue the run checkpointed in this directory.", path=True),
        OptionSpec("driver_memory", str, "The Spark driver JVM's memory, e.g. 2g.", default="2g"),
        OptionSpec("spark_verbose", bool, "Spark's logs and UI on.", default=False),
    )
    exhaustive: ClassVar[bool] = True
    shortest: ClassVar[bool] = True

    def run(self, task: EngineTask) -> CheckResult:
        from kmc.checker.engines.spark.context import check_master
        from kmc.checker.engines.spark.driver import spark_bfs
        from kmc.checker.engines.spark.job import SparkOptions
        from kmc.checker.engines.spark.shards import check_checkpoint

        o, b = task.options, task.bounds
        if o["checkpoint"] and o["resume"] and Path(o["checkpoint"]).resolve() != Path(o["resume"]).resolve():
            raise UserError("--checkpoint and --resume name different directories: give the one to continue")
        if o["resume"] is not None:
            check_checkpoint(o["resume"])  # before a JVM starts: a missing or foreign checkpoint is one line
        if task.runtime.get("spark_context") is None:
            check_master(o["master"], o["driver_memory"])
        options = SparkOptions(
            master=o["master"],
            partitions=o["partitions"],
            checkpoint=o["resume"] or o["checkpoint"],
            resume=o["resume"] is not None,
            driver_memory=o["driver_memory"],
            verbose=o["spark_verbose"],
            max_depth=b.max_depth,
            max_states=b.max_states,
            symmetry=b.symmetry,
            deadlock=b.deadlock,
            keep_going=b.keep_going,
            save_interval_s=task.runtime.get("save_interval_s", 60.0),
        )
        return spark_bfs(
            task.model,
            task.props,
            model_ref=task.model_ref,
            spec_files=task.spec_files,
            options=options,
            progress=task.progress,
            preset=task.preset,
            sc=task.runtime.get("spark_context"),
            observers=task.observers,
        )
