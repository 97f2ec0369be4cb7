"""The bmc engine: z3 bounded model checking of a model that has a symbolic encoding. It observes
no states (no coverage, no state counts); z3 is imported when a check runs (bmc.py)."""

from __future__ import annotations

from typing import ClassVar

from kmc.checker.engines.api import Engine, EngineTask, OptionSpec
from kmc.checker.result import CheckResult, Status


class BmcEngine(Engine):
    """z3 bounded model checking: symbolic, so it observes no states (no coverage)."""

    name: ClassVar[str] = "bmc"
    options: ClassVar[tuple[OptionSpec, ...]] = (OptionSpec("depth", int, "steps to unroll.", default=10, minimum=1),)
    observes: ClassVar[bool] = False

    def run(self, task: EngineTask) -> CheckResult:
        from kmc.checker.engines.symbolic.bmc import BmcOptions, bmc

        named = bool(task.runtime.get("named_properties"))
        options = BmcOptions(depth=task.options["depth"], named=named)
        return bmc(task.model, task.props, options, task.progress, preset=task.preset)

    def summary(self, result: CheckResult) -> list[str]:
        steps = result.stats.extra.get("bmc_depth", 0)
        return [f"z3: every behaviour of up to {steps} steps checked symbolically, {result.stats.elapsed_s:.2f} s"]

    def verdict(self, result: CheckResult) -> str | None:
        if result.status is Status.VIOLATED:
            return "violated (no behaviour of fewer steps violates any property checked)"
        if result.complete:
            return f"holds (complete: no behaviour has more than {result.stats.extra.get('bmc_depth', 0)} steps)"
        return None
