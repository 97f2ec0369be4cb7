"""What every engine's search shares: expanding a state, the model's own bounds, how states are
keyed, the properties bound to the model with the first violation of each, and the result.

An engine's hot loop stays its own; its prologue (binding the properties, recording the first
violation of each with its trace, stopping unless ``--continue``) and its epilogue (the status
derived from violations and bounds) are written once, here.
"""

from __future__ import annotations

import resource
from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any

from kmc.checker.errors import NondeterministicModelError, UserError
from kmc.checker.model import Action, Model, State
from kmc.checker.properties import SYMMETRY_WARNING, PropertySet, all_true, holds
from kmc.checker.result import CheckResult, Stats, Status, Trace, Violation
from kmc.checker.storage.fingerprint import fingerprint

DEADLOCK = "Deadlock"
"""The name a deadlock is reported under, as if it were a property."""
MODEL_BOUND = "the model's own bounds (within_bounds)"
"""The bound a search reports when the model's ``within_bounds`` cut a state off."""

KeyFn = Callable[[State], Hashable]


def current_rss() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * resource.getpagesize()
    except OSError:
        return 0


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def make_keyfn(model: Model, symmetry: bool, store: str) -> KeyFn | None:
    """How states are deduplicated; None means by the state itself (the fast path)."""
    if store not in ("states", "fingerprints"):
        raise UserError(f"unknown store {store!r}: use states or fingerprints")
    canon = model.symmetry if symmetry else None
    if symmetry and canon is None:
        raise UserError(f"model {model.name} defines no symmetry(); run without --symmetry")
    if store == "fingerprints":
        if canon is not None:
            return lambda s: fingerprint(canon(s))
        return fingerprint
    return canon


def check_determinism(model: Model, state: State, first: list[tuple[Action, State]]) -> None:
    """Successors are a pure function of the state: computed again, they must be the same."""
    second = list(model.successors(state))
    if Counter(first) != Counter(second):
        raise NondeterministicModelError(
            f"model {model.name}: successors() returned different results in two calls on the same "
            f"state (successors must be a pure function of the state): {state!r}"
        )


def bounds_check(model: Model) -> Callable[[State], bool] | None:
    """The model's ``within_bounds``, or None when it does not define one (nothing to check)."""
    return None if type(model).within_bounds is Model.within_bounds else model.within_bounds


def expand(model: Model, state: State) -> list[tuple[Action, State]]:
    """The successors of a state; a model that raises is reported, not a traceback."""
    try:
        succs = model.successors(state)
        return succs if type(succs) is list else list(succs)
    except UserError:
        raise
    except Exception as exc:
        raise UserError(
            f"model {model.name} raised {type(exc).__name__} in successors(): {exc} -- in state {state!r}"
        ) from exc


def initial_states(model: Model) -> list[State]:
    """The model's initial states; a model that raises is reported, not a traceback."""
    try:
        return list(model.init_states())
    except Exception as exc:
        raise UserError(f"model {model.name} raised {type(exc).__name__} in init_states(): {exc}") from exc


class PropertyChecks:
    """The properties one search checks, bound to the model, and the first violation of each.

    ``record`` keeps the first violation of a property (its trace built only then) and sets ``stop``
    unless the search goes on (``--continue``); ``check_state`` is the careful per-invariant check
    that names the property and reports one that raises."""

    def __init__(self, model: Model, props: PropertySet, keep_going: bool = False) -> None:
        self.invariants: list[tuple[str, Callable[..., Any]]] = [(p.name, p.bind(model)) for p in props.invariants]
        self.steps: list[tuple[str, Callable[..., Any]]] = [(p.name, p.bind(model)) for p in props.steps]
        self.violations: dict[str, Violation] = {}
        self.keep_going = keep_going
        self.stop = False

    def record(self, name: str, kind: str, trace: Callable[[], Trace]) -> None:
        if name not in self.violations:
            self.violations[name] = Violation(property=name, kind=kind, trace=trace())
            if not self.keep_going:
                self.stop = True

    def check_state(self, state: State, trace: Callable[[], Trace]) -> None:
        for name, pred in self.invariants:
            if name in self.violations:
                continue
            if not holds(name, pred, state):
                self.record(name, "invariant", trace)
                if self.stop:
                    return

    def check_step(self, state: State, action: Action, nxt: State, trace: Callable[[Any], Trace]) -> None:
        """Each step property not yet violated; ``trace(pred)`` builds the trace of a violated one."""
        for name, pred in self.steps:
            if name not in self.violations and not holds(name, pred, state, action, nxt):
                self.record(name, "step", lambda pred=pred: trace(pred))

    def quiet_check(self) -> Callable[[State], bool] | None:
        """One call that says whether every invariant not yet violated holds (False where one fails or
        raises: the careful check then names it); None when there is nothing left to check."""
        unviolated = [pred for name, pred in self.invariants if name not in self.violations]
        return all_true(unviolated) if unviolated else None

    def found(self) -> list[Violation]:
        return list(self.violations.values())


def search_result(
    engine: str,
    model: Model,
    props: PropertySet,
    deadlock: bool,
    symmetry: bool,
    found: list[Violation],
    *,
    complete: bool,
    stats: Stats,
    bound_reason: str | None,
    preset: str | None,
) -> CheckResult:
    """The result of an exhaustive search, its status derived the same way for every engine."""
    if found:
        status = Status.VIOLATED
    elif complete:
        status = Status.HOLDS_COMPLETE
    else:
        status = Status.HOLDS_BOUNDED
    return CheckResult(
        engine=engine,
        model=model.name,
        config=model.config_dict(),
        preset=preset,
        properties=props.names() + ([DEADLOCK] if deadlock else []),
        status=status,
        complete=complete,
        stats=stats,
        violations=found,
        bound_reason=bound_reason,
        warnings=[SYMMETRY_WARNING] if symmetry else [],
    )


def sampling_result(
    engine: str,
    model: Model,
    props: PropertySet,
    deadlock: bool,
    found: list[Violation],
    stats: Stats,
    *,
    bound_reason: str,
    seed: int,
    preset: str | None,
) -> CheckResult:
    """The result of a sampling engine: violated, or holding within its bounds -- never complete."""
    return CheckResult(
        engine=engine,
        model=model.name,
        config=model.config_dict(),
        preset=preset,
        properties=props.names() + ([DEADLOCK] if deadlock else []),
        status=Status.VIOLATED if found else Status.HOLDS_BOUNDED,
        complete=False,
        stats=stats,
        violations=found,
        bound_reason=bound_reason,
        seed=seed,
    )
