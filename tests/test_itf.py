"""Traces on disk are ITF: typed integers, sorted sets, actions in every state's #meta."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import NamedTuple

from kmc.checker import Action
from kmc.checker.itf import to_itf, trace_to_itf
from kmc.checker.result import Trace


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
