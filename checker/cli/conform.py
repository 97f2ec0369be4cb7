"""`kmc conform`: a model held to Kafka's own classes at every reachable step, or an input oracle
to every input of a table; what it prints and writes: per-oracle counts, mismatches with both
answers, JUnit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from kmc.checker.cli.exit_codes import EXIT_VIOLATED
from kmc.checker.cli.junit import Case, write_junit
from kmc.checker.conformance.oracle import InputOracle, Oracle, Tally, jsonable, mismatch_json
from kmc.checker.conformance.run import (
    ConformJob,
    ConformResult,
    conform_table,
    conform_trace,
    tally_for,
    write_mismatch_traces,
    write_table_mismatches,
)
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.errors import UserError
from kmc.checker.model import parse_sets
from kmc.checker.registry import registered_oracles
from kmc.checker.search.progress import PROGRESS_EVERY_S, Progress, make_progress
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.checker.traces.text import trace_text


def print_oracles(as_json: bool) -> None:
    rows = []
    for name, cls in registered_oracles().items():
        kind = "table" if issubclass(cls, InputOracle) else "steps"
        model = getattr(cls, "model_name", "") if issubclass(cls, Oracle) else "(inputs)"
        rows.append(
            {"oracle": name, "kind": kind, "model": model, "reference": list(cls.reference), "doc": cls.description}
        )
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        print(f"{row['oracle']:<20} {row['model']:<18} {', '.join(row['reference'])}")
        if row["doc"]:
            print(f"{'':<20} {row['doc']}")


def _tally_line(t: Tally, table: bool) -> str:
    where = f"{t.states:,} cases" if table else f"{t.steps:,} steps" + (f", {t.states:,} states" if t.states else "")
    return (
        f"  {t.oracle} ({', '.join(c.rsplit('.', 1)[-1] for c in t.reference)}): {where} compared, "
        f"{t.comparisons:,} decisions, {t.agreements:,} agree, {t.mismatches:,} mismatch"
        f"{'' if t.mismatches == 1 else 'es'}, {t.per_second:,.0f} decisions/s"
    )


def _mismatch_lines(t: Tally) -> list[str]:
    m = t.first_mismatch
    if m is None:
        return []
    lines = [f"  MISMATCH {t.oracle}: {m.question}"]
    lines.append(f"    ours:  {json.dumps(jsonable(m.ours))}")
    lines.append(f"    Kafka: {json.dumps(jsonable(m.theirs))}")
    if m.inputs:
        lines.append(f"    asked: {json.dumps(jsonable(m.inputs))}")
    return lines


def _cases(tallies: list[Tally], title: str, seconds: float) -> list[Case]:
    return [
        Case(
            name=t.oracle,
            classname=title,
            seconds=seconds,
            failure=(
                None
                if not t.mismatches
                else f"{t.oracle}: {t.mismatches} mismatch(es); first: {json.dumps(mismatch_json(t.first_mismatch))}"
                if t.first_mismatch
                else f"{t.oracle}: mismatch"
            ),
        )
        for t in tallies
    ]


def run_conform(
    job: ConformJob,
    *,
    out: Path,
    junit: Path | None,
    as_json: bool,
    progress: bool,
    show_trace: bool,
    progress_every: float = PROGRESS_EVERY_S,
    limit: int | None = None,
) -> bool:
    """Run the job, print and write its report; True when any oracle disagreed. A run that compared
    nothing is an error, never a pass."""
    table = job.input_oracle()
    if table is not None:
        bar = make_progress(f"kmc conform {table.name}", enabled=progress and not as_json, every=progress_every)
        return _run_table(table, out=out, junit=junit, as_json=as_json, progress=bar, limit=limit)
    if limit is not None:
        raise UserError("--limit applies to input oracles (tables of inputs) only")
    bar = make_progress(
        f"kmc conform {job.target}",
        enabled=progress and not as_json,
        every=progress_every,
        total=job.bfs_options.max_states,
    )
    result = job.run(bar)
    release, model = result.release, result.check
    preset = model.preset
    write_mismatch_traces(result, out)
    title = f"kmc.conform.{model.model}.{preset or 'default'}"
    if junit is not None:
        write_junit(junit, f"kmc conform {model.model}", _cases(result.tallies, title, result.check.stats.elapsed_s))
    if as_json:
        doc = result.to_json()
        print(json.dumps(doc, indent=2))
    else:
        print(conform_text(result, release, show_trace))
    _require_comparisons(result.tallies, f"model {model.model}")
    return result.mismatched


def _require_comparisons(tallies: list[Tally], what: str) -> None:
    idle = [t.oracle for t in tallies if t.comparisons == 0]
    if idle:
        raise UserError(
            f"oracle {', '.join(idle)} compared nothing on {what}: no step of this run is one it decides "
            "(check the preset and bounds)"
        )


def conform_text(result: ConformResult, release: str | None, show_trace: bool = True) -> str:
    check = result.check
    s = check.stats
    head = f"kmc conform {check.model}" + (f" --preset {check.preset}" if check.preset else "")
    lines = [head + (f" (Kafka {release})" if release else "")]
    lines.append(f"  config: {' '.join(f'{k}={v}' for k, v in check.config.items())}")
    lines.append(
        f"  {s.distinct_states:,} distinct states, {s.generated_states:,} steps, depth {s.depth}, "
        f"{s.elapsed_s:.2f} s ({s.extra.get('oracle_seconds', 0.0):.2f} s in the oracles)"
    )
    for t in result.tallies:
        lines.append(_tally_line(t, table=False))
    for violation in check.violations:
        t = tally_for(result, violation.property)
        if t is None:
            continue
        lines.extend(_mismatch_lines(t))
        lines.append(f"    shortest trace of {violation.trace_length} states -> {violation.trace_file}")
    compared = sum(t.comparisons for t in result.tallies)
    if result.mismatched:
        verdict = "mismatch: the model and Kafka's code disagree (the trace ends at the step)"
    elif compared == 0:
        verdict = "nothing compared: no step of this run is one the oracles decide"
    elif check.complete:
        verdict = "conforms: Kafka's code agrees with every step compared, in every reachable state"
    else:
        verdict = f"conforms within bounds only ({check.bound_reason})"
    lines.append(f"  verdict: {verdict}")
    if show_trace and check.violations and check.violations[0].trace_file:
        lines.append("")
        lines.append(trace_text(read_trace(check.violations[0].trace_file)))
    return "\n".join(lines)


def _run_table(
    oracle: InputOracle, *, out: Path, junit: Path | None, as_json: bool, progress: Progress, limit: int | None
) -> bool:
    tally = conform_table(oracle, progress, limit)
    release = getattr(oracle, "release", None)
    path = out / f"{oracle.name}-mismatch.json"
    if tally.mismatches:
        write_table_mismatches(tally, path, release)
    if junit is not None:
        write_junit(junit, f"kmc conform {oracle.name}", _cases([tally], f"kmc.conform.{oracle.name}", tally.seconds))
    if as_json:
        doc = tally.to_json()
        doc["verdict"] = "mismatch" if tally.mismatches else "conforms"
        doc["release"] = release
        doc["settings"] = oracle.settings
        if tally.mismatches:
            doc["mismatch_file"] = str(path)
        print(json.dumps(doc, indent=2))
        _require_comparisons([tally], "its table")
        return bool(tally.mismatches)
    settings = " ".join(f"{k}={v}" for k, v in oracle.settings.items())
    lines = [f"kmc conform {oracle.name}" + (f" (Kafka {release})" if release else "")]
    if settings:
        lines.append(f"  settings: {settings}")
    lines.append(_tally_line(tally, table=True))
    for label, count in sorted(tally.by_action.items()):
        lines.append(f"    {label}: {count:,} cases")
    lines.extend(_mismatch_lines(tally))
    if tally.mismatches:
        lines.append(f"    first mismatch -> {path}")
        lines.append("  verdict: mismatch: the model and Kafka's code disagree")
    elif tally.comparisons == 0:
        lines.append("  verdict: nothing compared")
    else:
        lines.append("  verdict: conforms: Kafka's code agrees on every case")
    print("\n".join(lines))
    _require_comparisons([tally], "its table")
    return bool(tally.mismatches)


def conform(
    target: Annotated[
        str | None,
        typer.Argument(help="A model with oracles (see --list), or an input oracle such as assignors."),
    ] = None,
    preset: Annotated[str | None, typer.Option("--preset", "-p", help="A named variant.")] = None,
    sets: Annotated[list[str], typer.Option("--set", "-s", help="Config key=value (repeatable).")] = [],  # noqa: B006
    oracles: Annotated[
        list[str], typer.Option("--oracle", "-O", help="Ask only these oracles (name or module:Class; repeatable).")
    ] = [],  # noqa: B006
    kafka_version: Annotated[
        str | None, typer.Option(help="The Kafka release whose classes to call (default: the pinned one).")
    ] = None,
    max_depth: Annotated[int | None, typer.Option(help="Bound: depth in states (init = 1).", min=1)] = None,
    max_states: Annotated[int | None, typer.Option(help="Bound: distinct states.", min=1)] = None,
    store: Annotated[str, typer.Option(help="states (exact) or fingerprints (64-bit, less memory).")] = "states",
    checkpoint: Annotated[
        Path | None, typer.Option(help="Keep each completed level, and the oracles' counts, in this directory.")
    ] = None,
    resume: Annotated[Path | None, typer.Option(help="Continue the run checkpointed in this directory.")] = None,
    limit: Annotated[int | None, typer.Option(help="Input oracles: compare at most N cases.", min=1)] = None,
    out: Annotated[Path, typer.Option(help="Directory for mismatch traces.")] = Path("kmc-out"),
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    junit: Annotated[Path | None, typer.Option(help="Write a JUnit XML report (one case per oracle).")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress on stderr.")] = True,
    progress_every: Annotated[
        float, typer.Option(help="Seconds between progress lines when stderr is not a terminal.")
    ] = PROGRESS_EVERY_S,
    quiet_trace: Annotated[bool, typer.Option("--no-trace", help="Do not print the mismatch trace.")] = False,
    list_oracles: Annotated[bool, typer.Option("--list", help="List the oracles and what they call.")] = False,
    trace: Annotated[
        Path | None,
        typer.Option(help="Compare only this trace's steps (its model and config), not every reachable step."),
    ] = None,
) -> None:
    """Compare a model, at every reachable step, with Kafka's own classes: exit 0 when they agree
    on every step compared, 1 on a mismatch (its shortest trace is written as ITF)."""
    if list_oracles:
        print_oracles(as_json)
        return
    if trace is not None:
        if target is not None or preset is not None or sets:
            raise UserError("--trace takes the model and its config from the trace: give no model, --preset or --set")
        job = ConformJob(target="", oracle_names=tuple(oracles), release=kafka_version)
        if run_trace_conform(job, trace, as_json=as_json):
            raise typer.Exit(EXIT_VIOLATED)
        return
    if target is None:
        raise UserError("kmc conform needs a model (or an input oracle); `kmc conform --list` shows them")
    job = ConformJob(
        target=target,
        preset=preset,
        overrides=parse_sets(sets),
        oracle_names=tuple(oracles),
        release=kafka_version,
        bfs_options=_bfs_options(max_depth, max_states, store, checkpoint, resume),
    )
    mismatched = run_conform(
        job,
        out=out,
        junit=junit,
        as_json=as_json,
        progress=progress,
        show_trace=not quiet_trace,
        limit=limit,
        progress_every=progress_every,
    )
    if mismatched:
        raise typer.Exit(EXIT_VIOLATED)


def run_trace_conform(job: ConformJob, path: Path, *, as_json: bool) -> bool:
    """Hold one trace's steps to the oracles; print where each agreed or first disagreed."""
    if not path.is_file():
        raise UserError(f"no trace at {path}")
    done = replay(read_trace(path))
    result = conform_trace(
        done.model, job.oracles_for(done.model), done.trace.states, done.trace.actions, done.meta.get("preset")
    )
    if as_json:
        doc = {
            "verdict": "mismatch" if result.mismatched else "conforms",
            "trace": str(path),
            "model": result.model.name,
            "preset": result.preset,
            "steps": result.steps,
            "release": result.release,
            "first_mismatch_step": result.first_mismatch_step,
            "oracles": [t.to_json() for t in result.tallies],
        }
        print(json.dumps(doc, indent=2))
    else:
        head = f"kmc conform --trace {path}" + (f" (Kafka {result.release})" if result.release else "")
        lines = [
            head,
            f"  {result.steps} steps of {result.model.name}" + (f" --preset {result.preset}" if result.preset else ""),
        ]
        for t in result.tallies:
            lines.append(_tally_line(t, table=False))
            lines.extend(_mismatch_lines(t))
        if result.mismatched:
            where = ", ".join(f"{name} at step {step}" for name, step in result.first_mismatch_step.items())
            lines.append(f"  verdict: mismatch: Kafka's code takes another step ({where})")
        else:
            lines.append("  verdict: conforms: Kafka's code takes every step of the trace")
        print("\n".join(lines))
    _require_comparisons(result.tallies, f"trace {path}")
    return result.mismatched


def _bfs_options(
    max_depth: int | None, max_states: int | None, store: str, checkpoint: Path | None, resume: Path | None
) -> BfsOptions:
    """The search's options; a checkpoint (or a resume) keeps fingerprints, as `kmc check`'s does."""
    if checkpoint is not None and resume is not None and checkpoint.resolve() != resume.resolve():
        raise UserError("--checkpoint and --resume name different directories: give the one to continue")
    if resume is not None and not resume.is_dir():
        raise UserError(f"--resume {resume}: no such directory")
    if (checkpoint or resume) is not None and store != "fingerprints":
        store = "fingerprints"
    directory = resume or checkpoint
    return BfsOptions(
        max_depth=max_depth,
        max_states=max_states,
        store=store,
        checkpoint=None if directory is None else str(directory),
        resume=resume is not None,
    )
