"""The kraft-replication model's C successor function against its Python definition."""

from __future__ import annotations

from typing import Any

import pytest
from kmc.checker import bfs
from kmc.checker.extension import c_extension
from kmc.checker.properties import PropertySet
from kmc.models.kraft_replication.model import PRESETS, KraftReplicationModel, KraftReplicationState
from kmc.models.kraft_replication.state import FetchResponse
from twins import LEAK_ALLOWANCE, memory_kept_by_a_search, reachable, shape

SMALL = {"max_records": 1, "max_leader_epoch": 1}
"""Bounds that keep a preset's space to thousands of states (each is compared state by state)."""
QUIET = {**SMALL, "max_fences": 0}
"""SMALL without fencing a running broker, for the presets whose fix is not about fencing."""

# Every preset and flag combinations no preset has, within small bounds: distinct states, states
# generated and depth, the same by either path.
CASES: dict[str, tuple[str, dict[str, Any], tuple[int, int, int]]] = {
    "kip-966": ("kip-966", SMALL, (9841, 36146, 34)),
    "unclean": ("unclean", SMALL, (10943, 39575, 29)),
    "acks-1": ("acks-1", QUIET, (1896, 5688, 24)),
    "v3.5": ("v3.5", SMALL, (5373, 21165, 24)),
    "pre-kip-966": ("pre-kip-966", QUIET, (1477, 4056, 25)),
    "pre-kafka-15583": ("pre-kafka-15583", QUIET, (1877, 5354, 25)),
    "pre-kip-497": ("pre-kip-497", QUIET, (2438, 6889, 25)),
    "pre-kafka-7128": ("pre-kafka-7128", QUIET, (2001, 5802, 27)),
    "pre-kip-903": ("pre-kip-903", QUIET, (1694, 4827, 25)),
    "pre-kafka-13141": ("pre-kafka-13141", QUIET, (1768, 5101, 25)),
    "controller-failover": ("controller-failover", {"max_records": 1}, (13906, 52461, 25)),
    "drop-pending-on-error": ("drop-pending-on-error", {"max_records": 0}, (1818, 6933, 16)),
    "kafka-14154": ("kafka-14154", {}, (4565, 15776, 27)),
    "reassignment": ("reassignment", {"max_records": 0, "max_leader_epoch": 1}, (1620, 5430, 23)),
    "kip-320": ("kip-320", QUIET, (1917, 5490, 25)),
    "pre-kip-320": ("pre-kip-320", {**QUIET, "max_crashes": 0}, (3459, 11018, 24)),
    "pre-kip-101": ("pre-kip-101", SMALL, (6053, 22613, 28)),
    "process-crash-and-shutdown": ("kip-966", {**QUIET, "crash": "process", "max_shutdowns": 1}, (6682, 21777, 28)),
    "disk-acks-0": ("kip-966", {**QUIET, "crash": "disk", "acks": "0"}, (1550, 4647, 24)),
    "hw-truncation-unfenced": ("kip-966", {**QUIET, "truncation": "hw", "fetch_fencing": False}, (1534, 4404, 25)),
    "kip-320-unfenced-disk": ("kip-320", {**QUIET, "fetch_fencing": False, "crash": "disk"}, (1367, 3885, 25)),
    "failover-and-reassignment": (
        "reassignment",
        {"max_records": 0, "max_leader_epoch": 1, "max_controller_failovers": 1, "elr": False},
        (7277, 30743, 26),
    ),
}

FIRST_STATES = {
    "three-brokers": ("kip-966", {"brokers": 3, "max_records": 1, "max_leader_epoch": 2}),
    "pre-kip-320-whole": ("pre-kip-320", {}),
}
"""Spaces of millions of states (3 brokers): compared on their first states in BFS order."""

needs_c = pytest.mark.skipif(
    c_extension("kmc.models.kraft_replication._successors") is None, reason="the C extension was not built"
)


PYTHON_ONLY = {"pre-kafka-14154"}
"""Presets the twin does not search: it sends every AlterPartition to the active controller (the fix
of KAFKA-14154) and resets the followers' fetch state in a new leader epoch."""


def test_every_preset_is_compared() -> None:
    assert set(PRESETS) - PYTHON_ONLY <= {preset for preset, _, _ in CASES.values()}


@needs_c
def test_the_twin_is_left_out_where_it_would_differ() -> None:
    assert KraftReplicationModel.build("kafka-14154")._twin_ctx is not None
    assert all(KraftReplicationModel.build(preset)._twin_ctx is None for preset in PYTHON_ONLY)
    ablation = KraftReplicationModel.build("kip-966", {"isr_fetch_in_leader_epoch": False})
    assert ablation._twin_ctx is None


def pure_python(model: KraftReplicationModel) -> KraftReplicationModel:
    model._twin_ctx = None
    return model


@needs_c
@pytest.mark.parametrize("case", CASES)
def test_c_successors_are_the_python_ones_on_every_reachable_state(case: str) -> None:
    """The same actions (the very label objects) and states, in the same order, of the same types."""
    preset, overrides, counts = CASES[case]
    model = KraftReplicationModel.build(preset, overrides)
    states = reachable(model)
    assert len(states) == counts[0]
    assert_same_steps(model, states)


@needs_c
@pytest.mark.parametrize("case", FIRST_STATES)
def test_c_successors_are_the_python_ones_with_three_brokers(case: str) -> None:
    preset, overrides = FIRST_STATES[case]
    model = KraftReplicationModel.build(preset, overrides)
    states = reachable(model, limit=2500)
    assert len(states) >= 2500
    assert_same_steps(model, states)


def assert_same_steps(model: KraftReplicationModel, states: list[KraftReplicationState]) -> None:
    for s in states:
        fast, python = model._twin(model._twin_ctx, s), model._successors(s)
        assert fast == python, s
        assert all(a is b for (a, _), (b, _) in zip(fast, python, strict=True))
        assert shape(fast) == shape(python)


@pytest.mark.parametrize("case", CASES)
def test_pure_python_and_c_give_the_same_counts(case: str) -> None:
    preset, overrides, counts = CASES[case]
    for model in (
        KraftReplicationModel.build(preset, overrides),
        pure_python(KraftReplicationModel.build(preset, overrides)),
    ):
        stats = bfs(model, PropertySet()).stats
        assert (stats.distinct_states, stats.generated_states, stats.depth) == counts


@needs_c
def test_a_state_the_c_does_not_read_is_left_to_the_python() -> None:
    model = KraftReplicationModel.build("kip-966")
    [init] = model.init_states()
    # True == 1, but it is no plain int: the C declines and the Python answers.
    odd = init._replace(nextRecordId=True)
    assert model._twin(model._twin_ctx, odd) is None
    assert model.successors(odd) == model._successors(odd) != []
    unknown_error = FetchResponse(0, 0, 0, "SOME_OTHER_ERROR", (), 0, (-1, -1), 0)
    answered = init._replace(fetches=(None, unknown_error))
    assert model._twin(model._twin_ctx, answered) is None
    assert model.successors(answered) == model._successors(answered)


@needs_c
def test_a_bad_context_is_a_type_error() -> None:
    model = KraftReplicationModel.build("kip-966")
    [init] = model.init_states()
    with pytest.raises(TypeError, match="context"):
        model._twin((), init)


@needs_c
def test_searching_twice_keeps_no_memory() -> None:
    """Reference counts are exact: a second search in the same process allocates nothing that stays."""
    assert memory_kept_by_a_search(KraftReplicationModel.build("kip-966", QUIET)) < LEAK_ALLOWANCE


def test_a_subclass_runs_the_python() -> None:
    """A subclass may redefine a step the C would not see: its own definition must count."""

    class NoProduce(KraftReplicationModel):
        def _produce(self, s: KraftReplicationState, b: int, out: list) -> None:
            return None

    model = NoProduce.build(None, {"max_leader_epoch": 1, "max_records": 1})
    assert model._twin_ctx is None
    frontier = list(model.init_states())
    seen = set(frontier)
    while frontier:
        frontier = [t for s in frontier for _a, t in model.successors(s) if t not in seen and not seen.add(t)]
    assert all(not r.log for s in seen for r in s.replicas)
