"""What the tests of the models' C successor functions share: the states the Python definition
reaches, and a value's shape with every tuple's type kept."""

from __future__ import annotations

from typing import Any

from kmc.checker.model import Model
from kmc.checker.search.kernel import bounds_check


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
