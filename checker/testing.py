"""pytest helpers: a model as a test class in one line, and assertions on a check's verdict.

from kmc.checker.testing import assert_holds, assert_violates, hypothesis_test

TestKip320 = hypothesis_test("replication", preset="kip-320")

def test_kip_101_loses_data(tmp_path):
    assert_violates("replication", "StrongIsr", preset="kip-101", out=tmp_path)

def test_kip_320_holds():
    assert_holds("replication", preset="kip-320")
"""

from __future__ import annotations

import unittest
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import hypothesis
from kmc.checker.engines.hypothesis.check import machine_settings
from kmc.checker.engines.hypothesis.machine import machine_for
from kmc.checker.engines.hypothesis.options import HypothesisOptions
from kmc.checker.registry import load_model_class
from kmc.checker.result import CheckResult
from kmc.checker.runner import Check
from kmc.checker.search.observers import vacuity_failures
from kmc.checker.traces.files import write_traces


def hypothesis_test(
    model: str,
    preset: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    properties: Sequence[str] = (),
    spec_files: Sequence[str | Path] = (),
    examples: int = HypothesisOptions.examples,
    steps: int = 60,
    seed: int | None = None,
) -> type[unittest.TestCase]:
    """A unittest/pytest test class that runs the model under Hypothesis and fails on a violation."""
    job = Check(model, preset=preset, overrides=dict(overrides or {}), property_names=properties, spec_files=spec_files)
    instance, props = job.build()
    machine = machine_for(instance, props, steps_per_run=steps)
    if seed is not None:
        hypothesis.seed(seed)(machine)
    test_case = machine.TestCase
    test_case.settings = machine_settings(HypothesisOptions(examples=examples, steps=steps))
    name = f"Test{type(instance).__name__}{(preset or '').title().replace('-', '')}"
    return type(name, (test_case,), {"__module__": __name__})


def _run(
    model: str,
    preset: str | None,
    overrides: Mapping[str, Any] | None,
    properties: Sequence[str],
    engine: str,
    settings: Mapping[str, Any],
    out: str | Path | None,
) -> CheckResult:
    """Settings are named as in kmc.checker.engines.settings.all_options() (max_states, seed, walks, ...), as in a
    suite."""
    load_model_class(model)
    result = Check(
        model,
        preset=preset,
        overrides=dict(overrides or {}),
        property_names=properties,
        engine_name=engine,
        settings=settings,
    ).run()
    write_traces(result, Path(out) if out is not None else Path("kmc-out"))
    return result


def assert_holds(
    model: str,
    preset: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    properties: Sequence[str] = (),
    engine: str = "bfs",
    complete: bool = True,
    out: str | Path | None = None,
    fail_on_vacuity: bool = False,
    **settings: Any,
) -> CheckResult:
    """Fail, naming the property and the trace file, unless every property holds (completely, by
    default; and, with ``fail_on_vacuity``, with every action taken and every property exercised)."""
    result = _run(model, preset, overrides, properties, engine, settings, out)
    if result.violations:
        v = result.violations[0]
        raise AssertionError(
            f"{model} {preset or ''}: {v.property} violated, trace of {v.trace_length} states: "
            f"{v.trace_file} (kmc show {v.trace_file})"
        )
    if complete and not result.complete:
        raise AssertionError(f"{model} {preset or ''}: holds only within bounds ({result.bound_reason})")
    vacuous = vacuity_failures(result) if fail_on_vacuity else []
    if vacuous:
        raise AssertionError(f"{model} {preset or ''}: vacuous: {'; '.join(vacuous)}")
    return result


def assert_violates(
    model: str,
    prop: str,
    preset: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    engine: str = "bfs",
    trace_length: int | None = None,
    out: str | Path | None = None,
    **settings: Any,
) -> CheckResult:
    """Fail unless ``prop`` is violated (with a shortest trace of ``trace_length`` states, if given)."""
    result = _run(model, preset, overrides, [prop], engine, settings, out)
    violation = result.violation(prop)
    if violation is None:
        scope = "every reachable state" if result.complete else f"a bounded search ({result.bound_reason})"
        raise AssertionError(f"{model} {preset or ''}: expected {prop} to be violated; it holds in {scope}")
    if trace_length is not None and violation.trace_length != trace_length:
        raise AssertionError(
            f"{model} {preset or ''}: {prop} violated with a trace of {violation.trace_length} "
            f"states, expected {trace_length}: {violation.trace_file}"
        )
    return result


def retake(trace: str | Path, **overrides: Any) -> list[Any]:
    """The trace's actions taken again by its model with ``overrides`` to the trace's config (a fix
    switched on, say): the states they reach, from the trace's first. An action no longer enabled
    fails the test, naming it: that is where the change decides."""
    from kmc.checker.traces.itf import read_trace
    from kmc.checker.traces.replay import replay

    done = replay(read_trace(Path(trace)))
    model = type(done.model)(
        type(done.model).make_config(done.meta.get("preset"), {**done.model.config_dict(), **overrides})
    )
    states = [done.trace.states[0]]
    for action in done.trace.actions[1:]:
        following = [t for a, t in model.successors(states[-1]) if a == action]
        assert following, f"{action} is not enabled with {overrides}"
        states.append(following[0])
    return states
