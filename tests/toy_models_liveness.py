"""Liveness properties of the toy mutex; fairness comes from the spec files the tests pass."""

from kmc.checker import eventually, leads_to


@leads_to(lambda s: s.pc[0] == "waiting")
def NoStarvation(s) -> bool:  # type: ignore[no-untyped-def]
    """A waiting process 0 eventually enters its critical section."""
    return s.pc[0] == "critical"


@eventually
def SomeoneEnters(s) -> bool:  # type: ignore[no-untyped-def]
    """Some process eventually holds the lock."""
    return s.lock != -1
