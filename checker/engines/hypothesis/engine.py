"""The hypothesis engine: Hypothesis drives the model's actions and shrinks a failure; never complete.
Hypothesis itself is imported when a check runs (check.py, machine.py)."""

from __future__ import annotations

from typing import ClassVar

from kmc.checker.engines.api import SEED, Engine, EngineTask, OptionSpec
from kmc.checker.engines.hypothesis.options import HypothesisOptions
from kmc.checker.result import CheckResult


class HypothesisEngine(Engine):
    """Hypothesis drives the model's actions and shrinks a failure: never complete."""

    name: ClassVar[str] = "hypothesis"
    bounds: ClassVar[frozenset[str]] = frozenset({"deadlock"})
    options: ClassVar[tuple[OptionSpec, ...]] = (
        SEED,
        OptionSpec("examples", int, "runs to try.", default=HypothesisOptions.examples, minimum=1),
        OptionSpec("steps", int, "most steps per run.", default=HypothesisOptions.steps, minimum=1),
        OptionSpec("database", str, "keep failing examples in this directory.", path=True),
        OptionSpec("guide", bool, "Prefer states no run has reached (--no-guide: plain random runs).", default=True),
    )

    def run(self, task: EngineTask) -> CheckResult:
        from kmc.checker.engines.hypothesis.check import hypothesis_check

        o = task.options
        options = HypothesisOptions(
            seed=o["seed"],
            examples=o["examples"],
            steps=o["steps"],
            database=o["database"],
            deadlock=task.bounds.deadlock,
            guided=o["guide"],
        )
        return hypothesis_check(task.model, task.props, options, task.preset, task.observers)
