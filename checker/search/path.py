"""Rebuilding a concrete trace from the keys of its states.

The BFS keeps only a key per state (the state itself, its symmetry representative or its
fingerprint) and a pointer to its parent's key. A trace is rebuilt as TLC does: follow the
parent pointers back to an initial state, then re-execute forward, at each step choosing a
successor whose key is the next one. With symmetry the rebuilt states may be permutations of
the ones first explored, but they form a real execution of the model.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any

from kmc.checker.errors import NondeterministicModelError
from kmc.checker.model import Action, Model, State
from kmc.checker.result import Trace

KeyFn = Callable[[State], Hashable]


def key_chain(parents: Mapping[Hashable, Any], key: Hashable) -> list[Hashable]:
    chain = [key]
    parent = parents[key]
    while parent is not None:
        chain.append(parent)
        parent = parents[parent]
    chain.reverse()
    return chain


def trace_from_keys(model: Model, keys: list[Hashable], keyfn: KeyFn) -> Trace:
    first = next((s for s in model.init_states() if keyfn(s) == keys[0]), None)
    if first is None:
        raise NondeterministicModelError(
            f"model {model.name}: an initial state explored earlier is no longer among init_states(); "
            "init_states() must return the same states on every call"
        )
    states: list[State] = [first]
    actions: list[Action | None] = [None]
    for want in keys[1:]:
        current = states[-1]
        found = next(((a, t) for a, t in model.successors(current) if keyfn(t) == want), None)
        if found is None:
            raise NondeterministicModelError(
                f"model {model.name}: successors() of a state changed between two calls "
                f"(a successor explored earlier is gone); state: {current!r}"
            )
        actions.append(found[0])
        states.append(found[1])
    return Trace(states=states, actions=actions)


def step_trace(model: Model, trace: Trace, state: State, action: Action, nxt: State, pred: Any) -> Trace:
    """A trace to ``state`` extended by the step that violates ``pred``. Rebuilt from keys under
    symmetry, the trace may end in a symmetric variant of ``state``: that variant's own violating
    step is taken then."""
    last = trace.states[-1]
    if last != state:
        action, nxt = next(((b, u) for b, u in model.successors(last) if not pred(last, b, u)), (action, nxt))
    trace.states.append(nxt)
    trace.actions.append(action)
    return trace
