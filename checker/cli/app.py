"""The `kmc` command.

Exit codes: 0 holds (or every CI entry as expected), 1 violated (or a CI entry differs),
2 bad input or error, 3 holds but the run was bounded and --require-complete was given.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any

import typer
from kmc.checker.cli.explore import explore
from kmc.checker.cli.junit import Case, write_junit
from kmc.checker.cli.suite import load_suite, run_suite
from kmc.checker.engines.api import OPTIONS
from kmc.checker.engines.bfs import BfsOptions
from kmc.checker.errors import UserError
from kmc.checker.model import config_keys, parse_sets
from kmc.checker.outputs import check_output_dir, check_output_file, write_atomically
from kmc.checker.properties import model_properties
from kmc.checker.registry import load_model_class, registered_models
from kmc.checker.result import CheckResult, Status
from kmc.checker.runner import ENGINES, Check, trace_stem, vacuity_failures, write_traces
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import recheck, replay
from kmc.checker.traces.text import render_text
from typer.exceptions import Abort, TyperException

EXIT_HOLDS, EXIT_VIOLATED, EXIT_BAD_INPUT, EXIT_INCOMPLETE = 0, 1, 2, 3

app = typer.Typer(
    name="kmc",
    help="Kafka model checker: check Kafka's replication and rebalance protocols.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:,.0f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"


def summary_text(result: CheckResult, command: str, vacuous: list[str] | None = None) -> str:
    """The human summary; with ``vacuous`` (--fail-on-vacuity failed) the verdict says so instead of holding."""
    s = result.stats
    lines = [command]
    config = " ".join(f"{k}={v}" for k, v in result.config.items())
    lines.append(f"  config: {config}")
    lines.append(f"  properties: {', '.join(result.properties) or '(none)'}")
    for v in result.violations:
        where = f" -> {v.trace_file}" if v.trace_file else ""
        if v.trace.loop is not None:
            shape = f"lasso of {v.trace_length} states, looping back to state {v.trace.loop}"
        else:
            shape = f"{'shortest trace' if result.engine in ('bfs', 'spark') else 'trace'} of {v.trace_length} states"
        lines.append(f"  VIOLATED {v.property} ({v.kind}): {shape}{where}")
    if result.engine == "bmc":
        return _bmc_summary(result, lines)
    lines.append(
        f"  {s.distinct_states:,} distinct states, {s.generated_states:,} generated, depth {s.depth}, "
        f"{s.elapsed_s:.2f} s, {s.states_per_second:,.0f} states/s"
    )
    memory = f"  peak memory {_fmt_bytes(s.peak_memory_bytes)}"
    if s.bytes_per_state is not None:
        memory += f", ~{s.bytes_per_state:,.0f} B/state"
    if s.collision_probability is not None:
        memory += f", fingerprint collision probability (optimistic) {s.collision_probability:.1e}"
    elif result.engine == "bfs":
        memory += ", states stored exactly (no fingerprint collisions)"
    lines.append(memory)
    spill = s.extra.get("spill")
    if spill is not None:
        lines.append(_spill_line(spill))
    if result.seed is not None:
        lines.append(f"  seed {result.seed} (rerun with --seed {result.seed})")
    for warning in result.warnings:
        lines.append(f"  warning: {warning}")
    if result.interrupted:
        verdict = "interrupted (Ctrl-C): the statistics above are of the part explored; not a proof"
    elif vacuous:
        verdict = (
            f"vacuous (--fail-on-vacuity): {'; '.join(vacuous)}; no violation was found, which says nothing of those"
        )
    elif result.status is Status.VIOLATED:
        if result.complete:
            tail = ""
        elif result.bound_reason:
            tail = f" (searched within {result.bound_reason})"
        else:
            tail = " (stopped at the first violation; --continue explores the rest)"
        verdict = f"violated{tail}"
    elif result.complete:
        verdict = "holds (complete: every reachable state was explored)"
    else:
        verdict = f"holds within bounds only ({result.bound_reason}): not a proof"
    lines.append(f"  verdict: {verdict}")
    return "\n".join(lines)


def _spill_line(spill: dict[str, Any]) -> str:
    """How much a run larger than memory (bfs --memory) put on disk."""
    budget = spill["memory_budget_bytes"]
    head = f"  disk (--memory {_fmt_bytes(budget)})" if budget is not None else "  disk"
    return (
        f"{head}: {spill['visited_on_disk']:,} fingerprints on disk, at most {_fmt_bytes(spill['peak_bytes_on_disk'])}"
        f" there, {_fmt_bytes(spill['bytes_written'])} written; {spill['flushes']} flushes, {spill['merges']} merges,"
        f" {spill['level_spills']} level spills"
    )


def _bmc_summary(result: CheckResult, lines: list[str]) -> str:
    steps = result.stats.extra.get("bmc_depth", 0)
    lines.append(f"  z3: every behaviour of up to {steps} steps checked symbolically, {result.stats.elapsed_s:.2f} s")
    for warning in result.warnings:
        lines.append(f"  warning: {warning}")
    if result.status is Status.VIOLATED:
        verdict = "violated (no behaviour of fewer steps violates any property checked)"
    elif result.complete:
        verdict = f"holds (complete: no behaviour has more than {steps} steps)"
    else:
        verdict = f"holds within bounds only ({result.bound_reason}): not a proof"
    lines.append(f"  verdict: {verdict}")
    return "\n".join(lines)


@app.command("list")
def list_models(
    model: Annotated[str | None, typer.Argument(help="Show one model only.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List models, their presets, properties and config keys with defaults."""
    models = registered_models()
    if model is not None:
        models = {model: load_model_class(model)}
    out: list[dict[str, Any]] = []
    for name, cls in models.items():
        out.append(
            {
                "model": name,
                "description": cls.description,
                "default_preset": cls.default_preset,
                "presets": {
                    p: {
                        "description": preset.description,
                        "settings": dict(preset.settings),
                        "expected": dict(preset.expected),
                    }
                    for p, preset in cls.presets.items()
                },
                "properties": [
                    {"name": p.name, "kind": p.kind, "doc": p.doc.splitlines()[0] if p.doc else ""}
                    for p in model_properties(cls)
                ],
                "config": [
                    {"key": k.name, "type": k.type_name, "default": k.default, "help": k.help}
                    for k in config_keys(cls.Config)
                ],
                "symmetry": cls.symmetry is not None,
            }
        )
    if as_json:
        print(json.dumps(out, indent=2))
        return
    for entry in out:
        print(f"{entry['model']}: {entry['description']}")
        if entry["presets"]:
            print("  presets:" + (f" (default {entry['default_preset']})" if entry["default_preset"] else ""))
            for p, info in entry["presets"].items():
                print(f"    {p:<20} {info['description']}")
        print("  properties:")
        for prop in entry["properties"]:
            print(f"    {prop['name']:<28} {prop['kind']:<9} {prop['doc']}")
        print("  config:")
        for key in entry["config"]:
            print(f"    {key['key']:<20} {key['type']:<10} default {key['default']!s:<8} {key['help']}")
        if entry["symmetry"]:
            print("  symmetry: yes (--symmetry)")
        print()


@app.command()
def check(
    model: Annotated[str, typer.Argument(help="Model name (see `kmc list`), module:Class or file.py:Class.")],
    preset: Annotated[str | None, typer.Option("--preset", "-p", help="A named variant.")] = None,
    sets: Annotated[list[str], typer.Option("--set", "-s", help="Config key=value (repeatable).")] = [],  # noqa: B006
    properties: Annotated[list[str], typer.Option("--property", "-P", help="Check only these.")] = [],  # noqa: B006
    specs: Annotated[list[Path], typer.Option("--spec", help="A Python file of your own properties.")] = [],  # noqa: B006
    engine: Annotated[str, typer.Option(help=f"One of: {', '.join(ENGINES)}.")] = "bfs",
    max_depth: Annotated[int | None, typer.Option(help=OPTIONS["max_depth"].help, min=1)] = None,
    max_states: Annotated[int | None, typer.Option(help=OPTIONS["max_states"].help, min=1)] = None,
    symmetry: Annotated[bool, typer.Option("--symmetry", help=OPTIONS["symmetry"].help)] = False,
    deadlock: Annotated[bool, typer.Option("--deadlock", help=OPTIONS["deadlock"].help)] = False,
    keep_going: Annotated[bool, typer.Option("--continue", help=OPTIONS["keep_going"].help)] = False,
    store: Annotated[str | None, typer.Option(help="bfs: " + OPTIONS["store"].help)] = None,
    seed: Annotated[int | None, typer.Option(help="simulate, hypothesis: random seed.")] = None,
    depth: Annotated[int | None, typer.Option(help=OPTIONS["depth"].help, min=1)] = None,
    walks: Annotated[int | None, typer.Option(help="simulate: number of walks (1000).", min=1)] = None,
    examples: Annotated[int | None, typer.Option(help="hypothesis: runs to try (1000).", min=1)] = None,
    steps: Annotated[int | None, typer.Option(help="hypothesis: most steps per run (60).", min=1)] = None,
    database: Annotated[Path | None, typer.Option(help="hypothesis: keep failing examples in DIR.")] = None,
    guide: Annotated[
        bool | None, typer.Option("--guide/--no-guide", help="hypothesis: " + OPTIONS["guide"].help)
    ] = None,
    spark_master: Annotated[str | None, typer.Option(help="spark: local[*] (default) or spark://HOST:7077.")] = None,
    partitions: Annotated[int | None, typer.Option(help="spark: " + OPTIONS["partitions"].help, min=1)] = None,
    memory: Annotated[str | None, typer.Option(help=OPTIONS["memory"].help)] = None,
    checkpoint: Annotated[
        Path | None, typer.Option(help="spark, bfs (--store fingerprints): keep each completed level in DIR.")
    ] = None,
    resume: Annotated[Path | None, typer.Option(help="spark, bfs: continue the run checkpointed in DIR.")] = None,
    driver_memory: Annotated[str | None, typer.Option(help="spark: the driver JVM's memory (2g).")] = None,
    spark_verbose: Annotated[bool, typer.Option("--spark-verbose", help="spark: Spark's logs and UI on.")] = False,
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
    quiet_trace: Annotated[bool, typer.Option("--no-trace", help="Do not print the trace.")] = False,
    render: Annotated[
        Path | None, typer.Option(help="Write each trace's chart (SVG) and an HTML report of the check to DIR.")
    ] = None,
) -> None:
    """Check a model's properties; write each violation's trace as ITF."""
    from kmc.checker.search.progress import make_progress

    given: dict[str, Any] = {
        "max_depth": max_depth, "max_states": max_states, "symmetry": symmetry or None,
        "deadlock": deadlock or None, "keep_going": keep_going or None, "store": store, "seed": seed,
        "depth": depth, "walks": walks, "examples": examples, "steps": steps,
        "database": str(database) if database is not None else None, "guide": guide, "master": spark_master,
        "partitions": partitions, "checkpoint": str(checkpoint) if checkpoint is not None else None,
        "resume": str(resume) if resume is not None else None, "driver_memory": driver_memory,
        "spark_verbose": spark_verbose or None, "memory": memory,
    }  # fmt: skip
    job = Check(
        model_name=model,
        preset=preset,
        overrides=parse_sets(sets),
        property_names=properties,
        spec_files=specs,
        engine_name=engine,
        settings={k: v for k, v in given.items() if v is not None},
    )
    engine_cls, _bounds, _options = job.plan()
    if (coverage or fail_on_vacuity) and not engine_cls.observes:
        flag = "--coverage" if coverage else "--fail-on-vacuity"
        raise UserError(f"the {engine} engine observes no states: it does not take {flag}")
    _model, props = job.build(require_properties=True)  # validate names and values before any work
    check_output_dir(out, "--out")
    if junit is not None:
        check_output_file(junit, "--junit", (".xml",))
    if render is not None:
        check_output_dir(render, "--render")
    for note in props.notes:
        print(f"kmc: warning: {note}", file=sys.stderr)
    bar = make_progress(f"kmc {engine}", enabled=progress and not as_json)
    try:
        result = job.run(bar)
    except KeyboardInterrupt:
        bar.close()
        raise InterruptedCheckError(None) from None
    write_traces(result, out)
    if render is not None:
        _render_check(result, render)
    vacuous = fail_on_vacuity and vacuity_failures(result)
    if junit is not None:
        cases = [
            Case(
                name=prop,
                classname=f"kmc.{result.model}.{result.preset or 'default'}",
                seconds=result.stats.elapsed_s,
                failure=(
                    f"{prop} violated: trace of {v.trace_length} states in {v.trace_file}"
                    if (v := result.violation(prop))
                    else None
                ),
            )
            for prop in result.properties
        ]
        if not result.complete:  # a pass within bounds says so; with --require-complete it is a failure
            bounded = f"bounded ({result.bound_reason or 'not every reachable state was explored'})"
            for case in cases:
                case.output = case.output or f"holds within the bounds: {bounded}"
            if require_complete and not result.violations:
                cases.append(Case(name="complete", classname=f"kmc.{result.model}", seconds=0.0,
                                  failure=f"--require-complete: the run was {bounded}"))  # fmt: skip
        if vacuous:
            cases.append(Case(name="coverage", classname=f"kmc.{result.model}", seconds=0.0,
                              failure="vacuous: " + "; ".join(vacuous)))  # fmt: skip
        write_junit(junit, f"kmc check {model}", cases)
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
            print(render_text(read_trace(result.violations[0].trace_file)))
    if result.status is Status.VIOLATED or vacuous:
        raise typer.Exit(EXIT_VIOLATED)
    if require_complete and not result.complete:
        raise typer.Exit(EXIT_INCOMPLETE)


class InterruptedCheckError(Exception):
    """Ctrl-C during a check: the partial result (if the engine kept one) is printed, exit 130."""

    def __init__(self, result: CheckResult | None) -> None:
        super().__init__("interrupted")
        self.result = result


def coverage_text(coverage: dict[str, Any]) -> str:
    """The coverage table: per action enabled/taken, per property evaluated/exercised."""
    lines = ["  coverage:"]
    actions = coverage.get("actions", {})
    width = max([len(n) for n in [*actions, *coverage.get("properties", {})]] + [10])
    lines.append(f"    {'action':<{width}} {'enabled in':>12} {'taken':>12}")
    for name, (enabled, taken) in actions.items():
        off = name in coverage.get("inactive", ())
        mark = "  (off in this config)" if taken == 0 and off else "  <- never taken" if taken == 0 else ""
        lines.append(f"    {name:<{width}} {enabled:>12,} {taken:>12,}{mark}")
    lines.append(f"    {'property':<{width}} {'evaluated':>12} {'exercised':>12}")
    for name, (evaluated, exercised) in coverage.get("properties", {}).items():
        mark = "  <- never exercised" if exercised == 0 else ""
        lines.append(f"    {name:<{width}} {evaluated:>12,} {exercised:>12,}{mark}")
    return "\n".join(lines)


def _render_check(result: CheckResult, directory: Path) -> None:
    from kmc.checker.traces.chart import render_replayed
    from kmc.checker.traces.report import html_report

    replayed = []
    for violation in result.violations:
        done = replay(read_trace(violation.trace_file))
        render_replayed(done, directory / Path(violation.trace_file).name.replace(".itf.json", ".svg"))
        replayed.append(done)
    title = f"kmc check {result.model}" + (f" --preset {result.preset}" if result.preset else "")
    report = html_report(title, replayed, stats=result.to_json(), config=result.config)
    write_atomically(directory / f"{trace_stem(result)}-report.html", report)


@app.command()
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
    limit: Annotated[int | None, typer.Option(help="Input oracles: compare at most N cases.", min=1)] = None,
    out: Annotated[Path, typer.Option(help="Directory for mismatch traces.")] = Path("kmc-out"),
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    junit: Annotated[Path | None, typer.Option(help="Write a JUnit XML report (one case per oracle).")] = None,
    progress: Annotated[bool, typer.Option(help="Show progress on stderr.")] = True,
    quiet_trace: Annotated[bool, typer.Option("--no-trace", help="Do not print the mismatch trace.")] = False,
    list_oracles: Annotated[bool, typer.Option("--list", help="List the oracles and what they call.")] = False,
) -> None:
    """Compare a model, at every reachable step, with Kafka's own classes: exit 0 when they agree
    on every step compared, 1 on a mismatch (its shortest trace is written as ITF)."""
    from kmc.checker.cli.conform import print_oracles, run_conform
    from kmc.checker.conformance.run import ConformJob

    if list_oracles:
        print_oracles(as_json)
        return
    if target is None:
        raise UserError("kmc conform needs a model (or an input oracle); `kmc conform --list` shows them")
    job = ConformJob(
        target=target,
        preset=preset,
        overrides=parse_sets(sets),
        oracle_names=tuple(oracles),
        release=kafka_version,
        bfs_options=BfsOptions(max_depth=max_depth, max_states=max_states, store=store),
    )
    mismatched = run_conform(
        job, out=out, junit=junit, as_json=as_json, progress=progress, show_trace=not quiet_trace, limit=limit
    )
    if mismatched:
        raise typer.Exit(EXIT_VIOLATED)


@app.command()
def render(
    trace: Annotated[Path, typer.Argument(help="An ITF trace file.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="FILE.svg, .png, .pdf, .dot or .html.")],
) -> None:
    """Draw a trace as a message-sequence chart (or a self-contained HTML page)."""
    from kmc.checker.traces.chart import FORMATS, render_replayed

    check_output_file(output, "-o", tuple(f".{f}" for f in FORMATS))
    done = recheck(replay(read_trace(trace)))
    render_replayed(done, output)
    print(f"{trace} -> {output}")
    if done.meta.get("not_violated"):
        print(f"warning: {_not_violated(done.meta)}; drawn without marking a violation", file=sys.stderr)


@app.command()
def graph(
    model: Annotated[str, typer.Argument(help="Model name, module:Class or file.py:Class.")],
    field: Annotated[str, typer.Option(help="Project states onto this field, e.g. quorumState.leader.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="FILE.svg, .png, .pdf or .dot.")],
    preset: Annotated[str | None, typer.Option("--preset", "-p")] = None,
    sets: Annotated[list[str], typer.Option("--set", "-s", help="Config key=value.")] = [],  # noqa: B006
    max_states: Annotated[int, typer.Option(help="Explore at most this many states.", min=1)] = 200_000,
    self_loops: Annotated[bool, typer.Option("--self-loops", help="Draw steps that keep the value.")] = False,
) -> None:
    """The abstract state diagram: the values a field takes and the actions between them, counted."""
    from kmc.checker.traces.chart import run_dot
    from kmc.checker.traces.state_diagram import abstract_graph, graph_dot

    check_output_file(output, "-o", (".svg", ".png", ".pdf", ".dot"))
    cls = load_model_class(model)
    instance = cls.build(preset, parse_sets(sets))
    result = abstract_graph(instance, field, max_states)
    complete = "" if result.graph["complete"] else f", first {result.graph['states']:,} states"
    title = f"{instance.name}{' --preset ' + preset if preset else ''}: {field}{complete}"
    source = graph_dot(result, title, self_loops)
    fmt = output.suffix.lstrip(".").lower()
    if fmt not in ("svg", "png", "pdf", "dot"):
        raise UserError(f"cannot write a graph to {output.name}: use .svg, .png, .pdf or .dot")
    write_atomically(output, source.encode() if fmt == "dot" else run_dot(source, fmt))
    edges = sum(d["count"] for _s, _t, d in result.edges(data=True))
    states = result.graph["states"]
    print(f"{result.number_of_nodes()} values of {field}, {edges:,} transitions from {states:,} states -> {output}")


@app.command("replay")
def replay_cmd(
    traces: Annotated[list[Path], typer.Argument(help="ITF trace files.")],
    specs: Annotated[list[Path], typer.Option("--spec", help="A Python file of properties the traces name.")] = [],  # noqa: B006
) -> None:
    """Re-execute each trace's actions on its model (an error at the first state that differs), then
    check that its property still fails where it did; exit 1 if some trace no longer shows its bug."""
    gone = 0
    for path in traces:
        done = recheck(replay(read_trace(path)), tuple(str(s) for s in specs))
        loop = f", loop back to state {done.trace.loop}" if done.trace.loop is not None else ""
        line = f"{path}: replays on {done.model.name} ({len(done.trace)} states{loop})"
        if done.meta.get("property"):
            line += f", {done.meta['property']} violated"
        elif done.meta.get("not_violated"):
            line += f", but {_not_violated(done.meta)}"
            gone += 1
        print(line)
    if gone:
        raise typer.Exit(EXIT_VIOLATED)


def _not_violated(meta: dict[str, Any]) -> str:
    """Why a trace recorded as a violation no longer shows one (see replay.recheck)."""
    return meta["not_violated"]["reason"]


@app.command()
def show(
    trace: Annotated[Path, typer.Argument(help="An ITF trace file.")],
    full: Annotated[bool, typer.Option("--full", help="Print every state in full.")] = False,
) -> None:
    """Print a trace, showing only the fields that changed at each step."""
    doc = read_trace(trace)
    try:
        done = recheck(replay(doc))
    except UserError as exc:  # still worth reading; nothing in it is confirmed
        note = f"not replayed on the model: {exc}"
    else:
        doc = {**doc, "#meta": done.meta}
        note = f"not confirmed: {_not_violated(done.meta)}" if done.meta.get("not_violated") else ""
    print(render_text(doc, full=full, note=note))


@app.command()
def prove(
    model: Annotated[str, typer.Argument(help="Model name (see `kmc list`), module:Class or file.py:Class.")],
    invariant: Annotated[str, typer.Option("--invariant", "-i", help="The invariant (or step property) to prove.")],
    lemmas: Annotated[list[str], typer.Option("--lemma", "-l", help="A strengthening lemma (repeatable).")] = [],  # noqa: B006
    lemma_files: Annotated[
        list[Path], typer.Option("--lemmas", help="A Python file of @lemma functions of your own.")
    ] = [],  # noqa: B006
    all_lemmas: Annotated[bool, typer.Option("--all-lemmas", help="Use every lemma the model's encoding has.")] = False,
    preset: Annotated[str | None, typer.Option("--preset", "-p", help="A named variant.")] = None,
    sets: Annotated[list[str], typer.Option("--set", "-s", help="Config key=value (repeatable).")] = [],  # noqa: B006
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Prove with z3 that an invariant, with the lemmas, is inductive: it then holds in every reachable
    state for these constants. Exit 0 proven, 1 not inductive (the counterexample is printed)."""
    from kmc.checker.engines.symbolic.induction import prove_property
    from kmc.checker.properties import lemmas_in, load_module

    cls = load_model_class(model)
    instance = cls.build(preset, parse_sets(sets))
    extra: dict[str, Any] = {}
    for path in lemma_files:
        found = lemmas_in(load_module(path))
        if not found:
            raise UserError(f"lemma file {path} defines no lemmas: decorate functions with @lemma from kmc.checker")
        extra.update(found)
    if all_lemmas:
        encoding = instance.symbolic()
        own = list(encoding.lemmas) if encoding is not None else []
        lemmas = [*own, *(n for n in lemmas if n not in own)]
    result = prove_property(instance, invariant, lemmas, extra, preset=preset or cls.default_preset)
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(proof_text(instance, result))
    if not result.proven:
        raise typer.Exit(EXIT_VIOLATED)


def proof_text(model: Any, result: Any) -> str:
    from kmc.checker.traces.itf import format_value, state_vars
    from kmc.checker.traces.text import changes

    title = f"kmc prove {result.model}" + (f" --preset {result.preset}" if result.preset else "")
    lines = [title, f"  config: {' '.join(f'{k}={v}' for k, v in result.config.items())}"]
    lines.append(f"  claims: {', '.join(result.claims)}")
    lines.append(f"  {result.queries} z3 queries, {result.elapsed_s:.2f} s")
    failure = result.failure
    if failure is None:
        where = "on every step from" if result.step_property else "in"
        lines.append(
            f"  verdict: proven: {result.invariant} holds {where} every reachable state for these constants "
            f"(each claim holds initially and is preserved by every step)"
        )
        return "\n".join(lines)
    if failure.phase == "base":
        lines.append(f"  verdict: {failure.claim} fails in an initial state")
        for key, value in state_vars(failure.after).items():
            lines.append(f"    {key} = {format_value(value)}")
        return "\n".join(lines)
    lines.append(f"  verdict: not inductive: {failure.claim} is not preserved by {failure.action!r}")
    lines.append("  counterexample to induction (all claims hold before, not after):")
    lines.append("  before:")
    for key, value in state_vars(failure.before).items():
        lines.append(f"    {key} = {format_value(value)}")
    lines.append(f"  after {failure.action!r}:")
    for path, old, new in changes(state_vars(failure.before), state_vars(failure.after)):
        lines.append(f"    {path}: {format_value(old)} -> {format_value(new)}")
    lines.append("  either the claim is false, or it needs a lemma that rules out the state before")
    return "\n".join(lines)


@app.command()
def ci(
    suite: Annotated[Path, typer.Argument(help="A TOML suite of [[check]] entries.")],
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
            ref = entry.check.model_name
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


EXIT_INTERRUPTED = 130


def _traceback(debug: bool) -> None:
    """With --debug, the traceback on stderr before the one error line; the exit code stays 2."""
    if debug:
        traceback.print_exc()


def _error(message: str, as_json: bool, code: int = EXIT_BAD_INPUT) -> int:
    """One line on stderr; with --json also one JSON object on stdout, so a script always gets one."""
    print(f"kmc: error: {message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"verdict": "error", "error": message, "exit_code": code}))
    return code


app.command("explore")(explore)


class _QuietWhenClosed:
    """Standard output that goes quiet when its reader goes away (`kmc check ... | head -1`): the
    rest is written to /dev/null, so the run goes on and its exit code still carries the verdict."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._silence()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._silence()

    def _silence(self) -> None:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    if argv is None and hasattr(sys.stdout, "fileno"):  # the `kmc` command itself, not a test calling main
        sys.stdout = _QuietWhenClosed(sys.stdout)
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    if not args:
        args = ["--help"]
    as_json = "--json" in args
    try:
        result = app(args=args, prog_name="kmc", standalone_mode=False)
        if isinstance(result, int) and result:
            return result
    except typer.Exit as exc:
        return exc.exit_code
    except InterruptedCheckError as exc:
        if exc.result is not None:
            if as_json:
                print(json.dumps({**exc.result.to_json(), "verdict": "interrupted"}, indent=2))
            else:
                print(summary_text(exc.result, f"kmc check {exc.result.model} ({exc.result.engine})"))
        print("kmc: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("kmc: interrupted", file=sys.stderr)
        if as_json:
            print(json.dumps({"verdict": "interrupted"}))
        return EXIT_INTERRUPTED
    except TyperException as exc:  # usage errors: unknown option, bad option value
        _traceback(debug)
        return _error(" ".join(exc.format_message().split()), as_json)
    except Abort:
        return _error("aborted", as_json)
    except UserError as exc:
        _traceback(debug)
        return _error(" ".join(str(exc).split("\n")), as_json)
    except RecursionError as exc:
        _traceback(debug)
        return _error(f"recursion too deep ({exc}); a state or property recurses without end", as_json)
    except Exception as exc:  # a bug: still one line, the traceback with --debug
        _traceback(debug)
        text = " ".join(str(exc).split("\n"))
        hint = "" if debug else " (rerun with --debug for the traceback)"
        return _error(f"internal error: {type(exc).__name__}: {text}{hint}", as_json)
    return EXIT_HOLDS
