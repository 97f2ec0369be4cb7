"""The demo's report and chart in a real browser (headless Chromium from Debian via Playwright):
the report opens at the violating step and explains the bug (the JIRA it reproduces, linked, with
its releases and fixed preset; the property's docstring; the violating step and the model's own
sentence on the lost record), folds the configuration after the trace, writes sequences as lists,
and scrolls a wide chart inside its box; the chart's arrows never run through a label. Screenshots
are kept under kmc-out/report/; with KMC_DOCS_SCREENSHOTS=1 the last test also retakes those of
docs/diagrams.md."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from kmc.checker.cli.app import main
from kmc.checker.properties import select_properties
from kmc.checker.registry import load_model_class
from kmc.checker.traces.itf import read_trace

OUT = ROOT / "kmc-out/report"
DOCS = ROOT / "docs"
LASSO = ROOT / "counterexamples/group/slow-member-RebalanceCompletes.itf.json"
KRAFT = ROOT / "counterexamples/kraft-replication/v3.5-AcknowledgedWriteNeverLost.itf.json"


def run_kmc(*args: str | Path) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main([str(a) for a in args])


@pytest.fixture(scope="module")
def demo() -> dict[str, Path]:
    """The demo's counterexample checked afresh, rendered to HTML and SVG."""
    traces = OUT / "traces"
    code = run_kmc(
        "check",
        "replication",
        "--preset",
        "truncate-to-hw",
        "--property",
        "StrongIsr",
        "--out",
        traces,
        "--no-progress",
    )
    assert code == 1
    trace = traces / "truncate-to-hw-StrongIsr.itf.json"
    files = {"trace": trace, "html": OUT / "demo.html", "svg": OUT / "demo.svg"}
    for fmt in ("html", "svg"):
        assert run_kmc("render", trace, "-o", files[fmt]) == 0
    return files


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 950})
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert not errors, errors


def docstring(prop: str) -> str:
    doc = select_properties(load_model_class("replication"), (), [prop]).invariants[0].doc
    return " ".join(doc.split())


def test_report_opens_at_the_violation(page: Any, demo: dict[str, Path]) -> None:
    states = read_trace(demo["trace"])["states"]
    last = len(states) - 1
    page.goto(demo["html"].as_uri())
    page.wait_for_function("document.querySelector('.trace').dataset.ready === 'yes'")
    current = page.locator(".panel.current")
    assert current.count() == 1 and current.get_attribute("data-step") == str(last)
    assert page.locator(".steps li.current").get_attribute("data-step") == str(last)
    assert current.is_visible() and current.locator("h3").first.inner_text().startswith(f"Step {last} of {last}")
    banner = page.locator(".violation").first
    assert banner.is_visible()
    text = " ".join(banner.inner_text().split())
    assert "StrongIsr" in text and f"step {last}" in text and docstring("StrongIsr") in text
    # the full state at the violating step: every variable, with what the step changed highlighted
    full = current.locator("table.state")
    assert full.is_visible()
    names = full.locator("th").all_inner_texts()
    for var in read_trace(demo["trace"])["vars"]:
        assert any(n == var or n.startswith((var + ".", var + "[")) for n in names), var
    assert full.locator("tr.hl th").all_inner_texts() == ["replicaLog[1]", "replicaState[1].leaderEpoch"]
    assert current.locator("table.state tr:not(.hl)").count() > 5  # the unchanged fields are there too
    page.screenshot(path=str(OUT / "demo-report.png"), full_page=False)


CHART_GEOMETRY = """() => {
  const svg = document.querySelector('svg');
  const boxes = [...svg.querySelectorAll('text')].filter((t) => t.textContent.trim()).map((t) => {
    const r = t.getBoundingClientRect();
    const group = t.closest('g.node, g.edge')?.id || '';
    return {text: t.textContent, group, x0: r.left, x1: r.right, y0: r.top, y1: r.bottom};
  });
  // an arrow is an edge with an arrowhead (lifelines and backgrounds have none)
  const arrows = [...svg.querySelectorAll('g.edge')].filter((g) => g.querySelector('polygon')).map((g) => {
    const path = g.querySelector('path'), m = path.getScreenCTM(), n = path.getTotalLength(), points = [];
    for (let d = 0; d <= n; d += 1) {
      const p = path.getPointAtLength(d), q = new DOMPoint(p.x, p.y).matrixTransform(m);
      points.push([q.x, q.y]);
    }
    return {id: g.id, title: g.querySelector('title').textContent, points};
  });
  return {boxes, arrows};
}"""


ROW_CENTRES = r"""(k) => [...document.querySelectorAll('g.node')]
  .filter((g) => (/^r(\d+)_\d+$/.exec(g.querySelector('title').textContent) || [])[1] === String(k))
  .map((g) => { const r = g.getBoundingClientRect(); return r.top + r.height / 2; })"""


def test_without_javascript_every_step_is_shown(browser: Any, demo: dict[str, Path]) -> None:
    """A viewer that blocks scripts (an archived CI artifact) still shows every state."""
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(demo["html"].as_uri())
        panels = page.locator(".panel")
        assert panels.count() == len(read_trace(demo["trace"])["states"])
        assert all(panels.nth(k).is_visible() for k in range(panels.count()))
    finally:
        context.close()


def chart_clashes(page: Any) -> tuple[list[str], list[str], int, int]:
    """(arrows through labels, labels overlapping labels of another element, #arrows, #labels)."""
    geometry = page.evaluate(CHART_GEOMETRY)
    boxes, arrows = geometry["boxes"], geometry["arrows"]
    through = [
        f"{a['title']} through {b['text']!r}"
        for a in arrows
        for b in boxes
        if any(b["x0"] < x < b["x1"] and b["y0"] < y < b["y1"] for x, y in a["points"])
    ]
    overlapping = [
        f"{b['text']!r} on {c['text']!r}"
        for i, b in enumerate(boxes)
        for c in boxes[i + 1 :]
        if b["group"] != c["group"]
        and b["x0"] < c["x1"]
        and c["x0"] < b["x1"]
        and b["y0"] < c["y1"]
        and c["y0"] < b["y1"]
    ]
    return through, overlapping, len(arrows), len(boxes)


def test_chart_arrows_never_cross_labels(page: Any, demo: dict[str, Path]) -> None:
    page.goto(demo["svg"].as_uri())
    through, overlapping, arrows, labels = chart_clashes(page)
    assert arrows >= 5 and labels > 50  # the demo's five messages, and its tables
    assert through == []
    assert overlapping == []
    marker = page.locator("g.violation")
    assert marker.count() == 1 and "StrongIsr violated" in " ".join(marker.locator("text").all_text_contents())
    last = len(read_trace(demo["trace"])["states"]) - 1
    row = page.evaluate(ROW_CENTRES, last)
    box = marker.bounding_box()
    assert row and all(box["y"] < y < box["y"] + box["height"] for y in row)  # on the violating step's row
    size = page.evaluate(
        "(() => { const r = document.querySelector('svg').getBoundingClientRect(); "
        "return {width: Math.ceil(r.width), height: Math.ceil(r.height)}; })()"
    )
    page.set_viewport_size(size)  # the whole chart in one screenshot
    page.screenshot(path=str(OUT / "demo-chart.png"))


def test_lasso_report_and_chart_show_the_loop(page: Any, tmp_path: Path) -> None:
    loop = read_trace(LASSO)["loop"]
    html, svg = tmp_path / "lasso.html", tmp_path / "lasso.svg"
    assert run_kmc("render", LASSO, "-o", html) == 0 and run_kmc("render", LASSO, "-o", svg) == 0
    page.goto(html.as_uri())
    page.wait_for_function("document.querySelector('.trace').dataset.ready === 'yes'")
    assert page.locator(".panel.current").get_attribute("data-step") == str(loop)
    assert page.locator(".steps li.loop-start").get_attribute("data-step") == str(loop)
    assert "repeats forever" in page.locator(".panel.current").inner_text()
    assert "back to step" in page.locator(".steps li.loop-back").inner_text()
    page.goto(svg.as_uri())
    through, overlapping, _arrows, _labels = chart_clashes(page)
    assert through == [] and overlapping == []
    loop_arrow = page.locator("g.edge.loop")
    assert loop_arrow.count() == 1 and "repeat forever" in " ".join(
        page.locator("g.loop-label text").all_text_contents()
    )


def opened(page: Any, report: Path) -> None:
    page.goto(report.as_uri())
    page.wait_for_function("document.querySelector('.trace').dataset.ready === 'yes'")


def texts(page: Any, selector: str) -> list[str]:
    """The inner text of every element the selector finds, its whitespace as one space."""
    return [" ".join(t.split()) for t in page.locator(selector).all_inner_texts()]


CONFIG_PLACE = """() => {
  const config = document.querySelectorAll('details.config'), trace = document.querySelector('.trace');
  const chart = document.querySelector('details.msc');
  const after = (a, b) => Boolean(a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING);
  return {count: config.length, open: config[0].open, afterTrace: after(trace, config[0]),
          afterChart: after(chart, config[0]), shownRows: [...config[0].querySelectorAll('tr')]
            .filter((tr) => tr.checkVisibility()).length};
}"""


def test_report_explains_the_kafka_bug(page: Any, demo: dict[str, Path]) -> None:
    """truncate-to-hw's StrongIsr: KAFKA-1211, linked, its releases and the preset that fixes it, the
    property's meaning, the violating step in a sentence and the model's own on the lost record."""
    opened(page, demo["html"])
    link = page.locator(".bug a.bug-key")
    assert link.count() == 1 and link.inner_text() == "KAFKA-1211"
    assert link.get_attribute("href") == "https://issues.apache.org/jira/browse/KAFKA-1211"
    assert texts(page, ".bug h3") == ["The bug this trace reproduces"]
    assert texts(page, ".bug dt") == ["Reproduces", "Releases", "Fixed preset", "Preset"]
    assert texts(page, ".bug dd") == [
        "KAFKA-1211 (also KIP-101): A restarted follower truncates to its high watermark, which lags the "
        "leader's, and is elected next: a committed record is lost. KIP-101 fixed this scenario; its preset "
        "still loses data by KAFKA-6361, so the fixed preset is kip-279.",
        "0.8.0 until 0.11.0, which fixed it",
        "kip-279: KIP-279 (2.0): truncate after the last offset whose record matches the leader's "
        "(kmc check replication --preset kip-279 --property StrongIsr)",
        "truncate-to-hw: before KIP-101 (< 0.11): a new follower truncates to its high watermark",
    ]
    assert texts(page, ".violation .what") == [
        "StrongIsr (invariant) fails after step 9 of 9, BecomeFollower(replica=1, leader=0, leaderEpoch=2)."
    ]
    assert texts(page, ".violation .why") == [
        "Record 0 (offset 0, leader epoch 0) was committed at step 8, LeaderIncHighWatermark(leader=0), when "
        "broker 0's high watermark passed it. Broker 1 dropped it at step 9, BecomeFollower(replica=1, leader=0, "
        "leaderEpoch=2): its log now ends at offset 0. Yet broker 1 is in the ISR in ZooKeeper, {0, 1}: if the "
        "controller elects it leader, the committed record is lost; only broker 0 still has it. (In the TLA+ "
        "specification's words, a “presumed leader” is a broker that believes it is the leader, and its “true "
        "ISR” is the ISR in ZooKeeper.)"
    ]
    assert texts(page, ".violation .doc p") == [
        "What StrongIsr says:",
        "Everything below any presumed leader's high watermark is on every member of the true ISR.",
        "If it fails, a committed record (one a consumer may have read) can be lost when a member of the ISR in "
        "ZooKeeper is elected leader.",
    ]
    # the configuration: one closed <details> after the trace and its chart, nothing of it shown until opened
    place = page.evaluate(CONFIG_PLACE)
    assert place == {"count": 1, "open": False, "afterTrace": True, "afterChart": True, "shownRows": 0}
    config = page.locator("details.config")
    assert texts(page, "details.config summary") == ["configuration (8 settings)"]
    config.locator("summary").click()
    assert config.locator("tr").count() == 8 and config.locator("tr").first.is_visible()
    assert texts(page, "details.config tr") == [
        "replicas 2",
        "log_size 2",
        "max_records 2",
        "max_leader_epoch 2",
        "truncation hw",
        "fetch_fencing none",
        "hw_advance isr_offsets",
        "isr_rules offsets",
    ]


def test_report_writes_sequences_as_lists(page: Any, demo: dict[str, Path]) -> None:
    """A log of one record is [{id: 0, epoch: 0}], not ({id: 0, epoch: 0}), which reads as a
    parenthesis; an empty one is []: in the changed fields and the full state alike."""
    opened(page, demo["html"])
    current = page.locator(".panel.current")
    changed = current.locator("table").first
    assert [" ".join(t.split()) for t in changed.locator("tr").all_inner_texts()] == [
        "field before after",
        "replicaLog[1] [{id: 0, epoch: 0}] []",
        "replicaState[1].leaderEpoch 0 2",
    ]
    rows = {r.locator("th").inner_text(): r.locator("td").inner_text() for r in current.locator("table.state tr").all()}
    assert rows["replicaLog[0]"] == "[{id: 0, epoch: 0}]" and rows["replicaLog[1]"] == "[]"
    whole = page.locator("body").inner_text()
    assert "({" not in whole  # no one-element tuple anywhere on the page
    assert "stuttering" not in whole  # TLA+'s word for a step that changes nothing


def test_kraft_report_explains_the_lost_acknowledged_write(page: Any, tmp_path: Path) -> None:
    """v3.5's AcknowledgedWriteNeverLost: KAFKA-15584, and the acknowledged record, the step that
    acknowledged it, where it was lost and where it still is."""
    report = tmp_path / "kraft.html"
    assert run_kmc("render", KRAFT, "-o", report) == 0
    opened(page, report)
    link = page.locator(".bug a.bug-key")
    assert link.inner_text() == "KAFKA-15584"
    assert link.get_attribute("href") == "https://issues.apache.org/jira/browse/KAFKA-15584"
    assert texts(page, ".bug dd") == [
        "KAFKA-15584 (also KIP-966): The last isr member stays in the isr when it is fenced; after a power loss "
        "takes its unflushed records it is elected again, and an acknowledged write is gone (no ELR to elect the "
        "replica that has it).",
        "0.8.0 until 4.0.0, which fixed it",
        "kip-966: Kafka 4.x: eligible leader replicas and every earlier fix, acks=all, unclean election off "
        "(kmc check kraft-replication --preset kip-966 --property AcknowledgedWriteNeverLost)",
        "v3.5: Kafka 3.5 (KRaft, before KIP-966): the last replica standing is re-elected after losing data",
    ]
    assert texts(page, ".violation .what") == [
        "AcknowledgedWriteNeverLost (invariant) fails after step 11 of 11, UnfenceBroker(broker=1)."
    ]
    assert texts(page, ".violation .why") == [
        "Record 1 was acknowledged to the producer at step 7, HandleFetch(leader=0, follower=1). Broker 1 lost it "
        "at step 8, BrokerCrash(broker=1, logEndOffset=0), and became the leader at step 11, "
        "UnfenceBroker(broker=1), without it. The acknowledged write is not in the leader's log: it is only on "
        "broker 0, which is not the leader."
    ]
    assert texts(page, ".violation .doc p") == [
        "What AcknowledgedWriteNeverLost says:",
        "Every write a producer was told succeeded is in the log of the partition's running leader. With acks=all "
        "this is Kafka's durability promise; with acks=1 Kafka promises less, and the model shows what is lost.",
    ]
    settings = len(read_trace(KRAFT)["#meta"]["config"])
    place = page.evaluate(CONFIG_PLACE)
    assert place == {"count": 1, "open": False, "afterTrace": True, "afterChart": True, "shownRows": 0}
    assert texts(page, "details.config summary") == [f"configuration ({settings} settings)"]
    page.locator("details.config summary").click()
    rows = dict(t.split("\t") for t in page.locator("details.config tr").all_inner_texts())
    assert rows["elr"] == "false" and rows["acks"] == "all"  # as server.properties writes them


CHART_BOX = """() => {
  const chart = document.querySelector('.chart'), svg = chart.querySelector('svg');
  const box = () => chart.getBoundingClientRect(), drawn = () => svg.getBoundingClientRect();
  const before = {scrollWidth: chart.scrollWidth, clientWidth: chart.clientWidth,
                  overflowX: getComputedStyle(chart).overflowX, boxRight: box().right,
                  svgRight: drawn().right, page: document.documentElement.scrollWidth, window: window.innerWidth,
                  boxHeight: box().height, windowHeight: window.innerHeight};
  chart.scrollLeft = chart.scrollWidth;  // as far right as the scroll bar goes
  return {...before, scrolled: chart.scrollLeft, svgRightScrolled: drawn().right, boxRightScrolled: box().right};
}"""


def test_wide_chart_scrolls_inside_its_box(page: Any, tmp_path: Path) -> None:
    """A chart wider than the window scrolls in its own box, which stays within the page and the
    window's height (a box as tall as the chart put its scroll bar thousands of pixels down, so the
    chart looked cut off): its right edge is reached by scrolling; "fit to the window" shrinks it."""
    report = tmp_path / "kraft.html"
    assert run_kmc("render", KRAFT, "-o", report) == 0
    page.set_viewport_size({"width": 1100, "height": 800})
    opened(page, report)
    geometry = page.evaluate(CHART_BOX)
    assert geometry["overflowX"] == "auto"
    assert geometry["scrollWidth"] > geometry["clientWidth"] + 300  # wider than its box
    assert geometry["page"] <= geometry["window"] and geometry["boxRight"] <= geometry["window"]
    # no taller than the window, so its horizontal scroll bar is in sight whenever the chart is
    assert geometry["boxHeight"] <= geometry["windowHeight"]
    assert geometry["svgRight"] > geometry["boxRight"]  # at first, its right part is out of the box...
    assert geometry["scrolled"] == geometry["scrollWidth"] - geometry["clientWidth"]
    assert geometry["svgRightScrolled"] <= geometry["boxRightScrolled"]  # ...and scrolling brings it in
    button = page.locator(".chart-tools button")
    assert button.is_visible() and button.inner_text() == "fit to the window"
    button.click()
    fitted = page.evaluate(CHART_BOX)
    assert fitted["scrollWidth"] <= fitted["clientWidth"] and fitted["svgRight"] <= fitted["boxRight"]
    assert button.inner_text() == "actual size"


@pytest.mark.skipif(not os.environ.get("KMC_DOCS_SCREENSHOTS"), reason="set KMC_DOCS_SCREENSHOTS=1 to retake them")
def test_docs_screenshots(page: Any, demo: dict[str, Path]) -> None:
    page.set_viewport_size({"width": 1280, "height": 820})
    page.goto(demo["html"].as_uri())
    page.wait_for_function("document.querySelector('.trace').dataset.ready === 'yes'")
    page.evaluate("window.scrollBy(0, document.querySelector('section h2').getBoundingClientRect().top - 12)")
    page.screenshot(path=str(DOCS / "report-violation.png"))
    page.goto(demo["svg"].as_uri())
    width = page.evaluate("Math.ceil(document.querySelector('svg').getBoundingClientRect().width)")
    page.set_viewport_size({"width": width, "height": 760})
    page.evaluate("window.scrollTo(0, document.body ? document.body.scrollHeight : 1e6)")
    page.evaluate("document.documentElement.scrollTop = document.documentElement.scrollHeight")
    page.screenshot(path=str(DOCS / "chart-violation.png"))
