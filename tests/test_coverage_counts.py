"""The coverage observer's C counting (checker/search/_c/counts.c) against its Python definition."""

from __future__ import annotations

import pytest
from kmc.checker.extension import c_extension
from kmc.checker.model import Action
from kmc.checker.runner import Check
from kmc.checker.search import observers as observe
from kmc.checker.search.observers import Coverage

needs_c = pytest.mark.skipif(observe._count_actions is None, reason="the C extension was not built")


def _coverage(model: str, overrides: dict, pure: bool, monkeypatch: pytest.MonkeyPatch) -> dict:
    if pure:
        monkeypatch.setattr(observe, "_count_actions", None)
    result = Check(model_name=model, overrides=overrides, settings={"keep_going": True}).run()
    monkeypatch.undo()
    return result.coverage


@needs_c
@pytest.mark.parametrize(
    ("model", "overrides"),
    [("replication", {}), ("group", {}), ("kraft-quorum", {"max_epoch": 1}), ("group-kip848", {"max_faults": 0})],
)
def test_c_counts_are_the_python_counts(model: str, overrides: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every action's enabled and taken counts, and every property's, the same by either path."""
    by_c = _coverage(model, overrides, False, monkeypatch)
    by_python = _coverage(model, overrides, True, monkeypatch)
    assert by_c == by_python
    assert sum(taken for _enabled, taken in by_c["actions"].values()) > 1000


@needs_c
def test_labels_the_c_does_not_read_are_counted_by_the_python() -> None:
    """A label that is not an Action (a plain string, a tuple), or a state with more than 64 action
    names, is left to the Python, which counts nothing twice."""
    coverage = Coverage.__new__(Coverage)
    coverage.enabled, coverage.taken_count, coverage.transitions, coverage.triggers = {}, {}, 0, []
    mixed = [(Action("Fetch", replica=1), 1), ("Write", 2), (Action("Fetch", replica=2), 3)]
    assert observe._count_actions(mixed, {}, {}, Action) is False
    coverage.expanded(0, mixed, True)
    assert coverage.taken_count == {"Fetch": 2, "Write": 1}
    assert coverage.enabled == {"Fetch": 1, "Write": 1}
    many = [(Action(f"A{i}"), i) for i in range(65)]
    assert observe._count_actions(many, {}, {}, Action) is False
    coverage.expanded(0, many, True)
    assert coverage.enabled["A64"] == 1 and coverage.taken_count["Fetch"] == 2
    fine = [(Action("Fetch", replica=1), 1), (Action("Fetch", replica=2), 2), (Action("Write"), 3)]
    taken, enabled = {"Fetch": 5}, {}
    assert observe._count_actions(fine, taken, enabled, Action) is True
    assert taken == {"Fetch": 7, "Write": 1} and enabled == {"Fetch": 1, "Write": 1}
    coverage.expanded(0, fine, True)
    assert coverage.taken_count["Fetch"] == 4 and coverage.enabled["Fetch"] == 2
    assert coverage.transitions == 3 + 65 + 3


def test_pure_python_leaves_the_counting_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KMC_PURE_PYTHON", "1")
    assert c_extension("kmc.checker.search._counts") is None


def test_an_action_declared_inactive_but_taken_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model's inactive_actions() is a claim about its config: an action it names that the search
    takes is reported (and fails --fail-on-vacuity), so a wrong declaration cannot hide coverage."""
    from kmc.models.replication.model import ReplicationModel

    declared = ReplicationModel.inactive_actions
    monkeypatch.setattr(ReplicationModel, "inactive_actions", lambda self: (*declared(self), "LeaderIncHighWatermark"))
    result = Check(model_name="replication", settings={"keep_going": True}).run()
    taken = result.coverage["actions"]["LeaderIncHighWatermark"][1]
    assert taken > 0
    assert result.vacuity == [
        f"action LeaderIncHighWatermark was taken {taken:,} times, though the model declares it inactive in this config"
    ]
    assert observe.vacuity_failures(result) == result.vacuity


def test_a_recovery_nothing_called_for_is_never_needed_not_a_gap() -> None:
    """The producer's epoch bump recovers from a sequence error: the default bounds never cause one,
    so it is reported as never needed (no vacuity warning); the delivery-timeout preset needs it."""
    from kmc.checker.cli.summary import summary_text

    quiet = Check(model_name="producer").run()
    assert quiet.coverage["actions"]["BumpEpoch"][1] == 0
    assert quiet.coverage["never_needed"] == ["BumpEpoch"] and quiet.vacuity == []
    assert "  never needed: BumpEpoch (recovery steps: nothing this search reached called for them)\n" in (
        summary_text(quiet, "kmc check producer")
    )
    needed = Check(model_name="producer", preset="delivery-timeout", settings={"keep_going": True}).run()
    assert needed.coverage["actions"]["BumpEpoch"][1] > 0 and needed.coverage["never_needed"] == []
