"""The Hypothesis engine and the pytest helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kmc.checker import Check
from kmc.checker.hypothesis_engine import HypothesisOptions
from kmc.checker.result import Status
from kmc.checker.testing import assert_holds, assert_violates, hypothesis_test


def run(preset: str, seed: int, prop: str = "StrongIsr", **kwargs: int):
    return Check("replication", preset=preset, property_names=[prop], engine_name="hypothesis",
                 hypothesis_options=HypothesisOptions(seed=seed, **kwargs)).run()  # fmt: skip


def test_finds_and_shrinks_the_truncate_to_hw_bug(kmc, tmp_path: Path) -> None:
    result = run("truncate-to-hw", seed=1)
    assert result.status is Status.VIOLATED
    [violation] = result.violations
    assert violation.property == "StrongIsr"
    assert violation.trace_length <= 10 + 2  # shrunk to within two steps of the BFS shortest trace
    from kmc.checker.runner import write_traces

    [path] = write_traces(result, tmp_path)
    meta = json.loads(path.read_text())["#meta"]
    assert meta["engine"] == "hypothesis" and meta["seed"] == 1
    assert kmc("replay", path)[0] == 0


def test_same_seed_same_trace() -> None:
    one, two = run("truncate-to-hw", seed=2), run("truncate-to-hw", seed=2)
    assert one.violations[0].trace.states == two.violations[0].trace.states


def test_holds_is_never_complete() -> None:
    result = run("kip-320", seed=3, examples=50)
    assert result.status is Status.HOLDS_BOUNDED
    assert not result.complete
    assert result.bound_reason == "50 Hypothesis examples of at most 60 steps"


def test_cli_engine_and_suite(kmc, tmp_path: Path) -> None:
    code, out, _ = kmc("check", "replication", "-p", "truncate-to-hw", "-P", "StrongIsr", "--engine", "hypothesis",
                       "--seed", "1", "--json", "--out", tmp_path)  # fmt: skip
    assert code == 1
    data = json.loads(out)
    assert data["violations"][0]["property"] == "StrongIsr" and data["seed"] == 1


TestKip320 = hypothesis_test("replication", preset="kip-320", examples=30)


def test_generated_test_class_fails_on_a_violation() -> None:
    failing = hypothesis_test("replication", preset="truncate-to-hw", properties=["StrongIsr"], seed=1)
    outcome = failing("runTest").run()
    assert outcome is not None and len(outcome.failures) + len(outcome.errors) == 1
    assert "StrongIsr violated" in (outcome.failures + outcome.errors)[0][1]


def test_assert_helpers(tmp_path: Path) -> None:
    assert_holds("replication", preset="kip-320", out=tmp_path)
    assert_violates("replication", "StrongIsr", preset="kip-101", trace_length=12, out=tmp_path)
    with pytest.raises(AssertionError, match=r"StrongIsr violated, trace of 10 states: .*truncate-to-hw-StrongIsr"):
        assert_holds("replication", preset="truncate-to-hw", properties=["StrongIsr"], out=tmp_path)
    with pytest.raises(AssertionError, match="expected StrongIsr to be violated; it holds in every reachable state"):
        assert_violates("replication", "StrongIsr", preset="kip-320", out=tmp_path)
    with pytest.raises(AssertionError, match="holds only within bounds"):
        assert_holds("replication", preset="kip-320", max_depth=3, out=tmp_path)


def test_actions_the_short_exploration_missed_still_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a large configuration the exploration that names the rules may miss actions; one rule
    covers those, so no state is left without a rule (Hypothesis's InvalidDefinition)."""
    import kmc.checker.hypothesis_engine as engine

    monkeypatch.setattr(engine, "discover_actions", lambda model: (["ControllerElectLeader"], False))
    result = run("truncate-to-hw", seed=1, examples=30)
    assert result.status in (Status.VIOLATED, Status.HOLDS_BOUNDED)
    assert result.error is None
    assert result.stats.distinct_states > 100  # it went well past the first election
