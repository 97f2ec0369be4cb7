"""Properties of one's own for the elections model, given with --spec (docs/writing-a-property.md)."""

from kmc.checker import invariant, step


@step
def LeaderEpochNeverDecreases(s, action, t) -> bool:
    """A leader epoch only grows."""
    return t.leaderEpoch >= s.leaderEpoch


@invariant
def IsrWithinReplicas(s, model) -> bool:
    """The ISR holds replicas of this partition only."""
    return s.isr <= frozenset(range(model.config.replicas))
