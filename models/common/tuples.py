"""Helpers for states built from tuples."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

S = TypeVar("S")


def put(items: tuple, index: int, value: object) -> tuple:
    """``items`` with the element at ``index`` replaced: a state's per-broker tuples are immutable."""
    return (*items[:index], value, *items[index + 1 :])


def least_renaming(s: S, ids: Sequence[int], permute: Callable[[S, tuple[int, ...]], S], key: Callable[[S], Any]) -> S:
    """Symmetry reduction over interchangeable ids: the state with the least ``key`` among every
    renaming of ``ids`` by ``permute`` (the state itself on ties)."""
    best, best_key = s, None
    for perm in itertools.permutations(ids):
        candidate = permute(s, perm)
        candidate_key = key(candidate)
        if best_key is None or candidate_key < best_key:
            best, best_key = candidate, candidate_key
    return best
