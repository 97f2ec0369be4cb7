"""Observed traces: what a real system's logs showed, written in ITF like a model's trace but marked
``"observed": true`` in its ``#meta``. Each step's action is ``Observed`` (its arguments: where in the
log the change was read, and the raw records); nothing in it was produced by a model, so it is
shown and drawn, never replayed."""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import graphviz
from kmc.checker.errors import UserError
from kmc.checker.outputs import write_atomically
from kmc.checker.traces.chart import render
from kmc.checker.traces.itf import format_value, plain

OBSERVED_STEP = "Observed"


def is_observed(doc: Mapping[str, Any]) -> bool:
    return bool(doc.get("#meta", {}).get("observed"))


def observed_note(doc: Mapping[str, Any]) -> str:
    meta = doc["#meta"]
    what = f": {meta['description']}" if meta.get("description") else ""
    return f"observed by {meta.get('source', 'a real system')}, not a model trace{what}"


def observed_graph(doc: Mapping[str, Any]) -> graphviz.Digraph:
    """The observed states top to bottom, each with the fields the step changed in bold; the edge
    between two states names the records that made the change. The last state is the one the
    trace is about (marked red)."""
    meta = doc["#meta"]
    graph = graphviz.Digraph(graph_attr={"rankdir": "TB", "fontname": "Helvetica", "labelloc": "t"})
    graph.attr(
        label=html.escape(f"OBSERVED ({meta.get('model')}, {meta.get('trace', '')}): {meta.get('description', '')}")
    )
    graph.attr("node", shape="plaintext", fontname="Helvetica", fontsize="11")
    states = doc["states"]
    previous: dict[str, Any] = {}
    for index, state in enumerate(states):
        fields = {k: plain(v) for k, v in state.items() if k != "#meta"}
        rows = []
        for key, value in fields.items():
            text = html.escape(f"{key} = {format_value(value)}")
            shown = f"<B>{text}</B>" if index and previous.get(key) != value else text
            rows.append(f"<TR><TD ALIGN='LEFT'>{shown}</TD></TR>")
        colour = "#d62728" if index == len(states) - 1 else "#444444"
        label = (
            f"<<TABLE BORDER='1' CELLBORDER='0' COLOR='{colour}' CELLSPACING='0'>"
            f"<TR><TD><B>state {index}</B></TD></TR>{''.join(rows)}</TABLE>>"
        )
        graph.node(f"s{index}", label)
        if index:
            action = state.get("#meta", {}).get("action", {})
            records = action.get("args", {}).get("records", "")
            graph.edge(
                f"s{index - 1}",
                f"s{index}",
                label=html.escape(f"offset {action.get('args', {}).get('offset', '?')}: {records}"),
                fontsize="9",
            )
        previous = fields
    return graph


def render_observed(doc: Mapping[str, Any], out: Path) -> Path:
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in ("svg", "png", "pdf", "dot"):
        raise UserError(f"an observed trace is drawn as .svg, .png, .pdf or .dot, not {out.name}")
    graph = observed_graph(doc)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(out, graph.source.encode() if fmt == "dot" else render(graph, fmt))
    return out
