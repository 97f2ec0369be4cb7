"""Traces on disk in the Informal Trace Format (ITF) of Apalache and Quint.

Integers are ``{"#bigint": "..."}``, tuples ``{"#tup": [...]}``, sets ``{"#set": [...]}`` and maps
``{"#map": [[k, v], ...]}``, with set elements and map entries sorted canonically so that files
diff stably. Records (NamedTuples, dataclasses) are JSON objects. Each state's ``#meta`` names
the action and arguments that led to it.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kmc.checker.errors import UserError
from kmc.checker.model import Action
from kmc.checker.result import Trace

FORMAT = "ITF"
FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"


def natural_key(value: Any) -> tuple[Any, ...]:
    """A total order on state values that reads naturally: numbers by value, records by field order."""
    if isinstance(value, bool):
        return (0, int(value))
    if isinstance(value, int):
        return (1, int(value))
    if isinstance(value, str):
        return (2, value)
    if isinstance(value, enum.Enum):
        return (2, value.name)
    if value is None:
        return (-1,)
    if isinstance(value, tuple):
        return (3, tuple(natural_key(v) for v in value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (3, tuple(natural_key(getattr(value, f.name)) for f in dataclasses.fields(value)))
    if isinstance(value, frozenset | set):
        return (4, tuple(sorted(natural_key(v) for v in value)))
    if isinstance(value, Mapping):
        return (5, tuple(sorted((natural_key(k), natural_key(v)) for k, v in value.items())))
    return (6, repr(value))


def to_itf(value: Any) -> Any:
    """A Python state value as an ITF JSON value."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return {"#bigint": str(int(value))}
    if isinstance(value, str):
        return value
    if value is None:
        return {"#unserializable": "None"}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {field: to_itf(getattr(value, field)) for field in value._fields}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_itf(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return {"#tup": [to_itf(v) for v in value]}
    if isinstance(value, list):
        return [to_itf(v) for v in value]
    if isinstance(value, frozenset | set):
        return {"#set": [to_itf(v) for v in sorted(value, key=natural_key)]}
    if isinstance(value, Mapping):
        keys = sorted(value, key=natural_key)
        return {"#map": [[to_itf(k), to_itf(value[k])] for k in keys]}
    if isinstance(value, float):
        return value
    raise TypeError(f"cannot write a value of type {type(value).__name__} to ITF")


def state_vars(state: Any) -> dict[str, Any]:
    """A state as ITF variables: a record's fields, or one variable called ``state``."""
    encoded = to_itf(state)
    if isinstance(encoded, dict) and not any(k.startswith("#") for k in encoded):
        return encoded
    return {"state": encoded}


def action_to_json(action: Action | None) -> dict[str, Any] | None:
    if action is None:
        return None
    return {"name": action.name, "args": {k: to_itf(v) for k, v in action[1]}}


def trace_to_itf(
    trace: Trace,
    *,
    model: str,
    config: Mapping[str, Any],
    preset: str | None,
    property: str,
    engine: str,
    extra_meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    states = []
    for index, (action, state) in enumerate(trace.steps()):
        meta: dict[str, Any] = {"index": index}
        if action is not None:
            meta["action"] = action_to_json(action)
        states.append({"#meta": meta, **state_vars(state)})
    varnames = list(state_vars(trace.states[0]).keys()) if trace.states else []
    doc: dict[str, Any] = {
        "#meta": {
            "format": FORMAT,
            "format-description": FORMAT_DESCRIPTION,
            "source": "kmc",
            "model": model,
            "preset": preset,
            "config": dict(config),
            "property": property,
            "engine": engine,
            **(dict(extra_meta) if extra_meta else {}),
        },
        "vars": varnames,
        "states": states,
    }
    if trace.loop is not None:
        doc["loop"] = trace.loop
    return doc


def file_reference(ref: str) -> tuple[str, str] | None:
    """``path/to/file.py:Class`` as (path, Class); None for a registered name or ``module:Class``."""
    target, sep, attr = ref.rpartition(":")
    return (target, attr) if sep and target.endswith(".py") else None


def relative_reference(ref: str, folder: str | Path) -> str:
    """A model file's reference as a path relative to ``folder`` (where the file naming it lives),
    so that the folder and the model can move together (a CI checkout)."""
    parts = file_reference(ref)
    if parts is None:
        return ref
    target = os.path.relpath(Path(parts[0]).resolve(), Path(folder).resolve())
    return f"{Path(target).as_posix()}:{parts[1]}"


def resolve_reference(ref: str, folder: str | Path) -> str:
    """A model file's reference, relative to ``folder``, as an absolute one; others unchanged."""
    parts = file_reference(ref)
    if parts is None or Path(parts[0]).is_absolute():
        return ref
    return f"{(Path(folder) / parts[0]).resolve()}:{parts[1]}"


def write_trace(path: Path, document: Mapping[str, Any]) -> Path:
    """Write a trace; a model file it names is stored relative to the trace's own folder."""
    from kmc.checker.outputs import write_atomically

    meta = document.get("#meta")
    if isinstance(meta, Mapping) and isinstance(meta.get("model_ref"), str):
        relative = relative_reference(meta["model_ref"], Path(path).parent)
        document = {**document, "#meta": {**meta, "model_ref": relative}}
    meta = document.get("#meta")
    if isinstance(meta, Mapping) and isinstance(meta.get("spec_files"), list):
        folder = Path(path).parent.resolve()
        specs = [os.path.relpath(Path(spec).resolve(), folder) for spec in meta["spec_files"]]
        document = {**document, "#meta": {**meta, "spec_files": specs}}
    write_atomically(path, json.dumps(document, indent=1, sort_keys=False) + "\n")
    return path


def read_trace(path: str | Path) -> dict[str, Any]:
    """Load and validate an ITF trace written by kmc; a malformed file is a UserError."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"trace file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read trace {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"malformed trace {path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict):
        raise UserError(f"malformed trace {path}: the top level must be a JSON object")
    meta = doc.get("#meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("model"), str):
        raise UserError(f"malformed trace {path}: '#meta' must name the model ('#meta': {{'model': ...}})")
    states = doc.get("states")
    if not isinstance(states, list) or not states:
        raise UserError(f"malformed trace {path}: 'states' must be a non-empty list")
    for index, state in enumerate(states):
        if not isinstance(state, dict):
            raise UserError(f"malformed trace {path}: state {index} is not an object")
        if index > 0:
            action = state.get("#meta", {}).get("action") if isinstance(state.get("#meta"), dict) else None
            if not isinstance(action, dict) or not isinstance(action.get("name"), str):
                raise UserError(f"malformed trace {path}: state {index} has no '#meta'.action.name")
            if not isinstance(action.get("args", {}), dict):
                raise UserError(f"malformed trace {path}: state {index} action args must be an object")
    loop = doc.get("loop")
    if loop is not None and (not isinstance(loop, int) or not 0 <= loop < len(states)):
        raise UserError(f"malformed trace {path}: 'loop' must be a state index")
    ref = meta.get("model_ref")
    if ref is not None and not isinstance(ref, str):
        raise UserError(f"malformed trace {path}: '#meta'.model_ref must be a string")
    if ref:  # a model file is named relative to the trace's folder (in older traces: absolute)
        meta["model_ref"] = resolve_reference(ref, path.parent)
    specs = meta.get("spec_files")
    if specs is not None:
        if not isinstance(specs, list) or not all(isinstance(spec, str) for spec in specs):
            raise UserError(f"malformed trace {path}: '#meta'.spec_files must be a list of paths")
        meta["spec_files"] = [str(path.parent / spec) for spec in specs]  # relative to the trace's folder
    return doc


def plain(value: Any) -> Any:
    """An ITF value in a readable form: ints as ints, sets as sorted lists, for display."""
    if isinstance(value, dict):
        if "#bigint" in value:
            return int(value["#bigint"])
        if "#tup" in value:
            return tuple(plain(v) for v in value["#tup"])
        if "#set" in value:
            return {"set": [plain(v) for v in value["#set"]]}
        if "#map" in value:
            return {"map": [(plain(k), plain(v)) for k, v in value["#map"]]}
        if "#unserializable" in value:
            return value["#unserializable"]
        return {k: plain(v) for k, v in value.items() if k != "#meta"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def format_value(value: Any) -> str:
    """An ITF value as compact text: {1, 2} for sets, (a, b) for tuples, {k: v} for records."""
    if isinstance(value, dict):
        if "#bigint" in value:
            return value["#bigint"]
        if "#tup" in value:
            return "(" + ", ".join(format_value(v) for v in value["#tup"]) + ")"
        if "#set" in value:
            return "{" + ", ".join(format_value(v) for v in value["#set"]) + "}"
        if "#map" in value:
            return "{" + ", ".join(f"{format_value(k)}: {format_value(v)}" for k, v in value["#map"]) + "}"
        if "#unserializable" in value:
            return str(value["#unserializable"])
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items() if k != "#meta") + "}"
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, str):
        return value
    return json.dumps(value)


def tuples_as_lists(value: Any) -> Any:
    """An ITF value with every tuple turned into a list, so format_value writes a one-element tuple
    as [0] rather than (0), which reads as the number 0 in parentheses: the report's way of writing a log or
    a list of replicas, as Kafka's own JSON does. ``kmc show`` keeps format_value's tuples."""
    if isinstance(value, dict):
        if "#tup" in value:
            return [tuples_as_lists(v) for v in value["#tup"]]
        if "#set" in value:
            return {"#set": [tuples_as_lists(v) for v in value["#set"]]}
        if "#map" in value:
            return {"#map": [[tuples_as_lists(k), tuples_as_lists(v)] for k, v in value["#map"]]}
        return {k: v if k.startswith("#") else tuples_as_lists(v) for k, v in value.items()}
    if isinstance(value, list):
        return [tuples_as_lists(v) for v in value]
    return value


def format_action(action: Mapping[str, Any] | None) -> str:
    if not action:
        return "Init"
    args = ", ".join(f"{k}={format_value(v)}" for k, v in action.get("args", {}).items())
    return f"{action['name']}({args})"
