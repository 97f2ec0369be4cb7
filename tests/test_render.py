"""Diagrams of traces, the HTML report, and the abstract state graph."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import graphviz
import pytest
from conftest import ROOT, TESTS
from kmc.checker.result import Trace
from kmc.checker.traces.chart import chart_of, msc_graph, render
from kmc.checker.traces.itf import read_trace, trace_to_itf, write_trace
from kmc.checker.traces.replay import replay

TRACES = sorted((ROOT / "counterexamples").glob("*/*.itf.json"))
TRUNCATE = ROOT / "counterexamples" / "replication" / "truncate-to-hw-StrongIsr.itf.json"


@pytest.mark.parametrize("trace", TRACES, ids=[t.name for t in TRACES])
def test_checked_in_diagrams_are_up_to_date(trace: Path) -> None:
    """Every counterexample has its SVG beside it; `make diagrams` regenerates them."""
    svg = trace.with_name(trace.name.replace(".itf.json", ".svg"))
    assert svg.exists(), f"{svg.name} is missing: run `make diagrams`"
    done = replay(read_trace(trace))
    chart = chart_of(done)
    assert_labels_clear_of_arrows(chart)
    fresh = render(chart, "svg")
    assert fresh == svg.read_bytes(), f"{svg.name} is out of date: run `make diagrams`"


Layout = tuple[dict[str, dict], dict[str, tuple[float, float, float, float]], dict[str, tuple[float, float]], list]


def _laid_out(graph: Any) -> Layout:
    """The chart as graphviz laid it out: its nodes by name (their attributes), those with text as
    (x0, y0, x1, y1) boxes in points, its points, and its edges as (tail, head, attributes)."""
    data = json.loads(render(graph, "json"))
    objects = data.get("objects", [])
    boxes, points = {}, {}
    for o in objects:
        x, y = (float(v) for v in o["pos"].split(","))
        if o.get("shape") == "point":
            points[o["name"]] = (x, y)
            continue
        w, h = float(o["width"]) * 36, float(o["height"]) * 36
        boxes[o["name"]] = (x - w, y - h, x + w, y + h)
    edges = [(objects[e["tail"]]["name"], objects[e["head"]]["name"], e) for e in data.get("edges", [])]
    return {o["name"]: o for o in objects}, boxes, points, edges


def assert_labels_clear_of_arrows(graph: Any) -> None:
    """No message's or loop's arrow runs through a node with text, and no two such nodes overlap."""
    _nodes, boxes, points, edges = _laid_out(graph)
    assert boxes and points
    for a, b, attrs in edges:
        if attrs.get("class") not in ("msg", "loop"):
            continue
        (px, py), (qx, qy) = points[a], points[b]
        for name, (x0, y0, x1, y1) in boxes.items():
            for t in range(101):  # points along the straight arrow
                x, y = px + (qx - px) * t / 100, py + (qy - py) * t / 100
                assert not (x0 < x < x1 and y0 < y < y1), f"arrow {a}->{b} runs through {name}"
    named = list(boxes.items())
    for i, (m, (x0, y0, x1, y1)) in enumerate(named):
        for n, (u0, v0, u1, v1) in named[i + 1 :]:
            assert not (x0 < u1 and u0 < x1 and y0 < v1 and v0 < y1), f"{m} overlaps {n}"


def test_chart_marks_the_violating_step() -> None:
    done = replay(read_trace(TRUNCATE))
    nodes, boxes, points, edges = _laid_out(chart_of(done))
    marker = [name for name, node in nodes.items() if node.get("class") == "violation"]
    assert marker == ["v9"] and nodes["v9"]["label"] == "StrongIsr violated"
    _x0, y0, x1, y1 = boxes["v9"]
    lanes_left = min(x for name, (x, _y) in points.items() if name.startswith("r"))
    assert y0 < points["r9_1"][1] < y1 and x1 < lanes_left  # left of the lanes, on row 9
    assert [attrs.get("class") for _a, _b, attrs in edges].count("band") == 1
    unmarked_nodes, _boxes, _points, unmarked_edges = _laid_out(msc_graph(done.model, done.trace, "no property"))
    classes = {item.get("class") for item in [*unmarked_nodes.values(), *(e for _a, _b, e in unmarked_edges)]}
    assert classes <= {None, "msg", "msg-label"}


def test_report_of_a_model_without_drawing_shows_the_full_state(kmc, toy: str, tmp_path: Path) -> None:
    kmc("check", f"{toy}:TwoPhaseCommit", "-p", "buggy", "--out", tmp_path)
    trace = tmp_path / "buggy-Consistent.itf.json"
    page = tmp_path / "report.html"
    assert kmc("render", trace, "-o", page)[0] == 0
    text = page.read_text()
    last = len(read_trace(trace)["states"]) - 1
    assert f'data-start="{last}"' in text
    panel = text.split(f'<div class="panel" data-step="{last}">')[1].split('<div class="panel"')[0]
    assert f"Consistent</b> (invariant) fails after step {last} of {last}, <code>" in text
    assert "full state" in panel and panel.count("<tr") > panel.count("<tr class=hl>") > 0
    for var in read_trace(trace)["vars"]:
        assert f"<th>{var}" in panel


def test_replication_chart_has_lanes_steps_and_tables() -> None:
    done = replay(read_trace(TRUNCATE))
    chart = msc_graph(done.model, done.trace, "t")
    dot = chart.source
    labels = [node.get("label", "") for node in _laid_out(chart)[0].values()]
    for lane in ("producer", "controller", "broker 0", "broker 1"):
        assert lane in labels
    for k in range(len(done.trace)):
        assert any(label.startswith(f"{k}. ") for label in labels)
    assert "9. BecomeFollower(replica=1, leader=0, leaderEpoch=2)" in dot
    assert "LeaderAndIsr(epoch 2)" in dot
    assert "replicas (log = offset:record/epoch)" in dot and "ZooKeeper" in dot
    assert 'BGCOLOR="#ffe08a">(empty)<' in dot  # broker 1's truncated log, highlighted as changed


@pytest.mark.parametrize(
    ("suffix", "magic"),
    [
        (".svg", b"<?xml"),
        (".png", b"\x89PNG"),
        (".pdf", b"%PDF"),
        (".dot", b"digraph msc"),
        (".html", b"<!DOCTYPE html>"),
    ],
)
def test_render_formats(kmc, tmp_path: Path, suffix: str, magic: bytes) -> None:
    out = tmp_path / f"trace{suffix}"
    code, _, err = kmc("render", TRUNCATE, "-o", out)
    assert code == 0, err
    assert out.read_bytes().startswith(magic)


def test_render_rejects_unknown_format(kmc, tmp_path: Path) -> None:
    code, _, err = kmc("render", TRUNCATE, "-o", tmp_path / "trace.gif")
    assert code == 2 and "use one of" in err


def test_model_without_drawing_shows_changed_fields(kmc, toy: str, tmp_path: Path) -> None:
    kmc("check", f"{toy}:TwoPhaseCommit", "-p", "buggy", "--out", tmp_path)
    out = tmp_path / "chart.dot"
    assert kmc("render", tmp_path / "buggy-Consistent.itf.json", "-o", out)[0] == 0
    dot = out.read_text()
    nodes = _laid_out(graphviz.Source(dot))[0]
    assert "system" in [node.get("label") for node in nodes.values()]  # the one lane
    assert "participants[" in dot and "coordinator" in dot


def _lasso(tmp_path: Path) -> Path:
    from toy_models import Ring

    model = Ring.build(None, {"n": 3})
    trace = Trace(
        states=[0, 1, 2], actions=[None, *[a for a, _ in (next(iter(model.successors(s))) for s in (0, 1))]], loop=0
    )
    spec = tmp_path / "ring_props.py"  # the lasso's property, found again through the trace's spec_files
    spec.write_text(
        "from kmc.checker import eventually\n\n\n@eventually\ndef Progress(s) -> bool:\n"
        '    """The counter reaches a value it never takes."""\n    return s == 99\n'
    )
    doc = trace_to_itf(
        trace,
        model="ring",
        config={"n": 3, "limit": 1000},
        preset=None,
        property="Progress",
        engine="bfs",
        extra_meta={"model_ref": f"{TESTS / 'toy_models.py'}:Ring", "spec_files": [str(spec)]},
    )
    return write_trace(tmp_path / "ring.itf.json", doc)


def test_lasso_replays_and_draws_its_loop(kmc, tmp_path: Path) -> None:
    path = _lasso(tmp_path)
    assert json.loads(path.read_text())["loop"] == 0
    code, out, _ = kmc("replay", path)
    assert code == 0 and "loop back to state 0" in out
    done = replay(read_trace(path))
    chart = chart_of(done)
    dot = chart.source
    assert "after step 2, back to step 0" in dot and "repeat forever" in dot and "(loop starts here)" in dot
    nodes, _boxes, _points, edges = _laid_out(chart)
    assert [attrs.get("class") for _a, _b, attrs in edges].count("loop") == 1
    assert [node["label"] for node in nodes.values() if node.get("class") == "violation"] == [
        "Progress violated\\nloop starts here"
    ]
    assert_labels_clear_of_arrows(chart)
    page = tmp_path / "ring.html"
    assert kmc("render", path, "-o", page)[0] == 0
    text = page.read_text()
    assert 'data-start="0"' in text and '<li data-step="0" class="loop-start in-loop' in text
    assert 'class="loop-back" data-goto="0"' in text and "steps 0 to 2 form a loop the run repeats forever" in text
    code, out, _ = kmc("show", path)
    assert "<- loop starts here" in out and "Back to state 0" in out


def test_broken_lasso_does_not_replay(kmc, tmp_path: Path) -> None:
    path = _lasso(tmp_path)
    doc = json.loads(path.read_text())
    doc["loop"] = 1
    path.write_text(json.dumps(doc))
    code, _, err = kmc("replay", path)
    assert code == 2 and "no step back to state 1" in err


def test_graph_counts_every_transition(kmc, tmp_path: Path) -> None:
    out = tmp_path / "leaders.dot"
    code, stdout, err = kmc(
        "graph", "replication", "-p", "kip-320", "--field", "quorumState.leader", "--self-loops", "-o", out
    )
    assert code == 0, err
    dot = out.read_text()
    nodes, _boxes, _points, edges = _laid_out(graphviz.Source(dot))
    assert {node["label"] for node in nodes.values()} == {"-1", "0", "1"}
    counts = [int(attrs["label"].split("×")[1]) for _a, _b, attrs in edges]
    # every successor computed in the complete search, i.e. TLC's "generated" minus the initial state
    assert sum(counts) == 11733 - 1
    assert "5,973 states" in stdout
    assert "peripheries=2" in dot  # the initial value, "-1" (no leader yet), is marked


def test_graph_bad_field(kmc, tmp_path: Path) -> None:
    code, _, err = kmc("graph", "replication", "--field", "quorumState.nope", "-o", tmp_path / "g.svg")
    assert code == 2 and "no field 'quorumState.nope'" in err


def test_check_render_writes_charts_and_report(kmc, tmp_path: Path) -> None:
    code, _, _ = kmc(
        "check", "replication", "-p", "kip-101", "-P", "StrongIsr", "--out", tmp_path / "t", "--render", tmp_path / "r"
    )
    assert code == 1
    assert (tmp_path / "r" / "kip-101-StrongIsr.svg").read_bytes().startswith(b"<?xml")
    report = (tmp_path / "r" / "kip-101-report.html").read_text()
    assert "distinct_states" in report and "StrongIsr" in report and "<svg" in report


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("headless Chromium is needed: `make test` installs Debian's chromium package")


def test_html_report_shows_every_step_in_chromium(kmc, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    assert kmc("render", TRUNCATE, "-o", page)[0] == 0
    text = page.read_text()
    # self-contained: nothing is fetched (links to the bug tracker are only followed when clicked)
    assert not re.search(r"<(script|img|link|iframe)[^>]*\b(src|href)=|url\(|@import", text)
    assert '<a class="bug-key" href="https://issues.apache.org/jira/browse/KAFKA-1211">KAFKA-1211</a>' in text
    done = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    dom = done.stdout
    assert 'data-ready="yes"' in dom, done.stderr[-2000:]
    trace = read_trace(TRUNCATE)
    steps = len(trace["states"])
    for k in range(steps):
        assert f'<li data-step="{k}"' in dom
        assert '<div class="panel' in dom and f'data-step="{k}"><h3>Step {k} of {steps - 1}' in dom
    assert f'<li data-step="{steps - 1}" class="violating current">' in dom  # opened at the violation
    assert dom.count('class="panel current"') == 1


def test_show_marks_the_violating_state(kmc) -> None:
    code, out, _ = kmc("show", TRUNCATE)
    marked = [line for line in out.splitlines() if "violated here" in line]
    assert code == 0 and marked == [
        "State 9: BecomeFollower(replica=1, leader=0, leaderEpoch=2)  <- StrongIsr violated here"
    ]
