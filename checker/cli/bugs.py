"""`kmc bugs`: the bugs of the modelled system that the models reproduce, each beside the suite's
evidence for it (the shortest trace, the fixed preset's state count) and the drives of its traces on
real brokers. Without the evidence a row is a claim; the suite is what checks it."""

from __future__ import annotations

import json
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from kmc.checker.engines import ENGINES
from kmc.checker.errors import UserError
from kmc.checker.model import KnownBug, Model, release_tuple, setting_text
from kmc.checker.registry import load_model_class, registered_models
from kmc.checker.traces.files import drive_result_paths

DEFAULT_SUITE = Path("counterexamples/suite.toml")


@dataclass
class Reproduction:
    """The suite's counterexample of one violated property: its length and its trace file."""

    property: str
    states: int | None = None
    """The shortest trace's length in states, the initial one included (as `kmc replay` counts it)."""
    trace: str | None = None


@dataclass
class Drive:
    """One drive of a bug's trace on a real broker, as its result file next to the trace says."""

    trace: str
    kafka_version: str
    outcome: str
    """What the broker did: "reproduces" (it took every step and the property failed on it), "not confirmed"
    (it took every step, but the property reads what a broker cannot show), or "does not reproduce" (it
    diverged from the trace: the release has the fix, or the trace is not its behaviour)."""


@dataclass
class Row:
    model: str
    bug: KnownBug
    reproductions: list[Reproduction]
    base: Path = field(default_factory=Path)
    """The suite's folder: trace paths are relative to it."""
    evidence: bool = True
    """Whether a suite was read (--no-suite, or none here: the row is the model's claim alone)."""
    fixed_states: int | None = None
    """The fixed preset's distinct states, as the suite checks them (None: no suite entry)."""
    fixed_checked: bool = False
    """Whether the suite checks that the fixed preset holds every property the bug violates."""
    fixed_complete: bool = True
    """Whether that check explores every reachable state (a model with bounds of its own stops at them)."""
    drives: list[Drive] = field(default_factory=list)

    @property
    def checked(self) -> bool:
        """Whether the suite checks every part of the claim: each trace, and the fix when there is one."""
        traced = all(r.trace is not None and r.states is not None for r in self.reproductions)
        return traced and (self.bug.fixed_preset is None or self.fixed_checked)

    def as_json(self) -> dict[str, Any]:
        bug = self.bug
        return {
            "key": bug.key,
            "also": list(bug.also),
            "url": bug.url,
            "model": self.model,
            "component": bug.component,
            "summary": bug.summary,
            "since": bug.since,
            "fixed_in": bug.fixed_in,
            "preset": bug.preset,
            "settings": dict(bug.settings),
            "violates": [
                {
                    "property": r.property,
                    "trace_states": r.states,
                    "trace": str(self.base / r.trace) if r.trace else None,
                }
                for r in self.reproductions
            ],
            "fixed_preset": bug.fixed_preset,
            "fixed_settings": dict(bug.fixed_settings),
            "fixed_distinct_states": self.fixed_states,
            "fixed_complete": self.fixed_complete if self.fixed_checked else None,
            "drives": [{"kafka_version": d.kafka_version, "outcome": d.outcome, "trace": d.trace} for d in self.drives],
            "checked_by_suite": self.checked,
        }


def catalogue(models: dict[str, type[Model]], suite: Path | None) -> list[Row]:
    """Every bug the models declare, with what the suite at ``suite`` holds about it."""
    checks = _suite_checks(suite) if suite is not None else []
    base = suite.parent if suite is not None else Path()
    rows = []
    for name, cls in models.items():
        for bug in cls.bugs:
            reproductions = [Reproduction(p) for p in bug.violates]
            row = Row(model=name, bug=bug, reproductions=reproductions, base=base, evidence=suite is not None)
            for reproduction in row.reproductions:
                entry = _violating_entry(checks, name, bug, reproduction.property)
                if entry is not None:
                    reproduction.states = entry.get("expect_trace_length")
                    reproduction.trace = entry.get("replay")
            if bug.fixed_preset is not None:
                fixed = _fixed_entry(checks, name, bug)
                if fixed is not None:
                    row.fixed_states = fixed.get("expect_distinct_states")
                    row.fixed_checked = True
                    row.fixed_complete = fixed.get("expect") == "holds-complete"
            drives = [d for r in row.reproductions if r.trace for d in _drives_of(base, r.trace)]
            row.drives = sorted(drives, key=lambda d: _release_key(d.kafka_version))
            rows.append(row)
    return rows


def _suite_checks(suite: Path) -> list[dict[str, Any]]:
    try:
        data = tomllib.loads(suite.read_text())
    except FileNotFoundError:
        raise UserError(f"suite file not found: {suite} (give one with --suite, or --no-suite)") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"malformed suite {suite}: {exc}") from None
    checks = data.get("check", [])
    return [c for c in checks if isinstance(c, dict)] if isinstance(checks, list) else []


def _same_run(entry: dict[str, Any], model: str, preset: str | None, settings: Any) -> bool:
    return entry.get("model") == model and entry.get("preset") == preset and entry.get("set", {}) == dict(settings)


def _violating_entry(checks: list[dict[str, Any]], model: str, bug: KnownBug, prop: str) -> dict[str, Any] | None:
    for entry in checks:
        named = entry.get("expect_property", [])
        named = [named] if isinstance(named, str) else named
        violated = entry.get("expect") == "violated" and prop in named and entry.get("replay")
        if violated and _same_run(entry, model, bug.preset, bug.settings):
            return entry
    return None


def _fixed_entry(checks: list[dict[str, Any]], model: str, bug: KnownBug) -> dict[str, Any] | None:
    """The suite's breadth-first check that the fixed preset holds every property the bug violates:
    over every reachable state when there is one, else within the model's own bounds."""
    found = None
    for entry in checks:
        if entry.get("expect") not in ("holds", "holds-complete") or not _exhaustive(entry):
            continue
        if not _same_run(entry, model, bug.fixed_preset, bug.fixed_settings):
            continue
        checked = entry.get("properties")
        if checked is None or set(bug.violates) <= set(checked):
            if entry.get("expect") == "holds-complete":
                return entry
            found = found or entry
    return found


def _exhaustive(entry: dict[str, Any]) -> bool:
    """Whether the entry's engine explores every reachable state (a holds from it is a claim)."""
    engine = ENGINES.get(entry.get("engine") or "bfs")  # a suite entry without one runs bfs
    return engine is not None and engine.exhaustive


def _drives_of(base: Path, trace: str) -> list[Drive]:
    """The `kmc drive` results stored next to a trace (``NAME.drive-VERSION.json``)."""
    drives = []
    for result in drive_result_paths(base / trace):
        try:
            loaded = json.loads(result.read_text())
        except (OSError, ValueError):
            continue
        version = loaded.get("kafka_version") if isinstance(loaded, dict) else None
        if not isinstance(version, str):
            continue
        if loaded.get("agreed") and loaded.get("violated_on_broker"):
            outcome = "reproduces"
        elif loaded.get("agreed") and loaded.get("not_confirmed"):
            outcome = "not confirmed"
        else:
            outcome = "does not reproduce"
        drives.append(Drive(trace=trace, kafka_version=version, outcome=outcome))
    return drives


def _release_key(release: str) -> tuple[int, ...]:
    try:
        return release_tuple(release)
    except ValueError:
        return ()


def _run(preset: str, settings: Any) -> str:
    extra = "".join(f" --set {k}={setting_text(v)}" for k, v in dict(settings).items())
    return f"--preset {preset}{extra}"


def _drive_text(drives: list[Drive]) -> str:
    """Each release the traces were driven on, with what the broker did (a release listed once)."""
    outcomes: dict[str, list[str]] = {}
    for drive in drives:
        seen = outcomes.setdefault(drive.kafka_version, [])
        if drive.outcome not in seen:
            seen.append(drive.outcome)
    return ", ".join(f"{' and '.join(seen)} on {version}" for version, seen in outcomes.items())


def _fixed_text(row: Row) -> str:
    bug = row.bug
    if bug.fixed_preset is None:
        return "no preset" + (": no release fixes it" if bug.fixed_in is None else "")
    if not row.evidence:
        return f"{_run(bug.fixed_preset, bug.fixed_settings)} (the suite was not read)"
    count = f"{row.fixed_states:,} states" if row.fixed_states is not None else "state count not in the suite"
    checked = "" if row.fixed_checked else ", not checked by the suite"
    return f"{_run(bug.fixed_preset, bug.fixed_settings)} holds{_within(row)} ({count}{checked})"


def _within(row: Row) -> str:
    return "" if row.fixed_complete else " within the model's bounds"


def _missing(what: str, row: Row) -> str:
    return f"({what})" if row.evidence else "(the suite was not read)"


def text_lines(rows: list[Row]) -> list[str]:
    lines: list[str] = []
    for row in rows:
        bug = row.bug
        also = f" ({', '.join(bug.also)})" if bug.also else ""
        lines.append(f"{bug.key}{also}  {row.model} · {bug.component} · {bug.releases()}")
        lines.append(f"    {bug.summary}")
        for r in row.reproductions:
            length = (
                f"(shortest trace: {r.states} states)"
                if r.states is not None
                else _missing("no trace in the suite", row)
            )
            where = f"  {row.base / r.trace}" if r.trace else ""
            lines.append(f"    {_run(bug.preset, bug.settings)} violates {r.property} {length}{where}")
        lines.append(f"    fixed: {_fixed_text(row)}")
        if row.drives:
            lines.append(f"    on a real broker: {_drive_text(row.drives)}")
        lines.append("")
    lines.append(summary_line(rows))
    return lines


def summary_line(rows: list[Row]) -> str:
    kinds = {"KAFKA": 0, "KIP": 0, "finding": 0}
    for row in rows:
        prefix = row.bug.key.split("-")[0]
        kinds[prefix if prefix in kinds else "finding"] += 1
    traces = sum(1 for row in rows for r in row.reproductions if r.trace)
    driven = sum(1 for row in rows if row.drives)
    models = len({row.model for row in rows})
    return (
        f"{_count(len(rows), 'bug')} in {_count(models, 'model')} ({_count(kinds['KAFKA'], 'JIRA')}, "
        f"{_count(kinds['KIP'], 'KIP')}, {_count(kinds['finding'], 'finding')} of the models); "
        f"{_count(traces, 'shortest trace')}; {driven} driven on real brokers"
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def markdown(rows: list[Row]) -> str:
    """docs/bugs.md: the same catalogue as a page, one table per model."""
    out = [
        "# The Kafka bugs kmc reproduces",
        "",
        "Generated by `kmc bugs --markdown > docs/bugs.md`; a test keeps this page equal to the command's",
        "output. Each row is a bug of Kafka that a model's preset reproduces: the property it violates, the",
        "length of the shortest counterexample (checked in under `counterexamples/` and replayed by",
        "`kmc ci counterexamples/suite.toml`), and the preset where it is fixed, with the distinct states",
        "the suite checks it holds in. *On a real broker* lists the releases the trace was driven on",
        "([driving traces](driving-traces.md)) and what the broker did.",
        "",
        summary_line(rows) + ".",
        "",
    ]
    by_model: dict[str, list[Row]] = {}
    for row in rows:
        by_model.setdefault(row.model, []).append(row)
    for model, model_rows in by_model.items():
        out += [f"## {model}", ""]
        out.append("| bug | what goes wrong | releases | reproduced by | fixed | on a real broker |")
        out.append("|---|---|---|---|---|---|")
        for row in model_rows:
            out.append("| " + " | ".join(_markdown_cells(row)) + " |")
        out.append("")
    return "\n".join(out)


def _markdown_cells(row: Row) -> list[str]:
    bug = row.bug
    key = f"[{bug.key}]({bug.url})" if bug.url else bug.key
    if bug.also:
        key += " (" + ", ".join(bug.also) + ")"
    runs = "<br>".join(
        f"{r.property}: {r.states} states, [trace](../counterexamples/{r.trace})"
        if r.trace
        else f"{r.property}: no trace in the suite"
        for r in row.reproductions
    )
    reproduced = f"`{_run(bug.preset, bug.settings)}`<br>{runs}"
    if bug.fixed_preset is None:
        fixed = "—"
    else:
        count = f"{row.fixed_states:,} states" if row.fixed_states is not None else "not in the suite"
        fixed = f"`{_run(bug.fixed_preset, bug.fixed_settings)}` holds{_within(row)} ({count})"
    return [
        key,
        f"{bug.component}: {bug.summary}".replace("|", "\\|"),
        bug.releases(),
        reproduced,
        fixed,
        _drive_text(row.drives) or "—",
    ]


def _select(rows: list[Row], component: str | None, release: str | None) -> list[Row]:
    if component is not None:
        known = sorted({row.bug.component for row in rows})
        if component not in known:
            raise UserError(f"unknown component {component!r}; components: {', '.join(known)}")
        rows = [row for row in rows if row.bug.component == component]
    if release is not None:
        try:
            wanted = release_tuple(release)
        except ValueError as exc:
            raise UserError(f"--release: {exc}") from None
        rows = [row for row in rows if row.bug.affects(wanted)]
    return rows


def bugs(
    key: Annotated[
        str | None, typer.Argument(help="Only this bug: a JIRA (KAFKA-1211) or KIP (KIP-101), as key or alias.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Only this model's bugs.")] = None,
    component: Annotated[str | None, typer.Option("--component", help="Only bugs in this component.")] = None,
    release: Annotated[
        str | None, typer.Option("--release", help="Only bugs this release carries (e.g. 3.5.2).")
    ] = None,
    suite: Annotated[
        Path | None,
        typer.Option(
            "--suite", help=f"The suite whose traces and state counts back each row (default: {DEFAULT_SUITE})."
        ),
    ] = None,
    no_suite: Annotated[bool, typer.Option("--no-suite", help="List the claims without the suite's evidence.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    as_markdown: Annotated[bool, typer.Option("--markdown", help="Print docs/bugs.md.")] = False,
) -> None:
    """The Kafka bugs the models reproduce: each with its releases, the property it violates, the
    shortest trace, the preset where it is fixed and the drives of the trace on real brokers."""
    if as_json and as_markdown:
        raise UserError("--json and --markdown: choose one")
    models = {model: load_model_class(model)} if model is not None else registered_models()
    if model is not None and not models[model].bugs:
        print(f"kmc: note: model {model} declares no bugs", file=sys.stderr)
    if suite is None and not no_suite:
        if DEFAULT_SUITE.is_file():
            suite = DEFAULT_SUITE
        else:
            print(
                f"kmc: note: no {DEFAULT_SUITE} here: the rows are claims without their evidence (--suite PATH)",
                file=sys.stderr,
            )
    rows = catalogue(models, None if no_suite else suite)
    rows = _select(rows, component, release)
    if key is not None:
        wanted = key.upper()
        rows = [row for row in rows if wanted in (row.bug.key.upper(), *(k.upper() for k in row.bug.also))]
        if not rows:
            raise UserError(f"no bug {key} in the catalogue (kmc bugs lists them; a finding of the models has no key)")
    if as_json:
        print(json.dumps([row.as_json() for row in rows], indent=2))
    elif as_markdown:
        print(markdown(rows), end="")
    else:
        print("\n".join(text_lines(rows)))
