"""The settings of one Hypothesis check."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HypothesisOptions:
    seed: int | None = None
    examples: int = 1000
    """How many runs (sequences of steps) Hypothesis tries before it gives up."""
    steps: int = 60
    """The most steps in one run."""
    database: str | None = None
    """A directory to keep failing examples in, so the next run tries them first; None: in memory."""
    deadlock: bool = False
    guided: bool = True
    """Prefer successors no earlier run reached and restart from earlier runs' frontiers."""
