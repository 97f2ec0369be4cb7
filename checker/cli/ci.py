"""`kmc ci`: every entry of a suite, its verdict held to the expected one (see suite.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from kmc.checker.cli.exit_codes import EXIT_VIOLATED
from kmc.checker.cli.junit import write_junit
from kmc.checker.cli.suite import load_suite, run_suite
from kmc.checker.errors import UserError


def ci(
    suite: Annotated[Path, typer.Argument(help=r"A TOML suite of \[\[check]] entries.")],
    junit: Annotated[Path | None, typer.Option(help="Write a JUnit XML report.")] = None,
    out: Annotated[Path | None, typer.Option(help="Write traces of violations found under DIR/<model>/.")] = None,
    jobs: Annotated[int, typer.Option(help="Run this many entries at a time, each in its own process.")] = 1,
    model: Annotated[
        list[str] | None,
        typer.Option(help="Only the entries of this model (repeatable): its name, or the class of a module:Class."),
    ] = None,
) -> None:
    """Run every check in the suite; exit 1 if any verdict differs from the expected one."""
    if jobs < 1:
        raise UserError(f"--jobs must be at least 1, not {jobs}")
    entries = load_suite(suite)
    if model:

        def named(entry: Any) -> set[str]:
            ref = entry.label
            return {ref, ref.rpartition(":")[2]}

        known = sorted({name for entry in entries for name in named(entry)})
        missing = [m for m in model if m not in known]
        if missing:
            raise UserError(f"{suite} has no entry of model {missing[0]!r}: it has {', '.join(known)}")
        entries = [entry for entry in entries if named(entry) & set(model)]

    def report(outcome: Any) -> None:
        mark = "PASS" if outcome.ok else "FAIL"
        print(f"{mark}  {outcome.entry.name}  [{outcome.seconds:.1f} s]  {outcome.message}", flush=True)

    outcomes = run_suite(entries, out, report, jobs=jobs)
    if junit is not None:
        write_junit(junit, f"kmc ci {suite.name}", [o.as_case() for o in outcomes])
    failed = sum(1 for o in outcomes if not o.ok)
    print(f"{len(outcomes) - failed} passed, {failed} failed")
    if failed:
        raise typer.Exit(EXIT_VIOLATED)
