"""Trace validation: is what a real cluster logged a behaviour of the model?

An observed trace is a sequence of observed states, each what the logs show of a model state (its
*projection*, written by a mapping in ``kmc.cluster.mappings``). The logs do not show everything:
fetches, timers and votes leave no record. So, as TLA+ trace validation does, the check is a search
over what the logs do not show: the *frontier* is every model state consistent with the observations
so far; from it the model must reach a state with the next observation's projection in at most
``depth`` steps, and the states it reaches become the next frontier. Steps whose projection is the
current observation's, or that show nothing (``project`` returns None), are the hidden steps; with
``changes`` above 1 a step may also pass through projections the log did not record (several
decisions in one batch).

A model's bounds are per transition, not per run: after each observation the mapping's
``normalize`` resets the fault counters, so a long run does not exhaust a budget meant for a short
search. A transition no path explains ends the validation of that trace: it is reported with the
observations up to it, as an *observed* ITF trace.
"""

from __future__ import annotations

import json
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kmc.checker.model import Model
from kmc.checker.properties import model_properties
from kmc.checker.traces.observed import OBSERVED_STEP
from kmc.cluster.mappings.base import Mapping, View

DEFAULT_DEPTH = 8
DEFAULT_STATES = 2_000_000
"""States one transition's search may visit before its verdict is "undecided"."""
PRUNED_SLACK = 1
"""A pruned search keeps the states reached at the shortest depth and this many steps beyond."""


@dataclass
class Unexplained:
    """A transition between two observed states that no path of the model explains."""

    index: int
    """The observed state that could not be reached (the transition is index-1 -> index)."""
    before: Hashable
    after: Hashable
    explored: int
    undecided: bool = False
    """The search ran out of states before it ran out of depth: neither explained nor refuted."""


@dataclass
class TraceValidation:
    model: str
    trace: str
    observed: int
    transitions: int = 0
    """Consecutive observed states that differ (stutters are not transitions)."""
    validated: int = 0
    depths: dict[int, int] = field(default_factory=dict)
    """How many transitions the shortest explaining path of each length explained."""
    explored: int = 0
    frontier_max: int = 0
    unexplained: Unexplained | None = None
    depth: int = 0
    """The most steps the search allowed between two observed states."""
    full: bool = False
    """Decided by the full frontier (a pruned one did not validate it)."""
    invariant_violations: list[tuple[int, str]] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.unexplained is None and not self.invariant_violations

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "model": self.model,
            "trace": self.trace,
            "observed": self.observed,
            "transitions": self.transitions,
            "validated": self.validated,
            "depth": self.depth,
            "full_frontier": self.full,
            "depths": {str(k): v for k, v in sorted(self.depths.items())},
            "explored": self.explored,
            "frontier_max": self.frontier_max,
            "elapsed_s": round(self.elapsed_s, 2),
            "invariant_violations": [{"index": i, "property": p} for i, p in self.invariant_violations],
        }
        if self.unexplained is not None:
            u = self.unexplained
            out["unexplained"] = {"index": u.index, "undecided": u.undecided, "explored": u.explored}
        return out


def validate_trace(
    mapping: Mapping,
    name: str,
    trace: Sequence[View],
    observations: Any,
    depth: int = DEFAULT_DEPTH,
    max_states: int = DEFAULT_STATES,
) -> TraceValidation:
    """Validate one observed trace. First with a *pruned* frontier (the states reached at the
    shortest depth and one step beyond): quick, and enough for almost every transition. A trace
    that does not validate so is searched again with the full frontier, which alone decides."""
    started = time.monotonic()
    result = _validate(mapping, name, trace, observations, depth, max_states, PRUNED_SLACK)
    if not result.ok and result.unexplained is not None:
        explored = result.explored
        result = _validate(mapping, name, trace, observations, depth, max_states, depth)
        result.explored += explored
    result.elapsed_s = time.monotonic() - started
    return result


def _validate(
    mapping: Mapping,
    name: str,
    trace: Sequence[View],
    observations: Any,
    depth: int,
    max_states: int,
    slack: int,
) -> TraceValidation:
    model = mapping.model(name, trace, observations)
    result = TraceValidation(mapping.model_name, name, len(trace), depth=depth, full=slack >= depth)
    observed = [mapping.observe(view, trace) for view in trace]
    _check_invariants(mapping, model, observed, result)
    frontier = {mapping.normalize(s) for s in model.init_states()}
    previous: Hashable | None = None
    for index, target in enumerate(observed):
        matching = {s for s in frontier if mapping.project(s) == target}
        if matching:
            frontier = matching  # the initial state, or a stutter: a batch that changed nothing shown
        else:
            result.transitions += 1
            changes = mapping.decisions(trace[index])
            reached, steps, explored, undecided = _search(
                mapping, model, frontier, previous, target, depth, changes, max_states, slack
            )
            result.explored += explored
            if not reached or undecided:  # a frontier cut short is no ground to validate the rest on
                result.unexplained = Unexplained(index, previous, target, explored, undecided)
                break
            result.validated += 1
            result.depths[steps] = result.depths.get(steps, 0) + 1
            frontier = reached
        result.frontier_max = max(result.frontier_max, len(frontier))
        previous = target
    return result


def _search(
    mapping: Mapping,
    model: Model,
    frontier: set[Any],
    before: Hashable | None,
    target: Hashable,
    depth: int,
    changes: int,
    max_states: int,
    slack: int,
) -> tuple[set[Any], int, int, bool]:
    """Breadth first from the frontier: every state with the target's projection within ``depth``
    steps (normalized) -- or, pruned, within ``slack`` steps of the shortest path to one -- the length
    of that shortest path, the states visited, and whether the search was cut by ``max_states``."""
    seen: dict[Any, int] = {s: 0 for s in frontier}
    layer = [(s, 0) for s in frontier]
    reached: set[Any] = set()
    shortest = 0
    for step in range(1, depth + 1):
        following: list[tuple[Any, int]] = []
        for state, changed in layer:
            if not model.within_bounds(state):
                continue
            for _action, successor in model.successors(state):
                projection = mapping.project(successor)
                if projection == target:
                    reached.add(mapping.normalize(successor))
                    shortest = shortest or step
                    continue
                moved = changed + (projection is not None and projection != before)
                if moved >= changes:
                    continue  # an unrecorded decision, more than a batch may hold
                if seen.get(successor, changes + 1) <= moved:
                    continue
                seen[successor] = moved
                following.append((successor, moved))
                if len(seen) > max_states:
                    return reached, shortest, len(seen), True
        layer = following
        if not layer or (shortest and step >= shortest + slack):
            break
    return reached, shortest, len(seen), False


def _check_invariants(mapping: Mapping, model: Model, observed: list[Hashable], result: TraceValidation) -> None:
    """The model's invariants that the projection determines, on every observed state."""
    properties = {p.name: p for p in model_properties(type(model))}
    checks = [(name, properties[name].bind(model)) for name in mapping.invariants]
    for index, projection in enumerate(observed):
        state = mapping.lift(model, projection)
        result.invariant_violations.extend((index, name) for name, holds in checks if not holds(state))


@dataclass
class RunValidation:
    """Every observed trace of a run checked against every model that has a mapping."""

    traces: list[TraceValidation]
    snapshot_violations: list[tuple[str, str, str]] = field(default_factory=list)
    """(model, what was lifted, property) for each determined invariant a snapshot breaks."""
    files: list[Path] = field(default_factory=list)
    """The observed ITF traces written for what did not validate."""
    models: list[str] = field(default_factory=list)
    """Every model a mapping was asked about, whether the run showed it anything or not."""

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.traces) and not self.snapshot_violations

    def per_model(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {
            model: {"traces": 0, "observed": 0, "transitions": 0, "validated": 0} for model in self.models
        }
        for t in self.traces:
            counts = out.setdefault(t.model, {"traces": 0, "observed": 0, "transitions": 0, "validated": 0})
            counts["traces"] += 1
            counts["observed"] += t.observed
            counts["transitions"] += t.transitions
            counts["validated"] += t.validated
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "models": self.per_model(),
            "traces": [t.to_json() for t in self.traces],
            "snapshot_violations": [
                {"model": m, "snapshot": label, "property": p} for m, label, p in self.snapshot_violations
            ],
            "files": [str(f) for f in self.files],
        }


def validate_run(
    observations: Any,
    mappings: dict[str, Mapping],
    out_dir: Path | None = None,
    depth: int | None = None,
    max_states: int = DEFAULT_STATES,
) -> RunValidation:
    """Validate every trace each mapping finds; traces that are the same in the model's terms are
    searched once. Writes an observed ITF trace into ``out_dir`` for each that does not validate."""
    run = RunValidation([])
    if out_dir is not None and out_dir.is_dir():
        for stale in out_dir.glob("observed-*.itf.json"):
            stale.unlink()
    for mapping in mappings.values():
        run.models.append(mapping.model_name)
        done: dict[tuple[Any, ...], TraceValidation] = {}
        for name, trace in mapping.traces(observations).items():
            model = mapping.model(name, trace, observations)
            key = (model.config, tuple(mapping.observe(view, trace) for view in trace))
            if key in done:
                same = done[key]
                result = TraceValidation(**{**same.__dict__, "trace": name, "elapsed_s": 0.0})
            else:
                result = validate_trace(mapping, name, trace, observations, depth or mapping.depth, max_states)
                done[key] = result
            run.traces.append(result)
            if not result.ok and out_dir is not None:
                run.files.append(write_observed(out_dir, mapping, name, trace, result))
        if mapping.traces(observations):
            first_name, first = next(iter(mapping.traces(observations).items()))
            model = mapping.model(first_name, first, observations)
            properties = {p.name: p for p in model_properties(type(model))}
            for label, state in mapping.snapshots(model, observations):
                for prop in mapping.invariants:
                    if not properties[prop].bind(model)(state):
                        run.snapshot_violations.append((mapping.model_name, label, prop))
    return run


def write_observed(out_dir: Path, mapping: Mapping, name: str, trace: Sequence[View], result: TraceValidation) -> Path:
    """An *observed* ITF trace: the observed states (in the cluster's broker ids) up to the one that
    did not validate, each with the raw records of its batch in ``#meta``. Marked ``observed`` so
    that no viewer takes it for a model's trace: nothing in it can be replayed on the model."""
    last = result.unexplained.index if result.unexplained else max(i for i, _p in result.invariant_violations)
    states = []
    for index, view in enumerate(trace[: last + 1]):
        projection = mapping.observe(view, trace)
        records = getattr(view, "records", None) or ([view.record] if getattr(view, "record", None) else [])
        meta: dict[str, Any] = {"index": index, "offset": view.offset, "records": [r.to_json() for r in records]}
        if index:
            kinds = ", ".join(dict.fromkeys(r.type for r in records)) or "no record"
            meta["action"] = {"name": OBSERVED_STEP, "args": {"offset": view.offset, "records": kinds}}
        states.append({"#meta": meta, **mapping.describe(projection, trace)})
    if result.unexplained:
        what = f"no path of at most {result.depth} steps of {mapping.model_name} explains state {last - 1} -> {last}"
        prop = "ObservedTransitionExplained"
    else:
        names = sorted({p for i, p in result.invariant_violations if i == last})
        what = f"{', '.join(names)} does not hold on observed state {last}"
        prop = names[0]
    doc = {
        "#meta": {
            "format": "ITF",
            "source": "kmc campaign",
            "observed": True,
            "model": mapping.model_name,
            "trace": name,
            "property": prop,
            "description": what,
            "undecided": bool(result.unexplained and result.unexplained.undecided),
        },
        "vars": list(states[0].keys() - {"#meta"}) if states else [],
        "states": states,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"observed-{mapping.model_name}-{name}.itf.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path
