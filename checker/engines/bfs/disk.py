"""The BFS with fingerprints, for runs larger than memory and runs that must survive a stop.

The same search as the in-memory one (memory.py) with ``store="fingerprints"`` -- the same states
in the same order, the same counts, the same shortest traces -- but its visited set is a
:class:`DiskFPSet` and each level a :class:`DiskLevel`, both spilled to disk past ``--memory``.
A level is expanded in batches of states: their successors' fingerprints are looked up on disk in
one sorted batch, then the batch is replayed in order exactly as the in-memory loop does it.

With ``--checkpoint DIR`` the spill files live in DIR and, before each level is expanded, the
visited set and the level are flushed and ``meta.json`` records them (with each file's SHA-256,
under the user's HMAC): ``--resume DIR`` continues from there and ends with the counts of a run
that was never stopped, as TLC's checkpoints do.
"""

from __future__ import annotations

import hashlib
import pickle
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kmc.checker import interrupts
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.errors import UserError
from kmc.checker.model import Model, State
from kmc.checker.properties import PropertySet
from kmc.checker.result import CheckResult, Stats, Trace
from kmc.checker.search.kernel import (
    DEADLOCK,
    MODEL_BOUND,
    PropertyChecks,
    bounds_check,
    check_determinism,
    current_rss,
    expand,
    initial_states,
    make_keyfn,
    peak_rss,
    search_result,
)
from kmc.checker.search.observers import Coverage, SearchObserver
from kmc.checker.search.path import step_trace, trace_from_keys
from kmc.checker.search.progress import NoProgress, Progress
from kmc.checker.storage.checkpoint import check_resumable, checkpoint_key, load_meta, save_meta
from kmc.checker.storage.codec import StateCodec
from kmc.checker.storage.fingerprint import collision_probability
from kmc.checker.storage.fpset import ENTRY_BYTES, DiskFPSet, DiskLevel, check_digest, combined_digest, remove_files

CHECKPOINT_FORMAT = 4
"""Bumped whenever the files of a BFS checkpoint change shape; a checkpoint of another format is refused."""
BATCH = 2048
"""States expanded before their successors are looked up on disk together."""
UNLIMITED = 1 << 62
_NOTHING: frozenset[int] = frozenset()


def check_disk_options(options: BfsOptions) -> None:
    """The settings that need the fingerprint store, and a --resume that names a checkpoint of this user's."""
    if options.store != "fingerprints":
        flag = "--memory" if options.memory is not None else "--resume" if options.resume else "--checkpoint"
        raise UserError(f"bfs: {flag} needs --store fingerprints (the states themselves are not spilled)")
    if options.resume:
        check_resumable(options.checkpoint, CHECKPOINT_FORMAT, checkpoint_key("bfs"))


def _state_bytes(states: Sequence[tuple[State, int]]) -> int:
    """What one more state of this level holds in memory, measured on a run of them: the parts
    neighbouring states share (a sibling's log, an unchanged field) are counted once."""
    seen: set[int] = set()

    def size(value: Any) -> int:
        if id(value) in seen:
            return 0
        seen.add(id(value))
        total = sys.getsizeof(value)
        if isinstance(value, (tuple, list, frozenset, set)):
            total += sum(size(v) for v in value)
        elif isinstance(value, dict):
            total += sum(size(k) + size(v) for k, v in value.items())
        elif hasattr(value, "__dict__"):
            total += size(vars(value))
        return total

    sample = states[len(states) // 2 : len(states) // 2 + 64]
    return max(64, sum(size(pair) for pair in sample) // len(sample)) if sample else 512


def disk_bfs(
    model: Model,
    props: PropertySet,
    options: BfsOptions,
    progress: Progress | None,
    preset: str | None,
    observers: Sequence[SearchObserver],
    job: dict[str, Any],
) -> CheckResult:
    check_disk_options(options)
    durable = options.checkpoint is not None
    if durable:
        directory = Path(options.checkpoint)  # type: ignore[arg-type]
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"--checkpoint {directory}: cannot create it ({exc.strerror})") from None
    else:
        directory = Path(tempfile.mkdtemp(prefix="kmc-bfs-"))
    try:
        return _Search(model, props, options, progress or NoProgress(), preset, observers, job, directory).run()
    finally:
        if not durable:
            shutil.rmtree(directory, ignore_errors=True)


class _Search:
    def __init__(
        self,
        model: Model,
        props: PropertySet,
        options: BfsOptions,
        progress: Progress,
        preset: str | None,
        observers: Sequence[SearchObserver],
        job: dict[str, Any],
        directory: Path,
    ) -> None:
        self.model, self.props, self.options, self.progress, self.preset = model, props, options, progress, preset
        self.observers = observers
        self.job = job
        self.directory = directory
        self.durable = options.checkpoint is not None
        self.key = checkpoint_key("bfs") if self.durable else b""
        self.budget = options.memory if options.memory is not None else UNLIMITED
        self.within = bounds_check(model)
        self.all_hold: Any = None
        self.keyfn = make_keyfn(model, options.symmetry, "fingerprints")
        self.visited = DiskFPSet(directory, self.durable)
        self.codec = StateCodec()
        """One table of NamedTuple classes for every level this search writes."""
        self.checks = PropertyChecks(model, props, options.keep_going)
        self.generated = 0
        self.expanded = 0
        self.depth = 0
        self.bounded_by: str | None = None
        self.level_spills = 0
        self.level_bytes = 0
        self.level_peak = 0
        self.state_bytes = 512
        self.level_garbage: list[Path] = []

    # -- traces -----------------------------------------------------------------------------------
    def trace_to(self, k: int) -> Trace:
        return trace_from_keys(self.model, self.visited.chain(k), self.keyfn)

    # -- the search -----------------------------------------------------------------------------
    def run(self) -> CheckResult:
        start = time.perf_counter()
        rss_start = current_rss()
        model, options = self.model, self.options
        self.seen_hooks = [o.state for o in self.observers]
        self.expand_hooks = [o.expanded for o in self.observers]
        self.coverage = next((o for o in self.observers if isinstance(o, Coverage)), None)
        if options.resume:
            frontier = self.resume()
        else:
            remove_files([*self._own_files(), self.directory / "meta.json"])  # an earlier run's checkpoint
            frontier = self.initial_level()
        interrupted = False
        try:
            while frontier and not self.checks.stop:
                if self.durable:
                    self.save(frontier)
                frontier = self.expand_level(frontier)
                if frontier and not self.checks.stop:
                    self.depth += 1
        except KeyboardInterrupt:  # Ctrl-C: report what was explored, never as complete
            interrupted = True
            self.bounded_by = f"interrupted ({interrupts.reason()})"
        finally:
            self.progress.close()
        if not self.durable:
            self.visited.collect()
        distinct = len(self.visited)
        stats = Stats(
            distinct_states=distinct,
            generated_states=self.generated,
            depth=self.depth,
            elapsed_s=time.perf_counter() - start,
            peak_memory_bytes=peak_rss(),
            bytes_per_state=(max(current_rss() - rss_start, 0) / distinct) if distinct else None,
            collision_probability=collision_probability(distinct, self.generated),
            storage="fingerprints",
        )
        stats.extra["spill"] = {
            "memory_budget_bytes": options.memory,
            "visited_on_disk": self.visited.on_disk,
            "visited_bytes_on_disk": self.visited.disk_bytes,
            "peak_bytes_on_disk": self.visited.peak_disk_bytes + self.level_peak,
            "bytes_written": self.visited.bytes_written + self.level_bytes,
            "flushes": self.visited.flushes,
            "merges": self.visited.merges,
            "level_spills": self.level_spills,
        }
        if self.durable:
            stats.extra["checkpoint"] = str(self.directory)
        result = search_result(
            "bfs",
            model,
            self.props,
            options.deadlock,
            options.symmetry,
            self.checks.found(),
            complete=self.bounded_by is None and not self.checks.stop,
            stats=stats,
            bound_reason=self.bounded_by,
            preset=self.preset,
        )
        result.interrupted = interrupted
        return result

    def initial_level(self) -> DiskLevel:
        recent, checks = self.visited.recent, self.checks
        cap = self.options.max_states if self.options.max_states is not None else -1
        level = DiskLevel(self.directory, self.durable, self.codec)
        for s in initial_states(self.model):
            self.generated += 1
            k = self.keyfn(s)
            if k in recent:
                continue
            if len(recent) == cap:
                self.bounded_by, checks.stop = f"max states {self.options.max_states}", True
                break
            recent[k] = k  # an initial state is its own parent
            level.buffer.append((s, k))
            for hook in self.seen_hooks:
                hook(s)
            checks.check_state(s, lambda k=k: self.trace_to(k))
            if checks.stop:
                break
        self.depth = 1 if level else 0
        return level

    def expand_level(self, frontier: DiskLevel) -> DiskLevel:
        """Expand one level in batches; the next level, its states in the order they were found."""
        nxt = DiskLevel(self.directory, self.durable, self.codec)
        measured = False
        self.all_hold = self.checks.quiet_check()  # the quiet check, as in memory.py
        for chunk in frontier.chunks():
            if chunk and not measured:
                self.state_bytes, measured = _state_bytes(chunk), True
            for first in range(0, len(chunk), BATCH):
                self.expand_batch(chunk[first : first + BATCH], nxt)
                if self.checks.stop:
                    break
                self.within_budget(nxt)
            if self.checks.stop:
                break
        self.level_garbage.extend(frontier.paths())
        if not self.durable:
            remove_files(self.level_garbage)
            self.level_garbage.clear()
        self.level_peak = max(self.level_peak, frontier.bytes_written + nxt.bytes_written)
        if self.state_bytes * len(nxt.buffer) > self.budget // 4:
            self._spill_level(nxt)  # expanded from disk a chunk at a time, not held whole beside the next
        return nxt

    def expansions(self, batch: list[tuple[State, int]]) -> tuple[list[Any], frozenset[int] | set[int]]:
        """Each state's successors and their keys (None beyond the model's bounds, the exception where
        the model raised), and which of the keys not in memory are on disk: one sorted lookup a batch."""
        model, keyfn, visited, within = self.model, self.keyfn, self.visited, self.within
        recent = visited.recent
        expansions: list[Any] = []
        candidates: set[int] = set()
        for s, _ks in batch:
            if within is not None and not within(s):
                expansions.append(None)
                continue
            try:  # a model that raises is reported where the in-memory search would meet it
                succs = expand(model, s)
                keys = [keyfn(t) for _a, t in succs]
            except Exception as exc:
                expansions.append(exc)
                continue
            expansions.append((succs, keys))
            if visited.runs:
                candidates.update(k for k in keys if k not in recent)
        return expansions, visited.found_on_disk(candidates) if candidates else _NOTHING

    def expand_batch(self, batch: list[tuple[State, int]], nxt: DiskLevel) -> None:
        expansions, on_disk = self.expansions(batch)
        max_states = self.options.max_states
        cap = (max_states - self.visited.on_disk) if max_states is not None else -1
        for (s, ks), expansion in zip(batch, expansions, strict=True):
            keys = self.visit(s, ks, expansion, on_disk)
            if keys is None:
                if self.checks.stop:
                    break
                continue
            self.follow(ks, expansion[0], keys, on_disk, cap, nxt)
            if self.checks.stop:
                break
            if self.expanded & 1023 == 0:
                self.progress.update(
                    distinct=len(self.visited), generated=self.generated, depth=self.depth, queue=len(nxt)
                )

    def visit(self, s: State, ks: int, expansion: Any, on_disk: frozenset[int] | set[int]) -> list[int] | None:
        """A state's expansion observed and its steps checked: its successors' keys, or None where they
        are not to be followed (beyond the model's bounds or the depth bound, or the search stops)."""
        if expansion is None:
            self.bounded_by = self.bounded_by or MODEL_BOUND
            return None
        if isinstance(expansion, Exception):
            raise expansion
        model, options, checks = self.model, self.options, self.checks
        succs, keys = expansion
        for hook in self.expand_hooks:
            hook(s, succs, True)
        self.expanded += 1
        if self.expanded <= options.determinism_checks or self.expanded % 4096 == 0:
            check_determinism(model, s, succs)
        self.generated += len(succs)
        if options.deadlock and not succs and DEADLOCK not in checks.violations:
            checks.record(DEADLOCK, "deadlock", lambda: self.trace_to(ks))
            if checks.stop:
                return None
        if checks.steps:
            for a, t in succs:
                checks.check_step(s, a, t, lambda p, a=a, t=t: step_trace(model, self.trace_to(ks), s, a, t, p))
            if checks.stop:
                return None
        max_depth = options.max_depth
        if max_depth is not None and self.depth >= max_depth:
            recent = self.visited.recent
            if self.bounded_by is None and any(k not in recent and k not in on_disk for k in keys):
                self.bounded_by = f"max depth {max_depth}"
            return None
        return keys

    def follow(
        self, ks: int, succs: list[Any], keys: list[int], on_disk: frozenset[int] | set[int], cap: int, nxt: DiskLevel
    ) -> None:
        """The new successors into the next level, each checked as it is first met."""
        recent, checks, all_hold = self.visited.recent, self.checks, self.all_hold
        setdefault, append = recent.setdefault, nxt.buffer.append
        for (_a, t), k in zip(succs, keys, strict=True):
            if k in on_disk:
                continue
            size = len(recent)
            setdefault(k, ks)
            if len(recent) == size:
                continue
            if size == cap:  # the state one beyond --max-states: not explored, not counted
                del recent[k]
                self.bounded_by, checks.stop = f"max states {self.options.max_states}", True
                break
            append((t, k))
            for hook in self.seen_hooks:
                hook(t)
            if all_hold is not None and all_hold(t):
                continue
            if checks.invariants:  # the careful path: names the property, reports one that raises
                checks.check_state(t, lambda k=k: self.trace_to(k))
                if checks.stop:
                    break

    def within_budget(self, nxt: DiskLevel) -> None:
        """The budget in three shares: half for the visited dict (past it, a sorted run on disk), a
        quarter for the next level's states (past it, chunks in the codec's bytes) and a quarter for the chunk
        of the level being expanded (the size of the chunks a level is spilled in)."""
        if ENTRY_BYTES * len(self.visited.recent) > self.budget // 2:
            self.visited.flush()
        if self.state_bytes * len(nxt.buffer) > self.budget // 4:
            self._spill_level(nxt)

    def _spill_level(self, level: DiskLevel) -> None:
        chunk = max(256, self.budget // 4 // self.state_bytes) if self.budget < UNLIMITED else 1 << 16
        before = level.bytes_written
        self.visited.next_name = level.spill(self.visited.next_name, chunk)
        self.level_bytes += level.bytes_written - before
        self.level_spills += 1

    # -- checkpoints ----------------------------------------------------------------------------
    def _own_files(self) -> list[Path]:
        return [
            p
            for pattern in ("fps-*.u64", "parents-*.u64", "level-*.pkl", "violations-*.pkl")
            for p in self.directory.glob(pattern)
        ]

    def save(self, frontier: DiskLevel) -> None:
        """Before a level is expanded: everything on disk, and meta.json naming it (each file's SHA-256)."""
        self.visited.flush()
        if frontier.buffer:
            self._spill_level(frontier)
        violations_file = None
        if self.checks.violations:
            payload = pickle.dumps(self.checks.found(), protocol=pickle.HIGHEST_PROTOCOL)
            self.visited.next_name += 1
            name = self.visited.next_name
            (self.directory / f"violations-{name}.pkl").write_bytes(payload)
            violations_file = [name, combined_digest([hashlib.sha256(payload).digest()])]
        progress = {
            "depth": self.depth,
            "distinct": len(self.visited),
            "generated": self.generated,
            "expanded": self.expanded,
            "runs": self.visited.describe(),
            "level": frontier.files,
            "violations": violations_file,
            "next_name": self.visited.next_name,
            "coverage": self.coverage.counts() if self.coverage is not None else None,
            "observers": [o.saved_counts() for o in self.observers],
            "flushes": self.visited.flushes,
            "merges": self.visited.merges,
            "bytes_written": self.visited.bytes_written + self.level_bytes,
            "level_spills": self.level_spills,
        }
        save_meta(self.directory, self.key, CHECKPOINT_FORMAT, self.job, progress)
        named = {p.name for p in self._named(progress)}
        self.visited.collect()
        remove_files(p for p in self.level_garbage + self._own_files() if p.name not in named)
        self.level_garbage.clear()

    def _named(self, progress: dict[str, Any]) -> list[Path]:
        paths = [
            p
            for name, _c, _d in progress["runs"]
            for p in (self.directory / f"fps-{name}.u64", self.directory / f"parents-{name}.u64")
        ]
        paths += [self.directory / f"level-{name}.pkl" for name, _c, _d in progress["level"]]
        if progress["violations"]:
            paths.append(self.directory / f"violations-{progress['violations'][0]}.pkl")
        return paths

    def resume(self) -> DiskLevel:
        same = "model, config, properties, symmetry and deadlock"
        progress = load_meta(self.directory, self.key, CHECKPOINT_FORMAT, self.job, same)
        try:
            self.visited.restore(progress["runs"])
            frontier = DiskLevel(self.directory, self.durable, self.codec)
            frontier.restore(progress["level"])
            if progress["violations"]:
                name, digest = progress["violations"]
                path = self.directory / f"violations-{int(name)}.pkl"
                check_digest([path], str(digest))
                found = pickle.loads(path.read_bytes())  # authenticated: meta.json names its SHA-256
                self.checks.violations = {v.property: v for v in found}
            self.depth, self.generated, self.expanded = progress["depth"], progress["generated"], progress["expanded"]
            self.visited.next_name = int(progress["next_name"])
            self.visited.flushes, self.visited.merges = progress["flushes"], progress["merges"]
            self.visited.bytes_written, self.level_spills = progress["bytes_written"], progress["level_spills"]
            if self.coverage is not None and progress["coverage"]:
                self.coverage.carried.merge(progress["coverage"])
            for observer, counts in zip(self.observers, progress.get("observers") or [], strict=False):
                if counts is not None:
                    observer.restore_counts(counts)
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"--resume {self.directory}: meta.json is malformed ({exc})") from None
        named = {p.name for p in self._named(progress)}
        remove_files(p for p in self._own_files() if p.name not in named)  # left by a run stopped mid-level
        if self.checks.violations and not self.options.keep_going:
            self.checks.stop = True
        return frontier
