"""A visited set of 64-bit fingerprints that spills to disk, and a BFS level that does too.

The design is TLC's disk-based fingerprint set: the newest fingerprints sit in a dict (each with
its parent's fingerprint, for traces); past the memory budget they are sorted and written to disk
as a *run* -- two flat uint64 files, fingerprints sorted and the parents beside them. Runs are
merged as they pile up, as a binary counter carries: the newest run is merged into the one before
it while that one is no larger, so there are O(log n) runs and each fingerprint is rewritten
O(log n) times (TLC rewrites its one file at every flush instead).
Lookups go in batches: a sorted array of candidates is searched in each memory-mapped run with
``np.searchsorted``, never one seek per state; the pages a lookup or a merge touched are then given
back (``MADV_DONTNEED``), so that a run costs the process no memory between lookups. A level's
states (:class:`DiskLevel`) are a list in memory, written out as chunks in the codec's compact form
under the same budget and read back in discovery order.

With ``durable`` (a checkpoint) every file's SHA-256 is kept, for ``meta.json`` to name, and a file
is deleted only once the next ``meta.json`` no longer needs it (:meth:`collect`).
"""

from __future__ import annotations

import hashlib
import mmap
import pickle
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from kmc.checker.errors import UserError
from kmc.checker.storage.checkpoint import unpack_resumed
from kmc.checker.storage.codec import StateCodec

ENTRY_BYTES = 100
"""What one fingerprint costs in the dict: its int, its slot and the dict's spare room (measured)."""
MERGE_BLOCK = 1 << 18
"""Fingerprints merged (or written) at a time: a merge holds a few times this (16 B each)."""
MAX_RUNS = 12


@dataclass
class Run:
    """A sorted run on disk: ``fps-N.u64`` and ``parents-N.u64``."""

    name: int
    count: int
    fps: Any = None
    """The fingerprints, memory-mapped (None while the run is empty)."""
    digest: str = ""
    mapping: mmap.mmap | None = None

    def files(self, directory: Path) -> list[Path]:
        return [directory / f"fps-{self.name}.u64", directory / f"parents-{self.name}.u64"]

    def open(self, directory: Path) -> None:
        if not self.count:
            self.fps = self.mapping = None
            return
        with open(self.files(directory)[0], "rb") as fh:
            self.mapping = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self.fps = np.frombuffer(self.mapping, dtype=np.uint64)

    def release(self) -> None:
        """Give back the pages a lookup touched: they stay in the kernel's page cache, and a
        mapped page the process touched counts as its memory until it is given back."""
        if self.mapping is not None:
            self.mapping.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        self.fps = self.mapping = None  # the mapping is unmapped with its last view

    def parent_at(self, directory: Path, at: int) -> int:
        """The parent of the run's ``at``-th fingerprint, read from its file. The parents are never
        mapped: only a trace reads them, and mapped pages would count as the process's memory."""
        with open(self.files(directory)[1], "rb") as fh:
            fh.seek(8 * at)
            return int(np.frombuffer(fh.read(8), dtype=np.uint64)[0])


class _RunWriter:
    """Appends sorted blocks to a run's two files, hashing as it goes."""

    def __init__(self, directory: Path, name: int) -> None:
        self.run = Run(name, 0)
        self.paths = self.run.files(directory)
        self.handles = [open(p, "wb") for p in self.paths]  # noqa: SIM115 -- closed by close()
        self.hashes = [hashlib.sha256(), hashlib.sha256()]

    def write(self, fps: Any, parents: Any) -> None:
        for handle, hashed, block in zip(self.handles, self.hashes, (fps, parents), strict=True):
            data = memoryview(np.ascontiguousarray(block, dtype=np.uint64)).cast("B")
            handle.write(data)
            hashed.update(data)
        self.run.count += len(fps)

    def close(self, directory: Path) -> Run:
        for handle in self.handles:
            handle.close()
        self.run.digest = combined_digest([h.digest() for h in self.hashes])
        self.run.open(directory)
        return self.run


class DiskFPSet:
    """Fingerprint -> parent fingerprint; an initial state is its own parent."""

    def __init__(self, directory: Path, durable: bool = False, first_name: int = 0) -> None:
        self.directory = directory
        self.durable = durable
        self.recent: dict[int, int] = {}
        self.runs: list[Run] = []
        """Oldest (largest) first."""
        self.on_disk = 0
        self.next_name = first_name
        self.flushes = 0
        self.merges = 0
        self.bytes_written = 0
        self.peak_disk_bytes = 0
        self.garbage: list[Path] = []

    def __len__(self) -> int:
        return len(self.recent) + self.on_disk

    @property
    def disk_bytes(self) -> int:
        return 16 * self.on_disk

    def found_on_disk(self, candidates: Iterable[int]) -> set[int]:
        """The candidates already in a run: one sorted batch searched in every run."""
        wanted = np.fromiter(candidates, dtype=np.uint64)
        if not self.runs or not len(wanted):
            return set()
        wanted.sort()
        hits = []
        for run in reversed(self.runs):  # the newest is the smallest
            if run.fps is None or not len(wanted):
                continue
            at = np.searchsorted(run.fps, wanted)
            found = run.fps[np.minimum(at, run.count - 1)] == wanted
            run.release()
            if found.any():
                hits.append(wanted[found])
                wanted = wanted[~found]
        return set(np.concatenate(hits).tolist()) if hits else set()

    def parent(self, fp: int) -> int:
        """The fingerprint of the state whose expansion first found ``fp`` (itself for an initial state)."""
        up = self.recent.get(fp)
        if up is not None:
            return up
        key = np.uint64(fp)
        for run in self.runs:
            if run.fps is None:
                continue
            at = int(np.searchsorted(run.fps, key))
            if at < run.count and run.fps[at] == key:
                return run.parent_at(self.directory, at)
        raise UserError(f"bfs: fingerprint {fp:#x} is missing from the visited set on disk (damaged spill directory)")

    def chain(self, fp: int) -> list[int]:
        """The fingerprints from an initial state to ``fp``."""
        keys = [fp]
        while (up := self.parent(keys[-1])) != keys[-1]:
            keys.append(up)
        keys.reverse()
        return keys

    def flush(self) -> None:
        """Write the dict out as a sorted run and empty it; merge runs that have piled up."""
        if not self.recent:
            return
        count = len(self.recent)
        # Sorted with as few copies as can be: this runs while the dict is at its largest.
        fps = np.fromiter(self.recent.keys(), dtype=np.uint64, count=count)
        order = np.argsort(fps)
        fps.sort()
        parents = np.fromiter(self.recent.values(), dtype=np.uint64, count=count)[order]
        del order
        writer = _RunWriter(self.directory, self._name())
        for start in range(0, count, MERGE_BLOCK):
            writer.write(fps[start : start + MERGE_BLOCK], parents[start : start + MERGE_BLOCK])
        del fps, parents
        self.runs.append(writer.close(self.directory))
        self.recent.clear()  # only now: a Ctrl-C above leaves the set whole
        self.on_disk += count
        self.flushes += 1
        self.bytes_written += 16 * count
        while len(self.runs) >= 2 and (self.runs[-2].count <= self.runs[-1].count or len(self.runs) > MAX_RUNS):
            self._merge()
        self.peak_disk_bytes = max(self.peak_disk_bytes, self.disk_bytes)

    def _name(self) -> int:
        self.next_name += 1
        return self.next_name

    def _merge(self) -> None:
        """Merge the two newest runs into one, a block at a time (runs never share a fingerprint)."""
        a, b = self.runs[-2], self.runs[-1]
        writer = _RunWriter(self.directory, self._name())
        # The parents are read in order, a block at a time (a mapping would keep them resident).
        parents_a, parents_b = (run.files(self.directory)[1] for run in (a, b))
        with open(parents_a, "rb") as pa, open(parents_b, "rb") as pb:
            ia = ib = 0
            top = np.uint64(2**64 - 1)
            while ia < a.count or ib < b.count:
                limit = min(
                    a.fps[min(ia + MERGE_BLOCK, a.count) - 1] if ia < a.count else top,
                    b.fps[min(ib + MERGE_BLOCK, b.count) - 1] if ib < b.count else top,
                )
                ja = int(np.searchsorted(a.fps, limit, side="right")) if ia < a.count else ia
                jb = int(np.searchsorted(b.fps, limit, side="right")) if ib < b.count else ib
                fps = np.concatenate([a.fps[ia:ja], b.fps[ib:jb]])
                parents = np.concatenate(
                    [np.fromfile(pa, dtype=np.uint64, count=ja - ia), np.fromfile(pb, dtype=np.uint64, count=jb - ib)]
                )
                order = np.argsort(fps, kind="stable")
                writer.write(fps[order], parents[order])
                ia, ib = ja, jb
                a.release()
                b.release()
        self.runs[-2:] = [writer.close(self.directory)]
        self.merges += 1
        self.bytes_written += 16 * (a.count + b.count)
        self.peak_disk_bytes = max(self.peak_disk_bytes, self.disk_bytes + 16 * (a.count + b.count))
        for run in (a, b):
            run.close()
            self._discard(run.files(self.directory))

    def _discard(self, paths: list[Path]) -> None:
        if self.durable:
            self.garbage.extend(paths)  # the last meta.json may still name them
        else:
            for path in paths:
                path.unlink(missing_ok=True)

    def collect(self) -> None:
        """Delete the files the newest meta.json no longer names."""
        for path in self.garbage:
            path.unlink(missing_ok=True)
        self.garbage.clear()

    def describe(self) -> list[list[Any]]:
        return [[run.name, run.count, run.digest] for run in self.runs]

    def restore(self, runs: list[list[Any]]) -> None:
        """The runs a checkpoint names, each checked against its digest before it is used."""
        for name, count, digest in runs:
            run = Run(int(name), int(count), digest=str(digest))
            paths = run.files(self.directory)
            check_digest(paths, digest, [8 * run.count, 8 * run.count])
            run.open(self.directory)
            self.runs.append(run)
            self.on_disk += run.count
        self.peak_disk_bytes = self.disk_bytes


def combined_digest(parts: list[bytes]) -> str:
    """One digest of several files: the SHA-256 of their SHA-256s, in order."""
    return hashlib.sha256(b"".join(parts)).hexdigest()


def check_digest(paths: list[Path], digest: str, sizes: list[int] | None = None) -> None:
    """The files hash to what meta.json (itself authenticated) says; a UserError otherwise."""
    parts = []
    for i, path in enumerate(paths):
        hashed = hashlib.sha256()
        try:
            if sizes is not None and path.stat().st_size != sizes[i]:
                raise UserError(f"--resume: {path} is damaged (not the size the checkpoint recorded)")
            with open(path, "rb") as fh:
                while block := fh.read(1 << 22):
                    hashed.update(block)
        except OSError as exc:
            raise UserError(f"--resume: {path} is missing or unreadable ({exc.strerror})") from None
        parts.append(hashed.digest())
    if combined_digest(parts) != digest:
        raise UserError(
            f"--resume: {paths[0]} is damaged or was not written by your kmc (it does not match the "
            "authenticated meta.json): refusing to load it; start the check again without --resume"
        )


class DiskLevel:
    """One BFS level's ``(state, fingerprint)`` pairs in discovery order: ``buffer`` in memory, and
    before it chunks written to ``level-N.pkl`` files when it is spilled (the states in the codec's
    form, with the class table they refer to, and the fingerprints as uint64)."""

    def __init__(self, directory: Path, durable: bool = False, codec: StateCodec | None = None) -> None:
        self.directory = directory
        self.durable = durable
        self.codec = codec if codec is not None else StateCodec()
        self.buffer: list[tuple[Any, int]] = []
        self.files: list[list[Any]] = []
        """[name, count, sha256] of each chunk written, in order."""
        self.on_disk = 0
        self.bytes_written = 0

    def __len__(self) -> int:
        return self.on_disk + len(self.buffer)

    def __bool__(self) -> bool:
        return len(self) > 0

    def spill(self, name: int, chunk: int) -> int:
        """Write the buffer out in chunks of at most ``chunk`` states; a fresh buffer replaces it.
        Returns the next free file name."""
        for start in range(0, len(self.buffer), chunk):
            part = self.buffer[start : start + chunk]
            packed = self.codec.pack([state for state, _fp in part])
            fps = np.fromiter((fp for _state, fp in part), dtype=np.uint64, count=len(part)).tobytes()
            payload = pickle.dumps((packed, fps), protocol=pickle.HIGHEST_PROTOCOL)
            name += 1
            path = self.directory / f"level-{name}.pkl"
            with open(path, "wb") as fh:
                fh.write(payload)
            digest = combined_digest([hashlib.sha256(payload).digest()]) if self.durable else ""
            self.files.append([name, len(part), digest])
            self.on_disk += len(part)
            self.bytes_written += len(payload)
        self.buffer = []
        return name

    def chunks(self) -> Iterator[list[tuple[Any, int]]]:
        """The states in discovery order, a chunk at a time."""
        for name, _count, _digest in self.files:
            with open(self.directory / f"level-{name}.pkl", "rb") as fh:
                packed, fps = pickle.load(fh)  # this run's own file, or one checked by restore()
            states = unpack_resumed(self.codec, packed)
            yield list(zip(states, np.frombuffer(fps, dtype=np.uint64).tolist(), strict=True))
        yield self.buffer

    def paths(self) -> list[Path]:
        return [self.directory / f"level-{name}.pkl" for name, _count, _digest in self.files]

    def restore(self, files: list[list[Any]]) -> None:
        for name, count, digest in files:
            check_digest([self.directory / f"level-{int(name)}.pkl"], str(digest))
            self.files.append([int(name), int(count), str(digest)])
            self.on_disk += int(count)


def parse_size(text: str) -> int:
    """Bytes in a size such as 512m or 4g (binary units); a UserError for anything else."""
    units = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    value = text.strip().lower().removesuffix("b").removesuffix("i")
    digits = value.rstrip("kmgt")
    unit = value[len(digits) :]
    if not digits.isdigit() or unit not in units or int(digits) == 0:
        raise UserError(f"bad --memory {text!r}: use a size such as 512m or 4g")
    size = int(digits) * units[unit]
    if size < MIN_MEMORY:
        raise UserError(f"bad --memory {text!r}: at least 1m")
    return size


MIN_MEMORY = 1 << 20


def remove_files(paths: Iterable[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
