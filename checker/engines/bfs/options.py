"""The settings of one breadth-first search."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BfsOptions:
    max_depth: int | None = None
    """Explore states up to this depth (in states; the initial states are depth 1)."""
    max_states: int | None = None
    symmetry: bool = False
    deadlock: bool = False
    keep_going: bool = False
    """Like TLC's -continue: report every violated property, each with its shortest trace."""
    store: str = "states"
    """"states" keeps every state (exact); "fingerprints" keeps 64-bit fingerprints (TLC-style)."""
    determinism_checks: int = 256
    """Successors of this many states (and of every 4096th after) are computed twice and compared."""
    memory: int | None = None
    """Bytes the visited set and the frontier may hold before they spill to disk (fingerprints only)."""
    checkpoint: str | None = None
    """Save each level here before expanding it, for ``resume`` (fingerprints only)."""
    resume: bool = False
    """Continue the run checkpointed in ``checkpoint``."""
    workers: int = 1
    """Processes that search together (one fingerprint set, kept by the coordinating process)."""
