"""The run times the docs quote are measured, not typed in: each "about N s" (or "takes N s") of
README.md and docs/ names its measurement in a marker right after it (see MARKER), and the figure must be within
a factor of 1.5 of it. A marker names a timing of benchmarks/doc_timings.py (its newest results
file) or a stored `kmc drive` result (its `seconds`); `a+b` adds two."""

from __future__ import annotations

import json
import re

from conftest import ROOT

RESULTS = ROOT / "benchmarks" / "results"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MEASUREMENT_REPORTS = {"performance.md", "flag-effects.md"}
"""Pages that report benchmark runs, each figure with its results file and date, not claims of how long a run takes."""
CLAIM = re.compile(r"\b(?:about|~|takes) ?(?P<number>[0-9][0-9.,]*) ?(?P<unit>ms|s|seconds|min|minutes)\b")
MARKER = re.compile(r"<!--\s*timing:\s*(?P<names>[^>]+?)\s*-->|\[timing:\s*(?P<inner>[^\]]+?)\]")
"""``<!-- timing: NAME -->`` after a figure; ``[timing: NAME]`` inside an HTML comment (a doc-test skip reason)."""
TOLERANCE = 1.5
UNIT_SECONDS = {"ms": 0.001, "s": 1, "seconds": 1, "min": 60, "minutes": 60}


def _timings() -> dict[str, float]:
    newest = max(RESULTS.glob("*-doc-timings.json"))
    return {name: entry["median_s"] for name, entry in json.loads(newest.read_text())["timings"].items()}


def _measured(name: str, timings: dict[str, float]) -> float:
    if name.endswith(".json"):
        return float(json.loads((ROOT / name).read_text())["seconds"])
    return timings[name]


def _claims() -> list[tuple[str, float, str | None]]:
    """(where, the figure in seconds, the marker's names or None) for every claim of the docs."""
    found = []
    for path in DOCS:
        if path.name in MEASUREMENT_REPORTS:
            continue
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{lineno}"
            markers = [(m.start(), m.group("names") or m.group("inner")) for m in MARKER.finditer(line)]
            for claim in CLAIM.finditer(line):
                after = [names for start, names in markers if start >= claim.end()]
                between = line[claim.end() : min([s for s, _ in markers if s >= claim.end()] or [len(line)])]
                marker = after[0] if after and not CLAIM.search(between) else None
                seconds = float(claim.group("number").replace(",", "")) * UNIT_SECONDS[claim.group("unit")]
                found.append((where, seconds, marker))
    return found


def test_every_run_time_the_docs_quote_names_its_measurement() -> None:
    unmarked = [where for where, _seconds, marker in _claims() if marker is None]
    assert unmarked == [], "put <!-- timing: NAME --> after the figure (benchmarks/doc_timings.py names)"


def test_every_run_time_the_docs_quote_is_the_measured_one() -> None:
    timings = _timings()
    wrong = []
    for where, seconds, marker in _claims():
        if marker is None:
            continue
        measured = sum(_measured(name.strip(), timings) for name in marker.split("+"))
        if not measured / TOLERANCE <= seconds <= measured * TOLERANCE:
            wrong.append(f"{where}: the doc says {seconds:g} s, {marker} measured {measured:g} s")
    assert wrong == []


def test_every_timing_measured_is_quoted_somewhere() -> None:
    """A timing no doc quotes is a measurement to drop from benchmarks/doc_timings.py (or a doc lost it)."""
    quoted = {name.strip() for _w, _s, marker in _claims() if marker for name in marker.split("+")}
    assert set(_timings()) - quoted == set()
