"""Liveness under weak and strong fairness, with exact lasso shapes."""

from __future__ import annotations

import json
import random
from array import array
from pathlib import Path

import networkx as nx
import pytest
from conftest import TESTS
from kmc.checker import Action, Check
from kmc.checker.engines.bfs.engine import bfs
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.result import Status
from kmc.checker.search.explored import ExploredGraph, explore_rows
from kmc.checker.search.liveness import LivenessSearch
from kmc.checker.search.observers import GraphRecorder, SearchObserver

MUTEX = f"{TESTS / 'toy_models.py'}:LockMutex"
RING = f"{TESTS / 'toy_models.py'}:Ring"


def fairness_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "fair.py"
    path.write_text("from kmc.checker import WF, SF\n\nFAIRNESS = [" + ", ".join(lines) + "]\n")
    return path


def run(tmp_path: Path, props: list[str], *fairness: str, model: str = MUTEX, **overrides: int):
    specs = [fairness_file(tmp_path, *fairness)] if fairness else []
    return Check(model, overrides=overrides, property_names=props, spec_files=specs).run()


def names(trace) -> list[str]:  # type: ignore[no-untyped-def]
    return [a.name + str(a.args.get("proc", "")) for a in trace.actions[1:]]


def test_without_fairness_a_behaviour_may_stop_anywhere(tmp_path: Path) -> None:
    result = run(tmp_path, ["SomeoneEnters"])
    [violation] = result.violations
    assert violation.kind == "liveness"
    trace = violation.trace
    assert len(trace) == 1 and trace.loop == 0  # the initial state, stuttering forever


def test_weak_fairness_of_every_step_makes_someone_enter(tmp_path: Path) -> None:
    result = run(tmp_path, ["SomeoneEnters"], 'WF("*", each=True)')
    assert result.status is Status.HOLDS_COMPLETE


def test_weak_fairness_still_lets_a_process_starve(tmp_path: Path) -> None:
    result = run(tmp_path, ["NoStarvation"], 'WF("*", each=True)')
    [violation] = result.violations
    trace = violation.trace
    # process 0 requests; then, forever, process 1 requests, takes the lock and exits (back to state 1)
    assert names(trace) == ["Request0", "Request1", "Enter1"]
    assert trace.loop == 1
    assert trace.states[trace.loop].pc == ("waiting", "idle")
    assert trace.states[-1].pc == ("waiting", "critical")


def test_strong_fairness_of_enter_rules_out_starvation(tmp_path: Path) -> None:
    result = run(tmp_path, ["NoStarvation"], 'WF("*", each=True)', 'SF("Enter", each=True)')
    assert result.status is Status.HOLDS_COMPLETE
    assert result.complete


def test_fairness_of_the_family_is_weaker_than_of_each_member(tmp_path: Path) -> None:
    """SF(Enter) for the family is met by process 1 entering: process 0 can still starve."""
    result = run(tmp_path, ["NoStarvation"], 'WF("*", each=True)', 'SF("Enter")')
    assert [v.property for v in result.violations] == ["NoStarvation"]


def test_lasso_is_written_as_itf_with_loop_and_replays(kmc, tmp_path: Path) -> None:
    fair = fairness_file(tmp_path, 'WF("*", each=True)')
    code, out, _ = kmc("check", MUTEX, "-P", "NoStarvation", "--spec", fair, "--json", "--out", tmp_path)
    assert code == 1
    data = json.loads(out)
    [violation] = data["violations"]
    assert violation["kind"] == "liveness" and violation["trace_length"] == 4
    doc = json.loads(Path(violation["trace"]).read_text())
    assert doc["loop"] == 1
    code, out, _ = kmc("replay", violation["trace"])
    assert code == 0 and "loop back to state 1" in out
    assert kmc("render", violation["trace"], "-o", tmp_path / "lasso.dot")[0] == 0
    assert "back to step 1" in (tmp_path / "lasso.dot").read_text()


def test_trivially_true_and_bounded_verdicts_are_flagged(tmp_path: Path) -> None:
    spec = tmp_path / "triv.py"
    spec.write_text(
        "from kmc.checker import eventually, leads_to, WF\n\nFAIRNESS = [WF('*', each=True)]\n\n"
        "@eventually\ndef Started(s):\n    return True\n\n"
        "@leads_to(lambda s: s.lock == 7)\ndef Never(s):\n    return False\n"
    )
    result = Check(MUTEX, property_names=["Started", "Never"], spec_files=[spec]).run()
    assert result.status is Status.HOLDS_COMPLETE
    assert any("Started is trivially true" in w for w in result.warnings)
    assert any("Never is trivially true" in w for w in result.warnings)

    bounded = Check(MUTEX, property_names=["SomeoneEnters"], spec_files=[spec], settings={"max_states": 4}).run()
    assert not bounded.complete
    assert any("a bound cut the graph" in w for w in bounded.warnings)


def test_other_engines_say_they_skip_liveness(tmp_path: Path) -> None:
    result = Check(MUTEX, property_names=["SomeoneEnters"], engine_name="simulate").run()
    assert any("checked by the bfs engine only" in w for w in result.warnings)


@pytest.mark.parametrize("processes", [2, 3, 4])
def test_starvation_lasso_with_more_processes(tmp_path: Path, processes: int) -> None:
    """Process 0 waits forever; weak fairness forces every other idle process to request, and at
    least one of them keeps taking the lock."""
    result = run(tmp_path, ["NoStarvation"], 'WF("*", each=True)', processes=processes)
    trace = result.violations[0].trace
    taken = names(trace)
    assert taken[0] == "Request0"
    assert {f"Request{i}" for i in range(processes)} <= set(taken)
    assert "Enter0" not in taken
    assert all(s.pc[0] == "waiting" for s in trace.states[1:])
    loop = taken[trace.loop :]
    assert any(name.startswith("Enter") for name in loop)  # the step back to the loop start is implied


# -- the search on the graph's arrays ------------------------------------------------------------

CHAIN = f"{TESTS / 'toy_models_liveness.py'}:Chain"
SWITCH = f"{TESTS / 'toy_models_liveness.py'}:Switch"


def spec_file(tmp_path: Path, fairness: str, *props: str) -> Path:
    path = tmp_path / f"spec{len(list(tmp_path.glob('spec*.py')))}.py"  # a module is loaded once per path
    path.write_text(
        "from kmc.checker import WF, SF, eventually, invariant\n\n"
        f"FAIRNESS = [{fairness}]\n\n" + "\n\n".join(props) + "\n"
    )
    return path


def check(tmp_path: Path, model: str, fairness: str, *props: str, settings=None, **overrides):  # type: ignore[no-untyped-def]
    spec = spec_file(tmp_path, fairness, *props)
    return Check(model, overrides=overrides, spec_files=[spec], settings=settings or {}).run()


REACHES_END = "@eventually\ndef ReachesEnd(s):\n    return s == LAST\n"
NEVER = "@eventually\ndef Never(s):\n    return s == -1\n"
DONE = "@eventually\ndef Done(s):\n    return s == 'done'\n"


def test_a_chain_deeper_than_any_recursion_limit_holds(tmp_path: Path) -> None:
    """100,000 states in a row: the component search walks them depth first without recursing."""
    n = 100_000
    result = check(tmp_path, CHAIN, 'WF("Step")', REACHES_END.replace("LAST", str(n - 1)), n=n)
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == n


def test_a_chain_that_never_reaches_its_goal_stutters_at_its_end(tmp_path: Path) -> None:
    n = 100_000
    result = check(tmp_path, CHAIN, 'WF("Step")', NEVER, n=n)
    [violation] = result.violations
    assert len(violation.trace) == n and violation.trace.loop == n - 1
    assert violation.trace.states[-1] == n - 1


def test_a_ring_of_100000_states_is_one_fair_cycle(tmp_path: Path) -> None:
    n = 100_000
    result = check(tmp_path, CHAIN, 'WF("Step")', NEVER, n=n, ring=True)
    [violation] = result.violations
    trace = violation.trace
    assert len(trace) == n and trace.loop == 0
    assert trace.states == list(range(n))


def test_components_of_a_deep_chain_and_ring() -> None:
    n = 100_000
    for ring, expected in ((False, []), (True, [list(range(n))])):
        graph = ExploredGraph.from_adjacency(
            {i: [(Action("Step"), i + 1)] if i + 1 < n else ([(Action("Step"), 0)] if ring else []) for i in range(n)},
            set(),
        )
        search = LivenessSearch(graph, [0], [])
        found = list(search.components(array("i", range(n)), bytearray(b"\x01" * n)))
        assert [sorted(states) for _smallest, _id, states in found] == expected


@pytest.mark.parametrize("seed", range(6))
def test_components_agree_with_networkx_on_random_graphs(seed: int) -> None:
    """networkx, on graphs small enough for it, as the reference for the cycles the search finds."""
    rng = random.Random(seed)
    n = rng.choice([30, 200, 600])
    adjacency = {
        i: [(Action("E", k=k), rng.randrange(n)) for k in range(rng.choice([0, 1, 1, 2, 3]))] for i in range(n)
    }
    graph = ExploredGraph.from_adjacency(adjacency, set())
    inside = bytearray(rng.random() < 0.8 for _ in range(n))
    nodes = array("i", (i for i in range(n) if inside[i]))
    found = list(LivenessSearch(graph, [0], []).components(nodes, inside))

    reference = nx.DiGraph()
    reference.add_nodes_from(nodes)
    reference.add_edges_from((s, t) for s in nodes for _a, t in adjacency[s] if inside[t])
    expected = sorted(
        sorted(c) for c in nx.strongly_connected_components(reference) if len(c) > 1 or reference.has_edge(*[*c] * 2)
    )
    assert [sorted(states) for _smallest, _id, states in found] == expected
    assert [smallest for smallest, _id, _states in found] == [c[0] for c in expected]


def test_weak_fairness_is_met_where_the_action_is_disabled(tmp_path: Path) -> None:
    """Go is enabled in a, not in b: flipping forever is weakly fair to Go."""
    result = check(tmp_path, SWITCH, 'WF("Flip"), WF("Go")', DONE)
    [violation] = result.violations
    assert violation.trace.states == ["a", "b"] and violation.trace.loop == 0
    assert [a.name for a in violation.trace.actions[1:]] == ["Flip"]


def test_strong_fairness_is_not_met_by_an_action_enabled_infinitely_often(tmp_path: Path) -> None:
    result = check(tmp_path, SWITCH, 'WF("Flip"), SF("Go")', DONE)
    assert result.status is Status.HOLDS_COMPLETE and not result.violations


def test_a_behaviour_stops_where_no_fair_action_is_enabled(tmp_path: Path) -> None:
    """With only SF(Go), b (where Go is disabled and Flip unfair) may stutter forever."""
    result = check(tmp_path, SWITCH, 'SF("Go")', DONE)
    [violation] = result.violations
    assert violation.trace.states == ["a", "b"] and violation.trace.loop == 1


def test_weak_fairness_of_a_family_enabled_all_around_the_cycle(tmp_path: Path) -> None:
    """Go in a, GoRight in b: the family Go* is enabled in every state of the cycle and never taken,
    so the cycle is unfair to WF(Go*); one constraint per action is met by the flipping."""
    family = check(tmp_path, SWITCH, 'WF("Flip"), WF("Go*")', DONE, right=True)
    assert family.status is Status.HOLDS_COMPLETE
    each = check(tmp_path, SWITCH, 'WF("Flip"), WF("Go*", each=True)', DONE, right=True)
    [violation] = each.violations
    assert violation.trace.states == ["a", "b"] and violation.trace.loop == 0


def test_at_the_edge_of_the_bounds_no_behaviour_stops(tmp_path: Path) -> None:
    """A step out of the expanded states stays enabled: the last expanded state cannot stutter."""
    bounded = check(tmp_path, CHAIN, 'WF("Step")', NEVER, n=10, bound=5)
    assert bounded.status is Status.HOLDS_BOUNDED and not bounded.violations
    assert any("liveness checked on 5 expanded states only" in w for w in bounded.warnings)
    capped = check(tmp_path, CHAIN, 'WF("Step")', NEVER, settings={"max_states": 4}, n=10)
    assert capped.status is Status.HOLDS_BOUNDED and not capped.violations
    assert any("liveness checked on 4 expanded states only" in w for w in capped.warnings)


class _AdjacencyRecorder(SearchObserver):
    """The graph as adjacency lists, as GraphRecorder's own hooks keep it (the BFS calls these)."""

    state = GraphRecorder.state
    expanded = GraphRecorder.expanded
    explored = GraphRecorder.explored

    def __init__(self) -> None:
        self.order = {}
        self.edges = {}
        self.graph = None


@pytest.mark.parametrize(
    ("model", "overrides", "max_states"),
    [
        (MUTEX, {"processes": 3}, None),
        (MUTEX, {"processes": 3}, 20),
        (CHAIN, {"n": 30, "bound": 12}, None),
        (CHAIN, {"n": 30, "ring": True}, 7),
    ],
)
def test_the_bfs_keeps_the_graph_its_hooks_would_record(
    tmp_path: Path, model: str, overrides: dict, max_states: int | None
) -> None:
    """The arrays the BFS builds are the adjacency lists numbered: same states, edges, actions, cuts."""
    spec = spec_file(tmp_path, "", NEVER)
    built, props = Check(model, overrides=overrides, spec_files=[spec], property_names=["Never"]).build()
    recorder, reference = GraphRecorder(), _AdjacencyRecorder()
    bfs(built, props, BfsOptions(max_states=max_states), observers=[recorder, reference])
    kept = recorder.explored()
    assert isinstance(kept, ExploredGraph)
    expected = ExploredGraph.from_adjacency(*reference.explored())
    assert list(kept.states()) == list(expected.states())
    assert kept.offsets.tolist() == expected.offsets.tolist()
    assert kept.targets.tolist() == expected.targets.tolist()
    assert kept.action_ids.tolist() == expected.action_ids.tolist() and kept.actions == expected.actions
    assert kept.cut == expected.cut
    if max_states is None:  # the liveness check's own search (no BFS graph kept) finds the same graph
        own = explore_rows(built)
        assert own.targets.tolist() == expected.targets.tolist() and own.cut == expected.cut


def test_a_safety_violation_found_while_keeping_the_graph_has_the_same_trace(tmp_path: Path) -> None:
    spec = spec_file(
        tmp_path,
        'WF("*", each=True)',
        "@invariant\ndef OneWaits(s):\n    return s.pc.count('waiting') < 2\n",
        "@eventually\ndef Entered(s):\n    return s.lock != -1\n",
    )
    alone = Check(MUTEX, spec_files=[spec], property_names=["OneWaits"]).run()
    both = Check(MUTEX, spec_files=[spec], property_names=["OneWaits", "Entered"], settings={"keep_going": True}).run()
    [expected] = alone.violations
    found = {v.property: v for v in both.violations}
    assert set(found) == {"OneWaits"}
    assert found["OneWaits"].trace.states == expected.trace.states
    assert len(expected.trace) == 3
