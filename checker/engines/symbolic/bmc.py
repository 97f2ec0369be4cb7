"""Bounded model checking with z3: unroll the symbolic next relation one step at a time and ask
for a violation at each depth, so the first one found is a shortest counterexample, as in BFS.

Every answer is checked against the explicit model before it is reported: the trace must replay
on ``init_states``/``successors``, and the explicit property must fail where the symbolic one did.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import z3
from kmc.checker import interrupts
from kmc.checker.engines.symbolic.encoding import EncodingMismatchError, Frame, SymbolicEncoding, encoding_of
from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model, State
from kmc.checker.properties import PropertySet, holds
from kmc.checker.result import CheckResult, Stats, Status, Trace, Violation
from kmc.checker.search.progress import Progress

BMC_BOUND = "bounded model checking to depth {depth}: behaviours longer than that were not checked"


@dataclass(frozen=True)
class BmcOptions:
    depth: int = 10
    """How many steps to unroll (a trace of depth + 1 states)."""
    named: bool = False
    """The properties were named by the user: each must have a symbolic form."""


def symbolic_properties(
    encoding: SymbolicEncoding, props: PropertySet, named: bool
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The symbolic forms of the selected invariants and step properties, and what was left out."""
    invariants, steps, missing = {}, {}, []
    for prop in props.invariants:
        if prop.name in encoding.invariants:
            invariants[prop.name] = encoding.invariants[prop.name]
        else:
            missing.append(prop.name)
    for prop in props.steps:
        if prop.name in encoding.step_properties:
            steps[prop.name] = encoding.step_properties[prop.name]
        else:
            missing.append(prop.name)
    if missing and named:
        have = ", ".join([*encoding.invariants, *encoding.step_properties]) or "(none)"
        raise UserError(f"no symbolic form of {', '.join(missing)} in {encoding.model.name}'s encoding; it has: {have}")
    warnings = []
    if missing:
        warnings.append(f"not checked by bmc (no symbolic form): {', '.join(missing)}")
    if not invariants and not steps:
        raise UserError(f"none of the selected properties has a symbolic form in {encoding.model.name}'s encoding")
    return invariants, steps, warnings


def explicit_trace(model: Model, encoding: SymbolicEncoding, states: list[State], actions: list[Action]) -> Trace:
    """The decoded trace, checked step by step against the explicit model."""
    if states[0] not in set(model.init_states()):
        raise EncodingMismatchError(f"{model.name}: the symbolic init allows a state the model does not: {states[0]!r}")
    for i in range(1, len(states)):
        if (actions[i - 1], states[i]) not in set(model.successors(states[i - 1])):
            raise EncodingMismatchError(
                f"{model.name}: the symbolic next relation allows step {i} ({actions[i - 1]!r}), "
                "which the explicit model does not take"
            )
    return Trace(states=states, actions=[None, *actions])


def bmc(
    model: Model, props: PropertySet, options: BmcOptions, progress: Progress | None = None, preset: str | None = None
) -> CheckResult:
    started = time.perf_counter()
    encoding = encoding_of(model)
    invariants, steps, warnings = symbolic_properties(encoding, props, options.named)
    solver = z3.Solver()
    frames: list[Frame] = [encoding.state_frame(0)]
    actions: list[Frame] = []
    solver.add(encoding.init(frames[0]), encoding.well_formed(frames[0]))
    violations: list[Violation] = []
    complete = interrupted = False
    reached = 0
    checked = -1  # the deepest depth whose properties were fully checked
    try:
        for k in range(options.depth + 1):
            if k > 0:
                frames.append(encoding.state_frame(k))
                actions.append(encoding.action_frame(k - 1))
                solver.add(encoding.next(frames[k - 1], actions[k - 1], frames[k]))
                if solver.check() == z3.unsat:
                    complete = True  # no behaviour has k steps: all of them were checked
                    break
            reached = k
            if progress is not None:
                progress.update(distinct=0, generated=0, depth=k + 1, queue=0)
            bad = [z3.Not(fn(encoding, frames[k])) for fn in invariants.values()]
            if k > 0:
                bad += [z3.Not(fn(encoding, frames[k - 1], actions[k - 1], frames[k])) for fn in steps.values()]
            if not bad:
                checked = k
                continue
            solver.push()
            solver.add(z3.Or(bad))
            if solver.check() == z3.sat:
                violations = _violations(model, encoding, props, solver.model(), frames, actions)
                solver.pop()
                break
            solver.pop()
            checked = k
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the depths fully checked are the partial result
        interrupted, reached = True, max(checked, 0)
    if progress is not None:
        progress.close()
    elapsed = time.perf_counter() - started
    stats = Stats(depth=reached + 1, elapsed_s=elapsed, storage="symbolic")
    stats.extra["bmc_depth"] = reached
    if violations:
        status = Status.VIOLATED
    else:
        status = Status.HOLDS_COMPLETE if complete else Status.HOLDS_BOUNDED
    result = CheckResult(
        engine="bmc",
        model=model.name,
        config=model.config_dict(),
        preset=preset,
        properties=[*invariants, *steps],
        status=status,
        complete=complete,
        stats=stats,
        violations=violations,
        bound_reason=None if complete else BMC_BOUND.format(depth=options.depth),
        warnings=warnings,
    )
    if interrupted:
        result.interrupted = True
        result.bound_reason = f"interrupted ({interrupts.reason()}) after depth {reached}"
    return result


def _violations(
    model: Model,
    encoding: SymbolicEncoding,
    props: PropertySet,
    solution: z3.ModelRef,
    frames: list[Frame],
    actions: list[Frame],
) -> list[Violation]:
    states = [encoding.state(frame.read(solution)) for frame in frames]
    labels = [encoding.action(frame.read(solution)) for frame in actions]
    trace = explicit_trace(model, encoding, states, labels)
    last = states[-1]
    found = []
    for prop in props.invariants:
        if prop.name in encoding.invariants and not holds(prop.name, prop.bind(model), last):
            found.append(Violation(prop.name, "invariant", trace))
    if len(states) > 1:
        before, action = states[-2], labels[-1]
        for prop in props.steps:
            if prop.name in encoding.step_properties and not holds(prop.name, prop.bind(model), before, action, last):
                found.append(Violation(prop.name, "step", trace))
    if not found:
        raise EncodingMismatchError(
            f"{model.name}: the symbolic properties fail at step {len(states) - 1} but the explicit ones hold there"
        )
    return found
