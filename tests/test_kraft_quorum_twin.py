"""The kraft-quorum model's C successor function against its Python definition."""

from __future__ import annotations

import pickle

import pytest
from kmc.checker import bfs
from kmc.checker.extension import c_extension
from kmc.checker.properties import PropertySet
from kmc.models.kraft_quorum.model import (
    PRESETS,
    UNATTACHED,
    VOTERS,
    KraftQuorumModel,
    QuorumState,
    Voter,
    VotersRecord,
)
from twins import LEAK_ALLOWANCE, memory_kept_by_a_search, reachable, shape

# Every preset, with bounds small enough for seconds, and the flags the presets leave alone: distinct
# states, states generated and depth of a search with symmetry, the same by either path.
CASES = {
    ("kip-996", (("max_partitions", 0), ("max_restarts", 1), ("max_epoch", 1))): (9235, 23377, 18),
    ("kip-996", (("voters", 2), ("max_records", 2), ("fetch_max_records", 1))): (3170, 8029, 22),
    ("kip-996", (("voters", 4), ("max_partitions", 0), ("max_epoch", 1), ("max_records", 0), ("pre_vote", False))): (
        1628,
        4225,
        14,
    ),
    ("kip-996", (("voters", 1), ("max_restarts", 2), ("max_records", 2))): (42, 45, 8),
    ("kip-595", (("max_epoch", 1),)): (3643, 8257, 13),
    ("pre-kafka-15489", (("max_epoch", 1),)): (11257, 34783, 18),
    ("pre-kafka-16144", ()): (14, 14, 7),
    ("pre-kafka-17641", (("voters", 2), ("max_epoch", 3))): (3094, 7649, 22),
    ("raft-figure-8", (("max_epoch", 2),)): (4157, 13036, 18),
    ("kip-853", (("max_epoch", 1), ("max_restarts", 0))): (2672, 5584, 20),
    ("kip-853", (("voters", 2), ("observers", 1), ("max_epoch", 1))): (7886, 15389, 25),
    (
        "kip-853",
        (("voters", 1), ("observers", 1), ("max_voter_changes", 3), ("max_disk_losses", 1), ("max_restarts", 0)),
    ): (282, 386, 26),
    ("no-voter-change-guard", (("voters", 2), ("observers", 1), ("max_epoch", 1), ("max_restarts", 0))): (
        1420,
        2459,
        22,
    ),
    ("pre-kip-853", (("max_epoch", 1),)): (5631, 17272, 19),
}

needs_c = pytest.mark.skipif(
    c_extension("kmc.models.kraft_quorum._successors") is None, reason="the C extension was not built"
)


def build(case: tuple[str, tuple]) -> KraftQuorumModel:
    preset, overrides = case
    return KraftQuorumModel.build(preset, dict(overrides))  # type: ignore[return-value]


@needs_c
@pytest.mark.parametrize("case", list(CASES), ids=str)
def test_c_successors_are_the_python_ones_on_every_reachable_state(case: tuple[str, tuple]) -> None:
    """The same actions and states, in the same order, of the same types."""
    model = build(case)
    assert model._twin_ctx is not None
    for s in reachable(model):
        fast = model._twin(model._twin_ctx, s)
        python = model._successors(s)
        assert fast == python
        assert [(a, shape(t)) for a, t in fast] == [(a, shape(t)) for a, t in python]


@pytest.mark.parametrize("case", list(CASES), ids=str)
def test_pure_python_and_c_give_the_same_counts(case: tuple[str, tuple]) -> None:
    pure = build(case)
    pure._twin_ctx = None
    for model in (build(case), pure):
        stats = bfs(model, PropertySet()).stats
        assert (stats.distinct_states, stats.generated_states, stats.depth) == CASES[case]


PYTHON_ONLY = {"pre-kafka-16530"}
"""Presets the twin leaves to the Python: it counts the high watermark over the latest voter set only."""


def test_every_preset_is_searched_by_either_path() -> None:
    assert {preset for preset, _ in CASES} == set(PRESETS) - PYTHON_ONLY
    for preset in PYTHON_ONLY:
        assert build((preset, ()))._twin_ctx is None


@needs_c
def test_a_subclass_that_changes_a_method_runs_the_python() -> None:
    class NeverGrants(KraftQuorumModel):
        def vote_response(self, s: QuorumState, c: int, v: int, pre_vote: bool) -> tuple[Voter, bool]:
            return s.voters[v], False

    assert KraftQuorumModel.build("kip-996")._twin_ctx is not None
    assert NeverGrants(KraftQuorumModel.make_config("kip-996"))._twin_ctx is None


@needs_c
def test_a_state_the_c_does_not_read_is_left_to_the_python() -> None:
    model = KraftQuorumModel.build("kip-996")
    [init] = model.init_states()
    # A VotersRecord where the voter set is static: the C declines and the Python answers.
    voters_record = VotersRecord(0, VOTERS, frozenset({(0, 0), (1, 0)}))
    odd = init._replace(voters=(init.voters[0]._replace(log=(voters_record,)), *init.voters[1:]))
    assert model._twin(model._twin_ctx, odd) is None
    assert model.successors(odd) == model._successors(odd) != []
    # True == 1 as an epoch, but it is no plain int.
    boolean = init._replace(voters=(Voter(UNATTACHED, True, -1, -1, (), 0, frozenset(), (), False, False),) * 3)
    assert model._twin(model._twin_ctx, boolean) is None
    assert model.successors(boolean) == model._successors(boolean)


@needs_c
def test_the_model_still_pickles() -> None:
    """The C function pickles by name, the context with the model (Spark ships the model)."""
    model = KraftQuorumModel.build("kip-853")
    copy = pickle.loads(pickle.dumps(model))
    [init] = copy.init_states()
    assert copy._twin_ctx is not None and copy.successors(init) == model._successors(init)


@needs_c
def test_searching_twice_keeps_no_memory() -> None:
    """Reference counts are exact: a second search in the same process allocates nothing that stays."""
    assert memory_kept_by_a_search(KraftQuorumModel.build(None, {"max_epoch": 1})) < LEAK_ALLOWANCE  # 27,982 states
