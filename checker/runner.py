"""One check from names to result: the builder that picks the engine.

result = Check("replication", preset="kip-320").engine("bfs").run()
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bfs import BfsOptions, bfs
from .bmc import BmcOptions, bmc
from .errors import UserError
from .hypothesis_engine import HypothesisOptions, hypothesis_check
from .itf import trace_to_itf, write_trace
from .liveness import check_liveness
from .model import Model
from .progress import Progress
from .properties import PropertySet, select_properties
from .registry import load_model_class
from .result import CheckResult, Status
from .simulation import SimulationOptions, simulate
from .spark import SparkOptions, spark_bfs

ENGINES = ("bfs", "simulate", "spark", "hypothesis", "bmc")


@dataclass
class Check:
    model_name: str
    preset: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    property_names: Sequence[str] = ()
    spec_files: Sequence[str | Path] = ()
    engine_name: str = "bfs"
    bfs_options: BfsOptions = field(default_factory=BfsOptions)
    simulation_options: SimulationOptions = field(default_factory=SimulationOptions)
    hypothesis_options: HypothesisOptions = field(default_factory=HypothesisOptions)
    bmc_options: BmcOptions = field(default_factory=BmcOptions)
    spark_options: SparkOptions | None = None
    spark_context: Any = None
    """An existing SparkContext to run on (tests share one); by default each run starts its own."""

    def engine(self, name: str) -> Check:
        self.engine_name = name
        return self

    def build(self) -> tuple[Model, PropertySet]:
        cls = load_model_class(self.model_name)
        model = cls.build(self.preset, self.overrides)
        props = select_properties(cls, self.spec_files, self.property_names)
        return model, props

    def run(self, progress: Progress | None = None) -> CheckResult:
        if self.engine_name not in ENGINES:
            raise UserError(f"unknown engine {self.engine_name!r}; engines: {', '.join(ENGINES)}")
        model, props = self.build()
        preset = self.preset if self.preset is not None else type(model).default_preset
        if self.engine_name == "simulate":
            result = simulate(model, props, self.simulation_options, progress, preset=preset)
        elif self.engine_name == "bmc":
            opts = dataclasses.replace(self.bmc_options, named=bool(self.property_names))
            result = bmc(model, props, opts, progress, preset=preset)
        elif self.engine_name == "hypothesis":
            opts = dataclasses.replace(self.hypothesis_options, deadlock=self.bfs_options.deadlock)
            result = hypothesis_check(model, props, opts, preset=preset)
        elif self.engine_name == "spark":
            bfs_opts = self.bfs_options
            spark_opts = self.spark_options or SparkOptions()
            spark_opts = dataclasses.replace(
                spark_opts,
                max_depth=bfs_opts.max_depth,
                max_states=bfs_opts.max_states,
                symmetry=bfs_opts.symmetry,
                deadlock=bfs_opts.deadlock,
                keep_going=bfs_opts.keep_going,
            )
            result = spark_bfs(
                model,
                props,
                model_ref=model_reference(self.model_name),
                spec_files=tuple(str(s) for s in self.spec_files),
                options=spark_opts,
                progress=progress,
                preset=preset,
                sc=self.spark_context,
            )
        else:
            opts = self.bfs_options
            if props.liveness and opts.store == "states" and not opts.symmetry and opts.max_depth is None:
                opts = dataclasses.replace(opts, keep_graph=True)  # the liveness check reuses the graph
            result = bfs(model, props, opts, progress, preset=preset)
        if props.liveness:
            self._check_liveness(model, props, result)
        if self.model_name != model.name:
            result.model_ref = model_reference(self.model_name)
        return result

    def _check_liveness(self, model: Model, props: PropertySet, result: CheckResult) -> None:
        """Liveness is checked on the explored state graph, after the safety search."""
        if self.engine_name != "bfs":
            result.warnings.append(
                f"liveness properties ({', '.join(p.name for p in props.liveness)}) are checked by the bfs engine "
                f"only; the {self.engine_name} engine ignored them"
            )
            return
        if result.violations and not self.bfs_options.keep_going:
            return  # stopped at a safety violation, as for any other property
        opts = self.bfs_options
        if opts.max_depth is not None:
            result.warnings.append("liveness is checked on the whole state graph: --max-depth does not apply to it")
        outcome = check_liveness(model, props, opts.max_states, explored=result.graph)
        result.graph = None
        result.warnings.extend(outcome.warnings)
        result.violations.extend(outcome.violations)
        if outcome.violations:
            result.status = Status.VIOLATED
            result.complete = result.complete and opts.keep_going
        elif not outcome.complete:
            if result.status != Status.VIOLATED:  # a safety violation found with --continue stands
                result.status = Status.HOLDS_BOUNDED
            result.complete = False


def model_reference(name: str) -> str:
    """A model of one's own as replay will find it again: file paths made absolute."""
    target, sep, attr = name.rpartition(":")
    if sep and target.endswith(".py"):
        return f"{Path(target).resolve()}:{attr}"
    return name


def trace_filename(result: CheckResult, prop: str) -> str:
    stem = result.preset or result.model
    return f"{stem}-{prop}.itf.json"


def write_traces(result: CheckResult, out_dir: str | Path) -> list[Path]:
    """Write each violation's trace as ITF under out_dir and remember the path on the violation."""
    written = []
    for violation in result.violations:
        path = Path(out_dir) / trace_filename(result, violation.property)
        extra: dict[str, Any] = {"kind": violation.kind}
        if result.model_ref:
            extra["model_ref"] = result.model_ref
        if result.seed is not None:
            extra["seed"] = result.seed
        doc = trace_to_itf(
            violation.trace,
            model=result.model,
            config=result.config,
            preset=result.preset,
            property=violation.property,
            engine=result.engine,
            extra_meta=extra,
        )
        write_trace(path, doc)
        violation.trace_file = str(path)
        written.append(path)
    return written
