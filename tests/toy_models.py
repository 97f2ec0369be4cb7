"""Small models whose reachable states and shortest violations are known in closed form."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from kmc.checker import Action, Model, Preset, invariant, param, step


class Grid(NamedTuple):
    x: int
    y: int


@dataclass(frozen=True)
class GridConfig:
    n: int = param(3, "each counter counts from 0 to n", min=0, max=1000)
    limit: int = param(1000, "the Bounded invariant says x + y < limit", min=0)


class CounterGrid(Model):
    """Two counters 0..n: (n+1)^2 states, depth 2n+1; with symmetry (n+1)(n+2)/2."""

    name = "counter-grid"
    Config = GridConfig
    presets: ClassVar = {"small": Preset("n=2", {"n": 2})}
    spec_modules = ("toy_models",)

    def init_states(self) -> list[Grid]:
        return [Grid(0, 0)]

    def successors(self, s: Grid):  # type: ignore[override]
        if s.x < self.config.n:
            yield Action("IncX"), Grid(s.x + 1, s.y)
        if s.y < self.config.n:
            yield Action("IncY"), Grid(s.x, s.y + 1)

    def symmetry(self, s: Grid) -> Grid:
        return Grid(min(s), max(s))


@invariant
def Bounded(s: Grid, model: CounterGrid) -> bool:
    """x + y stays below the configured limit."""
    return s.x + s.y < model.config.limit


@step
def Monotonic(s: Grid, action: Action, t: Grid) -> bool:
    """Counters never go down."""
    return t.x >= s.x and t.y >= s.y


PARTICIPANT = ("working", "prepared", "committed", "aborted")


class TwoPhase(NamedTuple):
    coordinator: str
    participants: tuple[str, ...]


@dataclass(frozen=True)
class TwoPhaseConfig:
    participants: int = param(3, "number of resource managers", min=1, max=8)
    commit_rule: str = param("all_prepared", "when the coordinator commits", choices=("all_prepared", "any_prepared"))


class TwoPhaseCommit(Model):
    """2PC: 2*3^N + 2^N states (symmetry: 2*C(N+2,2) + N+1), depth 2N+2."""

    name = "two-phase"
    Config = TwoPhaseConfig
    presets: ClassVar = {
        "correct": Preset("commit only when all prepared", {"commit_rule": "all_prepared"}),
        "buggy": Preset("commit when any prepared", {"commit_rule": "any_prepared"}),
    }
    default_preset = "correct"
    spec_modules = ("toy_models_2pc",)

    def init_states(self) -> list[TwoPhase]:
        return [TwoPhase("init", ("working",) * self.config.participants)]

    def successors(self, s: TwoPhase):  # type: ignore[override]
        ps = s.participants
        for i, p in enumerate(ps):

            def put(v: str, i: int = i) -> tuple[str, ...]:
                return (*ps[:i], v, *ps[i + 1 :])

            if p == "working" and s.coordinator == "init":
                yield Action("Prepare", rm=i), s._replace(participants=put("prepared"))
                yield Action("Abort", rm=i), s._replace(participants=put("aborted"))
            if p == "prepared" and s.coordinator == "committed":
                yield Action("Commit", rm=i), s._replace(participants=put("committed"))
            if p in ("working", "prepared") and s.coordinator == "aborted":
                yield Action("Abort", rm=i), s._replace(participants=put("aborted"))
        if s.coordinator == "init":
            rule = all if self.config.commit_rule == "all_prepared" else any
            if rule(p == "prepared" for p in ps):
                yield Action("CoordinatorCommit"), s._replace(coordinator="committed")
            yield Action("CoordinatorAbort"), s._replace(coordinator="aborted")

    def symmetry(self, s: TwoPhase) -> TwoPhase:
        return s._replace(participants=tuple(sorted(s.participants)))


class Flaky(Model):
    """A broken model: successors are random, so two calls on one state disagree."""

    name = "flaky"
    Config = GridConfig

    def init_states(self) -> list[int]:
        return [0]

    def successors(self, s: int):  # type: ignore[override]
        if s < 50:
            yield Action("Step", by=random.randint(1, 3)), s + random.randint(1, 3)


class Crashy(Model):
    """A broken model: successors raise on state 2."""

    name = "crashy"
    Config = GridConfig

    def init_states(self) -> list[int]:
        return [0]

    def successors(self, s: int):  # type: ignore[override]
        if s == 2:
            raise KeyError("no such replica")
        yield Action("Step"), s + 1


class Ring(Model):
    """A counter modulo n: every state lies on one cycle (for lasso traces)."""

    name = "ring"
    Config = GridConfig

    def init_states(self) -> list[int]:
        return [0]

    def successors(self, s: int):  # type: ignore[override]
        yield Action("Tick"), (s + 1) % max(self.config.n, 1)


class Mutex(NamedTuple):
    pc: tuple[str, ...]  # per process: idle, waiting, critical
    lock: int  # the holder, or -1


@dataclass(frozen=True)
class MutexConfig:
    processes: int = param(2, "processes sharing the lock", min=1, max=4)


class LockMutex(Model):
    """Processes take a lock to enter their critical section; nothing stops one of them from
    taking it over and over, so only strong fairness of Enter rules out starvation."""

    name = "mutex"
    Config = MutexConfig
    spec_modules = ("toy_models_liveness",)

    def init_states(self) -> list[Mutex]:
        return [Mutex(("idle",) * self.config.processes, -1)]

    def successors(self, s: Mutex):  # type: ignore[override]
        for i, pc in enumerate(s.pc):

            def put(v: str, i: int = i) -> tuple[str, ...]:
                return (*s.pc[:i], v, *s.pc[i + 1 :])

            if pc == "idle":
                yield Action("Request", proc=i), Mutex(put("waiting"), s.lock)
            elif pc == "waiting" and s.lock == -1:
                yield Action("Enter", proc=i), Mutex(put("critical"), i)
            elif pc == "critical":
                yield Action("Exit", proc=i), Mutex(put("idle"), -1)
