"""Traces on disk are ITF: typed integers, sorted sets, actions in every state's #meta."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NamedTuple

from kmc.checker import Action
from kmc.checker.result import Trace
from kmc.checker.traces.itf import read_trace, relative_reference, resolve_reference, to_itf, trace_to_itf, write_trace


class Member(NamedTuple):
    memberId: str
    generationId: int


def test_values() -> None:
    assert to_itf(7) == {"#bigint": "7"}
    assert to_itf(-(2**80)) == {"#bigint": str(-(2**80))}
    assert to_itf(True) is True
    assert to_itf("Stable") == "Stable"
    assert to_itf((1, "a")) == {"#tup": [{"#bigint": "1"}, "a"]}
    assert to_itf(frozenset({10, 2, 33})) == {"#set": [{"#bigint": "2"}, {"#bigint": "10"}, {"#bigint": "33"}]}
    assert to_itf(Member("m-1", 3)) == {"memberId": "m-1", "generationId": {"#bigint": "3"}}
    assert to_itf(frozenset({Member("b", 1), Member("a", 2)}))["#set"][0]["memberId"] == "a"


def test_trace_document() -> None:
    trace = Trace(
        states=[Member("m", 0), Member("m", 1)],
        actions=[None, Action("JoinGroup", memberId="m")],
    )
    doc = trace_to_itf(trace, model="toy", config={"n": 1}, preset="p", property="Prop", engine="bfs")
    assert doc["vars"] == ["memberId", "generationId"]
    assert doc["#meta"]["model"] == "toy" and doc["#meta"]["property"] == "Prop"
    assert doc["#meta"]["engine"] == "bfs" and doc["#meta"]["preset"] == "p"
    assert doc["#meta"]["config"] == {"n": 1}
    assert doc["states"][0]["#meta"] == {"index": 0}
    assert doc["states"][1]["#meta"]["action"] == {"name": "JoinGroup", "args": {"memberId": "m"}}
    assert "loop" not in doc
    json.dumps(doc)  # plain JSON all the way down


def test_check_writes_junit(kmc, toy: str, tmp_path: Path) -> None:
    junit = tmp_path / "check.xml"
    code, _, _ = kmc("check", f"{toy}:TwoPhaseCommit", "-p", "buggy", "--junit", junit, "--out", tmp_path)
    assert code == 1
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {"Consistent"}
    failure = cases["Consistent"].find("failure")
    assert failure is not None and "buggy-Consistent.itf.json" in failure.get("message", "")


def test_junit_of_a_bounded_run_says_so_and_fails_with_require_complete(kmc, toy: str, tmp_path: Path) -> None:
    """A CI job that reads the JUnit report, not the exit code, sees what --require-complete decided."""
    junit = tmp_path / "bounded.xml"
    code, _, _ = kmc("check", f"{toy}:TwoPhaseCommit", "--max-states", "10", "--require-complete", "--junit", junit)
    assert code == 3
    root = ET.parse(junit).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert root.get("failures") == "1"
    failure = cases["complete"].find("failure")
    assert failure is not None and "--require-complete: the run was bounded" in failure.get("message", "")
    assert "holds within the bounds" in (cases["Consistent"].findtext("system-out") or "")
    code, _, _ = kmc("check", f"{toy}:TwoPhaseCommit", "--max-states", "10", "--junit", junit)
    assert code == 0 and ET.parse(junit).getroot().get("failures") == "0"


def test_a_model_file_is_stored_relative_to_the_trace_and_read_back_absolute(tmp_path: Path) -> None:
    model = tmp_path / "project" / "models" / "m.py"
    trace = tmp_path / "project" / "traces" / "t.itf.json"
    doc = trace_to_itf(
        Trace(states=[1], actions=[None]),
        model="m",
        config={},
        preset=None,
        property="P",
        engine="bfs",
        extra_meta={"model_ref": f"{model}:M"},
    )
    write_trace(trace, doc)
    assert json.loads(trace.read_text())["#meta"]["model_ref"] == "../models/m.py:M"
    assert doc["#meta"]["model_ref"] == f"{model}:M"  # the caller's document is left as it was
    assert read_trace(trace)["#meta"]["model_ref"] == f"{model.resolve()}:M"
    assert relative_reference("replication", tmp_path) == "replication"
    assert relative_reference("pkg.mod:M", tmp_path) == "pkg.mod:M"
    assert resolve_reference("pkg.mod:M", tmp_path) == "pkg.mod:M"
    assert resolve_reference("/abs/m.py:M", tmp_path) == "/abs/m.py:M"


def test_a_trace_that_no_longer_shows_its_bug_fails_replay_and_is_not_marked(kmc, tmp_path: Path) -> None:
    """Replay, show and render check the recorded property again: a trace cut before its violating
    state still replays, but replay exits 1 saying so, and nothing marks a violation in it."""
    from conftest import ROOT

    stored = ROOT / "counterexamples" / "replication" / "truncate-to-hw-StrongIsr.itf.json"
    doc = json.loads(stored.read_text())
    doc["states"] = doc["states"][:-1]
    short = tmp_path / "short.itf.json"
    short.write_text(json.dumps(doc))
    code, out, _ = kmc("replay", stored, short)
    assert code == 1
    assert f"{stored}: replays on replication (10 states), StrongIsr violated" in out
    assert (
        f"{short}: replays on replication (9 states), but the trace no longer shows StrongIsr violated at its last "
        "state (violated nowhere)" in out
    )
    code, out, _ = kmc("show", short)
    assert code == 0 and "violated here" not in out and "(not confirmed: the trace no longer shows StrongIsr" in out
    assert "violated here" in kmc("show", stored)[1]
    code, _, err = kmc("render", short, "-o", tmp_path / "short.html")
    assert code == 0 and "drawn without marking a violation" in err
    page = (tmp_path / "short.html").read_text()
    assert "recorded as a violation of <b>StrongIsr</b>" in page and "is violated in this state" not in page
