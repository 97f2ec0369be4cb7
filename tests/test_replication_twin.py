"""The replication model's C successor function against its Python definition."""

from __future__ import annotations

import pytest
from kmc.checker import bfs
from kmc.checker.extension import c_extension
from kmc.checker.properties import PropertySet
from kmc.models.replication.config import PRESETS
from kmc.models.replication.model import ReplicationModel
from kmc.models.replication.state import LeaderAndIsr, ReplicaState, ReplicationState
from twins import LEAK_ALLOWANCE, memory_kept_by_a_search, reachable, shape

# Replicas = 2: distinct states, states generated and depth, the same by either path (and the
# distinct counts and depths are TLC's, tests/test_replication.py).
COUNTS_REPLICAS_2 = {
    "truncate-to-hw": (10131, 24459, 20),
    "kip-101": (9045, 21447, 18),
    "kip-279": (9027, 21877, 18),
    "kip-320-first-try": (8429, 19387, 18),
    "kip-320": (5973, 11733, 18),
}

needs_c = pytest.mark.skipif(
    c_extension("kmc.models.replication._successors") is None, reason="the C extension was not built"
)


def pure_python(model: ReplicationModel) -> ReplicationModel:
    model._twin_ctx = None
    return model


@needs_c
@pytest.mark.parametrize("preset", PRESETS)
def test_c_successors_are_the_python_ones_on_every_reachable_state(preset: str) -> None:
    """The same actions and states, in the same order, of the same types, for every flag combination."""
    model = ReplicationModel.build(preset)
    states = reachable(model)
    assert len(states) == COUNTS_REPLICAS_2[preset][0]
    for s in states:
        fast = model._twin(model._twin_ctx, s)
        assert fast == model._successors(s)
        assert [shape(t) for _a, t in fast] == [shape(t) for _a, t in model._successors(s)]


@pytest.mark.parametrize("preset", PRESETS)
def test_pure_python_and_c_give_the_same_counts(preset: str) -> None:
    for model in (ReplicationModel.build(preset), pure_python(ReplicationModel.build(preset))):
        stats = bfs(model, PropertySet()).stats
        assert (stats.distinct_states, stats.generated_states, stats.depth) == COUNTS_REPLICAS_2[preset]


@needs_c
def test_a_state_the_c_does_not_read_is_left_to_the_python() -> None:
    model = ReplicationModel.build("kip-320")
    [init] = model.init_states()
    # True == 1 as a key, but it is no plain int: the C declines and the Python answers.
    odd = init._replace(quorumState=LeaderAndIsr(True, -1, frozenset({0, 1})))
    assert model._twin(model._twin_ctx, odd) is None
    assert model.successors(odd) == model._successors(odd) != []
    beyond = init._replace(replicaState=(ReplicaState(0, -1, -1, frozenset({7})),) * 2)
    assert model._twin(model._twin_ctx, beyond) is None


@needs_c
def test_a_subclass_runs_the_python() -> None:
    """A subclass may redefine a step the C would not see: its own definition must count."""

    class NoWrites(ReplicationModel):
        def _leader_write(self, s: ReplicationState, out: list) -> None:
            return None

    assert ReplicationModel.build("kip-320")._twin_ctx is not None
    model = NoWrites.build("kip-320")
    assert model._twin_ctx is None
    stats = bfs(model, PropertySet()).stats
    assert stats.distinct_states < COUNTS_REPLICAS_2["kip-320"][0]


@needs_c
def test_searching_twice_keeps_no_memory() -> None:
    """Reference counts are exact: a second search in the same process allocates nothing that stays."""
    assert memory_kept_by_a_search(ReplicationModel.build("kip-320")) < LEAK_ALLOWANCE
