"""One check from names to result: the builder that picks the engine.

result = Check("replication", preset="kip-320").engine("bfs").run()
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kmc.checker.engines import ENGINES, engine_class
from kmc.checker.engines.api import Engine, EngineTask, SearchBounds
from kmc.checker.engines.settings import settings_from, split_settings
from kmc.checker.errors import NondeterministicModelError, UserError
from kmc.checker.model import Model, check_states
from kmc.checker.properties import PropertySet, select_properties
from kmc.checker.registry import load_model_class, model_reference
from kmc.checker.result import CheckResult, Status
from kmc.checker.search.liveness import check_liveness
from kmc.checker.search.observers import (
    Coverage,
    GraphRecorder,
    SearchObserver,
    declared_actions,
    never_needed,
    vacuity,
)
from kmc.checker.search.progress import Progress


@dataclass
class Check:
    """A check by names: model, preset, config overrides, properties, spec files, engine and its
    settings (names of kmc.checker.engines.settings.all_options(): bounds such as max_states, engine options such
    as walks). ``run`` validates everything before any work, then runs the engine."""

    model_name: str
    preset: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    property_names: Sequence[str] = ()
    spec_files: Sequence[str | Path] = ()
    engine_name: str = "bfs"
    settings: Mapping[str, Any] = field(default_factory=dict)
    spark_context: Any = None
    """An existing SparkContext to run on (tests share one); by default each run starts its own."""
    runtime: Mapping[str, Any] = field(default_factory=dict)
    """Engine resources that are not user settings (tests: a Spark save interval)."""

    def engine(self, name: str) -> Check:
        self.engine_name = name
        return self

    def with_settings(self, **settings: Any) -> Check:
        self.settings = {**self.settings, **settings}
        return self

    def plan(self) -> tuple[type[Engine], SearchBounds, dict[str, Any]]:
        """The engine class, the bounds and the engine's options; an error for a setting it does not take."""
        engine = engine_class(self.engine_name)
        settings = settings_from(self.settings, "")
        for spec in engine.options:  # every path option names a directory (a checkpoint, a database)
            value = settings.get(spec.name)
            if spec.path and value is not None and Path(value).exists() and not Path(value).is_dir():
                raise UserError(f"{spec.cli_flag} {value}: exists and is not a directory")
        return (engine, *split_settings(engine, settings))

    def build(self, *, require_properties: bool = False) -> tuple[Model, PropertySet]:
        """The model and the properties, every name checked; with ``require_properties`` (the CLI,
        a suite) a check with nothing to check is an error rather than a verdict that "holds"."""
        _engine, bounds, _options = self.plan()
        cls = load_model_class(self.model_name)
        model = cls.build(self.preset, self.overrides)
        props = select_properties(cls, self.spec_files, self.property_names)
        if require_properties and not props.all() and not bounds.deadlock:
            raise UserError(
                f"model {model.name or cls.__name__} has no properties to check: give --spec FILE (in a suite: "
                "spec = [...]), or name a module of @invariant/@step functions in the model's spec_modules "
                "(docs/writing-a-property.md)"
            )
        return model, props

    def run(self, progress: Progress | None = None, observers: Sequence[SearchObserver] = ()) -> CheckResult:
        engine, bounds, options = self.plan()
        model, props = self.build()
        preset = self.preset if self.preset is not None else type(model).default_preset
        coverage = Coverage(model, props) if engine.observes else None
        recorder = None
        if props.liveness and engine.liveness and engine.keeps_graph(bounds, options):
            recorder = GraphRecorder()  # the liveness check reuses the explored graph
        watching = [o for o in (coverage, recorder, *observers) if o is not None]
        task = EngineTask(
            model=model,
            props=props,
            bounds=bounds,
            options=options,
            observers=watching,
            progress=progress,
            preset=preset,
            model_ref=model_reference(self.model_name),
            spec_files=tuple(str(s) for s in self.spec_files),
            runtime={
                "spark_context": self.spark_context,
                "named_properties": bool(self.property_names),
                **self.runtime,
            },
        )
        _check_first_states(model)
        try:
            result = engine().run(task)
        except NondeterministicModelError:  # a state compared by identity differs from itself
            _find_mutable_state(model)
            raise
        except TypeError as exc:  # a mutable state deeper in the graph than the first check looks
            if "unhashable type" not in str(exc) and "cannot fingerprint" not in str(exc):
                raise
            _find_mutable_state(model)
            raise UserError(
                f"model {model.name}: a reachable state is no immutable value ({exc.args[0].split(':')[0]}): states "
                "must be immutable, hashable values: tuples, frozensets, NamedTuples, frozen dataclasses, ints, strs, "
                "None"
            ) from None
        result.property_docs = {prop.name: prop.doc for prop in props.all() if prop.doc}
        result.spec_files = [str(Path(spec).resolve()) for spec in self.spec_files]
        if props.liveness:
            self._check_liveness(engine, model, props, result, bounds, recorder, coverage)
        if coverage is not None:
            report = coverage.report()
            inactive = declared_actions(model)[1]
            recovery = tuple(model.recovery_actions()) if hasattr(model, "recovery_actions") else ()
            result.coverage = {
                **report.to_json(),
                "inactive": list(inactive),
                "never_needed": never_needed(report, recovery),
            }
            result.vacuity = vacuity(
                report, inactive, judge_liveness=engine.liveness, complete=result.complete, recovery=recovery
            )
            if not declared_actions(model)[0]:
                result.warnings.append(
                    f"model {model.name} declares no action names: an action never enabled cannot be reported"
                )
            result.warnings.extend(result.vacuity)
        if self.model_name != model.name:
            result.model_ref = model_reference(self.model_name)
        return result

    def _check_liveness(
        self,
        engine: type[Engine],
        model: Model,
        props: PropertySet,
        result: CheckResult,
        bounds: SearchBounds,
        recorder: GraphRecorder | None,
        coverage: Coverage | None,
    ) -> None:
        """Liveness is checked on the explored state graph, after the safety search."""
        if not engine.liveness:
            checkers = ", ".join(name for name, cls in ENGINES.items() if cls.liveness)
            result.warnings.append(
                f"liveness properties ({', '.join(p.name for p in props.liveness)}) are checked by the {checkers} "
                f"engine only; the {engine.name} engine ignored them"
            )
            return
        if result.violations and not bounds.keep_going:
            return  # stopped at a safety violation, as for any other property
        if bounds.max_depth is not None:
            result.warnings.append("liveness is checked on the whole state graph: --max-depth does not apply to it")
        explored = recorder.explored() if recorder is not None else None
        workers = result.stats.extra.get("workers", 1)
        if explored is None and workers > 1:
            result.warnings.append(
                f"liveness ({', '.join(p.name for p in props.liveness)}) was checked on a graph explored again by "
                f"one process: the search on {workers} workers keeps no graph; name safety properties with "
                "--property to check only those"
            )
        outcome = check_liveness(model, props, bounds.max_states, explored=explored)
        if coverage is not None:
            for name, (evaluated, exercised) in outcome.counts.items():
                coverage.liveness_counts(name, evaluated, exercised)
        result.warnings.extend(outcome.warnings)
        result.violations.extend(outcome.violations)
        if outcome.violations:
            result.status = Status.VIOLATED
            result.complete = result.complete and bounds.keep_going
        elif not outcome.complete:
            if result.status != Status.VIOLATED:  # a safety violation found with --continue stands
                result.status = Status.HOLDS_BOUNDED
            result.complete = False


def _check_first_states(model: Model) -> None:
    """The initial states and their successors are immutable values, or one error names the field.
    A model that raises here is left for the engine to report as it reports any model error."""
    try:
        inits = list(itertools.islice(model.init_states(), 100))
        successors = [t for s in inits[:10] for _a, t in model.successors(s)]
    except UserError:
        raise
    except Exception:
        return
    check_states(model, inits, "an initial state")
    check_states(model, successors, "a successor of an initial state")


def _find_mutable_state(model: Model, limit: int = 50_000) -> None:
    """Search breadth-first for the first state that is no immutable value, and raise the UserError
    that names its field; return if none is found within ``limit`` states."""
    try:
        frontier = list(model.init_states())
        seen = set(frontier)
        while frontier and len(seen) < limit:
            following = []
            for state in frontier:
                for _action, t in model.successors(state):
                    check_states(model, [t], f"a state reached from {state!r}")
                    if t not in seen:
                        seen.add(t)
                        following.append(t)
            frontier = following
    except UserError:
        raise
    except Exception:
        return
