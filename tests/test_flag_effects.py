"""The flag-effects benchmark: its comparison finds the depth a flag first matters, its results cover
every flag of every model, and docs/flag-effects.md shows those results."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from kmc.checker.registry import load_model_class, registered_models

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("flag_effects", ROOT / "benchmarks" / "flag_effects.py")
assert spec is not None and spec.loader is not None
flag_effects = importlib.util.module_from_spec(spec)
spec.loader.exec_module(flag_effects)

RESULTS = sorted((ROOT / "benchmarks" / "results").glob("*-flag-effects.json"))[-1]


def test_a_flag_that_matters_differs_at_the_depth_it_is_first_taken() -> None:
    elections = load_model_class(str(ROOT / "docs" / "examples" / "elections.py") + ":Elections")
    fixed, unclean = elections.build(None), elections.build("unclean")
    assert flag_effects.first_difference(fixed, unclean, 10_000, 30) == (3, True)
    assert flag_effects.first_difference(fixed, elections.build(None), 10_000, 30) == (None, True)
    row = flag_effects.effect(elections, "unclean_leader_election", (False, True), 10_000, 30)
    assert (row["changes"], row["depth"], row["from"], row["to"]) == (True, 3, False, True)


def test_a_search_cut_by_its_budget_says_so() -> None:
    model = load_model_class("transactions").build(None)
    assert flag_effects.first_difference(model, load_model_class("transactions").build(None), 50, 30) == (None, False)


def test_the_results_cover_every_flag_of_every_model_and_each_changes_something() -> None:
    """A new flag, or a new model, needs the benchmark run again (python benchmarks/flag_effects.py
    --model NAME): the results file must name it, and it must change the reachable states."""
    doc = json.loads(RESULTS.read_text())
    for name, cls in registered_models().items():
        measured = {row["flag"]: row for row in doc["models"].get(name, [])}
        assert set(measured) == {flag for flag, _ in flag_effects.flags(cls)}, name
        assert all(row["changes"] for row in measured.values()), name


def test_the_docs_table_is_the_results_table() -> None:
    text = (ROOT / "docs" / "flag-effects.md").read_text()
    assert flag_effects.markdown(json.loads(RESULTS.read_text())) in text
    assert RESULTS.name in text
