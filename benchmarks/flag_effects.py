"""Every flag of every model changes the reachable state space somewhere: two searches per flag.

    python benchmarks/flag_effects.py [--model transactions ...] [--max-states 200000] [--table FILE]

A flag is a config key that switches behaviour (a bool, a Literal, a str with choices), not a
bound. For each flag the presets are tried in turn, the default first: the preset as it is, and
the preset with the flag set to each other value it takes. Both are explored breadth-first level
by level, and the sets of states at each depth are compared; the first depth where they differ
shows the flag changes what can happen at that preset's bounds. A flag no preset shows a
difference for, within ``--max-states`` states a search, is listed as such: its bound must be
documented in its model's page. Results go to benchmarks/results/DATE-flag-effects.json and the
table is printed (the one in docs/flag-effects.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

BEYOND_PRESETS: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {
    ("group-kip848", "bump_epoch_after_revocation"): ("kip-848", {"partitions": 3}),
}
"""Flags no preset's bounds show an effect for, and the bounds where one shows: tried after the presets."""


def flags(model_cls: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """The model's switches and every value each takes."""
    import dataclasses

    out = []
    hints = typing.get_type_hints(model_cls.Config)
    for field in dataclasses.fields(model_cls.Config):
        tp = hints[field.name]
        choices = field.metadata.get("choices")
        if tp is bool:
            out.append((field.name, (False, True)))
        elif typing.get_origin(tp) is typing.Literal:
            out.append((field.name, typing.get_args(tp)))
        elif choices:
            out.append((field.name, tuple(choices)))
    return out


class LevelSearch:
    """A breadth-first search taken one depth at a time: its frontier is the states at that depth."""

    def __init__(self, model: Any, max_states: int, deadline: float) -> None:
        self.model = model
        self.seen = set(model.init_states())
        self.frontier = frozenset(self.seen)
        self.max_states = max_states
        self.deadline = deadline

    def over_budget(self) -> bool:
        return len(self.seen) > self.max_states or time.monotonic() > self.deadline

    def step(self) -> None:
        found = set()
        for state in self.frontier:
            if not self.model.within_bounds(state):
                continue
            for _action, t in self.model.successors(state):
                if t not in self.seen:
                    self.seen.add(t)
                    found.add(t)
        self.frontier = frozenset(found)


def first_difference(a: Any, b: Any, max_states: int, seconds: float) -> tuple[int | None, bool]:
    """The first depth whose states differ between two models (None: none found), and whether
    both searches ended by themselves (so that no difference means the same space)."""
    deadline = time.monotonic() + seconds
    left, right = LevelSearch(a, max_states, deadline), LevelSearch(b, max_states, deadline)
    depth = 0
    while True:
        if left.frontier != right.frontier:
            return depth, True
        if not left.frontier:
            return None, True
        if left.over_budget() or right.over_budget():
            return None, False
        left.step()
        right.step()
        depth += 1


def effect(model_cls: Any, flag: str, values: tuple[Any, ...], max_states: int, seconds: float) -> dict[str, Any]:
    presets: list[tuple[str, dict[str, Any]]] = [
        (p, {}) for p in [model_cls.default_preset, *(p for p in model_cls.presets if p != model_cls.default_preset)]
    ]
    beyond = BEYOND_PRESETS.get((model_cls.name, flag))
    if beyond is not None:
        presets.append(beyond)
    tried = []
    for preset, bounds in presets:
        base_config = model_cls.make_config(preset, bounds)
        current = getattr(base_config, flag)
        for value in values:
            if value == current:
                continue
            try:
                other = model_cls.build(preset, {**bounds, flag: value})
            except Exception as exc:  # the flipped config is refused by the model's own checks
                tried.append({"preset": preset, "value": value, "refused": str(exc).splitlines()[0]})
                continue
            depth, complete = first_difference(model_cls(base_config), other, max_states, seconds)
            tried.append({"preset": preset, "bounds": bounds, "value": value, "depth": depth, "complete": complete})
            if depth is not None:
                where = {"preset": preset, "bounds": bounds, "from": current, "to": value, "depth": depth}
                return {"flag": flag, "changes": True, **where, "tried": tried}
    return {"flag": flag, "changes": False, "tried": tried}


def describe(row: dict[str, Any]) -> str:
    if row["changes"]:
        bounds = " ".join(f"{k}={v}" for k, v in row.get("bounds", {}).items())
        where = (f"`{row['preset']}`" if row["preset"] else "the defaults") + (f" with `{bounds}`" if bounds else "")
        text = f"changes {where} from depth {row['depth']} (`{row['from']}` → `{row['to']}`)"
        if bounds:
            text += ": no preset's own bounds show it"
        return text
    complete = [t for t in row["tried"] if t.get("complete")]
    cut = [t for t in row["tried"] if "depth" in t and not t.get("complete")]
    parts = []
    if complete:
        parts.append("the same space at " + ", ".join(sorted({f"`{t['preset']}`" for t in complete})))
    if cut:
        parts.append("no difference within the budget at " + ", ".join(sorted({f"`{t['preset']}`" for t in cut})))
    return "**no difference**: " + "; ".join(parts or ["every flipped preset refused"])


def markdown(doc: dict[str, Any]) -> str:
    lines = ["| model | flag | effect |", "|---|---|---|"]
    for model, rows in doc["models"].items():
        for row in rows:
            lines.append(f"| `{model}` | `{row['flag']}` | {describe(row)} |")
    return "\n".join(lines)


def main() -> int:
    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", help="only this model (repeatable): a name or file.py:Class")
    parser.add_argument("--max-states", type=int, default=200_000, help="states a search may hold")
    parser.add_argument("--seconds", type=float, default=60.0, help="time a pair of searches may take")
    parser.add_argument("--table", type=Path, help="only print the table of an earlier results file")
    args = parser.parse_args()
    if args.table:
        print(markdown(json.loads(args.table.read_text())))
        return 0
    from kmc.checker.registry import load_model_class, registered_models

    chosen = {name: load_model_class(name) for name in args.model} if args.model else registered_models()

    started = time.monotonic()
    doc: dict[str, Any] = {
        "command": "python benchmarks/flag_effects.py " + " ".join(sys.argv[1:]),
        "max_states": args.max_states,
        "seconds": args.seconds,
        "models": {},
    }
    for name, model_cls in chosen.items():
        rows = []
        for flag, values in flags(model_cls):
            t0 = time.monotonic()
            row = effect(model_cls, flag, values, args.max_states, args.seconds)
            row["seconds"] = round(time.monotonic() - t0, 2)
            rows.append(row)
            print(f"{name:24} {flag:28} {describe(row)}  ({row['seconds']} s)", flush=True)
        doc["models"][name] = rows
    doc["elapsed_s"] = round(time.monotonic() - started, 1)
    out = ROOT / "benchmarks" / "results" / f"{datetime.date.today()}-flag-effects.json"
    if args.model and out.exists():  # keep the other models' rows of an earlier run of the day
        earlier = json.loads(out.read_text())
        doc["models"] = {**earlier.get("models", {}), **doc["models"]}
        doc["runs"] = [*earlier.get("runs", []), {"command": doc["command"], "elapsed_s": doc["elapsed_s"]}]
    else:
        doc["runs"] = [{"command": doc["command"], "elapsed_s": doc["elapsed_s"]}]
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    print(f"\nresults: {out}\n")
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
