"""One worker process of a bfs search with ``--workers``: it expands its share of each level.

A worker keeps its slice of the frontier, in the search's order. It gathers the successors of
the states it expands in C, fingerprinted, the first of each fingerprint with its parent's
position: the level's *candidates*. Only their fingerprints and positions go to the coordinating
process (`parallel.ParallelSearch`), which keeps the one visited set and says which candidates are
new. Those stay here as the next frontier, and the worker checks the invariants on them. States
cross processes only when the frontiers are evened out.
"""

from __future__ import annotations

import gc
import signal
import time
import traceback
from array import array
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.engines.bfs.parallel_checkpoint import write_frontier
from kmc.checker.errors import NondeterministicModelError, UserError
from kmc.checker.model import Model, State
from kmc.checker.properties import PropertySet, all_true, holds, violated_steps
from kmc.checker.search.kernel import (
    DEADLOCK,
    bounds_check,
    check_determinism,
    current_rss,
    expand,
    peak_rss,
)
from kmc.checker.search.observers import SearchObserver
from kmc.checker.storage.codec import StateCodec
from kmc.checker.storage.fingerprint import Candidates, candidates, fingerprint


class Expander:
    """What one worker holds and does; each public method answers one request of the coordinator."""

    def __init__(self, model: Model, props: PropertySet, options: BfsOptions, observers: Sequence[SearchObserver]):
        self.model = model
        canon = model.symmetry if options.symmetry else None
        self.symmetric_fingerprint = (lambda s: fingerprint(canon(s))) if canon is not None else None
        """A successor's key under --symmetry: its representative's fingerprint (else its own, in C)."""
        self.invariants = [(p.name, p.bind(model)) for p in props.invariants]
        self.steps = [(p.name, p.bind(model)) for p in props.steps]
        self.step_order = {name: order for order, (name, _pred) in enumerate(self.steps)}
        self.within = bounds_check(model)
        self.deadlock = options.deadlock
        self.keep_going = options.keep_going
        self.determinism_checks = options.determinism_checks
        self.observers = list(observers)
        self.seen_hooks = [o.state for o in self.observers]
        self.expand_hooks = [o.expanded for o in self.observers]
        self.frontier: list[State] = []
        self.candidates: list[State] = []
        self.expanded = 0
        self.rss_start = current_rss()
        self.codec = StateCodec()

    # -- a level ------------------------------------------------------------------------------
    def take_frontier(self, states: bytes) -> None:
        self.frontier = self.codec.unpack(states)

    def expand(self, probe: bool, violated: Sequence[str]) -> dict[str, Any]:
        """Expand the frontier: the candidates (each successor's fingerprint, first met first, with its
        parent's position), the successors generated up to each state, whether the model's bounds
        cut a state off, and the first deadlock and step violation of each property (``(name, kind,
        position, successor)``). With ``probe`` (the depth bound) the candidates are found but none
        will be kept. The successors are fingerprinted and gathered in C (`storage.fingerprint`)."""
        model, within, hooks = self.model, self.within, self.expand_hooks
        key = self.symmetric_fingerprint
        gathered = candidates() if key is None else Candidates()
        generated_upto = array("q")
        generated = 0
        cut = False
        violations: list[tuple[str, str, int, int, int]] = []
        done = set(violated)
        steps = [(name, pred) for name, pred in self.steps if name not in done]
        deadlock = self.deadlock and DEADLOCK not in done
        determinism_checks, expanded = self.determinism_checks, self.expanded
        start = time.perf_counter()
        for position, s in enumerate(self.frontier):
            if within is not None and not within(s):
                cut = True
                generated_upto.append(generated)
                continue
            succs = expand(model, s)
            for hook in hooks:
                hook(s, succs, True)
            expanded += 1
            if expanded <= determinism_checks or expanded % 4096 == 0:
                check_determinism(model, s, succs)
            generated += len(succs)
            generated_upto.append(generated)
            if deadlock and not succs:
                violations.append((DEADLOCK, "deadlock", position, 0, 0))
                deadlock = False
            if steps:  # a violated step property is recorded at its first successor in this level
                for index, name, _pred in violated_steps(steps, s, succs):
                    violations.append((name, "step", position, index, self.step_order[name]))
                    steps = [step for step in steps if step[0] != name]
            if key is None:
                gathered.add(succs, position)
            else:
                for _action, t in succs:
                    gathered.offer(key(t), position, t)
        self.expanded = expanded
        fps, parents, states = gathered.take()  # a position is its state's least parent: the first
        self.candidates = [] if probe else states
        return {
            "fps": fps,
            "parents": parents,
            "generated_upto": generated_upto.tobytes(),
            "cut": cut,
            "violations": violations,
            "seconds": time.perf_counter() - start,
        }

    def select(self, chosen: bytes) -> None:
        """The candidates the coordinator found new (indices, in order) become the next frontier."""
        indices = array("q")
        indices.frombytes(chosen)
        candidates = self.candidates
        self.frontier = [candidates[i] for i in indices]
        self.candidates = []

    def accept(self, chosen: bytes, violated: Sequence[str]) -> list[tuple[str, int, int]]:
        self.select(chosen)
        return self.check_new(violated)

    def check_new(self, violated: Sequence[str]) -> list[tuple[str, int, int]]:
        """Each state of the new frontier observed and checked: the first invariant violation of each
        property, as (name, position in the frontier, order of the property)."""
        done = set(violated)
        invariants = [(order, name, pred) for order, (name, pred) in enumerate(self.invariants) if name not in done]
        all_hold = all_true([pred for _order, _name, pred in invariants]) if invariants else None
        seen_hooks = self.seen_hooks
        found: list[tuple[str, int, int]] = []
        for position, t in enumerate(self.frontier):
            for hook in seen_hooks:
                hook(t)
            if all_hold is None or all_hold(t):
                continue
            failed = [(name, order) for order, name, pred in invariants if not holds(name, pred, t)]
            if not failed:
                continue
            if not self.keep_going:  # the search stops at this state, at its first failing property
                found.append((failed[0][0], position, failed[0][1]))
                break
            found.extend((name, position, order) for name, order in failed)
            invariants = [item for item in invariants if item[1] not in {name for name, _ in failed}]
            all_hold = all_true([pred for _order, _name, pred in invariants]) if invariants else None
        return found

    # -- evening out the frontiers -----------------------------------------------------------------
    def cut_frontier(
        self, chosen: bytes, keep: tuple[int, int], out: Sequence[tuple[int, int, int]]
    ) -> dict[int, bytes]:
        """Select the new frontier, keep ``frontier[keep[0]:keep[1]]``; the slices ``(target, start,
        end)`` go to other workers, in the codec's bytes."""
        self.select(chosen)
        frontier = self.frontier
        sent = {t: self.codec.pack(frontier[a:b]) for t, a, b in out}
        self.frontier = frontier[keep[0] : keep[1]]
        return sent

    def paste_frontier(
        self, before: Sequence[bytes], after: Sequence[bytes], violated: Sequence[str]
    ) -> list[tuple[str, int, int]]:
        """States from the workers before this one in the search's order, and from those after; then
        the whole new frontier is checked (`check_new`)."""
        head: list[State] = []
        for chunk in before:
            head.extend(self.codec.unpack(chunk))
        tail: list[State] = []
        for chunk in after:
            tail.extend(self.codec.unpack(chunk))
        self.frontier = head + self.frontier + tail
        return self.check_new(violated)

    def save_frontier(self, path: str) -> list[Any]:
        return write_frontier(Path(path), self.frontier, self.codec)

    def counts(self) -> list[dict[str, Any] | None]:
        """What the observers counted here so far (for a checkpoint)."""
        return [o.shared_counts() for o in self.observers]

    def finish(self) -> dict[str, Any]:
        """What the observers counted here, and the memory this process used."""
        return {
            "observers": [o.shared_counts() for o in self.observers],
            "rss_growth": max(current_rss() - self.rss_start, 0),
            "peak_rss": peak_rss(),
        }


def serve(connection: Connection, make: Any) -> None:
    """A worker's loop: one request at a time, each answered ``("ok", reply)`` or ``("error", ...)``.
    It returns when asked to ``finish`` or when the coordinator's end of its pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    gc.disable()  # states are acyclic values: the collector only costs time here
    expander: Expander = make()
    while True:
        try:
            command, args = connection.recv()
        except (EOFError, OSError):  # the coordinator is gone
            return
        try:
            reply: Any = ("ok", getattr(expander, command)(*args))
        except BaseException as exc:
            reply = ("error", failure(exc))
        connection.send(reply)
        if command == "finish":
            connection.close()
            return


def failure(exc: BaseException) -> tuple[str, str]:
    """An exception as the coordinator raises it again: its kind and its message."""
    if isinstance(exc, NondeterministicModelError):
        return "nondeterministic", str(exc)
    if isinstance(exc, UserError):
        return "user", str(exc)
    if isinstance(exc, TypeError):
        return "type", str(exc)
    return "internal", "".join(traceback.format_exception(exc))
