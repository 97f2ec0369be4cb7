"""`kmc check`: one check of a model's properties, its traces written as ITF.

The command's own options are written here; the engine settings (bounds such as ``--max-states``,
each engine's options such as ``--walks``) are derived, when the command is built, from what the
registered engines declare (kmc.checker.engines.settings), so a new engine's options appear here
without a change to this file.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from kmc.checker.cli.exit_codes import EXIT_INCOMPLETE, EXIT_VIOLATED, InterruptedCheckError
from kmc.checker.cli.junit import Case, write_junit
from kmc.checker.cli.summary import coverage_text, summary_text
from kmc.checker.engines import ENGINES
from kmc.checker.engines.api import OptionSpec
from kmc.checker.engines.settings import all_options
from kmc.checker.errors import UserError
from kmc.checker.model import parse_int, parse_sets
from kmc.checker.outputs import check_output_dir, check_output_file, write_atomically
from kmc.checker.result import CheckResult, Status
from kmc.checker.runner import Check
from kmc.checker.search.observers import vacuity_failures
from kmc.checker.search.progress import PROGRESS_EVERY_S, make_progress
from kmc.checker.traces.files import trace_stem, write_traces
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.checker.traces.text import trace_text


def check(
    model: Annotated[str, typer.Argument(help="Model name (see `kmc list`), module:Class or file.py:Class.")],
    preset: Annotated[str | None, typer.Option("--preset", "-p", help="A named variant.")] = None,
    sets: Annotated[list[str], typer.Option("--set", "-s", help="Config key=value (repeatable).")] = [],  # noqa: B006
    properties: Annotated[list[str], typer.Option("--property", "-P", help="Check only these.")] = [],  # noqa: B006
    specs: Annotated[list[Path], typer.Option("--spec", help="A Python file of your own properties.")] = [],  # noqa: B006
    engine: Annotated[str, typer.Option(help="The engine (see the options below for each one's).")] = "bfs",
    out: Annotated[Path, typer.Option(help="Directory for counterexample traces.")] = Path("kmc-out"),
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    junit: Annotated[Path | None, typer.Option(help="Write a JUnit XML report.")] = None,
    require_complete: Annotated[
        bool, typer.Option("--require-complete", help=f"Exit {EXIT_INCOMPLETE} if the run was bounded.")
    ] = False,
    coverage: Annotated[
        bool, typer.Option("--coverage", help="Print every action's and property's coverage table.")
    ] = False,
    fail_on_vacuity: Annotated[
        bool,
        typer.Option("--fail-on-vacuity", help="Exit 1 if an action was never taken or a property never exercised."),
    ] = False,
    progress: Annotated[bool, typer.Option(help="Show progress on stderr.")] = True,
    progress_every: Annotated[
        float, typer.Option(help="Seconds between progress lines when stderr is not a terminal.")
    ] = PROGRESS_EVERY_S,
    quiet_trace: Annotated[bool, typer.Option("--no-trace", help="Do not print the trace.")] = False,
    render: Annotated[
        Path | None, typer.Option(help="Write each trace's chart (SVG) and an HTML report of the check to DIR.")
    ] = None,
    **settings: Any,
) -> None:
    """Check a model's properties; write each violation's trace as ITF."""
    given = {name: str(value) if isinstance(value, Path) else value for name, value in settings.items()}
    job = Check(
        model_name=model,
        preset=preset,
        overrides=parse_sets(sets),
        property_names=properties,
        spec_files=specs,
        engine_name=engine,
        settings={k: v for k, v in given.items() if v is not None},
    )
    engine_cls, bounds, _options = job.plan()
    if (coverage or fail_on_vacuity) and not engine_cls.observes:
        flag = "--coverage" if coverage else "--fail-on-vacuity"
        raise UserError(f"the {engine} engine observes no states: it does not take {flag}")
    job.build(require_properties=True)  # validate names and values before any work
    check_output_dir(out, "--out")
    if junit is not None:
        check_output_file(junit, "--junit", (".xml",))
    if render is not None:
        check_output_dir(render, "--render")
    bar = make_progress(
        f"kmc {engine}", enabled=progress and not as_json, every=progress_every, total=bounds.max_states
    )
    try:
        result = job.run(bar)
    except KeyboardInterrupt:
        bar.close()
        raise InterruptedCheckError(None) from None
    write_traces(result, out)
    if render is not None:
        render_check(result, render)
    vacuous = vacuity_failures(result) if fail_on_vacuity else []
    if junit is not None:
        write_junit(junit, f"kmc check {model}", junit_cases(result, require_complete, vacuous))
    if result.interrupted:
        raise InterruptedCheckError(result)
    if as_json:
        doc = result.to_json()
        if fail_on_vacuity:
            doc["fail_on_vacuity"] = bool(vacuous)
            if vacuous:
                doc["verdict"] = "vacuous"
        print(json.dumps(doc, indent=2))
    else:
        command = f"kmc check {model}" + (f" --preset {result.preset}" if result.preset else "") + f" ({engine})"
        print(summary_text(result, command, vacuous))
        if coverage and result.coverage is not None:
            print(coverage_text(result.coverage))
        if result.violations and not quiet_trace:
            print()
            print(trace_text(read_trace(result.violations[0].trace_file)))
    if result.status is Status.VIOLATED or vacuous:
        raise typer.Exit(EXIT_VIOLATED)
    if require_complete and not result.complete:
        raise typer.Exit(EXIT_INCOMPLETE)


def junit_cases(result: CheckResult, require_complete: bool, vacuous: list[str]) -> list[Case]:
    """A case per property (failed where violated); a bounded pass says so, and is a failure with
    --require-complete; a vacuous run is a failed coverage case."""
    cases = []
    for prop in result.properties:
        v = result.violation(prop)
        failure = f"{prop} violated: trace of {v.trace_length} states in {v.trace_file}" if v else None
        classname = f"kmc.{result.model}.{result.preset or 'default'}"
        cases.append(Case(name=prop, classname=classname, seconds=result.stats.elapsed_s, failure=failure))
    if not result.complete:
        bounded = f"bounded ({result.bound_reason or 'not every reachable state was explored'})"
        for case in cases:
            case.output = case.output or f"holds within the bounds: {bounded}"
        if require_complete and not result.violations:
            failure = f"--require-complete: the run was {bounded}"
            cases.append(Case(name="complete", classname=f"kmc.{result.model}", seconds=0.0, failure=failure))
    if vacuous:
        failure = "vacuous: " + "; ".join(vacuous)
        cases.append(Case(name="coverage", classname=f"kmc.{result.model}", seconds=0.0, failure=failure))
    return cases


def render_check(result: CheckResult, directory: Path) -> None:
    """Each violation's chart (SVG) and one HTML report of the check, in ``directory``."""
    from kmc.checker.traces.render import render_replayed
    from kmc.checker.traces.report import html_report

    replayed = []
    for violation in result.violations:
        done = replay(read_trace(violation.trace_file))
        render_replayed(done, directory / Path(violation.trace_file).name.replace(".itf.json", ".svg"))
        replayed.append(done)
    title = f"kmc check {result.model}" + (f" --preset {result.preset}" if result.preset else "")
    report = html_report(title, replayed, stats=result.to_json(), config=result.config)
    write_atomically(directory / f"{trace_stem(result)}-report.html", report)


def _setting_parameter(spec: OptionSpec) -> inspect.Parameter:
    """The command-line form of one setting: a flag for a switch no engine turns on by default, an
    on/off pair for one that some engine does, a value otherwise (a path where it names a file)."""
    if spec.kind is bool:
        flags = spec.cli_flag if spec.default is not True else f"{spec.cli_flag}/--no-{spec.cli_flag[2:]}"
        option = typer.Option(flags, help=spec.help)
        kind: Any = bool | None
    elif spec.kind is int:  # read as text and parsed strictly: Python's int() also takes 1_0 and other digits
        option = typer.Option(spec.cli_flag, help=spec.help)
        kind = str | None
    else:
        option = typer.Option(spec.cli_flag, help=spec.help)
        kind = (Path if spec.path else spec.kind) | None
    annotation = Annotated[kind, option]
    return inspect.Parameter(spec.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


def with_engine_settings(command: Any) -> Any:
    """``command`` with a parameter for every setting of the registered engines in place of its
    ``**settings``; an engine option that shadows one of the command's own is an error."""
    signature = inspect.signature(command, eval_str=True)
    own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    taken = {p.name for p in own}
    derived = []
    for spec in all_options().values():
        if spec.name in taken:
            raise UserError(f"an engine declares option {spec.name!r}, which `kmc check` already has")
        derived.append(_setting_parameter(spec))
    engine = signature.parameters["engine"]
    names = ", ".join(ENGINES)
    own = [
        p.replace(annotation=Annotated[str, typer.Option(help=f"One of: {names}.")]) if p is engine else p for p in own
    ]

    integers = [spec for spec in all_options().values() if spec.kind is int]

    def with_settings(**kwargs: Any) -> Any:
        for spec in integers:
            if isinstance(kwargs.get(spec.name), str):
                try:
                    kwargs[spec.name] = parse_int(kwargs[spec.name])
                except ValueError:
                    raise UserError(
                        f"{spec.cli_flag} {kwargs[spec.name]!r}: expected an integer in decimal digits"
                    ) from None
        return command(**kwargs)

    parameters = [*own, *derived]
    with_settings.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    with_settings.__annotations__ = {p.name: p.annotation for p in parameters}
    with_settings.__doc__ = command.__doc__
    with_settings.__name__ = command.__name__
    return with_settings
