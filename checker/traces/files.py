"""Where a check's counterexamples are written: one ITF file per violated property, named after the
preset (and, when the config is not exactly the preset's, a hash of it) and the property."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import xxhash
from kmc.checker.errors import UserError
from kmc.checker.registry import load_model_class
from kmc.checker.result import CheckResult
from kmc.checker.traces.itf import trace_to_itf, write_trace


def config_hash(model_name: str, config: Mapping[str, Any]) -> str:
    """A short, stable hash of a model's config: two configs never share a trace file name."""
    text = json.dumps([model_name, config], sort_keys=True, default=str)
    return xxhash.xxh3_64_hexdigest(text.encode())[:8]


def trace_stem(result: CheckResult) -> str:
    """The preset's name when the config is exactly the preset's, else the preset plus a config hash."""
    stem = result.preset or result.model
    try:
        cls = load_model_class(result.model_ref or result.model)
        own = json.loads(json.dumps(cls.build(result.preset).config_dict(), default=str))
    except UserError:
        own = None
    if own != json.loads(json.dumps(result.config, default=str)):
        stem += "-" + config_hash(result.model, result.config)
    return stem


def trace_filename(result: CheckResult, prop: str) -> str:
    return f"{trace_stem(result)}-{prop}.itf.json"


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
        if result.property_docs.get(violation.property):
            extra["property_doc"] = result.property_docs[violation.property]
        if result.spec_files:
            extra["spec_files"] = result.spec_files
        doc = trace_to_itf(
            violation.trace,
            model=result.model,
            config=result.config,
            preset=result.preset,
            property=violation.property,
            engine=result.engine,
            extra_meta=extra,
        )
        path = _keep_the_shortest(path, result, violation.property, len(violation.trace))
        write_trace(path, doc)
        violation.trace_file = str(path)
        written.append(path)
    return written


def _keep_the_shortest(path: Path, result: CheckResult, prop: str, length: int) -> Path:
    """Where this trace goes so that a shorter one another engine wrote for the same model, config
    and property is not replaced: beside it, the engine in its name; the run's warnings say so."""
    try:
        existing = json.loads(path.read_text())
        engine, states = existing["#meta"]["engine"], len(existing["states"])
    except (OSError, ValueError, KeyError, TypeError):
        return path  # nothing there, or nothing kmc wrote: the trace goes where it belongs
    if engine == result.engine:
        return path  # the same engine again: its newer run replaces it
    if states <= length:
        beside = path.with_name(path.name.removesuffix(".itf.json") + f".{result.engine}.itf.json")
        result.warnings.append(
            f"{prop}: {path} holds {engine}'s trace of {states} states, as short or shorter: kept; "
            f"this {result.engine} trace of {length} states is written beside it ({beside.name})"
        )
        return beside
    result.warnings.append(f"{prop}: {engine}'s longer trace ({states} states) at {path} is replaced by this one")
    return path


def drive_result_path(trace: Path, release: str) -> Path:
    """Where `kmc drive` keeps a trace's result on a release: beside the trace, named for the release."""
    return trace.with_name(f"{_drive_stem(trace)}.drive-{release}.json")


def drive_result_paths(trace: Path) -> list[Path]:
    """The `kmc drive` results kept beside a trace, one per release driven."""
    return sorted(trace.parent.glob(f"{_drive_stem(trace)}.drive-*.json"))


def _drive_stem(trace: Path) -> str:
    return trace.name.removesuffix(".itf.json").removesuffix(".json")
