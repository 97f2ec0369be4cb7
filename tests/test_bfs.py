"""The BFS engine on models whose answers are known in closed form."""

from __future__ import annotations

from math import comb

import pytest
from kmc.checker import BfsOptions, bfs
from kmc.checker.errors import NondeterministicModelError, PropertyError, UserError
from kmc.checker.properties import PropertySet, model_properties, select_properties
from kmc.checker.result import Status
from toy_models import CounterGrid, TwoPhaseCommit


def grid(n: int, **overrides: int) -> CounterGrid:
    return CounterGrid.build(None, {"n": n, **overrides})


@pytest.mark.parametrize("n", [0, 1, 2, 5, 12])
def test_counter_grid_counts(n: int) -> None:
    result = bfs(grid(n), PropertySet.of(model_properties(CounterGrid)))
    assert result.status is Status.HOLDS_COMPLETE
    assert result.complete
    assert result.stats.distinct_states == (n + 1) ** 2
    assert result.stats.depth == 2 * n + 1
    # generated counts the initial state and every successor: 2 per state off the border
    assert result.stats.generated_states == 1 + 2 * n * (n + 1)


@pytest.mark.parametrize("n", [1, 3, 7])
def test_counter_grid_symmetry(n: int) -> None:
    result = bfs(grid(n), PropertySet(), BfsOptions(symmetry=True))
    assert result.stats.distinct_states == (n + 1) * (n + 2) // 2
    assert result.stats.depth == 2 * n + 1
    assert any("symmetry" in w for w in result.warnings)


@pytest.mark.parametrize("limit", [1, 3, 6])
def test_shortest_invariant_violation(limit: int) -> None:
    result = bfs(grid(5, limit=limit), select_properties(CounterGrid, names=["Bounded"]))
    assert result.status is Status.VIOLATED
    [violation] = result.violations
    assert violation.property == "Bounded"
    assert violation.trace_length == limit + 1
    last = violation.trace.states[-1]
    assert last.x + last.y == limit
    assert violation.trace.actions[0] is None


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_two_phase_counts(n: int) -> None:
    model = TwoPhaseCommit.build("correct", {"participants": n})
    props = PropertySet.of(model_properties(TwoPhaseCommit))
    result = bfs(model, props)
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == 2 * 3**n + 2**n
    assert result.stats.depth == 2 * n + 2
    sym = bfs(model, props, BfsOptions(symmetry=True))
    assert sym.stats.distinct_states == 2 * comb(n + 2, 2) + n + 1


@pytest.mark.parametrize("store", ["states", "fingerprints"])
def test_two_phase_bug_shortest_trace(store: str) -> None:
    model = TwoPhaseCommit.build("buggy", {"participants": 3})
    result = bfs(model, PropertySet.of(model_properties(TwoPhaseCommit)), BfsOptions(store=store))
    [violation] = result.violations
    assert violation.property == "Consistent"
    assert violation.trace_length == 5  # prepare, abort, commit decision, commit
    names = sorted(a.name for a in violation.trace.actions[1:])
    assert names == ["Abort", "Commit", "CoordinatorCommit", "Prepare"]
    if store == "fingerprints":
        assert result.stats.collision_probability is not None
    else:
        assert result.stats.collision_probability is None


def test_symmetry_trace_is_a_real_execution() -> None:
    model = TwoPhaseCommit.build("buggy", {"participants": 3})
    result = bfs(model, PropertySet.of(model_properties(TwoPhaseCommit)), BfsOptions(symmetry=True))
    [violation] = result.violations
    trace = violation.trace
    for i in range(1, len(trace)):
        assert (trace.actions[i], trace.states[i]) in list(model.successors(trace.states[i - 1]))


def test_step_property_violation_is_shortest() -> None:
    from kmc.checker import Action, step

    @step
    def NoYAfterTwoX(s, action: Action, t) -> bool:  # type: ignore[no-untyped-def]
        return not (action.name == "IncY" and s.x == 2)

    result = bfs(grid(4), PropertySet.of([NoYAfterTwoX.__kmc_property__]))
    [violation] = result.violations
    assert violation.kind == "step"
    assert violation.trace_length == 4
    assert [a.name for a in violation.trace.actions[1:]] == ["IncX", "IncX", "IncY"]


def test_deadlock_detection() -> None:
    result = bfs(grid(3), PropertySet(), BfsOptions(deadlock=True))
    [violation] = result.violations
    assert violation.property == "Deadlock"
    assert violation.trace_length == 7
    assert violation.trace.states[-1] == (3, 3)
    assert bfs(grid(3), PropertySet()).status is Status.HOLDS_COMPLETE


def test_continue_reports_every_property_with_complete_counts() -> None:
    model = grid(4, limit=3)
    props = select_properties(CounterGrid, names=["Bounded", "Monotonic"])
    result = bfs(model, props, BfsOptions(keep_going=True, deadlock=True))
    assert result.complete
    assert result.stats.distinct_states == 25
    assert {v.property: v.trace_length for v in result.violations} == {"Bounded": 4, "Deadlock": 9}


def test_depth_bound_is_reported_and_never_complete() -> None:
    result = bfs(grid(5), PropertySet(), BfsOptions(max_depth=3))
    assert result.status is Status.HOLDS_BOUNDED
    assert not result.complete
    assert result.bound_reason == "max depth 3"
    assert result.stats.distinct_states == 1 + 2 + 3
    # a depth bound that cuts nothing off leaves the run complete
    full = bfs(grid(2), PropertySet(), BfsOptions(max_depth=5))
    assert full.complete and full.stats.distinct_states == 9


def test_state_bound() -> None:
    result = bfs(grid(10), PropertySet(), BfsOptions(max_states=20))
    assert not result.complete
    assert result.bound_reason == "max states 20"
    assert result.stats.distinct_states == 20  # at most N, and N when there are more
    exact = bfs(grid(2), PropertySet(), BfsOptions(max_states=9))  # exactly 9 reachable: no bound hit
    assert exact.complete and exact.stats.distinct_states == 9 and exact.bound_reason is None


def test_property_that_raises_names_property_and_state() -> None:
    from kmc.checker import invariant

    @invariant
    def Broken(s) -> bool:  # type: ignore[no-untyped-def]
        return 1 / (s.x - 1) > -10

    with pytest.raises(PropertyError) as info:
        bfs(grid(2), PropertySet.of([Broken.__kmc_property__]))
    assert "Broken" in str(info.value)
    assert "ZeroDivisionError" in str(info.value)
    assert "Grid(x=1, y=0)" in str(info.value)


def test_nondeterministic_model_is_detected() -> None:
    from toy_models import Flaky

    with pytest.raises(NondeterministicModelError):
        bfs(Flaky(), PropertySet())


def test_symmetry_requires_a_symmetry_method() -> None:
    from toy_models import Flaky

    with pytest.raises(UserError, match="no symmetry"):
        bfs(Flaky(), PropertySet(), BfsOptions(symmetry=True))
