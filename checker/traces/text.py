"""Printing a trace step by step, showing only what changed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from kmc.checker.traces.itf import format_action, format_value


def _diff(path: str, old: Any, new: Any) -> Iterator[tuple[str, Any, Any]]:
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        if "#tup" in old and "#tup" in new and len(old["#tup"]) == len(new["#tup"]):
            for i, (a, b) in enumerate(zip(old["#tup"], new["#tup"], strict=True)):
                yield from _diff(f"{path}[{i}]", a, b)
            return
        if not any(k.startswith("#") for k in old) and not any(k.startswith("#") for k in new):
            for key in [*old, *(k for k in new if k not in old)]:
                yield from _diff(f"{path}.{key}" if path else key, old.get(key), new.get(key))
            return
    yield path, old, new


def changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(path, old value, new value) for every leaf that differs, e.g. replicaState[1].hw."""
    strip = lambda s: {k: v for k, v in s.items() if k != "#meta"}  # noqa: E731
    return list(_diff("", strip(old), strip(new)))


def leaves(state: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The whole state as (path, value) rows: records are opened field by field, and a tuple once
    (one replica's or one consumer's part), so ``replicaState[1].hw`` is a row and a log is one."""

    def walk(path: str, value: Any, indexed: bool) -> Iterator[tuple[str, Any]]:
        if isinstance(value, dict) and value and not any(k.startswith("#") for k in value):
            for key, item in value.items():
                yield from walk(f"{path}.{key}" if path else key, item, False)
        elif isinstance(value, dict) and "#tup" in value and value["#tup"] and not indexed:
            for i, item in enumerate(value["#tup"]):
                yield from walk(f"{path}[{i}]", item, True)
        else:
            yield path, value

    return [row for key, value in state.items() if key != "#meta" for row in walk(key, value, False)]


def touches(path: str, changed: list[str]) -> bool:
    """Whether a row of :func:`leaves` is, contains or lies inside one of the changed paths."""
    return any(
        p == path or p.startswith((path + ".", path + "[")) or path.startswith((p + ".", p + "[")) for p in changed
    )


def trace_text(doc: Mapping[str, Any], full: bool = False, note: str = "") -> str:
    """The trace as text: the initial state in full, then each action and the fields it changed
    (``note``: what replaying it on the model found, when that is not the recorded violation)."""
    meta = doc.get("#meta", {})
    lines = []
    title = f"{meta.get('model')}"
    if meta.get("preset"):
        title += f" --preset {meta['preset']}"
    if meta.get("observed"):
        title = f"OBSERVED on a real cluster ({meta.get('model')}, {meta.get('trace', '')})"
    elif meta.get("property"):
        title += f": {meta['property']} violated"
    lines.append(title)
    if note:
        lines.append(f"({note})")
    states = doc["states"]
    loop = doc.get("loop")
    for index, state in enumerate(states):
        action = state.get("#meta", {}).get("action")
        marker = "  <- loop starts here" if loop == index else ""
        if loop is None and meta.get("property") and index == len(states) - 1:
            marker = (
                "  <- not explained by the model" if meta.get("observed") else f"  <- {meta['property']} violated here"
            )
        lines.append(f"State {index}: {format_action(action)}{marker}")
        if index == 0 or full:
            for key, value in state.items():
                if key != "#meta":
                    lines.append(f"  {key} = {format_value(value)}")
        else:
            diff = changes(states[index - 1], state)
            if not diff:
                lines.append("  (no change)")
            for path, old, new in diff:
                lines.append(f"  {path}: {format_value(old)} -> {format_value(new)}")
    if loop is not None:
        lines.append(f"Back to state {loop} (the loop repeats forever)")
    return "\n".join(lines)
