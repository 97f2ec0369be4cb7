"""A replayed trace written to a file in the format its extension names: the chart as SVG, PNG,
PDF or DOT, or the HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kmc.checker.errors import UserError
from kmc.checker.outputs import write_atomically
from kmc.checker.traces.chart import chart_of, render, trace_title
from kmc.checker.traces.replay import Replayed
from kmc.checker.traces.report import html_report

FORMATS = ("svg", "png", "pdf", "dot", "html")


def render_replayed(
    done: Replayed, out: Path, stats: dict[str, Any] | None = None, beside: list[dict[str, Any]] | None = None
) -> Path:
    """Write the trace's diagram (or report) to ``out``; the format is the file's extension.
    ``beside``: per-step results shown next to the report's steps (``kmc drive`` results)."""
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise UserError(f"cannot render to {out.name}: use one of .{', .'.join(FORMATS)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "html":
        write_atomically(out, html_report(title=trace_title(done.meta), traces=[done], stats=stats, beside=beside))
        return out
    graph = chart_of(done)
    write_atomically(out, graph.source.encode() if fmt == "dot" else render(graph, fmt))
    return out
