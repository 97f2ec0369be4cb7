"""What every engine returns: a verdict, statistics and violations with their traces."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from kmc.checker.model import Action, State


class Status(enum.Enum):
    HOLDS_COMPLETE = "holds-complete"
    HOLDS_BOUNDED = "holds-bounded"
    VIOLATED = "violated"
    ERROR = "error"

    @property
    def verdict(self) -> str:
        return {"holds-complete": "holds", "holds-bounded": "holds"}.get(self.value, self.value)


@dataclass
class Trace:
    """Initial state, then (action, state) for each step. ``loop`` is the index a lasso returns to."""

    states: list[State]
    actions: list[Action | None]  # actions[0] is None: nothing led to the initial state
    loop: int | None = None

    def __len__(self) -> int:
        return len(self.states)

    def steps(self) -> list[tuple[Action | None, State]]:
        return list(zip(self.actions, self.states, strict=True))


@dataclass
class Violation:
    property: str
    kind: str  # "invariant", "step" or "deadlock"
    trace: Trace
    trace_file: str | None = None

    @property
    def trace_length(self) -> int:
        return len(self.trace)


@dataclass
class Stats:
    distinct_states: int = 0
    generated_states: int = 0
    depth: int = 0
    """Length of the longest shortest trace, in states (the initial state is depth 1, as in TLC)."""
    elapsed_s: float = 0.0
    peak_memory_bytes: int = 0
    bytes_per_state: float | None = None
    collision_probability: float | None = None
    storage: str = "states"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.elapsed_s if self.elapsed_s > 0 else 0.0


@dataclass
class CheckResult:
    engine: str
    model: str
    config: dict[str, Any]
    preset: str | None
    properties: list[str]
    status: Status
    complete: bool
    stats: Stats
    violations: list[Violation] = field(default_factory=list)
    bound_reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    property_docs: dict[str, str] = field(default_factory=dict)
    """Each checked property's docstring, for the traces a report explains."""
    spec_files: list[str] = field(default_factory=list)
    """The spec files the properties came from (absolute), so a trace's property can be found again."""
    seed: int | None = None
    error: str | None = None
    model_ref: str | None = None
    """How the model was named when it is not a registered one (module:Class or file.py:Class)."""
    interrupted: bool = False
    """Stopped by Ctrl-C: the statistics are those of the part explored."""
    coverage: dict[str, Any] | None = None
    """Per action [enabled, taken], per property [evaluated, exercised] (kmc.checker.search.observers.Coverage)."""
    vacuity: list[str] = field(default_factory=list)
    """Actions never taken and properties never exercised, one line each."""

    @property
    def verdict(self) -> str:
        return self.status.verdict

    def violation(self, prop: str) -> Violation | None:
        return next((v for v in self.violations if v.property == prop), None)

    def to_json(self) -> dict[str, Any]:
        stats = self.stats
        out: dict[str, Any] = {
            "verdict": self.verdict,
            "status": self.status.value,
            "complete": self.complete,
            "model": self.model,
            "preset": self.preset,
            "config": self.config,
            "engine": self.engine,
            "properties": self.properties,
            "distinct_states": stats.distinct_states,
            "generated_states": stats.generated_states,
            "depth": stats.depth,
            "elapsed_s": round(stats.elapsed_s, 3),
            "states_per_s": round(stats.states_per_second, 1),
            "peak_memory_bytes": stats.peak_memory_bytes,
            "bytes_per_state": None if stats.bytes_per_state is None else round(stats.bytes_per_state, 1),
            "collision_probability": stats.collision_probability,
            "storage": stats.storage,
            "violations": [
                {
                    "property": v.property,
                    "kind": v.kind,
                    "trace_length": v.trace_length,
                    "trace": v.trace_file,
                }
                for v in self.violations
            ],
            "warnings": self.warnings,
        }
        if self.bound_reason:
            out["bound_reason"] = self.bound_reason
        if self.seed is not None:
            out["seed"] = self.seed
        if self.error:
            out["error"] = self.error
        if self.interrupted:
            out["interrupted"] = True
        if self.coverage is not None:
            out["coverage"] = self.coverage
            out["vacuity"] = self.vacuity
        out.update(stats.extra)
        return out
