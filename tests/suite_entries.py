"""What the CI suite (counterexamples/suite.toml, run by `kmc ci` after pytest in `make test`)
already searches, so that a test need not search the same space a second time."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

SUITE = Path(__file__).resolve().parent.parent / "counterexamples" / "suite.toml"


@cache
def _entries() -> tuple[dict[str, Any], ...]:
    return tuple(tomllib.loads(SUITE.read_text())["check"])


def checked_whole(model: str, preset: str) -> int | None:
    """The state count the suite pins for ``preset`` as it is (no --set), searched to the end with
    every property holding; None if no entry does that."""
    for entry in _entries():
        if (entry.get("model"), entry.get("preset")) != (model, preset) or entry.get("set") or entry.get("properties"):
            continue
        if entry.get("expect") == "holds-complete" and entry.get("expect_distinct_states"):
            return int(entry["expect_distinct_states"])
    return None


def searched_by_suite(model: str, preset: str, expected: Mapping[str, str]) -> bool:
    """True when the suite searches ``preset`` whole (a test then need not), after checking that
    every verdict ``kmc list`` gives for it is "holds", as the suite's entry requires."""
    if not checked_whole(model, preset):
        return False
    assert set(expected.values()) == {"holds"}, (model, preset, expected)
    return True
