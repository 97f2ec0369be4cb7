"""What the tests of the models' C successor functions share: the states the Python definition
reaches, and a value's shape with every tuple's type kept."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

from kmc.checker.engines.bfs.engine import bfs
from kmc.checker.model import Model
from kmc.checker.properties import PropertySet
from kmc.checker.search.kernel import bounds_check

LEAK_ALLOWANCE = 32 * 1024
"""Bytes a search may leave behind (caches that fill up once): a reference leaked on every step of
the searches the tests make would leave hundreds of kilobytes."""


def shape(value: Any) -> Any:
    """The value with every tuple's type kept (NamedTuple fields name a trace's variables), and
    True told from 1: equal values of different types differ here."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(shape(v) for v in value))
    if isinstance(value, frozenset):
        return frozenset(shape(v) for v in value)
    return (type(value).__name__, value)


def reachable(model: Model, limit: int | None = None) -> list[Any]:
    """The states the model's Python definition (``_successors``) reaches, breadth first, the
    first ``limit`` of them if given; a state outside ``within_bounds`` is kept but not expanded."""
    within = bounds_check(model)
    seen = dict.fromkeys(model.init_states())
    frontier = list(seen)
    while frontier and (limit is None or len(seen) < limit):
        following = []
        for s in frontier:
            if within is not None and not within(s):
                continue
            for _action, t in model._successors(s):  # type: ignore[attr-defined]
                if t not in seen:
                    seen[t] = None
                    following.append(t)
        frontier = following
    return list(seen)[:limit]


def memory_kept_by_a_search(model: Model) -> int:
    """Bytes a second search of the model leaves allocated after it ends (traced by tracemalloc, which
    sees every object the C builds): with exact reference counts, what the first did not fill up."""
    bfs(model, PropertySet())
    gc.collect()
    tracemalloc.start()
    try:
        bfs(model, PropertySet())
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        result = bfs(model, PropertySet())
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert result.stats.distinct_states > 1_000, "too small a search to show a leak"
    return kept
