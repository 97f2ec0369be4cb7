"""One self-contained HTML page per check: statistics, and each trace with why it is a bug (the
known bug its preset reproduces, the property's meaning, the violating step in a sentence, the
model's own explanation), step-by-step navigation with the changed fields highlighted, and its
message-sequence chart; the configuration last, folded."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from typing import Any

from kmc.checker.drawing import Drawing, Table, action_text, mark_changes
from kmc.checker.errors import UserError
from kmc.checker.model import KnownBug, setting_text
from kmc.checker.properties import select_properties
from kmc.checker.traces.chart import chart_of, drawing_of, svg_of, violation_step
from kmc.checker.traces.itf import format_value, state_vars, tuples_as_lists
from kmc.checker.traces.replay import Replayed
from kmc.checker.traces.text import changes, leaves, touches

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
.steps li.current{background:#1f5fa8;color:#fff} .steps li.in-loop{border-left:4px solid #e0a0a0}
.steps li.loop-start{border-left:4px solid #b03030;border-top:2px solid #b03030}
.steps li.loop-back{color:#b03030;font-style:italic} .steps li.violating:not(.current){background:#fdeaea}
.badge{font-size:11px;font-weight:700;padding:0 4px;border-radius:3px;white-space:nowrap}
.badge.bad{color:#fff;background:#b03030} .badge.ok{color:#fff;background:#2f7d32} .badge.loop{color:#b03030;background:#fff;border:1px solid #b03030}
.violation{border:2px solid #b03030;background:#fdeaea;border-radius:6px;padding:6px 12px;margin:8px 0 12px}
.violation .what{font-size:15px;margin:4px 0} .violation .doc p{margin:4px 0;font-style:italic}
.violation .doc p.says{font-style:normal;font-weight:600;margin-top:8px}
.note{font-weight:600;margin:4px 0} .note.bad,.note.loop{color:#b03030}
table.state th{font-weight:500;font-family:monospace} table.state tr.hl td,table.state tr.hl th{background:#ffe08a}
.panel{display:none;flex:1;min-width:0;overflow-x:auto} .panel.current{display:block}
.nav button{font-size:13px;margin-right:6px}
.chart{overflow:auto;max-height:85vh;border:1px solid #cfd6de;padding:8px;margin-top:8px}
.chart svg{display:block} .chart.fit svg{max-width:100%;height:auto}
.chart-tools{margin-top:6px;font-size:13px} .chart-tools button{font-size:13px}
.bug{border:1px solid #cfd6de;border-left:6px solid #1f5fa8;background:#f5f8fc;border-radius:6px;padding:6px 12px;margin:8px 0 12px}
.bug h3{margin:4px 0 6px} .bug dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0 0 4px;font-size:14px}
.bug dt{font-weight:600;color:#3d4a58} .bug dd{margin:0} .bug dd code{padding:0 2px}
.violation .why{margin:6px 0}
details.config{margin-top:28px} details.config summary{font-size:18px;font-weight:600;cursor:pointer}
code{background:#f3f5f7;padding:1px 4px;border-radius:3px}
"""

JS = """
document.querySelectorAll('.trace').forEach(function(tr){
  var items=tr.querySelectorAll('.steps li[data-step]'), panels=tr.querySelectorAll('.panel'), cur=0;
  function show(k){ if(k<0||k>=panels.length) return; cur=k;
    items.forEach(function(li,i){li.classList.toggle('current',i===k)});
    panels.forEach(function(p,i){p.classList.toggle('current',i===k)});
    items[k].scrollIntoView({block:'nearest'}); }
  items.forEach(function(li,i){li.addEventListener('click',function(){show(i)})});
  tr.querySelector('.prev').addEventListener('click',function(){show(cur-1)});
  tr.querySelector('.next').addEventListener('click',function(){show(cur+1)});
  tr.addEventListener('keydown',function(e){ if(e.key==='ArrowDown'||e.key==='ArrowRight'){show(cur+1);e.preventDefault()}
    if(e.key==='ArrowUp'||e.key==='ArrowLeft'){show(cur-1);e.preventDefault()} });
  tr.querySelectorAll('.steps li[data-goto]').forEach(function(li){
    li.addEventListener('click',function(){show(Number(li.dataset.goto))}) });
  show(Number(tr.dataset.start||0));
  tr.dataset.ready='yes';
});
document.querySelectorAll('.chart-tools').forEach(function(tools){
  var chart=tools.nextElementSibling, button=tools.querySelector('button');
  tools.hidden=false;
  button.addEventListener('click',function(){
    var fit=chart.classList.toggle('fit');
    button.textContent=fit?'actual size':'fit to the window';
  });
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


def _value(value: Any) -> str:
    """An ITF value as the report writes it: sequences as lists ([0], not (0)), sets in braces."""
    return format_value(tuples_as_lists(value))


def _kv_table(pairs: dict[str, Any], render: Callable[[Any], str] = str) -> str:
    rows = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(render(v))}</td></tr>" for k, v in pairs.items())
    return f"<table>{rows}</table>"


KIND_NAMES = {
    "invariant": "invariant",
    "step": "step property",
    "liveness": "liveness property",
    "deadlock": "deadlock check",
}


def property_doc(done: Replayed) -> str:
    """The violated property's docstring: from the trace's metadata if it carries one, else from the
    model's properties (a property of a spec file the trace does not name has none to show)."""
    meta = done.meta
    if isinstance(meta.get("property_doc"), str):
        return meta["property_doc"]
    name = meta.get("property")
    if not isinstance(name, str):
        return ""
    spec_files = meta.get("spec_files") if isinstance(meta.get("spec_files"), list) else []
    try:
        found = select_properties(type(done.model), [str(s) for s in spec_files], [name]).all()
    except UserError:
        return ""
    return found[0].doc if found else ""


def known_bugs(done: Replayed) -> list[KnownBug]:
    """The model's declared bugs (``type(model).bugs``) this trace reproduces: the bug violates the
    trace's property, and the trace was made on the bug's preset with the bug's settings among its
    config (or on exactly the bug's config, whatever the preset is called), and not on the config
    where the bug is fixed."""
    name = done.meta.get("property")
    if not isinstance(name, str):
        return []
    cls, config = type(done.model), done.model.config
    found = []
    for bug in cls.bugs:
        if name not in bug.violates:
            continue
        try:
            wanted = cls.make_config(bug.preset, bug.settings)
            fixed = cls.make_config(bug.fixed_preset, bug.fixed_settings) if bug.fixed_preset else None
        except UserError:
            continue  # a bug naming a preset or setting the model no longer has is for `kmc bugs` to report
        same_settings = all(getattr(config, key, None) == getattr(wanted, key) for key in bug.settings)
        if config != fixed and (config == wanted or (done.meta.get("preset") == bug.preset and same_settings)):
            found.append(bug)
    return found


def _preset_text(done: Replayed, preset: str | None) -> str:
    """``name: description`` of one of the model's presets (the name alone if the model has no such preset)."""
    if not preset:
        return ""
    found = type(done.model).presets.get(preset)
    return f"<code>{_esc(preset)}</code>" + (f": {_esc(found.description)}" if found and found.description else "")


def _bug_html(done: Replayed) -> str:
    """The known bug the trace reproduces, linked to its tracker, with the releases it affects and the
    preset where it is fixed; and the trace's preset with its description."""
    meta = done.meta
    if not meta.get("property"):
        return ""
    rows = []
    for bug in known_bugs(done):
        key = _esc(bug.key if bug.key != "finding" else "a finding of the models")
        if bug.url:
            key = f'<a class="bug-key" href="{_esc(bug.url)}">{key}</a>'
        also = f" (also {_esc(', '.join(bug.also))})" if bug.also else ""
        rows.append(f"<dt>Reproduces</dt><dd class='summary'>{key}{also}: {_esc(bug.summary)}</dd>")
        rows.append(f"<dt>Releases</dt><dd class='releases'>{_esc(bug.releases())}</dd>")
        if bug.fixed_preset:
            model = type(done.model).name or str(meta.get("model"))
            command = f"kmc check {model} --preset {bug.fixed_preset}"
            command += "".join(f" --set {k}={setting_text(v)}" for k, v in bug.fixed_settings.items())
            command += f" --property {meta['property']}"
            rows.append(
                f"<dt>Fixed preset</dt><dd class='fixed'>{_preset_text(done, bug.fixed_preset)} "
                f"(<code>{_esc(command)}</code>)</dd>"
            )
    found = bool(rows)
    preset = _preset_text(done, meta.get("preset"))
    if preset:
        rows.append(f"<dt>Preset</dt><dd class='preset'>{preset}</dd>")
    if not rows:
        return ""
    if found:
        return f"<div class='bug'><h3>The bug this trace reproduces</h3><dl>{''.join(rows)}</dl></div>"
    return (
        f"<div class='bug'><h3>The preset</h3><dl>{''.join(rows)}</dl>"
        f"<p class='muted'>The model declares no known bug of this preset that violates {_esc(meta['property'])}.</p></div>"
    )


def _explanation(done: Replayed) -> str:
    """The model's own sentence on the violation (its drawing's ``explain``), as a paragraph; a hook
    that fails is named rather than breaking the page."""
    name = done.meta.get("property")
    if not isinstance(name, str):
        return ""
    try:
        said = drawing_of(done.model).explain(name, done.trace)
    except Exception as exc:  # a model's explanation must not cost the reader the trace
        return f"<p class='why muted'>(the model's explanation failed: {_esc(type(exc).__name__)}: {_esc(exc)})</p>"
    return f"<p class='why'>{_esc(said)}</p>" if said else ""


def _violation_html(done: Replayed, labels: list[str]) -> str:
    """What the trace shows: the property, the step where it fails (or where the run starts to loop)
    named in a sentence, the model's explanation, and the property's docstring."""
    meta, trace = done.meta, done.trace
    name = meta.get("property")
    if not name and meta.get("not_violated"):
        gone = meta["not_violated"]
        return (
            f"<div class='violation'><p class='what'>This trace was recorded as a violation of "
            f"<b>{_esc(gone['property'])}</b>, but on the model as it is now: {_esc(gone['reason'])}.</p></div>"
        )
    if not name:
        return ""
    last, loop = len(trace) - 1, trace.loop
    kind_key = str(meta.get("kind", ""))
    kind = KIND_NAMES.get(kind_key, kind_key or "property")
    head = f"<b>{_esc(name)}</b> ({_esc(kind)})"
    if loop is None:
        # a step property judges the step itself, an invariant (or a deadlock) the state after it
        when = "at" if kind_key == "step" else "after"
        where = f" fails {when} step {last} of {last}, <code>{_esc(labels[last])}</code>"
        where += ": no action is enabled in the state it leaves." if kind_key == "deadlock" else "."
    elif loop == last:
        where = (
            f" is violated: from step {loop} (<code>{_esc(labels[loop])}</code>) the run stays in that state forever."
        )
    else:
        where = (
            f" is violated: from step {loop} (<code>{_esc(labels[loop])}</code>) the run repeats steps {loop} to "
            f"{last} forever, so its goal is never reached."
        )
    doc = property_doc(done)
    paragraphs = [" ".join(part.split()) for part in doc.split("\n\n") if part.strip()]
    body = "".join(f"<p>{_esc(p)}</p>" for p in paragraphs) or "<p class='muted'>(the property has no docstring)</p>"
    return (
        f"<div class='violation'><p class='what'>{head}{where}</p>{_explanation(done)}"
        f"<div class='doc'><p class='says'>What {_esc(name)} says:</p>{body}</div></div>"
    )


def _full_state(variables: dict[str, Any], changed: list[str]) -> str:
    """Every field of the state, the ones the step changed highlighted."""
    rows = "".join(
        f"<tr{' class=hl' if touches(path, changed) else ''}><th>{_esc(path)}</th><td>{_esc(_value(value))}</td></tr>"
        for path, value in leaves(variables)
    )
    return f"<h3>full state</h3><table class='state'>{rows}</table>"


def _beside_html(beside: list[dict[str, Any]], k: int) -> tuple[str, str]:
    """A step's badge and panel part from results kept beside the trace (a ``kmc drive`` result:
    its ``results``, each with ``step``, ``agreed``, ``requests``, ``differences``)."""
    badges, parts = "", []
    for result in beside:
        title = f"on Kafka {result.get('kafka_version', '?')}"
        step = next((r for r in result.get("results", []) if r.get("step") == k), None)
        if step is None:
            continue
        agreed = bool(step.get("agreed"))
        badges += f" <span class='badge {'ok' if agreed else 'bad'}'>{'&#10003;' if agreed else '&#10007;'} {_esc(title)}</span>"
        requests = "".join(f"<li><code>{_esc(r)}</code></li>" for r in step.get("requests", []))
        rows = "".join(
            f"<tr><th>{_esc(d.get('field'))}</th><td>{_esc(json.dumps(d.get('model')))}</td>"
            f"<td class='hl'>{_esc(json.dumps(d.get('broker')))}</td></tr>"
            for d in step.get("differences", [])
        )
        table = f"<table><tr><th>field</th><th>model</th><th>broker</th></tr>{rows}</table>" if rows else ""
        verdict = "agreed with the model's next state" if agreed else "diverged from the model's next state"
        parts.append(f"<h3>{_esc(title)}: {verdict}</h3>" + (f"<ul>{requests}</ul>" if requests else "") + table)
    return badges, "".join(parts)


def _beside_summary(beside: list[dict[str, Any]]) -> str:
    return "".join(
        f"<p class='note'>Driven on Kafka {_esc(r.get('kafka_version', '?'))}: {_esc(r.get('verdict', ''))}</p>"
        for r in beside
    )


def _trace_section(index: int, done: Replayed, beside: list[dict[str, Any]] | None = None) -> str:
    meta = done.meta
    trace = done.trace
    drawing = drawing_of(done.model)
    has_tables = type(drawing).tables is not Drawing.tables
    last, loop = len(trace) - 1, trace.loop
    start = violation_step(trace) if meta.get("property") else 0
    items, panels = [], []
    previous_tables = None
    vars_list = [state_vars(s) for s in trace.states]
    labels = [action_text(action) for action in trace.actions]
    for k, (_action, state) in enumerate(trace.steps()):
        label = labels[k]
        classes = [
            c
            for c, on in (
                ("loop-start", loop == k),
                ("in-loop", loop is not None and k >= loop),
                ("violating", k == start and meta.get("property")),
            )
            if on
        ]
        badges = ""
        if loop == k:
            badges += " <span class='badge loop'>&#8635; loop starts</span>"
        if k == start and meta.get("property") and loop is None:
            badges += " <span class='badge bad'>&#10007; violated</span>"
        cls = f' class="{" ".join(classes)}"' if classes else ""
        beside_badges, beside_html = _beside_html(beside or [], k)
        items.append(f'<li data-step="{k}"{cls}>{k}. {_esc(label)}{badges}{beside_badges}</li>')
        diff = [] if k == 0 else changes(vars_list[k - 1], vars_list[k])
        if k == 0:
            changed = ""
        elif diff:
            rows = "".join(
                f"<tr><th>{_esc(p)}</th><td>{_esc(_value(a))}</td><td class='hl'>{_esc(_value(b))}</td></tr>"
                for p, a, b in diff
            )
            changed = f"<h3>changed</h3><table><tr><th>field</th><th>before</th><th>after</th></tr>{rows}</table>"
        else:
            changed = "<h3>changed</h3><p class='muted'>nothing: the step left every field as it was</p>"
        tables_html = ""
        if has_tables:
            tables = drawing.tables(state)
            if previous_tables is not None:
                tables = mark_changes(previous_tables, tables)
            previous_tables = drawing.tables(state)
            tables_html = "".join(_table_html(t) for t in tables)
        notes = []
        if k == start and meta.get("property") and loop is None:
            notes.append(f"<p class='note bad'>{_esc(meta['property'])} is violated in this state.</p>")
        if loop == k:
            repeat = (
                "this state repeats forever"
                if loop == last
                else f"steps {loop} to {last} form a loop the run repeats forever"
            )
            notes.append(f"<p class='note loop'>&#8635; The loop starts here: {repeat}.</p>")
        if loop is not None and k == last and loop != last:
            notes.append(f"<p class='note loop'>&#8635; Next: back to step {loop}, and round the loop again.</p>")
        full = _full_state(vars_list[k], [p for p, _a, _b in diff])
        panels.append(
            f'<div class="panel" data-step="{k}"><h3>Step {k} of {last}: <code>{_esc(label)}</code></h3>'
            f"{''.join(notes)}{beside_html}{changed}{tables_html}{full}</div>"
        )
    if loop is not None:
        back = "stays in this state forever" if loop == last else f"back to step {loop}: the loop repeats forever"
        items.append(f'<li class="loop-back" data-goto="{loop}">&#8635; {_esc(back)}</li>')
    chart = svg_of(chart_of(done))
    heading = f"{_esc(meta.get('property', 'trace'))} ({_esc(meta.get('kind', 'violation'))}): {len(trace)} states"
    return (
        f'<section><h2 id="trace-{index}">{heading}</h2>{_bug_html(done)}{_violation_html(done, labels)}'
        f"{_beside_summary(beside or [])}"
        f"<p class='muted'>engine {_esc(meta.get('engine', '?'))}; model {_esc(meta.get('model'))}"
        f"{' --preset ' + _esc(meta['preset']) if meta.get('preset') else ''}. The page opens at step {start}; "
        "use the arrow keys or click a step.</p>"
        f'<div class="trace" tabindex="0" data-start="{start}"><div><div class="nav"><button class="prev">&larr; previous</button>'
        f'<button class="next">next &rarr;</button></div><ol class="steps">{"".join(items)}</ol></div>'
        f"{''.join(panels)}</div>"
        f"<details open class='msc'><summary>message-sequence chart</summary>{_chart_html(chart)}</details></section>"
    )


def _chart_html(svg: str) -> str:
    """A chart at its own size, scrolling inside its box (both scroll bars within the window), with a
    button, shown only where scripts run, that fits it to the window's width instead."""
    return (
        "<div class='chart-tools' hidden><button type='button' class='fit'>fit to the window</button></div>"
        f"<div class='chart'>{svg}</div>"
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
    out.append(
        "<table class='coverage'><tr><th>action</th><th>enabled in</th><th>taken</th></tr>"
        f"{rows(coverage.get('actions', {}), 1)}</table>"
    )
    out.append(
        "<table class='coverage'><tr><th>property</th><th>evaluated</th><th>exercised</th></tr>"
        f"{rows(coverage.get('properties', {}), 1)}</table>"
    )
    return "".join(out)


def html_report(
    title: str,
    traces: list[Replayed],
    stats: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    extra_svg: dict[str, str] | None = None,
    beside: list[dict[str, Any]] | None = None,
) -> str:
    """The whole page as a string: no external scripts, styles or images. ``beside``: per-step
    results of the first trace shown next to its steps (``kmc drive`` results)."""
    if config is None and traces:
        config = traces[0].meta.get("config")
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_esc(title)}</title><style>{CSS}</style>"
        "<noscript><style>.panel{display:block;border-top:1px solid #ccc;margin-top:8px}</style></noscript></head><body>"
    ]
    parts.append(f"<h1>{_esc(title)}</h1>")
    if stats:
        verdict = stats.get("verdict", "")
        parts.append(
            f"<p>verdict: <span class='verdict-{_esc(verdict)}'>{_esc(verdict)}</span>"
            f"{'' if stats.get('complete') else ' (not a complete search)'}</p>"
        )
        shown = {
            k: stats[k]
            for k in (
                "engine",
                "distinct_states",
                "generated_states",
                "depth",
                "elapsed_s",
                "states_per_s",
                "peak_memory_bytes",
                "collision_probability",
                "bound_reason",
                "seed",
            )
            if stats.get(k) is not None
        }
        parts.append("<h2>statistics</h2>" + _kv_table(shown))
    if stats and stats.get("coverage"):
        parts.append(_coverage_html(stats["coverage"], stats.get("vacuity", [])))
    if traces:
        parts.append(
            "<h2>traces</h2><ul>"
            + "".join(
                f'<li><a href="#trace-{i}">{_esc(t.meta.get("property", "trace"))}: {len(t.trace)} states</a></li>'
                for i, t in enumerate(traces)
            )
            + "</ul>"
        )
    for i, done in enumerate(traces):
        parts.append(_trace_section(i, done, beside if i == 0 else None))
    for name, svg in (extra_svg or {}).items():
        parts.append(f"<section><h2>{_esc(name)}</h2>{_chart_html(svg)}</section>")
    if config:
        parts.append(
            f"<details class='config'><summary>configuration ({len(config)} setting{'' if len(config) == 1 else 's'})"
            "</summary>"
            f"{_kv_table(config, setting_text)}</details>"
        )
    parts.append(f"<script type='application/json' id='kmc-data'>{_esc(json.dumps({'title': title}))}</script>")
    parts.append(f"<script>{JS}</script></body></html>")
    return "".join(parts)
