"""Counterexamples as pictures: a message-sequence chart drawn with graphviz.

One lane per broker, controller, consumer or coordinator (as the model's Drawing says), one row
per step labelled with its number, action and arguments, and beside each row the model's tables
for the state after the step, with the cells that changed highlighted. A lasso's loop is drawn
as an arrow from the last row back to the row it returns to.

The chart is built with the graphviz package (quoting, escaping and running `dot`); every node is
placed here, so that a message's label never crosses an arrow, and graphviz only draws.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from typing import Any

import graphviz
from kmc.checker.drawing import Arrow, Drawing, Table, mark_changes
from kmc.checker.errors import UserError
from kmc.checker.model import Model
from kmc.checker.result import Trace
from kmc.checker.traces.itf import format_action, format_value, state_vars
from kmc.checker.traces.replay import Replayed
from kmc.checker.traces.text import changes

HIGHLIGHT = "#ffe08a"
LANE_FILL = "#e8eef7"
FONT = "Helvetica"


def drawing_of(model: Model) -> Drawing:
    hook = getattr(model, "drawing", None)
    drawing = hook() if callable(hook) else None
    return drawing if isinstance(drawing, Drawing) else Drawing()


def _esc(text: str) -> str:
    """Text inside an HTML-like label (a table): HTML's escaping, the only kind graphviz leaves to us there."""
    return html.escape(str(text), quote=True)


def table_label(tables: list[Table]) -> str:
    """Graphviz HTML-like label for a step's tables (the graphviz package writes a label in angle
    brackets as HTML); an empty label where there are none."""
    if not tables:
        return ""
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


def render(graph: graphviz.Digraph | graphviz.Source, fmt: str) -> bytes:
    """The graph laid out by graphviz in ``fmt`` (svg, png, pdf, json, ...); a missing `dot` or a
    failed run is one clear error."""
    try:
        return graph.pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise UserError("graphviz's `dot` is not installed: apt-get install graphviz") from None
    except graphviz.CalledProcessError as exc:
        detail = (exc.stderr or b"").decode(errors="replace").strip()
        raise UserError(f"dot failed: {detail or exc}") from None


def svg_of(graph: graphviz.Digraph) -> str:
    """The graph as an SVG element to put inside a page (without the XML prolog)."""
    svg = render(graph, "svg").decode()
    return svg[svg.index("<svg") :] if "<svg" in svg else svg


def _measure(nodes: dict[str, dict[str, str]]) -> dict[str, tuple[float, float]]:
    """The width and height in points graphviz gives each node (name: its attributes)."""
    probe = graphviz.Digraph("m", node_attr={"fontname": FONT, "fontsize": "9"})
    for name, attrs in nodes.items():
        probe.node(name, **attrs)
    laid_out = json.loads(render(probe, "json"))
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


def _nodes(
    lanes: list[str], rows: list[_Row], marked: int | None, violated: str | None, loop: int | None
) -> tuple[dict[str, dict[str, str]], dict[int, str]]:
    """Every node of the chart with its attributes (its place comes later), and how each message's
    label is justified: away from the lane it leaves, so the arrow starts under its first letter."""
    nodes: dict[str, dict[str, str]] = {}
    for i, lane in enumerate(lanes):
        nodes[f"h{i}"] = {
            "shape": "box",
            "style": "filled,rounded",
            "fillcolor": LANE_FILL,
            "label": graphviz.nohtml(lane),
        }
    nodes["hs"] = {
        "shape": "plaintext",
        "width": "0",
        "height": "0",
        "margin": "0.02,0.02",
        "label": "state after the step",
    }
    justify: dict[int, str] = {}
    for k, row in enumerate(rows):
        if row.local:
            box = "#f6f6f6" if k == 0 else "#fff7d6"
            nodes[f"r{k}_{row.source}"] = {
                "shape": "box",
                "style": "filled,rounded",
                "fillcolor": box,
                "label": graphviz.nohtml(row.label),
            }
        else:
            justify[k] = "l" if min(row.targets) > row.source else "r" if max(row.targets) < row.source else "n"
            nodes[f"m{k}"] = {
                "shape": "plaintext",
                "width": "0",
                "height": "0",
                "margin": "0.03,0.01",
                "style": "filled",
                "fillcolor": ALERT_FILL if k == marked else "white",
                "fontcolor": MESSAGE,
                "class": "msg-label",
                "label": graphviz.nohtml(_label_lines(row.label, justify[k])),
            }
        nodes[f"t{k}"] = {"shape": "plaintext", "label": table_label(row.tables)}
    if marked is not None:
        what = f"{violated} violated" + ("\\nloop starts here" if loop is not None else "")
        nodes[f"v{marked}"] = {
            "shape": "box",
            "style": "filled,rounded",
            "fillcolor": ALERT_FILL,
            "color": ALERT,
            "fontcolor": ALERT,
            "penwidth": "1.5",
            "class": "violation",
            "label": graphviz.nohtml(what),
        }
    if loop is not None:
        last = len(rows) - 1
        repeat = (
            f"after step {loop}, the run stays in its state forever"
            if loop == last
            else f"after step {last}, back to step {loop}:\\nsteps {loop} to {last} repeat forever"
        )
        nodes["ll"] = {
            "shape": "plaintext",
            "width": "0",
            "height": "0",
            "margin": "0.03,0.01",
            "fontcolor": ALERT,
            "class": "loop-label",
            "label": graphviz.nohtml(_label_lines(repeat, "r")),
        }
    return nodes, justify


@dataclass
class _Layout:
    """Where everything goes, in points (y grows downwards here; graphviz's grows upwards)."""

    size: dict[str, tuple[float, float]]
    pos: dict[str, tuple[float, float]] = field(default_factory=dict)
    lane_x: list[float] = field(default_factory=list)
    arrow_y: list[float] = field(default_factory=list)
    bands: dict[int, tuple[float, float]] = field(default_factory=dict)
    loop_x: float = 0.0
    tables_left: float = 0.0
    marker_x: float = 0.0

    def width(self, name: str) -> float:
        return self.size[name][0]

    def height(self, name: str) -> float:
        return self.size[name][1]


def _columns(
    layout: _Layout, lanes: list[str], rows: list[_Row], justify: dict[int, str], marked: int | None, loop: int | None
) -> dict[int, float]:
    """The lanes, then (for a lasso) the loop's arrow, then the tables; the marker on the left. Returns
    the x of each message's label."""
    width = layout.width
    spacing = max([width(f"h{i}") + COLUMN_GAP for i in range(len(lanes))] + [110.0])
    layout.lane_x = [i * spacing for i in range(len(lanes))]
    extents = [(x - width(f"h{i}") / 2, x + width(f"h{i}") / 2) for i, x in enumerate(layout.lane_x)]
    label_x: dict[int, float] = {}
    for k, row in enumerate(rows):
        x = layout.lane_x[row.source]
        if row.local:
            w = width(f"r{k}_{row.source}")
            extents.append((x - w / 2, x + w / 2))
            continue
        w = width(f"m{k}")
        label_x[k] = {"l": x + 4 + w / 2, "r": x - 4 - w / 2, "n": x}[justify[k]]
        extents.append((label_x[k] - w / 2, label_x[k] + w / 2))
    left = min(x0 for x0, _ in extents)
    right = max(x1 for _, x1 in extents)
    layout.loop_x = right + COLUMN_GAP
    layout.tables_left = (layout.loop_x if loop is not None else right) + COLUMN_GAP
    layout.marker_x = left - COLUMN_GAP - (width(f"v{marked}") / 2 if marked is not None else 0)
    return label_x


def _rows_placed(
    layout: _Layout, lanes: list[str], rows: list[_Row], label_x: dict[int, float], marked: int | None, loop: int | None
) -> None:
    """Rows, top to bottom: each as high as its label, its marker and its tables."""
    width, height, pos = layout.width, layout.height, layout.pos
    header = max(height(f"h{i}") for i in range(len(lanes)))
    for i, x in enumerate(layout.lane_x):
        pos[f"h{i}"] = (x, 0.0)
    pos["hs"] = (layout.tables_left + width("hs") / 2, 0.0)
    top = header / 2 + ROW_GAP
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
            pos[f"v{k}"] = (layout.marker_x, y)
        if row.local:
            pos[f"r{k}_{row.source}"] = (layout.lane_x[row.source], y)
        else:
            pos[f"m{k}"] = (label_x[k], y - LABEL_GAP - height(f"m{k}") / 2)
        pos[f"t{k}"] = (layout.tables_left + width(f"t{k}") / 2, top + height(f"t{k}") / 2)
        layout.arrow_y.append(y)
        lanes_bottom = bottom
        bottom = max(bottom, top + height(f"t{k}"))
        layout.bands[k] = (top - ROW_GAP / 2, bottom + ROW_GAP / 2)
        top = bottom + ROW_GAP
    if loop is not None:
        pos["ll"] = (layout.loop_x - 4 - width("ll") / 2, lanes_bottom + ROW_GAP + height("ll") / 2)


class _Chart:
    """The chart being drawn: nodes pinned where the layout put them, points for arrows' ends."""

    def __init__(self, title: str, layout: _Layout, nodes: dict[str, dict[str, str]]) -> None:
        self.layout, self.nodes = layout, nodes
        self.graph = graphviz.Digraph(
            "msc",
            graph_attr={
                "layout": "neato",
                "inputscale": "72",
                "splines": "false",
                "outputorder": "edgesfirst",
                "pad": "0.2",
                "fontname": FONT,
                "fontsize": "12",
                "labelloc": "t",
                "label": graphviz.nohtml(title),
            },
            node_attr={"fontname": FONT, "fontsize": "9", "fixedsize": "true"},
            edge_attr={"arrowsize": "0.8"},
        )

    def place(self, name: str) -> None:
        x, y = self.layout.pos[name]
        w, h = self.layout.size.get(name, (0.0, 0.0))
        attrs = {**self.nodes[name], "width": f"{w / 72:.4f}", "height": f"{h / 72:.4f}", "pos": f"{x:.2f},{-y:.2f}!"}
        self.graph.node(name, **attrs)

    def point(self, name: str, x: float, y: float, **attrs: str) -> None:
        self.graph.node(name, shape="point", width="0.06", **attrs, pos=f"{x:.2f},{-y:.2f}!")


def _draw(chart: _Chart, lanes: list[str], rows: list[_Row], marked: int | None, loop: int | None) -> None:
    layout, graph = chart.layout, chart.graph
    if marked is not None:  # behind everything: the marked step's row, as a wide line as high as the row
        y0, y1 = layout.bands[marked]
        full_left = layout.marker_x - layout.width(f"v{marked}") / 2 - 8
        full_right = layout.tables_left + max(layout.width(f"t{k}") for k in range(len(rows))) + 8
        chart.point("band_a", full_left, (y0 + y1) / 2, style="invis")
        chart.point("band_b", full_right, (y0 + y1) / 2, style="invis")
        graph.edge(
            "band_a", "band_b", arrowhead="none", color=ALERT_FILL, penwidth=f"{y1 - y0:.2f}", **{"class": "band"}
        )
    for i, x in enumerate(layout.lane_x):
        chart.place(f"h{i}")
        chart.point(f"end{i}", x, layout.arrow_y[-1], style="invis")
        graph.edge(f"h{i}", f"end{i}", style="dashed", color="#9aa5b1", arrowhead="none")
    chart.place("hs")
    for k, row in enumerate(rows):
        if row.local:
            chart.place(f"r{k}_{row.source}")
        else:
            chart.place(f"m{k}")
            for i in (row.source, *row.targets):
                chart.point(f"r{k}_{i}", layout.lane_x[i], layout.arrow_y[k])
            for i in row.targets:
                graph.edge(f"r{k}_{row.source}", f"r{k}_{i}", color=MESSAGE, penwidth="1.3", **{"class": "msg"})
        chart.place(f"t{k}")
    if marked is not None:
        chart.place(f"v{marked}")
    if loop is not None:
        chart.place("ll")
        last = len(rows) - 1
        if loop != last:
            chart.point("loop_from", layout.loop_x, layout.arrow_y[last], color=ALERT)
            chart.point("loop_to", layout.loop_x, layout.arrow_y[loop], color=ALERT)
            graph.edge("loop_from", "loop_to", color=ALERT, penwidth="2", **{"class": "loop"})


def msc_graph(model: Model, trace: Trace, title: str = "", violated: str | None = None) -> graphviz.Digraph:
    """The message-sequence chart of a trace: a message is a straight arrow with its label above its
    start, so no arrow ever crosses a label; ``violated`` names the property whose violating step is
    marked."""
    drawing = drawing_of(model)
    lanes = drawing.lanes()
    rows = _rows(model, drawing, lanes, trace)
    marked = violation_step(trace) if violated else None
    nodes, justify = _nodes(lanes, rows, marked, violated, trace.loop)
    layout = _Layout(size=_measure(nodes))
    label_x = _columns(layout, lanes, rows, justify, marked, trace.loop)
    _rows_placed(layout, lanes, rows, label_x, marked, trace.loop)
    chart = _Chart(title, layout, nodes)
    _draw(chart, lanes, rows, marked, trace.loop)
    return chart.graph


def chart_of(done: Replayed) -> graphviz.Digraph:
    """The chart of a replayed counterexample, its violating step marked."""
    return msc_graph(done.model, done.trace, trace_title(done.meta), violated=done.meta.get("property") or None)


def trace_title(meta: dict[str, Any]) -> str:
    title = str(meta.get("model", ""))
    if meta.get("preset"):
        title += f" --preset {meta['preset']}"
    if meta.get("property"):
        title += f": {meta['property']} violated"
    elif meta.get("not_violated"):
        title += f": recorded as a violation of {meta['not_violated']['property']}, not confirmed on the model now"
    return title
