"""Counterexamples as pictures: a message-sequence chart drawn with graphviz.

One lane per broker, controller, consumer or coordinator (as the model's Drawing says), one row
per step labelled with its number, action and arguments, and beside each row the model's tables
for the state after the step, with the cells that changed highlighted. A lasso's loop is drawn
as an arrow from the last row back to the row it returns to.
"""

from __future__ import annotations

import html
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kmc.checker.drawing import Arrow, Drawing, Table, mark_changes
from kmc.checker.errors import UserError
from kmc.checker.model import Model
from kmc.checker.outputs import write_atomically
from kmc.checker.result import Trace
from kmc.checker.traces.itf import format_action, format_value, state_vars
from kmc.checker.traces.replay import Replayed
from kmc.checker.traces.text import changes

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


@dataclass
class _Row:
    """One step of the chart: its action's label, which lanes it involves, and the state's tables."""

    label: str
    source: int
    targets: list[int]
    tables: list[Table]

    @property
    def local(self) -> bool:
        return not self.targets


def _rows(model: Model, drawing: Drawing, lanes: list[str], trace: Trace) -> list[_Row]:
    lane_index = {name: i for i, name in enumerate(lanes)}
    uses_tables = type(drawing).tables is not Drawing.tables
    rows = []
    previous_tables: list[Table] | None = None
    previous_vars: dict[str, Any] | None = None
    for k, (action, state) in enumerate(trace.steps()):
        arrow = Arrow(lanes[0]) if action is None else drawing.arrow(action, trace.states[k - 1], state)
        unknown = {arrow.source, *arrow.targets} - set(lane_index)
        if unknown:
            raise UserError(f"model {model.name}: its drawing names lanes {sorted(unknown)} not in lanes()")
        label = "Init" if action is None else format_action({"name": action.name, "args": dict(action[1])})
        if trace.loop == k:
            label += " (loop starts here)"
        if arrow.note:
            label += f"\\n{arrow.note}"
        if uses_tables:
            tables = drawing.tables(state)
            if previous_tables is not None:
                tables = mark_changes(previous_tables, tables)
            previous_tables = drawing.tables(state)
        else:
            vars_now = state_vars(state)
            tables = _generic_tables(previous_vars, vars_now)
            previous_vars = vars_now
        src = lane_index[arrow.source]
        targets = [] if action is None else sorted({lane_index[t] for t in arrow.targets} - {src})
        rows.append(_Row(f"{k}. {label}", src, targets, tables))
    return rows


def violation_step(trace: Trace) -> int:
    """The step a counterexample is about: where a lasso's loop starts, else the last step."""
    return trace.loop if trace.loop is not None else len(trace) - 1


def _measure(nodes: dict[str, str]) -> dict[str, tuple[float, float]]:
    """The width and height in points graphviz gives each node (name: DOT attributes)."""
    source = 'digraph m {\n  node [fontname="Helvetica", fontsize=9];\n'
    source += "".join(f"  {name} [{attrs}];\n" for name, attrs in nodes.items()) + "}\n"
    laid_out = json.loads(run_dot(source, "json"))
    return {o["name"]: (float(o["width"]) * 72, float(o["height"]) * 72) for o in laid_out.get("objects", [])}


def _label_lines(text: str, justify: str) -> str:
    """DOT label text whose lines are justified left (l), right (r) or centred (n)."""
    if justify == "n":
        return text
    return text.replace("\\n", f"\\{justify}") + f"\\{justify}"


LABEL_GAP = 7.0
"""Points between a message's label and its arrow (an arrowhead reaches 3.5 points above it)."""
ROW_GAP = 12.0
COLUMN_GAP = 24.0
MESSAGE = "#1f5fa8"
ALERT = "#b03030"
ALERT_FILL = "#fdeaea"


def msc_dot(model: Model, trace: Trace, title: str = "", violated: str | None = None) -> str:
    """The DOT source of the message-sequence chart of a trace, every node placed here (graphviz only
    draws): a message is a straight arrow with its label above its start, so no arrow ever crosses a
    label; ``violated`` names the property whose violating step is marked."""
    drawing = drawing_of(model)
    lanes = drawing.lanes()
    rows = _rows(model, drawing, lanes, trace)
    last = len(rows) - 1
    marked = violation_step(trace) if violated else None
    loop = trace.loop
    band = ALERT_FILL
    nodes: dict[str, str] = {}
    for i, lane in enumerate(lanes):
        nodes[f"h{i}"] = f'shape=box, style="filled,rounded", fillcolor="{LANE_FILL}", label="{_esc(lane)}"'
    nodes["hs"] = 'shape=plaintext, width=0, height=0, margin="0.02,0.02", label="state after the step"'
    justify: dict[int, str] = {}
    for k, row in enumerate(rows):
        fill = band if k == marked else "white"
        if row.local:
            box = "#f6f6f6" if k == 0 else "#fff7d6"
            nodes[f"r{k}_{row.source}"] = (
                f'shape=box, style="filled,rounded", fillcolor="{box}", label="{_esc(row.label)}"'
            )
        else:
            justify[k] = "l" if min(row.targets) > row.source else "r" if max(row.targets) < row.source else "n"
            nodes[f"m{k}"] = (
                f'shape=plaintext, width=0, height=0, margin="0.03,0.01", style=filled, fillcolor="{fill}", '
                f'fontcolor="{MESSAGE}", class="msg-label", label="{_label_lines(_esc(row.label), justify[k])}"'
            )
        nodes[f"t{k}"] = f"shape=plaintext, label={table_label(row.tables)}"
    if marked is not None:
        what = f"{violated} violated" + ("\\nloop starts here" if loop is not None else "")
        nodes[f"v{marked}"] = (
            f'shape=box, style="filled,rounded", fillcolor="{ALERT_FILL}", color="{ALERT}", fontcolor="{ALERT}", '
            f'penwidth=1.5, class="violation", label="{_esc(what)}"'
        )
    if loop is not None:
        repeat = (
            f"after step {loop}, the run stays in its state forever"
            if loop == last
            else f"after step {last}, back to step {loop}:\\nsteps {loop} to {last} repeat forever"
        )
        nodes["ll"] = (
            f'shape=plaintext, width=0, height=0, margin="0.03,0.01", fontcolor="{ALERT}", class="loop-label", '
            f'label="{_label_lines(repeat, "r")}"'
        )
    size = _measure(nodes)
    width = lambda name: size[name][0]  # noqa: E731
    height = lambda name: size[name][1]  # noqa: E731

    # Columns: the lanes, then (for a lasso) the loop's arrow, then the tables; the marker on the left.
    spacing = max([width(f"h{i}") + COLUMN_GAP for i in range(len(lanes))] + [110.0])
    lane_x = [i * spacing for i in range(len(lanes))]
    extents: list[tuple[float, float]] = [
        (x - width(f"h{i}") / 2, x + width(f"h{i}") / 2) for i, x in enumerate(lane_x)
    ]
    label_x: dict[int, float] = {}
    for k, row in enumerate(rows):
        x = lane_x[row.source]
        if row.local:
            w = width(f"r{k}_{row.source}")
            extents.append((x - w / 2, x + w / 2))
            continue
        w = width(f"m{k}")
        label_x[k] = {"l": x + 4 + w / 2, "r": x - 4 - w / 2, "n": x}[justify[k]]
        extents.append((label_x[k] - w / 2, label_x[k] + w / 2))
    left = min(x0 for x0, _ in extents)
    right = max(x1 for _, x1 in extents)
    loop_x = right + COLUMN_GAP
    tables_left = (loop_x if loop is not None else right) + COLUMN_GAP
    marker_x = left - COLUMN_GAP - (width(f"v{marked}") / 2 if marked is not None else 0)

    # Rows, top to bottom (graphviz's y grows upwards, so y is negated when written).
    pos: dict[str, tuple[float, float]] = {}
    header = max(height(f"h{i}") for i in range(len(lanes)))
    for i, x in enumerate(lane_x):
        pos[f"h{i}"] = (x, 0.0)
    pos["hs"] = (tables_left + width("hs") / 2, 0.0)
    top = header / 2 + ROW_GAP
    arrow_y: list[float] = []
    bands: dict[int, tuple[float, float]] = {}
    lanes_bottom = 0.0
    for k, row in enumerate(rows):
        if row.local:
            y = top + height(f"r{k}_{row.source}") / 2
            bottom = top + height(f"r{k}_{row.source}")
        else:
            y = top + height(f"m{k}") + LABEL_GAP
            bottom = y + 4
        if k == marked:
            y = max(y, top + height(f"v{k}") / 2)
            bottom = max(bottom, y + height(f"v{k}") / 2)
            pos[f"v{k}"] = (marker_x, y)
        if row.local:
            pos[f"r{k}_{row.source}"] = (lane_x[row.source], y)
        else:
            pos[f"m{k}"] = (label_x[k], y - LABEL_GAP - height(f"m{k}") / 2)
        pos[f"t{k}"] = (tables_left + width(f"t{k}") / 2, top + height(f"t{k}") / 2)
        arrow_y.append(y)
        lanes_bottom = bottom
        bottom = max(bottom, top + height(f"t{k}"))
        bands[k] = (top - ROW_GAP / 2, bottom + ROW_GAP / 2)
        top = bottom + ROW_GAP
    if loop is not None:
        pos["ll"] = (loop_x - 4 - width("ll") / 2, lanes_bottom + ROW_GAP + height("ll") / 2)

    lines = [
        "digraph msc {",
        f"  graph [layout=neato, inputscale=72, splines=false, outputorder=edgesfirst, pad=0.2, "
        f'fontname="Helvetica", fontsize=12, labelloc=t, label="{_esc(title)}"];',
        '  node [fontname="Helvetica", fontsize=9, fixedsize=true];',
        "  edge [arrowsize=0.8];",
    ]

    def place(name: str, attrs: str) -> None:
        x, y = pos[name]
        w, h = size.get(name, (0.0, 0.0))
        lines.append(f'  {name} [{attrs}, width={w / 72:.4f}, height={h / 72:.4f}, pos="{x:.2f},{-y:.2f}!"];')

    def point(name: str, x: float, y: float, attrs: str = "") -> None:
        lines.append(f'  {name} [shape=point, width=0.06, {attrs}pos="{x:.2f},{-y:.2f}!"];')

    # Behind everything: the marked step's row, as a wide line as high as the row.
    if marked is not None:
        y0, y1 = bands[marked]
        full_left = marker_x - width(f"v{marked}") / 2 - 8
        full_right = tables_left + max(width(f"t{k}") for k in range(len(rows))) + 8
        point("band_a", full_left, (y0 + y1) / 2, "style=invis, ")
        point("band_b", full_right, (y0 + y1) / 2, "style=invis, ")
        lines.append(f'  band_a -> band_b [arrowhead=none, color="{band}", penwidth={y1 - y0:.2f}, class="band"];')
    for i, x in enumerate(lane_x):
        place(f"h{i}", nodes[f"h{i}"])
        point(f"end{i}", x, arrow_y[-1], "style=invis, ")
        lines.append(f'  h{i} -> end{i} [style=dashed, color="#9aa5b1", arrowhead=none];')
    place("hs", nodes["hs"])
    for k, row in enumerate(rows):
        y = arrow_y[k]
        if row.local:
            place(f"r{k}_{row.source}", nodes[f"r{k}_{row.source}"])
        else:
            place(f"m{k}", nodes[f"m{k}"])
            for i in (row.source, *row.targets):
                point(f"r{k}_{i}", lane_x[i], y)
            for i in row.targets:
                lines.append(f'  r{k}_{row.source} -> r{k}_{i} [color="{MESSAGE}", penwidth=1.3, class="msg"];')
        place(f"t{k}", nodes[f"t{k}"])
    if marked is not None:
        place(f"v{marked}", nodes[f"v{marked}"])
    if loop is not None:
        place("ll", nodes["ll"])
        if loop != last:
            point("loop_from", loop_x, arrow_y[last], f'color="{ALERT}", ')
            point("loop_to", loop_x, arrow_y[loop], f'color="{ALERT}", ')
            lines.append(f'  loop_from -> loop_to [color="{ALERT}", penwidth=2, class="loop"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def chart_dot(done: Replayed) -> str:
    """The chart of a replayed counterexample, its violating step marked."""
    return msc_dot(done.model, done.trace, trace_title(done.meta), violated=done.meta.get("property") or None)


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
    elif meta.get("not_violated"):
        title += f": recorded as a violation of {meta['not_violated']['property']}, not confirmed on the model now"
    return title


def render_replayed(done: Replayed, out: Path, stats: dict[str, Any] | None = None) -> Path:
    """Write the trace's diagram (or report) to ``out``; the format is the file's extension."""
    fmt = out.suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise UserError(f"cannot render to {out.name}: use one of .{', .'.join(FORMATS)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "html":
        from kmc.checker.traces.report import html_report

        write_atomically(out, html_report(title=trace_title(done.meta), traces=[done], stats=stats))
        return out
    source = chart_dot(done)
    write_atomically(out, source.encode() if fmt == "dot" else run_dot(source, fmt))
    return out
