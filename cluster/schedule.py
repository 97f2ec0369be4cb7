"""Fault schedules: drawn from a seed, reproducible, and bounded as Kafka's guarantees assume.

A schedule is a list of steps over a campaign's time: a fault at a moment, and the step that undoes
it (restart, resume, heal) a few seconds later. Its bounds are part of it and are recorded with it:
by default at most one node is down, paused, cut off or without its disk at a time -- the fault a
replication factor of 3 with min.insync.replicas 2 is built to survive.
"""

from __future__ import annotations

import json
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kmc.checker.errors import UserError
from kmc.cluster.faults import KINDS

UNDO = {
    "crash": "restart",
    "pause": "resume",
    "partition": "heal",
    "one-way-partition": "heal",
    "lose-disk": "restart",
    "crash-controller": "restart",
    "crash-leader": "restart",
    "partition-leader": "heal",
    "cut-followers": "heal",
    "lose-controller-disk": "rejoin",
}
AIMED = ("crash-controller", "crash-leader", "partition-leader", "cut-followers")
"""Faults whose node is found when they happen (the quorum's or the partition's leader); the step
that undoes one targets the same node."""
ACTIONS = (*KINDS, "restart", "resume", "heal", "rejoin")


@dataclass(frozen=True)
class Bounds:
    """What a schedule may do: which faults, how many nodes at once, how long each lasts."""

    kinds: tuple[str, ...] = ("crash", "pause", "partition")
    max_faulty: int = 1
    """Nodes faulty at the same time (down, paused, cut off or without their disk)."""
    fault_s: tuple[float, float] = (3.0, 8.0)
    """How long a fault lasts before it is undone (uniform in the range)."""
    gap_s: tuple[float, float] = (2.0, 5.0)
    """Calm between one fault's undoing and the next fault."""

    def check(self) -> None:
        if not self.kinds or not all(isinstance(kind, str) and kind for kind in self.kinds):
            raise UserError(f"a schedule needs at least one fault kind, by name: the faults are {', '.join(KINDS)}")
        unknown = sorted(set(self.kinds) - set(KINDS))
        if unknown:
            raise UserError(f"unknown fault {', '.join(unknown)}: the faults are {', '.join(KINDS)}")
        if self.max_faulty != 1:
            raise UserError("schedules keep one node faulty at a time (max_faulty = 1): the guarantees assume it")
        for name, bound in (("fault_s", self.fault_s), ("gap_s", self.gap_s)):
            numbers = [b for b in bound if isinstance(b, int | float) and not isinstance(b, bool)]
            if len(bound) != 2 or len(numbers) != 2 or not 0 < numbers[0] <= numbers[1]:
                raise UserError(f"bad schedule bound {name}: give [low, high] seconds with 0 < low <= high")


@dataclass(frozen=True)
class Step:
    at_s: float
    action: str
    """A fault of KINDS or its undoing (restart, resume, heal)."""
    node: int | None = None
    """The node it targets (None for an aimed fault: whichever node leads at the time, and for the
    step that undoes it, that same node)."""


@dataclass(frozen=True)
class Schedule:
    seed: int
    duration_s: float
    nodes: int
    bounds: Bounds = field(default_factory=Bounds)
    steps: tuple[Step, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "duration_s": self.duration_s,
            "nodes": self.nodes,
            "bounds": asdict(self.bounds),
            "steps": [asdict(s) for s in self.steps],
        }

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2) + "\n")


def generate(seed: int, duration_s: float, nodes: int, bounds: Bounds | None = None) -> Schedule:
    """The schedule of a seed: faults one after another, each undone before the next, all of them
    undone before the end (the last seconds are calm, so the checkers read a healed cluster)."""
    bounds = bounds or Bounds()
    bounds.check()
    rng = random.Random(seed)
    steps: list[Step] = []
    now = rng.uniform(*bounds.gap_s)
    while True:
        lasts = rng.uniform(*bounds.fault_s)
        if now + lasts + bounds.gap_s[0] > duration_s:
            break
        kind = rng.choice(bounds.kinds)
        node = None if kind in AIMED else rng.randint(1, nodes)
        steps.append(Step(round(now, 3), kind, node))
        steps.append(Step(round(now + lasts, 3), UNDO[kind], node))
        now += lasts + rng.uniform(*bounds.gap_s)
    return Schedule(seed, duration_s, nodes, bounds, tuple(steps))


def explicit(steps: list[dict[str, Any]], duration_s: float, nodes: int, bounds: Bounds) -> Schedule:
    """A schedule written out step by step (a scenario), checked as a generated one would be."""
    parsed: list[Step] = []
    for i, raw in enumerate(steps):
        where = f"schedule step #{i + 1}"
        if (
            not isinstance(raw, dict)
            or set(raw) - {"at_s", "action", "node"}
            or "at_s" not in raw
            or "action" not in raw
        ):
            raise UserError(f"{where}: give at_s, action and optionally node")
        action, node, at_s = raw["action"], raw.get("node"), raw["at_s"]
        if action not in ACTIONS:
            raise UserError(f"{where}: unknown action {action!r}: one of {', '.join(ACTIONS)}")
        if not isinstance(at_s, int | float) or not 0 <= at_s <= duration_s:
            raise UserError(f"{where}: at_s must be a time within the campaign's {duration_s:g} s")
        if node is not None and (not isinstance(node, int) or not 1 <= node <= nodes):
            raise UserError(f"{where}: node must be one of 1..{nodes}")
        if node is None and action not in (*AIMED, "restart", "heal", "rejoin"):
            raise UserError(f"{where}: {action} needs a node")
        parsed.append(Step(float(at_s), action, node))
    if [s.at_s for s in parsed] != sorted(s.at_s for s in parsed):
        raise UserError("the schedule's steps must be in time order")
    return Schedule(-1, duration_s, nodes, bounds, tuple(parsed))
