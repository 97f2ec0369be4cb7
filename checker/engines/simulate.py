"""Seeded random walks: for state spaces too big to exhaust. Reproducible from the seed."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

from kmc.checker import interrupts
from kmc.checker.engines.api import SEED, Engine, EngineTask, OptionSpec
from kmc.checker.model import Action, Model, State
from kmc.checker.properties import PropertySet
from kmc.checker.result import CheckResult, Stats, Trace
from kmc.checker.search.kernel import DEADLOCK, PropertyChecks, bounds_check, expand, peak_rss, sampling_result
from kmc.checker.search.observers import SearchObserver
from kmc.checker.search.progress import NoProgress, Progress
from kmc.checker.storage.fingerprint import fingerprint


@dataclass(frozen=True)
class SimulationOptions:
    seed: int | None = None
    depth: int = 100
    """Steps per walk at most."""
    walks: int = 1000
    deadlock: bool = False
    keep_going: bool = False


def _path(states: list[State], actions: list[Action | None], *_violated: object) -> Trace:
    """A copy of the walk so far: the trace of a violation found on it."""
    return Trace(list(states), list(actions))


def simulate(
    model: Model,
    props: PropertySet,
    options: SimulationOptions = SimulationOptions(),
    progress: Progress | None = None,
    preset: str | None = None,
    observers: Sequence[SearchObserver] = (),
) -> CheckResult:
    progress = progress or NoProgress()
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**32)
    rng = random.Random(seed)
    start = time.perf_counter()
    checks = PropertyChecks(model, props, options.keep_going)
    within = bounds_check(model)
    inits = list(model.init_states())
    seen: set[int] = set()
    generated = 0
    max_len = 0
    walks_done = 0

    def check_state(state: State, states: list[State], actions: list[Action | None]) -> None:
        for observer in observers:
            observer.state(state)
        checks.check_state(state, partial(_path, states, actions))

    interrupted = False
    try:
        for _walk in range(options.walks):
            if checks.stop:
                break
            walks_done += 1
            state = rng.choice(inits)
            states: list[State] = [state]
            actions: list[Action | None] = [None]
            generated += 1
            seen.add(fingerprint(state))
            check_state(state, states, actions)
            for _step in range(options.depth):
                if checks.stop:
                    break
                if within is not None and not within(state):
                    break  # beyond the model's bounds: the walk ends here
                succs = expand(model, state)
                for observer in observers:
                    observer.expanded(state, succs, False)
                generated += len(succs)
                if not succs:
                    if options.deadlock:
                        checks.record(DEADLOCK, "deadlock", partial(_path, states, actions))
                    break
                action, nxt = rng.choice(succs)
                for observer in observers:
                    observer.taken(state, action, nxt)
                states.append(nxt)
                actions.append(action)
                checks.check_step(state, action, nxt, partial(_path, states, actions))
                state = nxt
                seen.add(fingerprint(state))
                check_state(state, states, actions)
            max_len = max(max_len, len(states))
            progress.update(distinct=len(seen), generated=generated, depth=max_len, queue=0)
    except KeyboardInterrupt:  # Ctrl-C: report the walks done
        interrupted = True
    finally:
        progress.close()
    found = checks.found()
    stats = Stats(
        distinct_states=len(seen),
        generated_states=generated,
        depth=max_len,
        elapsed_s=time.perf_counter() - start,
        peak_memory_bytes=peak_rss(),
        storage="fingerprints",
        extra={"walks": walks_done},
    )
    result = sampling_result(
        "simulate",
        model,
        props,
        options.deadlock,
        found,
        stats,
        bound_reason=f"{walks_done} random walks of at most {options.depth} steps"
        + (f", interrupted ({interrupts.reason()})" if interrupted else ""),
        seed=seed,
        preset=preset,
    )
    result.interrupted = interrupted
    return result


class SimulateEngine(Engine):
    """Seeded random walks: never complete, reproducible from the seed."""

    name: ClassVar[str] = "simulate"
    bounds: ClassVar[frozenset[str]] = frozenset({"deadlock", "keep_going"})
    options: ClassVar[tuple[OptionSpec, ...]] = (
        SEED,
        OptionSpec("depth", int, "steps per walk.", default=SimulationOptions.depth, minimum=1),
        OptionSpec("walks", int, "Number of random walks.", default=SimulationOptions.walks, minimum=1),
    )

    def run(self, task: EngineTask) -> CheckResult:
        o = task.options
        options = SimulationOptions(
            seed=o["seed"],
            depth=o["depth"],
            walks=o["walks"],
            deadlock=task.bounds.deadlock,
            keep_going=task.bounds.keep_going,
        )
        return simulate(task.model, task.props, options, task.progress, task.preset, task.observers)
