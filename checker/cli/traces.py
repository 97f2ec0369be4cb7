"""The commands on stored traces and on a model's explored graph: `kmc replay`, `kmc show`,
`kmc render` and `kmc graph`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from kmc.checker.cli.exit_codes import EXIT_VIOLATED
from kmc.checker.errors import UserError
from kmc.checker.model import parse_sets
from kmc.checker.outputs import check_output_file, write_atomically
from kmc.checker.properties import select_properties
from kmc.checker.registry import load_model_class
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.observed import is_observed, observed_note, render_observed
from kmc.checker.traces.replay import recheck, replay
from kmc.checker.traces.text import trace_text

MODEL_OPTION = typer.Option(
    "--model",
    help="The trace's model, when the trace is away from its model file: a name, module:Class or file.py:Class.",
)


def render(
    trace: Annotated[Path, typer.Argument(help="An ITF trace file.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="FILE.svg, .png, .pdf, .dot or .html.")],
    drive: Annotated[
        list[Path],
        typer.Option(
            "--drive", help="A `kmc drive` result to show beside the steps (HTML; default: those next to the trace)."
        ),
    ] = [],  # noqa: B006
    model: Annotated[str | None, MODEL_OPTION] = None,
) -> None:
    """Draw a trace as a message-sequence chart (or a self-contained HTML page, with the results of
    the drives of the trace on real brokers beside its steps)."""
    from kmc.checker.traces.render import FORMATS, render_replayed

    check_output_file(output, "-o", tuple(f".{f}" for f in FORMATS))
    doc = read_trace(trace)
    if is_observed(doc):
        render_observed(doc, output)
        print(f"{trace} -> {output} (observed, not a model trace)")
        return
    done = recheck(replay(doc, model))
    render_replayed(done, output, beside=_drive_results(trace, drive))
    print(f"{trace} -> {output}")
    if done.meta.get("not_violated"):
        print(f"warning: {_not_violated(done.meta)}; drawn without marking a violation", file=sys.stderr)


def _drive_result_at(path: Path) -> dict[str, Any] | None:
    """The file as a `kmc drive` result, or None when it is something else (a trace, most often)."""
    import json

    if not path.name.endswith(".json") or path.name.endswith(".itf.json"):
        return None
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    is_drive = isinstance(loaded, dict) and isinstance(loaded.get("results"), list) and "kafka_version" in loaded
    return loaded if is_drive else None


def _driven_text(doc: dict[str, Any]) -> str:
    """A drive result in words: which trace, on which release, the verdict, and every step."""
    lines = [f"{doc.get('trace')}: driven on Kafka {doc.get('kafka_version')}: {doc.get('verdict')}"]
    for step in doc["results"]:
        mark = "agreed" if step.get("agreed") else "DIVERGED"
        lines.append(f"Step {step.get('step')}: {step.get('action')}  [{mark}]")
        lines.extend(f"  -> {request}" for request in step.get("requests", []))
        lines.extend(
            f"  {d.get('field')}: model {d.get('model')!r}, broker {d.get('broker')!r}"
            for d in step.get("differences", [])
        )
    if doc.get("not_compared"):
        lines.append("not compared (the broker does not show them): " + "; ".join(doc["not_compared"]))
    return "\n".join(lines)


def _drive_results(trace: Path, given: list[Path]) -> list[dict[str, Any]]:
    """The drive results to show: those given, else the ``<trace>.drive-<release>.json`` beside it."""
    import json

    from kmc.checker.traces.files import drive_result_paths

    paths = given or drive_result_paths(trace)
    results = []
    for path in paths:
        try:
            loaded = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise UserError(f"cannot read the drive result {path}: {exc}") from None
        if not isinstance(loaded, dict) or not isinstance(loaded.get("results"), list):
            raise UserError(f"{path} is not a `kmc drive` result (no 'results' list)")
        results.append(loaded)
    return results


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
    from kmc.checker.traces.chart import render as render_graph
    from kmc.checker.traces.state_diagram import abstract_graph, state_diagram

    check_output_file(output, "-o", (".svg", ".png", ".pdf", ".dot"))
    cls = load_model_class(model)
    instance = cls.build(preset, parse_sets(sets))
    result = abstract_graph(instance, field, max_states)
    complete = "" if result.graph["complete"] else f", first {result.graph['states']:,} states"
    title = f"{instance.name}{' --preset ' + preset if preset else ''}: {field}{complete}"
    diagram = state_diagram(result, title, self_loops)
    fmt = output.suffix.lstrip(".").lower()
    if fmt not in ("svg", "png", "pdf", "dot"):
        raise UserError(f"cannot write a graph to {output.name}: use .svg, .png, .pdf or .dot")
    write_atomically(output, diagram.source.encode() if fmt == "dot" else render_graph(diagram, fmt))
    edges = sum(d["count"] for _s, _t, d in result.edges(data=True))
    states = result.graph["states"]
    print(f"{result.number_of_nodes()} values of {field}, {edges:,} transitions from {states:,} states -> {output}")


def replay_traces(
    traces: Annotated[list[Path], typer.Argument(help="ITF trace files.")],
    specs: Annotated[list[Path], typer.Option("--spec", help="A Python file of properties the traces name.")] = [],  # noqa: B006
    model: Annotated[str | None, MODEL_OPTION] = None,
) -> None:
    """Re-execute each trace's actions on its model (an error at the first state that differs), then
    check that its property still fails where it did; exit 1 if some trace no longer shows its bug."""
    gone = 0
    for path in traces:
        replayed = replay(read_trace(path), model)
        named = replayed.meta.get("property")
        if isinstance(named, str) and named:  # a property the model does not have is bad input, not a lost bug
            select_properties(
                type(replayed.model),
                tuple(str(s) for s in specs) or tuple(replayed.meta.get("spec_files") or ()),
                [named],
            )
        done = recheck(replayed, tuple(str(s) for s in specs))
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


def show(
    trace: Annotated[Path, typer.Argument(help="An ITF trace file.")],
    full: Annotated[bool, typer.Option("--full", help="Print every state in full.")] = False,
    model: Annotated[str | None, MODEL_OPTION] = None,
) -> None:
    """Print a trace, showing only the fields that changed at each step (a `kmc drive` result: each
    step as the real broker took it)."""
    driven = _drive_result_at(trace)
    if driven is not None:
        print(_driven_text(driven))
        return
    doc = read_trace(trace)
    if is_observed(doc):
        print(trace_text(doc, full=full, note=observed_note(doc)))
        return
    try:
        done = recheck(replay(doc, model))
    except UserError as exc:  # still worth reading; nothing in it is confirmed
        note = f"not replayed on the model: {exc}"
    else:
        doc = {**doc, "#meta": done.meta}
        note = f"not confirmed: {_not_violated(done.meta)}" if done.meta.get("not_violated") else ""
    print(trace_text(doc, full=full, note=note))
