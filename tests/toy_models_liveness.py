"""Liveness properties of the toy mutex (fairness comes from the spec files the tests pass), and
small models whose fair cycles are known by hand; their properties come from spec files too, so
this module's properties stay the mutex's."""

from __future__ import annotations

from dataclasses import dataclass

from kmc.checker import Action, Model, eventually, leads_to, param


@leads_to(lambda s: s.pc[0] == "waiting")
def NoStarvation(s) -> bool:  # type: ignore[no-untyped-def]
    """A waiting process 0 eventually enters its critical section."""
    return s.pc[0] == "critical"


@eventually
def SomeoneEnters(s) -> bool:  # type: ignore[no-untyped-def]
    """Some process eventually holds the lock."""
    return s.lock != -1


@dataclass(frozen=True)
class ChainConfig:
    n: int = param(10, "states 0 .. n-1, each one Step from the next", min=1, max=10**7)
    ring: bool = param(False, "the last state steps back to 0 (one cycle through every state)")
    bound: int = param(0, "states from this one on are beyond the model's bounds (0: none)", min=0)


class Chain(Model):
    """A path of n states, or a ring: as deep as a graph gets, for a search that must not recurse."""

    name = "chain"
    Config = ChainConfig
    spec_modules = ()

    def init_states(self) -> list[int]:
        return [0]

    def successors(self, s: int):  # type: ignore[override]
        if s + 1 < self.config.n:
            yield Action("Step"), s + 1
        elif self.config.ring:
            yield Action("Step"), 0

    def within_bounds(self, state: int) -> bool:
        return not self.config.bound or state < self.config.bound


@dataclass(frozen=True)
class SwitchConfig:
    right: bool = param(False, "state b has a way out too (GoRight), so Go* is enabled all around the cycle")


class Switch(Model):
    """a and b flip forever; Go leaves a for done (and GoRight leaves b). Weak fairness of Go is met
    by the flipping (Go is disabled in b); strong fairness of Go is not."""

    name = "switch"
    Config = SwitchConfig
    spec_modules = ()

    def init_states(self) -> list[str]:
        return ["a"]

    def successors(self, s: str):  # type: ignore[override]
        if s == "a":
            yield Action("Flip"), "b"
            yield Action("Go"), "done"
        elif s == "b":
            yield Action("Flip"), "a"
            if self.config.right:
                yield Action("GoRight"), "done"
