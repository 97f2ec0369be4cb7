"""The in-memory visited set of a search that deduplicates by fingerprint: each 64-bit fingerprint
with its parent's, for traces.

The C extension ``_fpset`` keeps them in one open-addressing table (16 bytes a slot, at most three
quarters full); without it, or with ``KMC_PURE_PYTHON=1``, a dict does the same, at about 100
bytes a state. Both take a level's fingerprints in one call, in order, and say which were new
(``add_new``), or one at a time (``add``); ``visited[fp]`` is the parent (None for an initial
state) and ``del visited[fp]`` takes one back, as a dict's would.
"""

from __future__ import annotations

from array import array
from typing import Any

from kmc.checker.extension import c_extension

Buffer = Any
"""Native uint64 words: bytes, an array("Q") or a contiguous numpy array."""


class PythonVisitedFingerprints:
    """The dict-backed twin of the C ``VisitedFingerprints``."""

    def __init__(self) -> None:
        self.parents: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.parents)

    def __contains__(self, fp: int) -> bool:
        return fp in self.parents

    def add_new(self, fps: Buffer, parents: Buffer) -> bytes:
        """Of the fingerprints (native uint64 words), in order, those not held yet (each one's first
        occurrence) are kept with their parents; their positions, as native int64 words."""
        fp_words, parent_words = array("Q"), array("Q")
        fp_words.frombytes(memoryview(fps).cast("B"))
        parent_words.frombytes(memoryview(parents).cast("B"))
        if len(fp_words) != len(parent_words):
            raise ValueError("add_new: as many parents as fingerprints")
        kept, new = self.parents, array("q")
        for position, (fp, parent) in enumerate(zip(fp_words, parent_words, strict=True)):
            if fp not in kept:
                kept[fp] = parent
                new.append(position)
        return new.tobytes()

    def any_new(self, fps: Buffer) -> bool:
        words = array("Q")
        words.frombytes(memoryview(fps).cast("B"))
        return any(fp not in self.parents for fp in words)

    def parent_of(self, fp: int) -> int:
        return self.parents[fp]

    def add(self, fp: int, parent: int | None) -> bool:
        """Whether ``fp`` was new; it is kept with ``parent`` (None: an initial state, its own parent)."""
        size = len(self.parents)
        self.parents.setdefault(fp, fp if parent is None else parent)
        return len(self.parents) != size

    def __getitem__(self, fp: int) -> int | None:
        """The parent of ``fp``; None for an initial state."""
        parent = self.parents[fp]
        return None if parent == fp else parent

    def __delitem__(self, fp: int) -> None:
        del self.parents[fp]

    def table_bytes(self) -> int:
        return 100 * len(self.parents)


_fpset = c_extension("kmc.checker.storage._fpset")
IN_C = _fpset is not None
"""Whether the table is the C one (else a dict, which a search may as well use directly)."""
VisitedFingerprints = _fpset.VisitedFingerprints if IN_C else PythonVisitedFingerprints
