"""The group model's C successor function against its Python definition."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from kmc.checker import bfs
from kmc.checker.extension import c_extension
from kmc.checker.properties import PropertySet
from kmc.models.group.model import PRESETS, GroupModel, GroupState
from kmc.models.group.state import highest_generation
from twins import LEAK_ALLOWANCE, memory_kept_by_a_search, reachable, shape

needs_c = pytest.mark.skipif(
    c_extension("kmc.models.group._successors") is None, reason="the C extension was not built"
)

BOUND = 4000
"""States compared per configuration, in breadth-first order: every reachable state of the
presets below it (static, static-kafka-9801, join-group-v0, kafka-8653), the first levels of the
larger ones (a second or two apiece); the counts below compare whole searches."""

FLAG_COMBINATIONS = [
    ("eager-range", {"max_faults": 2}),
    ("eager-range", {"assignor": "roundrobin", "consumers": 3, "partitions": 3, "max_faults": 0}),
    ("eager-range", {"assignor": "sticky", "timeouts": "any", "max_generation": 3}),
    ("eager-range", {"pending_members_block_join": False, "delay_extensions": 2, "consumer_pauses": True}),
    ("eager-range", {"join_group_v0": True, "v0_rebalance_timeout": False, "poll_stalls": True}),
    ("cooperative-sticky", {"sync_rebalance_resets_generation": True, "join_prepare_after_reset": False}),
    ("cooperative-sticky", {"cooperative_assignment_validation": "all", "slow_coordinator": True}),
    ("cooperative-sticky", {"subscription_generation": False, "cooperative_sticky_generation": False}),
    ("cooperative-sticky", {"assignor": "range", "keep_uncontested_older_claims": False}),
    ("static", {"fence_replaced_static_member": False, "persist_static_replacement": False, "max_faults": 2}),
    ("static", {"rebalance_static_rejoin_in_completing": False, "duplicate_instance": True}),
    ("static", {"assignor": "cooperative-sticky", "rebalance_protocol": "cooperative", "poll_stalls": True}),
]


def assert_same_steps(model: GroupModel) -> int:
    """Asserts the C's steps are the Python's on every state reached; returns how many states."""
    states = reachable(model, BOUND)
    for s in states:
        fast = model._twin(model._twin_ctx, s)
        assert fast is not None, f"the C left a state of {model.config} to the Python: {s}"
        python = model._successors(s)
        assert fast == python
        assert [a for a, _t in fast] == [a for a, _t in python]  # the very same Action objects
        assert all(a is b for (a, _), (b, _) in zip(fast, python, strict=True))
        assert [shape(t) for _a, t in fast] == [shape(t) for _a, t in python]
        assert model._twin_highest_generation(model._twin_ctx, s) == highest_generation(s)
    return len(states)


@needs_c
@pytest.mark.parametrize("preset", PRESETS)
def test_c_successors_are_the_python_ones_on_every_preset(preset: str) -> None:
    """The same actions and states, in the same order, of the same types; every preset runs in C."""
    assert assert_same_steps(GroupModel.build(preset)) > 100


@needs_c
@pytest.mark.parametrize(("preset", "overrides"), FLAG_COMBINATIONS)
def test_c_successors_are_the_python_ones_on_other_flags(preset: str, overrides: dict[str, Any]) -> None:
    assert assert_same_steps(GroupModel.build(preset, overrides)) > 100


@pytest.mark.parametrize(
    ("preset", "counts"),
    [
        ("eager-range", (7360, 16284, 43)),
        ("static", (3592, 7748, 31)),
        ("join-retry", (7984, 17707, 43)),
        ("slow-member", (9188, 25129, 52)),
    ],
)
def test_pure_python_and_c_give_the_same_counts(preset: str, counts: tuple[int, int, int]) -> None:
    for model in (GroupModel.build(preset), pure_python(GroupModel.build(preset))):
        stats = bfs(model, PropertySet()).stats
        assert (stats.distinct_states, stats.generated_states, stats.depth) == counts


def pure_python(model: GroupModel) -> GroupModel:
    model._twin_ctx = None
    return model


@needs_c
def test_a_state_the_c_does_not_read_is_left_to_the_python() -> None:
    model = GroupModel.build("eager-range")
    [init] = model.init_states()
    # a member id the C does not name: the Python answers, the C declines
    odd = init._replace(consumers=(init.consumers[0]._replace(memberId="someone"), init.consumers[1]))
    assert model._twin(model._twin_ctx, odd) is None
    assert model.successors(odd) == model._successors(odd) != []
    # True == 1, but it is no plain int
    flagged = init._replace(faults=True)
    assert model._twin(model._twin_ctx, flagged) is None
    # a generation past what the C's action keys hold
    far = init.consumers[0]._replace(phase="stable", memberId="c0-0", generationId=5000, owned=frozenset({0}))
    beyond = init._replace(consumers=(far, init.consumers[1]))
    assert model._twin(model._twin_ctx, beyond) is None
    assert any(a.name == "OffsetCommit" for a, _t in model.successors(beyond))
    assert model._twin_highest_generation(model._twin_ctx, init._replace(consumers=())) == 0
    assert model.within_bounds(init)


def test_a_subclass_runs_the_python() -> None:
    """A subclass may redefine a step the C does not see (tests break the model on purpose)."""

    class Broken(GroupModel):
        def _maybe_prepare_rebalance(self, s: GroupState) -> GroupState:
            return s

    assert Broken(GroupModel.make_config("eager-range"))._twin_ctx is None


@needs_c
def test_the_model_still_pickles() -> None:
    """The C functions pickle by name, the context with the model."""
    model = GroupModel.build("eager-range")
    copy = pickle.loads(pickle.dumps(model))
    [init] = copy.init_states()
    assert copy._twin_ctx is not None and copy.successors(init) == model.successors(init)


@needs_c
def test_searching_twice_keeps_no_memory() -> None:
    """Reference counts are exact: a second search in the same process allocates nothing that stays."""
    assert memory_kept_by_a_search(GroupModel.build(None)) < LEAK_ALLOWANCE
