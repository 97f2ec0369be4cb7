"""`kmc prove`: is an invariant, with the lemmas given, inductive?

Base: every initial state satisfies each claim. Step: from any well-formed state satisfying all
the claims, one step of the next relation leads to a state satisfying each of them again. When
both hold, every claim holds in every reachable state for the model's constants: a proof, where
BFS shows it only for the states it enumerates. When a step fails, the pair of states is the
counterexample to induction: either the invariant is false or it needs a stronger lemma.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import z3
from kmc.checker.engines.symbolic.encoding import EncodingMismatchError, SymbolicEncoding, SymbolicProperty, encoding_of
from kmc.checker.model import Action, Model, State

WELL_FORMED = "well_formed"
"""The encoding's type invariant: always one of the claims, so the proof never assumes it."""


@dataclass
class InductionFailure:
    claim: str
    """The claim that does not hold."""
    phase: str
    """"base": an initial state violates it; "step": it is not preserved."""
    before: State | None
    action: Action | None
    after: State


@dataclass
class ProofResult:
    model: str
    config: dict[str, Any]
    preset: str | None
    invariant: str
    lemmas: list[str]
    proven: bool
    failure: InductionFailure | None
    elapsed_s: float
    queries: int = 0
    claims: list[str] = field(default_factory=list)
    step_property: bool = False
    """The property proven is a step property: it holds on every step from a reachable state."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model,
            "preset": self.preset,
            "config": self.config,
            "invariant": self.invariant,
            "lemmas": self.lemmas,
            "verdict": "proven" if self.proven else "not-inductive",
            "elapsed_s": round(self.elapsed_s, 3),
            "queries": self.queries,
        }
        if self.failure is not None:
            out["failure"] = {"claim": self.failure.claim, "phase": self.failure.phase}
        return out


def prove_property(
    model: Model,
    name: str,
    lemma_names: list[str],
    extra: Mapping[str, SymbolicProperty] | None = None,
    preset: str | None = None,
) -> ProofResult:
    """Prove an invariant inductive with the lemmas; or, for a step property, prove the lemmas
    inductive and that every step from a state satisfying them satisfies the property."""
    from kmc.checker.engines.symbolic.encoding import choose_invariants

    started = time.perf_counter()
    encoding = encoding_of(model)
    step_property = encoding.step_properties.get(name)
    claimed = lemma_names if step_property is not None else [name, *lemma_names]
    chosen = choose_invariants(encoding, claimed, extra) if claimed else {}
    claims: dict[str, Callable[[Any], Any]] = {WELL_FORMED: encoding.well_formed}
    for claim_name, fn in chosen.items():
        claims[claim_name] = _bind(encoding, fn)
    queries = 0
    failure: InductionFailure | None = None

    v = encoding.state_frame("pre")
    for claim_name, claim in claims.items():
        solver = z3.Solver()
        solver.add(encoding.init(v), z3.Not(claim(v)))
        queries += 1
        if solver.check() == z3.sat:
            state = encoding.state(v.read(solver.model()))
            failure = InductionFailure(claim_name, "base", None, None, state)
            break
    if failure is None:
        a, w = encoding.action_frame("step"), encoding.state_frame("post")
        solver = z3.Solver()
        solver.add(*(claim(v) for claim in claims.values()), encoding.next(v, a, w))
        obligations = [(n, claim(w)) for n, claim in claims.items()]
        if step_property is not None:
            obligations.append((name, step_property(encoding, v, a, w)))
        for claim_name, after in obligations:
            solver.push()
            solver.add(z3.Not(after))
            queries += 1
            if solver.check() == z3.sat:
                failure = _step_failure(model, encoding, claim_name, solver.model(), v, a, w)
                break
            solver.pop()
    return ProofResult(
        model=model.name,
        config=model.config_dict(),
        preset=preset,
        invariant=name,
        lemmas=list(lemma_names),
        proven=failure is None,
        failure=failure,
        elapsed_s=time.perf_counter() - started,
        queries=queries,
        claims=[*claims, *([name] if step_property is not None else [])],
        step_property=step_property is not None,
    )


def _bind(encoding: SymbolicEncoding, fn: SymbolicProperty) -> Callable[[Any], Any]:
    return lambda frame: fn(encoding, frame)


def _step_failure(
    model: Model, encoding: SymbolicEncoding, claim: str, solution: z3.ModelRef, v: Any, a: Any, w: Any
) -> InductionFailure:
    before = encoding.state(v.read(solution))
    action = encoding.action(a.read(solution))
    after = encoding.state(w.read(solution))
    if (action, after) not in set(model.successors(before)):
        raise EncodingMismatchError(
            f"{model.name}: the symbolic next relation takes {action!r} from a state where the explicit model does not"
        )
    return InductionFailure(claim, "step", before, action, after)
