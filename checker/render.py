"""Counterexamples as pictures: a message-sequence chart drawn with graphviz.

One lane per broker, controller, consumer or coordinator (as the model's Drawing says), one row
per step labelled with its number, action and arguments, and beside each row the model's tables
for the state after the step, with the cells that changed highlighted. A lasso's loop is drawn
as an arrow from the last row back to the row it returns to.
"""

from __future__ import annotations

import html
import subprocess
from pathlib import Path
from typing import Any

from .drawing import Arrow, Drawing, Table, mark_changes
from .errors import UserError
from .itf import format_action, format_value, state_vars
from .model import Model
from .outputs import write_atomically
from .replay import Replayed
from .result import Trace
from .show import changes

FORMATS = ("svg", "png", "pdf", "dot", "html")
HIGHLIGHT = "#ffe08a"
LANE_FILL = "#e8eef7"


def drawing_of(model: Model) -> Drawing:
    hook = getattr(model, "drawing", None)
    drawing = hook() if callable(hook) else None
    return drawing if isinstance(drawing, Drawing) else Drawing()


def _esc(text: str) -> str:
    return html.escape(str(text), quote=True)


def table_label(tables: list[Table]) -> str:
    """Graphviz HTML-like label for a step's tables."""
    if not tables:
        return '""'
    parts = ['<<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2">']
    for table in tables:
        parts.append('<TR><TD><TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">')
        parts.append(
            f'<TR><TD COLSPAN="{len(table.columns)}" BGCOLOR="{LANE_FILL}"><B>{_esc(table.title)}</B></TD></TR>'
        )
        parts.append(
            "<TR>" + "".join(f"<TD><I>{_esc(c)}</I></TD>" if c else "<TD> </TD>" for c in table.columns) + "</TR>"
        )
        for r, row in enumerate(table.rows):
            cells = []
            for c, cell in enumerate(row):
                color = f' BGCOLOR="{HIGHLIGHT}"' if (r, c) in table.highlight else ""
                cells.append(f'<TD ALIGN="LEFT"{color}>{_esc(cell) or " "}</TD>')
            parts.append("<TR>" + "".join(cells) + "</TR>")
        parts.append("</TABLE></TD></TR>")
    parts.append("</TABLE>>")
    return "".join(parts)


def _generic_tables(before: dict[str, Any] | None, after: dict[str, Any]) -> list[Table]:
    """Without a model drawing: the fields that changed (all fields for the initial state)."""
    if before is None:
        rows = [[k, format_value(v)] for k, v in after.items() if k != "#meta"]
    else:
        rows = [[path, format_value(new)] for path, _old, new in changes(before, after)]
    table = Table("state" if before is None else "changed", ["field", "value"], rows)
    if before is not None:
        table.highlight = {(r, 1) for r in range(len(rows))}
    return [table]


def msc_dot(model: Model, trace: Trace, title: str = "") -> str:
    """The DOT source of the message-sequence chart of a trace."""
    drawing = drawing_of(model)
    lanes = drawing.lanes()
    lane_index = {name: i for i, name in enumerate(lanes)}
    uses_tables = type(drawing).tables is not Drawing.tables
    lines = [
        "digraph msc {",
        '  graph [newrank=true, nodesep=0.35, ranksep=0.22, fontname="Helvetica", fontsize=12, '
        f'labelloc=t, label="{_esc(title)}"];',
        '  node [fontname="Helvetica", fontsize=9];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    header = [f'h{i} [shape=box, style="filled,rounded", fillcolor="{LANE_FILL}", label="{_esc(n)}"];'
              for i, n in enumerate(lanes)]  # fmt: skip
    lines.append("  { rank=same; " + " ".join(header) + ' hs [shape=plaintext, label="state after the step"]; }')
    previous_tables: list[Table] | None = None
    previous_vars: dict[str, Any] | None = None
    for k, (action, state) in enumerate(trace.steps()):
        arrow = Arrow(lanes[0]) if action is None else drawing.arrow(action, trace.states[k - 1], state)
        involved = {arrow.source, *arrow.targets}
        unknown = involved - set(lane_index)
        if unknown:
            raise UserError(f"model {model.name}: its drawing names lanes {sorted(unknown)} not in lanes()")
        label = "Init" if action is None else format_action({"name": action.name, "args": dict(action[1])})
        if arrow.note:
            label += f"\\n{arrow.note}"
        loop_mark = " (loop starts here)" if trace.loop == k else ""
        nodes = []
        local = action is None or not arrow.targets or set(arrow.targets) == {arrow.source}
        for i, _lane in enumerate(lanes):
            name = f"r{k}_{i}"
            if local and i == lane_index[arrow.source]:
                fill = "#f6f6f6" if action is None else "#fff7d6"
                nodes.append(f'{name} [shape=box, style="filled,rounded", fillcolor="{fill}", '
                             f'label="{k}. {_esc(label)}{loop_mark}"];')  # fmt: skip
            else:
                nodes.append(f'{name} [shape=point, width=0.06, label=""];')
        if uses_tables:
            tables = drawing.tables(state)
            if previous_tables is not None:
                tables = mark_changes(previous_tables, tables)
            previous_tables = drawing.tables(state)
        else:
            vars_now = state_vars(state)
            tables = _generic_tables(previous_vars, vars_now)
            previous_vars = vars_now
        nodes.append(f"t{k} [shape=plaintext, label={table_label(tables)}];")
        lines.append("  { rank=same; " + " ".join(nodes) + " }")
        order = [f"r{k}_{i}" for i in range(len(lanes))] + [f"t{k}"]
        lines.append("  " + " -> ".join(order) + " [style=invis];")
        if not local:
            src = lane_index[arrow.source]
            for target in arrow.targets:
                dst = lane_index[target]
                lines.append(f'  r{k}_{src} -> r{k}_{dst} [label="{k}. {_esc(label)}{loop_mark}", color="#1f5fa8", '
                             f'fontcolor="#1f5fa8", penwidth=1.3];')  # fmt: skip
    for i in range(len(lanes)):
        chain = [f"h{i}"] + [f"r{k}_{i}" for k in range(len(trace))]
        lines.append("  " + " -> ".join(chain) + ' [style=dashed, color="#9aa5b1", arrowhead=none, weight=100];')
    lines.append("  " + " -> ".join(["hs"] + [f"t{k}" for k in range(len(trace))]) + " [style=invis, weight=100];")
    if trace.loop is not None:
        last = len(trace) - 1
        lines.append(f'  t{last} -> t{trace.loop} [constraint=false, color="#b03030", fontcolor="#b03030", '
                     f'label="loop back to step {trace.loop}", style=bold];')  # fmt: skip
    lines.append("}")
    return "\n".join(lines) + "\n"


def run_dot(source: str, fmt: str) -> bytes:
    """Lay out DOT source with graphviz's `dot`."""
    try:
        done = subprocess.run(["dot", f"-T{fmt}"], input=source.encode(), capture_output=True, check=False)
    except FileNotFoundError:
        raise UserError("graphviz's `dot` is not installed: apt-get install graphviz") from None
    if done.returncode != 0:
        raise UserError(f"dot failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def trace_title(meta: dict[str, Any]) -> str:
    title = str(meta.get("model", ""))
    if meta.get("preset"):
        title += f" --preset {meta['preset']}"
    if meta.get("property"):
        title += f": {meta['property']} violated"
    return title


def render_replayed(done: Replayed, out: Path, stats: dict[str, Any] | None = None) -> Path:
    """Write the trace's diagram (or report) to ``out``; the format is the file's extension."""
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise UserError(f"cannot render to {out.name}: use one of .{', .'.join(FORMATS)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "html":
        from .report import html_report

        write_atomically(out, html_report(title=trace_title(done.meta), traces=[done], stats=stats))
        return out
    source = msc_dot(done.model, done.trace, trace_title(done.meta))
    write_atomically(out, source.encode() if fmt == "dot" else run_dot(source, fmt))
    return out
