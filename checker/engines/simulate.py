"""Seeded random walks: for state spaces too big to exhaust. Reproducible from the seed."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kmc.checker.engines.bfs import DEADLOCK, bounds_check, expand, peak_rss
from kmc.checker.model import Action, Model, State
from kmc.checker.properties import PropertySet, holds
from kmc.checker.result import CheckResult, Stats, Status, Trace, Violation
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
    invariants = [(p.name, p.bind(model)) for p in props.invariants]
    steps = [(p.name, p.bind(model)) for p in props.steps]
    within = bounds_check(model)
    inits = list(model.init_states())
    seen: set[int] = set()
    violations: dict[str, Violation] = {}
    generated = 0
    max_len = 0
    walks_done = 0

    def check_state(state: State, states: list[State], actions: list[Action | None]) -> None:
        for observer in observers:
            observer.state(state)
        for name, pred in invariants:
            if name in violations:
                continue
            ok = holds(name, pred, state)
            if not ok:
                violations[name] = Violation(name, "invariant", Trace(list(states), list(actions)))

    interrupted = False
    try:
        for _walk in range(options.walks):
            if violations and not options.keep_going:
                break
            walks_done += 1
            state = rng.choice(inits)
            states: list[State] = [state]
            actions: list[Action | None] = [None]
            generated += 1
            seen.add(fingerprint(state))
            check_state(state, states, actions)
            for _step in range(options.depth):
                if violations and not options.keep_going:
                    break
                if within is not None and not within(state):
                    break  # beyond the model's bounds: the walk ends here
                succs = expand(model, state)
                for observer in observers:
                    observer.expanded(state, succs, False)
                generated += len(succs)
                if not succs:
                    if options.deadlock and DEADLOCK not in violations:
                        violations[DEADLOCK] = Violation(DEADLOCK, "deadlock", Trace(list(states), list(actions)))
                    break
                action, nxt = rng.choice(succs)
                for observer in observers:
                    observer.taken(state, action, nxt)
                states.append(nxt)
                actions.append(action)
                for name, pred in steps:
                    if name in violations:
                        continue
                    ok = holds(name, pred, state, action, nxt)
                    if not ok:
                        violations[name] = Violation(name, "step", Trace(list(states), list(actions)))
                state = nxt
                seen.add(fingerprint(state))
                check_state(state, states, actions)
            max_len = max(max_len, len(states))
            progress.update(distinct=len(seen), generated=generated, depth=max_len, queue=0)
    except KeyboardInterrupt:  # Ctrl-C: report the walks done
        interrupted = True
    finally:
        progress.close()
    found = list(violations.values())
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
        "simulate", model, props, options.deadlock, found, stats,
        bound_reason=f"{walks_done} random walks of at most {options.depth} steps"
        + (", interrupted (Ctrl-C)" if interrupted else ""), seed=seed, preset=preset,
    )  # fmt: skip
    result.interrupted = interrupted
    return result


def sampling_result(
    engine: str,
    model: Model,
    props: PropertySet,
    deadlock: bool,
    found: list[Violation],
    stats: Stats,
    *,
    bound_reason: str,
    seed: int,
    preset: str | None,
) -> CheckResult:
    """The result of a sampling engine: violated, or holding within its bounds -- never complete."""
    return CheckResult(
        engine=engine,
        model=model.name,
        config=model.config_dict(),
        preset=preset,
        properties=props.names() + ([DEADLOCK] if deadlock else []),
        status=Status.VIOLATED if found else Status.HOLDS_BOUNDED,
        complete=False,
        stats=stats,
        violations=found,
        bound_reason=bound_reason,
        seed=seed,
    )


class SimulateEngine:
    """Seeded random walks: never complete, reproducible from the seed."""

    name: ClassVar[str] = "simulate"
    bounds: ClassVar[frozenset[str]] = frozenset({"deadlock", "keep_going"})
    defaults: ClassVar[dict[str, Any]] = {"seed": None, "depth": 100, "walks": 1000}
    observes: ClassVar[bool] = True
    exhaustive: ClassVar[bool] = False

    def run(self, task: Any) -> CheckResult:
        o = task.options
        options = SimulationOptions(seed=o["seed"], depth=o["depth"], walks=o["walks"],
                                    deadlock=task.bounds.deadlock, keep_going=task.bounds.keep_going)  # fmt: skip
        return simulate(task.model, task.props, options, task.progress, task.preset, task.observers)
