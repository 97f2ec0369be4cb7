"""`kmc diff MODEL --preset A --preset B`: the shortest behaviour one configuration allows and the
other forbids, step by step and property by property (see kmc.checker.diff)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from kmc.checker.cli.exit_codes import EXIT_VIOLATED
from kmc.checker.diff import StepDifference, VerdictDifference, same_shape, sides, step_difference, verdict_differences
from kmc.checker.errors import UserError
from kmc.checker.model import parse_sets
from kmc.checker.result import CheckResult, Trace
from kmc.checker.traces.files import write_traces
from kmc.checker.traces.itf import format_action, format_value, state_vars, trace_to_itf, write_trace
from kmc.checker.traces.text import changes, trace_text


def diff(
    model: Annotated[str, typer.Argument(help="Model name, module:Class or file.py:Class.")],
    presets: Annotated[
        list[str], typer.Option("--preset", "-p", help="A preset: give two, or one with --set-a/--set-b.")
    ] = [],  # noqa: B006
    sets: Annotated[list[str], typer.Option("--set", "-s", help="Config key=value for both sides.")] = [],  # noqa: B006
    set_a: Annotated[list[str], typer.Option("--set-a", help="Config key=value for the first side only.")] = [],  # noqa: B006
    set_b: Annotated[list[str], typer.Option("--set-b", help="Config key=value for the second side only.")] = [],  # noqa: B006
    properties: Annotated[
        list[str], typer.Option("--property", "-P", help="Compare these properties' verdicts (default: all).")
    ] = [],  # noqa: B006
    only: Annotated[
        str | None, typer.Option("--only", help="steps or verdicts: compute one of the two differences only.")
    ] = None,
    max_states: Annotated[
        int, typer.Option("--max-states", help="Explore at most this many states a search.", min=1)
    ] = 1_000_000,
    out: Annotated[Path, typer.Option("--out", help="Where the traces are written.")] = Path("kmc-out"),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The shortest behaviour one configuration allows and the other forbids: a step one takes from a
    state both reach that the other does not (each way), and each property whose verdict differs.
    Exit 0 when the two agree on every step and verdict searched, 1 when they differ."""
    if only not in (None, "steps", "verdicts"):
        raise UserError(f"--only {only}: give steps or verdicts")
    if properties and only == "steps":
        raise UserError("--property names the properties whose verdicts are compared: it does not go with --only steps")
    a, b = sides(model, presets, parse_sets(sets), parse_sets(set_a), parse_sets(set_b))
    unlike = same_shape(a.build(), b.build()) if only != "verdicts" else None
    if unlike and only == "steps":
        reason = unlike.removesuffix(": only the verdicts are compared")
        raise UserError(f"no step difference to compute: {reason}; drop --only steps to compare their verdicts")
    out.mkdir(parents=True, exist_ok=True)
    steps = []
    if not unlike and only != "verdicts":
        steps = [step_difference(a, b, max_states), step_difference(b, a, max_states)]
    step_files = [_write_step(d, out, i) for i, d in enumerate(steps)]
    verdicts: list[VerdictDifference] | None = None
    results: tuple[CheckResult, ...] = ()
    if only != "steps":
        verdicts, results = verdict_differences(a, b, properties, max_states)
        for result in results:
            write_traces(result, out)
    found = Found(model, a.label, b.label, unlike, steps, step_files, verdicts, out, results)
    print(json.dumps(found.as_json(), indent=2) if as_json else "\n".join(found.text()))
    if found.differs:
        raise typer.Exit(EXIT_VIOLATED)


def _write_step(difference: StepDifference, out: Path, index: int) -> Path | None:
    if difference.trace is None:
        return None
    side = difference.taken_by
    built = side.build()
    path = out / f"diff-{side.preset or side.model_name}-{'ab'[index]}-step.itf.json"
    doc = trace_to_itf(
        difference.trace,
        model=built.name,
        config=built.config_dict(),
        preset=side.preset,
        property="",
        engine="bfs",
        extra_meta={"diff": {"taken_by": side.label, "not_taken_by": difference.other.label}},
    )
    write_trace(path, doc)
    return path


def _last_step(difference: StepDifference) -> list[str]:
    """The step that tells them apart, side by side: each field it changes, before the step, after it
    in the configuration that takes it, and after the same action in the other (if it can take it)."""
    assert difference.trace is not None
    trace = difference.trace
    before, after, action = trace.states[-2], trace.states[-1], trace.actions[-1]
    taker, other = difference.taken_by.label, difference.other.label
    label = format_action(_json_action(action))
    same_action = [t for a, t in difference.other_steps if a == action]
    lines = [f"  step {len(trace) - 1}, {label}:"]
    if not same_action:
        names = sorted({format_action(_json_action(a)) for a, _t in difference.other_steps})
        lines.append(
            f"    {other} cannot take it here; its steps from state {len(trace) - 2}: " + (", ".join(names) or "none")
        )
        lines.append(f"    in {taker} it changes:")
        lines += [
            f"      {path}: {format_value(old)} -> {format_value(new)}" for path, old, new in _changed(before, after)
        ]
        return lines
    theirs = same_action[0]
    ours_changed = {path: (old, new) for path, old, new in _changed(before, after)}
    theirs_changed = {path: (old, new) for path, old, new in _changed(before, theirs)}
    differ, agree = [], []
    for path in dict.fromkeys([*ours_changed, *theirs_changed]):
        old = (ours_changed.get(path) or theirs_changed[path])[0]
        mine = ours_changed[path][1] if path in ours_changed else old
        yours = theirs_changed[path][1] if path in theirs_changed else old
        row = (path, format_value(old), format_value(mine), format_value(yours))
        (differ if mine != yours else agree).append(row)
    rows = [("field", "before", taker, other), *differ, *agree]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for index, row in enumerate(rows):
        mark = "*" if 0 < index <= len(differ) else " "
        cells = "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3]))
        lines.append(f"   {mark}{cells}  {row[3]}")
    lines.append("    (* where the two differ)")
    if len(same_action) > 1:
        lines.append(f"    ({other} has {len(same_action)} steps of this action here; the first is shown)")
    return lines


def _json_action(action: Any) -> dict[str, Any]:
    from kmc.checker.traces.itf import action_to_json

    return action_to_json(action)


def _changed(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    return changes(state_vars(before), state_vars(after))


@dataclass
class Found:
    """What `kmc diff` found, to print as text or JSON."""

    model: str
    a: str
    b: str
    unlike: str | None
    """Why no step difference was computed (the configurations' states differ in shape), if so."""
    steps: list[StepDifference]
    files: list[Path | None]
    """Each step difference's trace file (None where there is none)."""
    verdicts: list[VerdictDifference] | None
    """None: not computed (--only steps)."""
    out: Path
    results: tuple[CheckResult, ...] = ()
    """The verdict searches of A and B (empty with --only steps)."""

    @property
    def differs(self) -> bool:
        return any(d.trace is not None for d in self.steps) or bool(self.verdicts)

    def text(self) -> list[str]:
        lines = [f"kmc diff {self.model}: A = {self.a}, B = {self.b}", ""]
        if self.unlike:
            lines += [f"step difference: none computed: {self.unlike}", ""]
        elif not self.steps:
            lines += ["step difference: not computed (--only verdicts)", ""]
        for difference, path in zip(self.steps, self.files, strict=True):
            lines += [*self._step_text(difference, path), ""]
        lines += self._verdicts_text()
        return lines

    def _step_text(self, difference: StepDifference, path: Path | None) -> list[str]:
        taker, other = difference.taken_by.label, difference.other.label
        if difference.trace is None:
            scope = (
                "any of its reachable states"
                if difference.complete
                else f"its first {difference.distinct_states:,} states"
            )
            return [f"step difference: every step {taker} takes in {scope} is one {other} takes"]
        lines = [
            f"step difference: {taker} allows, {other} forbids: after {len(difference.trace) - 2} steps both can "
            f"take, {taker} takes a step {other} does not -> {path}"
        ]
        shared = Trace(states=difference.trace.states[:-1], actions=difference.trace.actions[:-1])
        doc = trace_to_itf(shared, model=self.model, config={}, preset=None, property="", engine="bfs")
        body = trace_text(doc).splitlines()[1:]  # the path both take, up to the state where they part
        return [*lines, *("  " + line for line in body if line.strip()), *_last_step(difference)]

    def _verdicts_text(self) -> list[str]:
        verdicts = self.verdicts
        if verdicts is None:
            return ["verdict difference: not computed (--only steps)"]
        if not verdicts:
            cut = self._cut_short()
            if cut:
                return [f"verdict difference: none found, but {cut}: not a proof that they agree"]
            return ["verdict difference: none (every property checked has the same verdict in both)"]
        lines = [f"verdict difference ({len(verdicts)} {'property' if len(verdicts) == 1 else 'properties'}):"]
        rows = [("property", self.a, self.b), *((v.property, v.verdict(0), v.verdict(1)) for v in verdicts)]
        widths = [max(len(row[i]) for row in rows) for i in range(2)]
        lines += [f"    {row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}" for row in rows]
        lines.append(f"  each violation's shortest trace -> {self.out}/")
        cut = self._cut_short()
        return [*lines, f"  ({cut}: a property that holds in both may yet differ)"] if cut else lines

    def _cut_short(self) -> str:
        """Which searches a bound stopped before the end ('' when both were complete)."""
        bounded = [
            f"{label}'s search stopped at {result.bound_reason or 'a bound'}"
            for label, result in zip((self.a, self.b), self.results, strict=True)
            if not result.complete
        ]
        return " and ".join(bounded)

    def as_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "step_difference_not_computed": self.unlike,
            "step_differences": [
                {
                    "taken_by": d.taken_by.label,
                    "not_taken_by": d.other.label,
                    "trace_length": len(d.trace) if d.trace is not None else None,
                    "trace": str(path) if path else None,
                    "action": _json_action(d.trace.actions[-1]) if d.trace is not None else None,
                    "distinct_states": d.distinct_states,
                    "complete": d.complete,
                }
                for d, path in zip(self.steps, self.files, strict=True)
            ],
            "verdict_differences": None
            if self.verdicts is None
            else [{"property": v.property, "a": v.verdict(0), "b": v.verdict(1)} for v in self.verdicts],
            "verdict_searches": None
            if self.verdicts is None
            else [
                {
                    "side": label,
                    "complete": r.complete,
                    "bound": r.bound_reason,
                    "distinct_states": r.stats.distinct_states,
                }
                for label, r in zip((self.a, self.b), self.results, strict=True)
            ],
        }
