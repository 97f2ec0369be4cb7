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
        write_trace(path, doc)
        violation.trace_file = str(path)
        written.append(path)
    return written
