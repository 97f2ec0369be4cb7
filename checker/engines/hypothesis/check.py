"""Running a Hypothesis check: the machine's runs in rounds, each a Hypothesis test of its own seed,
and the first failure shrunk and cut to the shortest trace found."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator, Sequence

import hypothesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase, InMemoryExampleDatabase
from hypothesis.errors import Flaky
from hypothesis.stateful import run_state_machine_as_test
from kmc.checker import interrupts
from kmc.checker.engines.hypothesis.machine import BURST, ROUND, PropertyViolationError, machine_for
from kmc.checker.engines.hypothesis.options import HypothesisOptions
from kmc.checker.errors import UserError
from kmc.checker.model import Model
from kmc.checker.properties import PropertySet
from kmc.checker.result import CheckResult, Stats, Violation
from kmc.checker.search.kernel import peak_rss, sampling_result
from kmc.checker.search.observers import SearchObserver


def machine_settings(options: HypothesisOptions, examples: int | None = None) -> settings:
    database = (
        DirectoryBasedExampleDatabase(options.database) if options.database is not None else InMemoryExampleDatabase()
    )
    return settings(
        max_examples=examples or options.examples,
        stateful_step_count=-(-options.steps // BURST),
        database=database,
        deadline=None,
        phases=[Phase.reuse, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
    )


@contextlib.contextmanager
def _own_constants_only() -> Iterator[None]:
    """Hypothesis draws a few integers from constants in the source of the "local" modules loaded at
    the time. Which modules are loaded, and whether the toolkit is installed or a checkout, would then
    change what a seed draws; during a check Hypothesis draws from its own constants only, so a seed
    means the same run wherever it is given. (Hypothesis internals: left alone if they change.)"""
    from hypothesis.internal.conjecture import providers

    try:
        empty = providers.Constants(
            integers=providers.SortedSet(),
            floats=providers.SortedSet(key=providers.float_to_int),
            bytes=providers.SortedSet(),
            strings=providers.SortedSet(),
        )
        saved = providers._get_local_constants, providers.CONSTANTS_CACHE
    except AttributeError:
        yield
        return
    providers._get_local_constants, providers.CONSTANTS_CACHE = (lambda: empty), {}
    try:
        yield
    finally:
        providers._get_local_constants, providers.CONSTANTS_CACHE = saved


def hypothesis_check(
    model: Model,
    props: PropertySet,
    options: HypothesisOptions = HypothesisOptions(),
    preset: str | None = None,
    observers: Sequence[SearchObserver] = (),
) -> CheckResult:
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(2**32)
    machine = machine_for(model, props, options.deadlock, options.guided, options.steps, observers)
    start = time.perf_counter()
    violation = None
    interrupted = False
    rounds = [options.examples] if not options.guided else [ROUND] * (options.examples // ROUND)
    if options.guided and options.examples % ROUND:
        rounds.append(options.examples % ROUND)
    try:
        with _own_constants_only():
            for number, examples in enumerate(rounds):
                hypothesis.seed(seed if number == 0 else hash((seed, number)))(machine)
                run_state_machine_as_test(machine, settings=machine_settings(options, examples))
                machine.explored.end_round()
    except PropertyViolationError:
        assert machine.last_failure is not None
        trace, name, kind = machine.last_failure
        violation = Violation(property=name, kind=kind, trace=machine.shortest(trace, name, kind))
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what the runs so far reached is the partial result
        interrupted = True
    except Flaky as exc:
        if interrupts.sigterm_received():
            interrupted = True
        else:
            raise UserError(
                f"model {model.name}: Hypothesis saw a failure it could not reproduce "
                f"(successors() and the properties must be deterministic): {exc}"
            ) from None
    except Exception:
        if not interrupts.sigterm_received():
            raise
        interrupted = True  # Hypothesis failed while unwinding from the SIGTERM: the interrupt stands
    finally:
        machine.explored.forget()  # Hypothesis keeps the machine class; the states need not outlive the check
    stats = Stats(
        distinct_states=len(machine.states_seen),
        generated_states=machine.steps_taken,
        depth=machine.longest,
        elapsed_s=time.perf_counter() - start,
        peak_memory_bytes=peak_rss(),
        storage="fingerprints",
        extra={"runs": machine.runs, "examples": options.examples, "steps": options.steps, "guided": options.guided},
    )
    result = sampling_result(
        "hypothesis",
        model,
        props,
        options.deadlock,
        [violation] if violation else [],
        stats,
        bound_reason=f"{options.examples} Hypothesis examples of at most {options.steps} steps",
        seed=seed,
        preset=preset,
    )
    if interrupted:
        result.interrupted = True
        result.bound_reason = f"interrupted ({interrupts.reason()}) after {machine.runs} runs"
    return result
