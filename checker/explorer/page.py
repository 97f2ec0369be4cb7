"""The page `kmc explore` serves: plain HTML, CSS and JavaScript in one string, no build step, nothing
fetched from elsewhere (it works offline). It asks the server's JSON API for everything it shows
and keeps the path in the URL's fragment, so a copied link reopens the same path."""

from __future__ import annotations

CSS = """
*{box-sizing:border-box} [hidden]{display:none !important}
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0;color:#1d2733;background:#fbfcfd}
header{position:sticky;top:0;z-index:5;background:#fff;border-bottom:1px solid #cfd6de;padding:8px 16px}
h1{font-size:18px;margin:0;display:inline} h2{font-size:16px;margin:4px 0 8px} h3{font-size:14px;margin:14px 0 6px}
h4{font-size:13px;margin:10px 0 4px}
.muted{color:#66717d;font-weight:400}
.toolbar{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin-top:6px;font-size:13px}
.toolbar .sep{width:1px;height:22px;background:#cfd6de;margin:0 4px}
button,.button{font:inherit;font-size:13px;padding:3px 9px;border:1px solid #9aa5b1;border-radius:4px;
  background:#f3f5f7;color:#1d2733;cursor:pointer;text-decoration:none;display:inline-block}
button:hover:not(:disabled),.button:hover{background:#e3e9f0}
button:disabled{opacity:.45;cursor:default}
input[type=number]{width:5em} input[type=text]{font:inherit;font-size:13px}
#link-row{margin-top:6px;font-size:13px} #link{width:min(70vw,900px);font-family:monospace;font-size:12px}
.error{margin-top:6px;padding:6px 10px;font-size:13.5px;background:#fde8e8;border:1px solid #d99;color:#8a1f1f;
  border-radius:4px;display:flex;gap:10px;align-items:flex-start;white-space:pre-wrap}
.error[hidden],.message[hidden]{display:none}
.error button{margin-left:auto;padding:0 6px}
.message{margin-top:6px;padding:5px 10px;border-radius:4px;font-size:13px}
.message.info{background:#e8f1fb;border:1px solid #b7cde6} .message.warn{background:#fff4d6;border:1px solid #e6c66a}
main{display:flex;gap:16px;padding:12px 16px;align-items:flex-start}
nav{width:330px;flex:none;position:sticky;top:80px}
#path{list-style:none;padding:0;margin:0;max-height:calc(100vh - 170px);overflow:auto;border:1px solid #cfd6de;
  background:#fff;font-size:12.5px}
#path li{padding:3px 6px;cursor:pointer;border-bottom:1px solid #eef1f4;display:flex;gap:5px}
#path li:hover{background:#eef3f9} #path li.future{color:#8a949e;font-style:italic}
#path li.current{background:#1f5fa8;color:#fff;font-style:normal}
#path .num{min-width:2.2em;text-align:right;flex:none} #path .lbl{word-break:break-word}
.mark{font-weight:700;flex:none} .mark.bad{color:#b03030} .mark.oob{color:#a06000}
#path li.current .mark{color:#fff}
section#state-pane{flex:1;min-width:0}
#badges{display:flex;flex-wrap:wrap;gap:6px;margin-bottom:6px}
.badge{font-size:12.5px;padding:2px 8px;border-radius:10px;border:1px solid}
.badge.bad{background:#fde8e8;border-color:#d99;color:#8a1f1f;font-weight:600}
.badge.good{background:#e6f4ea;border-color:#9ccaa9;color:#1d5e2f}
.badge.warn{background:#fff4d6;border-color:#e6c66a;color:#6b4e00}
.cols{display:flex;gap:20px;flex-wrap:wrap;align-items:flex-start}
#actions-box{flex:1 1 420px;min-width:300px} #props-box{flex:1 1 380px}
details.group{border:1px solid #dfe4ea;border-radius:4px;margin:4px 0;background:#fff}
details.group>summary{padding:3px 8px;cursor:pointer;font-size:13px;font-weight:600}
details.group .count{color:#66717d;font-weight:400}
.buttons{display:flex;flex-wrap:wrap;gap:4px;padding:4px 8px 8px}
button.act{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;text-align:left}
button.act.violates{border-color:#c44;background:#fdf0f0} button.act.oob{border-style:dashed}
button.act.on-path{box-shadow:0 0 0 2px #1f5fa8 inset}
button.act .tag{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;font-size:11px;margin-left:6px;
  color:#b03030}
button.act.oob .tag.oobt{color:#a06000}
#filter{width:100%;margin:2px 0 4px}
table{border-collapse:collapse;font-size:12.5px;margin:2px 0 8px;background:#fff}
td,th{border:1px solid #cfd6de;padding:2px 7px;text-align:left;vertical-align:top}
th{background:#e8eef7;font-weight:600} td.hl{background:#ffe08a}
td.v-holds{color:#1d7a3a;font-weight:600} td.v-violated{color:#b03030;font-weight:700}
td.v-error{color:#8a1f1f} td.v-na,td.v-live{color:#66717d}
.tables{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}
details>summary{cursor:pointer}
details.box{margin-top:12px} details.box>summary{font-weight:600;font-size:14px}
.chart{overflow:auto;max-height:75vh;border:1px solid #cfd6de;padding:6px;background:#fff;margin-top:6px}
.chart.loading{opacity:.5}
.chart svg g.node{cursor:pointer}
code{background:#f3f5f7;padding:1px 4px;border-radius:3px}
body.dragging{outline:4px dashed #1f5fa8;outline-offset:-4px}
"""

BODY = """
<header>
  <div><h1 id="title">kmc explore</h1> <span id="subtitle" class="muted"></span></div>
  <div class="toolbar">
    <button id="back" title="Back one step (Left arrow)">&larr; Back</button>
    <button id="forward" title="Forward one step along the path (Right arrow)">Forward &rarr;</button>
    <button id="restart" title="Start a new path at the initial state">Restart</button>
    <span class="sep"></span>
    <button id="copy-link" title="Copy a link that reopens exactly this path">Copy link</button>
    <a id="download" class="button" href="#" download title="The path up to this step as an ITF trace">Download ITF</a>
    <button id="open-trace" title="Walk an ITF trace of this model (or drop the file on the page)">
      Open trace&hellip;</button>
    <input type="file" id="open-file" accept=".json,application/json" hidden>
    <span class="sep"></span>
    <label>Random walk of <input id="walk-steps" type="number" min="1" value="20"> steps</label>
    <label title="Blank: a new seed each time; the message names the seed used">seed
      <input id="walk-seed" type="text" size="7" placeholder="random"></label>
    <label><input id="walk-stop" type="checkbox" checked> stop at a violation</label>
    <button id="walk">Walk</button>
    <span class="sep"></span>
    <button id="shortest" title="Breadth-first search for a shortest path from the initial states to this state">
      Shortest path here</button>
  </div>
  <div id="link-row" hidden><input id="link" readonly> <span id="link-note" class="muted"></span></div>
  <div id="error" class="error" role="alert" hidden><span id="error-text"></span>
    <button id="error-close" title="Dismiss">&times;</button></div>
  <div id="message" class="message info" role="status" hidden></div>
</header>
<main>
  <nav><h2>Path <span id="path-count" class="muted"></span></h2><ul id="path"></ul></nav>
  <section id="state-pane">
    <h2 id="state-title">loading&hellip;</h2>
    <div id="badges"></div>
    <div class="cols">
      <div id="actions-box"><h3>Enabled actions <span id="action-count" class="muted"></span></h3>
        <div id="init-choice"></div>
        <input id="filter" type="text" placeholder="filter the actions" hidden>
        <div id="actions"></div></div>
      <div id="props-box"><h3>Properties</h3><table id="props"></table></div>
    </div>
    <h3 id="tables-title">State</h3><div id="tables" class="tables"></div>
    <details class="box" id="changes-box" open><summary>Changed by this step</summary><div id="changes"></div></details>
    <details class="box" id="fields-box"><summary>All fields</summary><div id="fields"></div></details>
    <details class="box" id="chart-box" open><summary>Message-sequence chart of the path</summary>
      <div id="chart" class="chart"></div></details>
    <details class="box" id="config-box"><summary>Configuration</summary><div id="config"></div></details>
  </section>
</main>
"""

JS = r"""
"use strict";
const $ = (id) => document.getElementById(id);
const S = {info: null, view: null, path: [0], at: 0, seq: 0, chartKey: "", hashSet: ""};
let busyCount = 0;

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids) if (kid !== null && kid !== undefined) e.append(kid);
  return e;
}
function busy(delta) { busyCount += delta; document.body.dataset.busy = busyCount > 0 ? "yes" : "no"; }
function showError(text) { $("error-text").textContent = text; $("error").hidden = false; }
function clearError() { $("error").hidden = true; $("error-text").textContent = ""; }
function showMessage(text, kind) {
  const m = $("message"); m.textContent = text || ""; m.className = "message " + (kind || "info"); m.hidden = !text;
}

async function api(url, body) {
  busy(1);
  try {
    const init = body === undefined ? {} :
      {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
    let response;
    try { response = await fetch(url, init); }
    catch (e) { throw new Error("cannot reach the kmc explore server (is `kmc explore` still running?)"); }
    let data = null;
    try { data = await response.json(); }
    catch (e) { throw new Error(`the server answered ${response.status} ${response.statusText} without JSON`); }
    if (!response.ok || (data && data.error)) {
      throw new Error((data && data.error) || `server error ${response.status}`);
    }
    return data;
  } finally { busy(-1); }
}

// Run something the user asked for; whatever goes wrong is shown on the page.
async function act(fn) {
  clearError(); showMessage("");
  busy(1);
  try { await fn(); } catch (e) { showError(e && e.message ? e.message : String(e)); } finally { busy(-1); }
}

async function go(path, at, opts) {
  opts = opts || {};
  const seq = ++S.seq;
  const v = await api("/api/view", {path, at});
  if (seq !== S.seq) return;  // a newer request has been answered or is on its way
  S.view = v; S.path = v.path; S.at = v.at;
  render();
  if (!opts.keepHash) writeHash(opts.push);
  updateDownload();
  loadChart();
}

function hashFor(v) {
  const parts = [["model", S.info.model]];
  if (S.info.preset) parts.push(["preset", S.info.preset]);
  parts.push(["cfg", S.info.config_id], ["init", String(v.init)], ["at", String(v.at)]);
  for (const t of v.tokens) parts.push(["s", t]);
  return "#" + parts.map(([k, x]) => k + "=" + encodeURIComponent(x)).join("&");
}
function writeHash(push) {
  const h = hashFor(S.view);
  S.hashSet = h;
  if (location.hash !== h) { if (push) history.pushState(null, "", h); else history.replaceState(null, "", h); }
}
function updateDownload() {
  $("download").href = "/api/itf?path=" + S.path.slice(0, S.at + 1).join(".");
  $("download").textContent = `Download ITF (steps 0\u2013${S.at})`;
}

const KNOWN = new Set(["model", "preset", "cfg", "init", "at", "s"]);
async function loadHash() {
  const raw = location.hash.replace(/^#/, "");
  const p = new URLSearchParams(raw);
  for (const key of p.keys()) if (!KNOWN.has(key)) throw new Error(`malformed link: unknown part "${key}"`);
  const model = p.get("model"), preset = p.get("preset");
  if (model !== null && model !== S.info.model) {
    throw new Error(`this link is for model ${model}, but this server explores ${S.info.title}; ` +
      `start \`kmc explore ${model}${preset ? " --preset " + preset : ""}\` to open it`);
  }
  if (p.get("cfg") !== null && p.get("cfg") !== S.info.config_id) {
    throw new Error(`this link was made for another configuration of ${S.info.model}` +
      `${preset ? " (preset " + preset + ")" : ""}; this server explores ${S.info.title}`);
  }
  const init = p.get("init") === null ? "0" : p.get("init");
  if (!/^\d+$/.test(init)) throw new Error(`malformed link: init=${init} is not a number`);
  const atText = p.get("at");
  if (atText !== null && !/^\d+$/.test(atText)) throw new Error(`malformed link: at=${atText} is not a step number`);
  const r = await api("/api/resolve", {init: Number(init), steps: p.getAll("s")});
  const at = atText === null ? r.path.length - 1 : Number(atText);
  if (at >= r.path.length) {
    throw new Error(`malformed link: at=${at}, but the path has steps 0 to ${r.path.length - 1}`);
  }
  await go(r.path, at);
}

function verdictCell(verdict) {
  const cls = verdict === "holds" ? "v-holds" : verdict === "violated" ? "v-violated" :
    verdict === "n/a" ? "v-na" : "v-error";
  const text = verdict === "n/a" ? "\u2014 (no step yet)" : verdict;
  return el("td", {class: cls, text});
}

function renderInfo() {
  const info = S.info;
  document.title = "kmc explore: " + info.title;
  $("title").textContent = "kmc explore";
  $("subtitle").textContent = info.title;
  const rows = Object.entries(info.config).map(([k, v]) =>
    el("tr", {}, el("th", {text: k}), el("td", {text: String(v)})));
  $("config").replaceChildren(el("table", {}, ...rows));
}

function renderPath(v) {
  const list = $("path");
  list.replaceChildren();
  v.steps.forEach((s, k) => {
    const cls = [k === v.at ? "current" : "", k > v.at ? "future" : "", s.violated.length ? "bad" : ""]
      .join(" ").trim();
    const tip = (s.violated.length ? "violates " + s.violated.join(", ") + ". " : "") +
      (s.in_bounds ? "" : "Outside the model's bounds. ") + "Click to go to this step.";
    list.append(el("li", {class: cls, title: tip, dataset: {step: String(k)}, onclick: () => act(() => go(S.path, k))},
      el("span", {class: "num", text: k + "."}), el("span", {class: "lbl", text: s.label}),
      s.violated.length ? el("span", {class: "mark bad", text: "\u2717"}) : null,
      s.in_bounds ? null : el("span", {class: "mark oob", text: "\u2298"})));
  });
  $("path-count").textContent = `(${v.steps.length - 1} steps; at step ${v.at})`;
  const cur = list.querySelector("li.current");
  if (cur) cur.scrollIntoView({block: "nearest"});
}

function renderBadges(st) {
  const badges = [];
  const badInv = st.invariants.filter((p) => p.verdict === "violated");
  const badStep = st.step_properties.filter((p) => p.verdict === "violated");
  const errors = [...st.invariants, ...st.step_properties].filter((p) => p.verdict.startsWith("error"));
  for (const p of badInv) badges.push(el("span", {class: "badge bad", text: `\u2717 ${p.name} violated`}));
  for (const p of badStep) badges.push(el("span", {class: "badge bad", text: `\u2717 this step violates ${p.name}`}));
  for (const p of errors) badges.push(el("span", {class: "badge bad", text: `! ${p.name}: ${p.verdict}`}));
  if (!badInv.length && !badStep.length && !errors.length && st.invariants.length + st.step_properties.length) {
    badges.push(el("span", {class: "badge good", text: "\u2713 every invariant and step property holds here"}));
  }
  if (st.deadlock) badges.push(el("span", {class: "badge warn", id: "deadlock", text: "no successor (deadlock)"}));
  if (!st.in_bounds) {
    badges.push(el("span", {class: "badge warn", id: "out-of-bounds",
      text: "outside the model's bounds (within_bounds is false: the engines do not expand this state)"}));
  }
  $("badges").replaceChildren(...badges);
}

function renderProps(st) {
  const rows = [el("tr", {}, el("th", {text: "property"}), el("th", {text: "kind"}), el("th", {text: "here"}),
    el("th", {text: "says"}))];
  for (const p of st.invariants) {
    rows.push(el("tr", {dataset: {prop: p.name, verdict: p.verdict}}, el("td", {text: p.name}),
      el("td", {text: "invariant"}), verdictCell(p.verdict), el("td", {text: p.doc})));
  }
  for (const p of st.step_properties) {
    rows.push(el("tr", {dataset: {prop: p.name, verdict: p.verdict}}, el("td", {text: p.name}),
      el("td", {text: "step"}), verdictCell(p.verdict), el("td", {text: p.doc})));
  }
  for (const p of st.liveness) {
    rows.push(el("tr", {dataset: {prop: p.name, verdict: "not checked"}}, el("td", {text: p.name}),
      el("td", {text: p.kind}), el("td", {class: "v-live", text: "not checked here",
        title: "a liveness property is about whole behaviours: use kmc check"}), el("td", {text: p.doc})));
  }
  if (rows.length === 1) rows.push(el("tr", {}, el("td", {colspan: "4", class: "muted", text: "(no properties)"})));
  $("props").replaceChildren(...rows);
}

function actionButton(s) {
  const cls = ["act", s.violates.length ? "violates" : "", s.in_bounds ? "" : "oob", s.on_path ? "on-path" : ""];
  const tips = [];
  if (s.on_path) tips.push("the next step on the path");
  if (s.violates.length) tips.push("leads to a violation of " + s.violates.join(", "));
  if (!s.in_bounds) tips.push("leads outside the model's bounds");
  if (s.stutter) tips.push("changes nothing");
  return el("button", {class: cls.join(" ").trim(), title: tips.join("; ") || null,
      dataset: {index: String(s.index), label: s.label}, onclick: () => act(() => take(s.index))},
    s.label,
    s.violates.length ? el("span", {class: "tag", text: "\u2717 " + s.violates.join(", ")}) : null,
    s.in_bounds ? null : el("span", {class: "tag oobt", text: "\u2298 bounds"}),
    s.stutter ? el("span", {class: "tag", text: "(no change)"}) : null);
}

function renderActions(v) {
  const st = v.state, succ = st.successors;
  $("action-count").textContent = `(${succ.length})`;
  const choice = $("init-choice");
  choice.replaceChildren();
  if (v.at === 0 && S.info.inits > 1) {
    const pick = (e) => act(() => go([Number(e.target.value)], 0, {push: true}));
    const select = el("select", {id: "init", onchange: pick});
    for (let i = 0; i < S.info.inits; i++) {
      select.append(el("option", {value: String(i), selected: i === v.init, text: `initial state #${i}`}));
    }
    choice.append(el("label", {}, `${S.info.inits} initial states: `, select));
  }
  const box = $("actions");
  box.replaceChildren();
  if (!succ.length) {
    box.append(el("p", {class: "muted", text: "No enabled action: this state has no successor."}));
  }
  const groups = new Map();
  for (const s of succ) { if (!groups.has(s.name)) groups.set(s.name, []); groups.get(s.name).push(s); }
  const open = succ.length <= 40 || groups.size === 1;
  for (const [name, items] of groups) {
    const bad = items.filter((s) => s.violates.length).length;
    const summary = el("summary", {}, name, " ", el("span", {class: "count", text: `(${items.length})`}),
      bad ? el("span", {class: "mark bad", text: ` \u2717${bad}`, title: `${bad} lead to a violation`}) : null);
    box.append(el("details", {class: "group", open: open || items.some((s) => s.on_path), dataset: {action: name}},
      summary, el("div", {class: "buttons"}, ...items.map(actionButton))));
  }
  const filter = $("filter");
  filter.hidden = succ.length <= 20;
  applyFilter();
}

function applyFilter() {
  const text = $("filter").hidden ? "" : $("filter").value.trim().toLowerCase();
  for (const group of document.querySelectorAll("#actions details.group")) {
    let shown = 0;
    for (const b of group.querySelectorAll("button.act")) {
      const ok = !text || b.dataset.label.toLowerCase().includes(text);
      b.hidden = !ok; if (ok) shown++;
    }
    group.hidden = shown === 0;
    if (text && shown) group.open = true;
  }
}

function tableElement(t) {
  const hl = new Set(t.highlight.map(([r, c]) => r + ":" + c));
  const head = el("tr", {}, ...t.columns.map((c) => el("th", {text: c})));
  const rows = t.rows.map((row, r) => el("tr", {}, ...row.map((cell, c) =>
    el("td", {class: hl.has(r + ":" + c) ? "hl" : null, text: cell}))));
  return el("div", {class: "table"}, el("h4", {text: t.title}), el("table", {}, head, ...rows));
}

function fieldsTable(st) {
  const rows = st.fields.map((f) => el("tr", {}, el("th", {text: f.name}),
    el("td", {class: f.changed ? "hl" : null, text: f.value})));
  return el("table", {class: "fields"}, el("tr", {}, el("th", {text: "field"}), el("th", {text: "value"})), ...rows);
}

function renderState(v) {
  const st = v.state;
  const title = v.at === 0 ? `State 0 of ${v.steps.length - 1}: the initial state` :
    `State ${v.at} of ${v.steps.length - 1}: after ${st.label}`;
  $("state-title").textContent = title;
  renderBadges(st);
  renderProps(st);
  renderActions(v);
  if (st.tables.length) {
    $("tables-title").textContent = "State (the model's tables; yellow: changed by this step)";
    $("tables").replaceChildren(...st.tables.map(tableElement));
    $("fields").replaceChildren(fieldsTable(st));
    $("fields-box").hidden = false;
  } else {
    $("tables-title").textContent = "State (yellow: changed by this step)";
    $("tables").replaceChildren(fieldsTable(st));
    $("fields-box").hidden = true;
  }
  if (v.at === 0) {
    $("changes").replaceChildren(el("p", {class: "muted", text: "This is an initial state."}));
  } else if (!st.changes.length) {
    $("changes").replaceChildren(el("p", {class: "muted", text: "Nothing changed (a stuttering step)."}));
  } else {
    const rows = st.changes.map((c) => el("tr", {}, el("th", {text: c.path}), el("td", {text: c.before}),
      el("td", {class: "hl", text: c.after})));
    $("changes").replaceChildren(el("table", {}, el("tr", {}, el("th", {text: "field"}), el("th", {text: "before"}),
      el("th", {text: "after"})), ...rows));
  }
}

function render() {
  const v = S.view;
  renderPath(v);
  renderState(v);
  $("back").disabled = v.at === 0;
  $("forward").disabled = v.at >= v.steps.length - 1;
  document.querySelector("nav").style.top = document.querySelector("header").offsetHeight + 8 + "px";
  document.body.dataset.at = String(v.at);
  document.body.dataset.length = String(v.steps.length);
}

async function loadChart() {
  const chart = $("chart");
  if (S.view.chart_too_long) {
    S.chartKey = "";
    chart.replaceChildren(el("p", {class: "muted", text: `The path has ${S.path.length} states: the chart is drawn ` +
      `for paths of at most ${S.info.limits.chart}.`}));
    return;
  }
  const key = S.path.join(".");
  if (key === S.chartKey) { markChart(); return; }
  if (!$("chart-box").open) return;  // drawn when opened
  S.chartKey = key;
  chart.classList.add("loading");
  try {
    const r = await api("/api/chart", {path: S.path});
    if (key !== S.path.join(".")) return;
    chart.innerHTML = r.svg;
    markChart();
  } catch (e) {
    if (key === S.path.join(".")) {
      S.chartKey = "";
      chart.replaceChildren(el("p", {class: "error", text: "The chart cannot be drawn: " + e.message}));
    }
  } finally { chart.classList.remove("loading"); }
}

// Highlight the current step's row in the chart and make every row a link to its step.
function markChart() {
  const svg = $("chart").querySelector("svg");
  if (!svg) return;
  svg.querySelectorAll(".cur-row").forEach((n) => n.remove());
  let box = null;
  for (const g of svg.querySelectorAll("g.node")) {
    const t = g.querySelector("title");
    const m = t ? /^(?:r(\d+)_\d+|t(\d+))$/.exec(t.textContent) : null;
    if (!m) continue;
    const k = Number(m[1] !== undefined ? m[1] : m[2]);
    if (!g.dataset.wired) {
      g.dataset.wired = "1"; g.dataset.step = String(k);
      g.addEventListener("click", () => act(() => go(S.path, k)));
    }
    if (k === S.at) {
      const b = g.getBBox();
      box = box ? {y0: Math.min(box.y0, b.y), y1: Math.max(box.y1, b.y + b.height)} : {y0: b.y, y1: b.y + b.height};
    }
  }
  const graph = svg.querySelector("g.graph");
  if (!box || !graph) return;
  const all = graph.getBBox();
  const rect = document.createElementNS("http://www.w3.org/2000/svg", "rect");
  rect.setAttribute("class", "cur-row");
  rect.setAttribute("x", all.x); rect.setAttribute("width", all.width);
  rect.setAttribute("y", box.y0 - 3); rect.setAttribute("height", box.y1 - box.y0 + 6);
  rect.setAttribute("fill", "#d6e6fb");
  graph.insertBefore(rect, graph.querySelector("g"));
  const c = $("chart"), rb = rect.getBoundingClientRect(), cb = c.getBoundingClientRect();
  if (rb.top < cb.top || rb.bottom > cb.bottom) c.scrollTop += rb.top - cb.top - 40;
}

async function take(index) {
  const keep = S.path[S.at + 1] === index;  // the next step on the path: keep the rest of it
  const path = keep ? S.path : S.path.slice(0, S.at + 1).concat([index]);
  await go(path, S.at + 1, {push: !keep});
}

async function openFile(file) {
  if (!file) return;
  const text = await file.text();
  let doc;
  try { doc = JSON.parse(text); } catch (e) { throw new Error(`${file.name} is not JSON: ${e.message}`); }
  const r = await api("/api/open", {name: file.name, doc});
  await go(r.path, r.at, {push: true});
  showMessage(r.message);
}

function wire() {
  $("error-close").addEventListener("click", clearError);
  $("back").addEventListener("click", () => act(() => go(S.path, Math.max(0, S.at - 1))));
  $("forward").addEventListener("click", () => act(() => go(S.path, Math.min(S.path.length - 1, S.at + 1))));
  $("restart").addEventListener("click", () => act(() => go([S.path[0]], 0, {push: true})));
  $("copy-link").addEventListener("click", () => act(async () => {
    const url = location.href;
    $("link").value = url; $("link-row").hidden = false;
    try { await navigator.clipboard.writeText(url); $("link-note").textContent = "copied to the clipboard"; }
    catch (e) {
      $("link").select(); $("link-note").textContent = "copy this link (the clipboard is not available here)";
    }
  }));
  $("open-trace").addEventListener("click", () => $("open-file").click());
  $("open-file").addEventListener("change", () => act(async () => {
    const file = $("open-file").files[0];
    try { await openFile(file); } finally { $("open-file").value = ""; }
  }));
  document.addEventListener("dragover", (e) => { e.preventDefault(); document.body.classList.add("dragging"); });
  document.addEventListener("dragleave", () => document.body.classList.remove("dragging"));
  document.addEventListener("drop", (e) => {
    e.preventDefault(); document.body.classList.remove("dragging");
    const file = e.dataTransfer && e.dataTransfer.files[0];
    if (file) act(() => openFile(file));
  });
  $("walk").addEventListener("click", () => act(async () => {
    const steps = Number($("walk-steps").value);
    const most = S.info.limits.walk;
    if (!Number.isInteger(steps) || steps < 1 || steps > most) {
      throw new Error(`random walk: give a number of steps from 1 to ${most}`);
    }
    const seed = $("walk-seed").value.trim();
    if (seed && !/^\d+$/.test(seed)) {
      throw new Error("random walk: the seed is a whole number (or blank for a new one)");
    }
    const r = await api("/api/walk", {path: S.path, at: S.at, steps, seed: seed || null,
      stop_on_violation: $("walk-stop").checked});
    await go(r.path, r.at, {push: true});
    showMessage(r.message);
  }));
  $("shortest").addEventListener("click", () => act(async () => {
    showMessage("searching for a shortest path (breadth-first)\u2026");
    const r = await api("/api/shortest", {path: S.path, at: S.at});
    if (!r.found) { showMessage(r.message, "warn"); return; }
    await go(r.path, r.at, {push: true});
    showMessage(r.message);
  }));
  $("filter").addEventListener("input", applyFilter);
  $("chart-box").addEventListener("toggle", () => { if ($("chart-box").open && S.view) loadChart(); });
  document.addEventListener("keydown", (e) => {
    if (e.target.closest && e.target.closest("input,textarea,select") || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === "ArrowLeft" && S.at > 0) { e.preventDefault(); $("back").click(); }
    if (e.key === "ArrowRight" && S.at < S.path.length - 1) { e.preventDefault(); $("forward").click(); }
  });
  window.addEventListener("popstate", () => {
    if (!S.info || location.hash === S.hashSet) return;
    act(async () => {
      try { await loadHash(); } catch (e) { throw new Error("This link does not open here: " + e.message); }
    });
  });
  window.addEventListener("error", (e) => showError("page error: " + e.message));
  window.addEventListener("unhandledrejection",
    (e) => showError("page error: " + ((e.reason && e.reason.message) || e.reason)));
}

async function start() {
  wire();
  busy(1);
  try {
    try { S.info = await api("/api/model"); } catch (e) { showError(e.message); return; }
    renderInfo();
    if (location.hash.length > 1) {
      try { await loadHash(); }
      catch (e) {
        showError("This link does not open here: " + e.message + ". Showing the initial state instead.");
        try { await go([0], 0, {keepHash: true}); } catch (e2) { showError(e2.message); }
      }
    } else if (S.info.start) {
      await act(async () => { await go(S.info.start.path, S.info.start.at); showMessage(S.info.start.message); });
    } else {
      await act(() => go([0], 0));
    }
  } finally {
    document.body.dataset.ready = "yes";
    busy(-1);
  }
}
start();
"""

PAGE = (
    "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
    "<meta name='viewport' content='width=device-width, initial-scale=1'><title>kmc explore</title>"
    f"<style>{CSS}</style></head>\n<body data-busy='yes' data-ready='no'>{BODY}<script>{JS}</script></body></html>\n"
)
