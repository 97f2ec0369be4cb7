"""The Hypothesis engine and the pytest helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kmc.checker import Check
from kmc.checker.result import Status
from kmc.checker.testing import assert_holds, assert_violates, hypothesis_test


def run(preset: str, seed: int, prop: str = "StrongIsr", **kwargs: int):
    return Check(
        "replication", preset=preset, property_names=[prop], engine_name="hypothesis", settings={"seed": seed, **kwargs}
    ).run()


def test_finds_and_shrinks_the_truncate_to_hw_bug(kmc, tmp_path: Path) -> None:
    result = run("truncate-to-hw", seed=1)
    assert result.status is Status.VIOLATED
    [violation] = result.violations
    assert violation.property == "StrongIsr"
    assert violation.trace_length <= 10 + 2  # shrunk to within two steps of the BFS shortest trace
    from kmc.checker.traces.files import write_traces

    [path] = write_traces(result, tmp_path)
    meta = json.loads(path.read_text())["#meta"]
    assert meta["engine"] == "hypothesis" and meta["seed"] == 1
    assert kmc("replay", path)[0] == 0


def test_same_seed_same_trace() -> None:
    one, two = run("truncate-to-hw", seed=2), run("truncate-to-hw", seed=2)
    assert one.violations[0].trace.states == two.violations[0].trace.states


def test_more_examples_first_run_the_same_rounds() -> None:
    """Rounds are seeded by the check's seed and their number alone, so raising --examples only
    adds rounds: a bug found within the smaller budget is found in the same run, the same way."""
    few, many = run("kip-101", seed=2, examples=200), run("kip-101", seed=2, examples=400)
    assert few.violations[0].trace.states == many.violations[0].trace.states
    assert few.stats.extra["runs"] == many.stats.extra["runs"]


def test_holds_is_never_complete() -> None:
    result = run("kip-320", seed=3, examples=50)
    assert result.status is Status.HOLDS_BOUNDED
    assert not result.complete
    assert result.bound_reason == "50 Hypothesis examples of at most 60 steps"


def test_cli_engine_and_suite(kmc, tmp_path: Path) -> None:
    code, out, _ = kmc(
        "check",
        "replication",
        "-p",
        "truncate-to-hw",
        "-P",
        "StrongIsr",
        "--engine",
        "hypothesis",
        "--seed",
        "1",
        "--json",
        "--out",
        tmp_path,
    )
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


def test_guided_runs_find_the_kip_101_bug_that_random_walks_miss() -> None:
    """Six of kip-101's 9,045 states violate StrongIsr; uniform random walks reach one with
    probability ~2e-5. Guided runs spend their steps on states no run has reached yet."""
    guided = run("kip-101", seed=1)
    assert guided.status is Status.VIOLATED
    assert 12 <= guided.violations[0].trace_length <= 12 + 2
    assert guided.stats.extra["guided"] is True
    unguided = run("kip-101", seed=1, guide=False)
    assert unguided.status is Status.HOLDS_BOUNDED
    # with the same budget on kip-320 (5,973 states, no bug to stop at), guided runs reach far more
    covered, walked = run("kip-320", seed=1, examples=300), run("kip-320", seed=1, guide=False, examples=300)
    assert covered.stats.distinct_states > 3 * walked.stats.distinct_states


def test_shortest_path_among_the_transitions_seen() -> None:
    from kmc.checker.engines.hypothesis.reached import Reached
    from kmc.checker.model import Action
    from kmc.checker.result import Trace

    a = Action("A")
    explored = Reached([0])
    explored.successors = {0: [(a, 1), (a, 2)], 1: [(a, 3)], 2: [(a, 4)], 3: [(a, 4)], 4: [(a, 5)]}
    long = Trace([0, 1, 3, 4, 5], [None, a, a, a, a])
    assert explored.shortest(long, bad_state=lambda s: s == 5).states == [0, 2, 4, 5]
    assert explored.shortest(long, bad_step=lambda b, _, t: (b, t) == (3, 4)).states == [0, 1, 3, 4]
    assert explored.shortest(long, bad_state=lambda s: s == 9) is long  # nothing shorter seen


def test_shortcut_shortens_a_trace_stretch_by_stretch() -> None:
    """Where a search from the initial states runs out of budget, searches from the trace's own
    states still find the shorter ways: here a jump of five from any multiple of five."""
    from kmc.checker.engines.hypothesis.reached import Reached
    from kmc.checker.model import Action
    from kmc.checker.result import Trace

    step, jump = Action("Step"), Action("Jump")

    def successors(n: int) -> list[tuple[Action, int]]:
        return [(step, n + 1), (Action("Wander"), n + 1000)] + ([(jump, n + 5)] if n % 5 == 0 else [])

    explored = Reached([0], successors)
    walk = Trace(list(range(13)), [None] + [step] * 12)
    assert explored.shortest(walk, bad_state=lambda n: n == 12, budget=3) is walk  # out of budget
    cut = explored.shortcut(walk, bad_state=lambda n: n == 12, budget=100)
    assert cut.states == [0, 5, 10, 11, 12]
    assert cut.actions == [None, jump, jump, step, step]
    failing_step = explored.shortcut(walk, bad_step=lambda b, a, t: a == jump and t == 10, budget=100)
    assert failing_step.states == [0, 5, 10]
