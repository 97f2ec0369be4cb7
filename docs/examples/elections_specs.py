"""The properties of the elections model, found through its spec_modules (docs/writing-a-property.md)."""

from kmc.checker import invariant, step


@invariant
def LeaderInIsr(s) -> bool:
    """The leader is a member of the ISR."""
    return s.leader in s.isr


@step(trigger=lambda s, a, t: a.name in ("ElectLeader", "UncleanElectLeader"))
def ElectedFromIsr(s, a, t) -> bool:
    """A new leader was in the ISR when elected, so it has every committed record."""
    return a.name not in ("ElectLeader", "UncleanElectLeader") or t.leader in s.isr
