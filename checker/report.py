"""One self-contained HTML page per check: configuration, statistics, and each trace with
step-by-step navigation, the changed fields highlighted, and its message-sequence chart."""

from __future__ import annotations

import html
import json
from typing import Any

from .drawing import Drawing, Table, mark_changes
from .itf import format_action, format_value, state_vars
from .render import drawing_of, msc_dot, run_dot, trace_title
from .replay import Replayed
from .show import changes

CSS = """
tr.vacuous td { background: #fde8e8; }
ul.vacuity { color: #a11; }
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#1d2733;max-width:1400px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px} h3{font-size:15px;margin:16px 0 6px}
table{border-collapse:collapse;font-size:13px;margin:4px 0 10px}
td,th{border:1px solid #cfd6de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#e8eef7;font-weight:600} .hl{background:#ffe08a} .muted{color:#66717d}
.verdict-violated{color:#b03030;font-weight:700} .verdict-holds{color:#1d7a3a;font-weight:700}
.trace{display:flex;gap:18px;align-items:flex-start}
.steps{list-style:none;padding:0;margin:0;min-width:260px;max-height:70vh;overflow:auto;border:1px solid #cfd6de}
.steps li{padding:4px 8px;cursor:pointer;font-size:13px;border-bottom:1px solid #eef1f4}
.steps li.current{background:#1f5fa8;color:#fff} .steps li.loop{border-left:4px solid #b03030}
.panel{display:none;flex:1} .panel.current{display:block}
.nav button{font-size:13px;margin-right:6px} .chart{overflow:auto;border:1px solid #cfd6de;padding:8px;margin-top:8px}
code{background:#f3f5f7;padding:1px 4px;border-radius:3px}
"""

JS = """
document.querySelectorAll('.trace').forEach(function(tr){
  var items=tr.querySelectorAll('.steps li'), panels=tr.querySelectorAll('.panel'), cur=0;
  function show(k){ if(k<0||k>=panels.length) return; cur=k;
    items.forEach(function(li,i){li.classList.toggle('current',i===k)});
    panels.forEach(function(p,i){p.classList.toggle('current',i===k)});
    items[k].scrollIntoView({block:'nearest'}); }
  items.forEach(function(li,i){li.addEventListener('click',function(){show(i)})});
  tr.querySelector('.prev').addEventListener('click',function(){show(cur-1)});
  tr.querySelector('.next').addEventListener('click',function(){show(cur+1)});
  tr.addEventListener('keydown',function(e){ if(e.key==='ArrowDown'||e.key==='ArrowRight'){show(cur+1);e.preventDefault()}
    if(e.key==='ArrowUp'||e.key==='ArrowLeft'){show(cur-1);e.preventDefault()} });
  show(0);
  tr.dataset.ready='yes';
});
"""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _table_html(table: Table) -> str:
    head = "".join(f"<th>{_esc(c)}</th>" for c in table.columns)
    rows = []
    for r, row in enumerate(table.rows):
        cells = "".join(
            f'<td class="hl">{_esc(cell)}</td>' if (r, c) in table.highlight else f"<td>{_esc(cell)}</td>"
            for c, cell in enumerate(row)
        )
        rows.append(f"<tr>{cells}</tr>")
    return f"<h3>{_esc(table.title)}</h3><table><tr>{head}</tr>{''.join(rows)}</table>"


def _kv_table(pairs: dict[str, Any]) -> str:
    rows = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in pairs.items())
    return f"<table>{rows}</table>"


def _svg(source: str) -> str:
    svg = run_dot(source, "svg").decode()
    return svg[svg.index("<svg") :] if "<svg" in svg else svg


def _trace_section(index: int, done: Replayed) -> str:
    meta = done.meta
    trace = done.trace
    drawing = drawing_of(done.model)
    has_tables = type(drawing).tables is not Drawing.tables
    items, panels = [], []
    previous_tables = None
    vars_list = [state_vars(s) for s in trace.states]
    for k, (action, state) in enumerate(trace.steps()):
        label = "Init" if action is None else format_action({"name": action.name, "args": dict(action[1])})
        loop = ' class="loop"' if trace.loop == k else ""
        items.append(f'<li data-step="{k}"{loop}>{k}. {_esc(label)}</li>')
        diff = [] if k == 0 else changes(vars_list[k - 1], vars_list[k])
        if k == 0:
            fields = "".join(
                f"<tr><th>{_esc(n)}</th><td>{_esc(format_value(v))}</td></tr>" for n, v in vars_list[0].items()
            )
            changed = f"<h3>initial state</h3><table>{fields}</table>"
        elif diff:
            rows = "".join(
                f"<tr><th>{_esc(p)}</th><td>{_esc(format_value(a))}</td><td class='hl'>{_esc(format_value(b))}</td></tr>"
                for p, a, b in diff
            )
            changed = f"<h3>changed</h3><table><tr><th>field</th><th>before</th><th>after</th></tr>{rows}</table>"
        else:
            changed = "<h3>changed</h3><p class='muted'>nothing (a stuttering step)</p>"
        tables_html = ""
        if has_tables:
            tables = drawing.tables(state)
            if previous_tables is not None:
                tables = mark_changes(previous_tables, tables)
            previous_tables = drawing.tables(state)
            tables_html = "".join(_table_html(t) for t in tables)
        loop_note = (
            f"<p class='muted'>The loop returns here after step {len(trace) - 1}.</p>" if trace.loop == k else ""
        )
        panels.append(
            f'<div class="panel" data-step="{k}"><h3>Step {k} of {len(trace) - 1}: <code>{_esc(label)}</code></h3>'
            f"{loop_note}{changed}{tables_html}</div>"
        )
    chart = _svg(msc_dot(done.model, trace, trace_title(meta)))
    heading = f"{_esc(meta.get('property', 'trace'))} ({_esc(meta.get('kind', 'violation'))}): {len(trace)} states"
    return (
        f'<section><h2 id="trace-{index}">{heading}</h2>'
        f"<p class='muted'>engine {_esc(meta.get('engine', '?'))}; model {_esc(meta.get('model'))}"
        f"{' --preset ' + _esc(meta['preset']) if meta.get('preset') else ''}. Use the arrow keys or click a step.</p>"
        f'<div class="trace" tabindex="0"><div><div class="nav"><button class="prev">&larr; previous</button>'
        f'<button class="next">next &rarr;</button></div><ol class="steps">{"".join(items)}</ol></div>'
        f"{''.join(panels)}</div>"
        f'<details open><summary>message-sequence chart</summary><div class="chart">{chart}</div></details></section>'
    )


def _coverage_html(coverage: dict[str, Any], vacuity: list[str]) -> str:
    """The coverage tables; a row whose action was never taken or property never exercised is marked."""

    def rows(section: dict[str, list[int]], bad: int) -> str:
        return "".join(
            f"<tr{' class=vacuous' if counts[bad] == 0 else ''}><td>{_esc(name)}</td>"
            f"<td>{counts[0]:,}</td><td>{counts[1]:,}</td></tr>"
            for name, counts in section.items()
        )

    out = ["<h2>coverage</h2>"]
    if vacuity:
        out.append("<ul class='vacuity'>" + "".join(f"<li>{_esc(v)}</li>" for v in vacuity) + "</ul>")
    out.append("<table class='coverage'><tr><th>action</th><th>enabled in</th><th>taken</th></tr>"
               f"{rows(coverage.get('actions', {}), 1)}</table>")  # fmt: skip
    out.append("<table class='coverage'><tr><th>property</th><th>evaluated</th><th>exercised</th></tr>"
               f"{rows(coverage.get('properties', {}), 1)}</table>")  # fmt: skip
    return "".join(out)


def html_report(
    title: str,
    traces: list[Replayed],
    stats: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    extra_svg: dict[str, str] | None = None,
) -> str:
    """The whole page as a string: no external scripts, styles or images."""
    if config is None and traces:
        config = traces[0].meta.get("config")
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_esc(title)}</title><style>{CSS}</style></head><body>"
    ]
    parts.append(f"<h1>{_esc(title)}</h1>")
    if stats:
        verdict = stats.get("verdict", "")
        parts.append(f"<p>verdict: <span class='verdict-{_esc(verdict)}'>{_esc(verdict)}</span>"
                     f"{'' if stats.get('complete') else ' (not a complete search)'}</p>")  # fmt: skip
        shown = {k: stats[k] for k in (
            "engine", "distinct_states", "generated_states", "depth", "elapsed_s", "states_per_s",
            "peak_memory_bytes", "collision_probability", "bound_reason", "seed") if stats.get(k) is not None}  # fmt: skip
        parts.append("<h2>statistics</h2>" + _kv_table(shown))
    if config:
        parts.append("<h2>configuration</h2>" + _kv_table(config))
    if stats and stats.get("coverage"):
        parts.append(_coverage_html(stats["coverage"], stats.get("vacuity", [])))
    if traces:
        parts.append("<h2>traces</h2><ul>" + "".join(
            f'<li><a href="#trace-{i}">{_esc(t.meta.get("property", "trace"))}: {len(t.trace)} states</a></li>'
            for i, t in enumerate(traces)) + "</ul>")  # fmt: skip
    for i, done in enumerate(traces):
        parts.append(_trace_section(i, done))
    for name, svg in (extra_svg or {}).items():
        parts.append(f"<section><h2>{_esc(name)}</h2><div class='chart'>{svg}</div></section>")
    parts.append(f"<script type='application/json' id='kmc-data'>{_esc(json.dumps({'title': title}))}</script>")
    parts.append(f"<script>{JS}</script></body></html>")
    return "".join(parts)
