"""What `kmc check` prints: the summary of a result, and the coverage table."""

from __future__ import annotations

from typing import Any

from kmc.checker import interrupts
from kmc.checker.engines import ENGINES
from kmc.checker.engines.api import Engine
from kmc.checker.result import CheckResult, Status


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:,.0f} {unit}"
        n /= 1024
    return f"{n:,.1f} TiB"


def _engine(result: CheckResult) -> Engine:
    """The engine that produced the result (a plain Engine for one no longer registered)."""
    return ENGINES[result.engine]() if result.engine in ENGINES else Engine()


def summary_text(result: CheckResult, command: str, vacuous: list[str] | None = None) -> str:
    """The human summary; with ``vacuous`` (--fail-on-vacuity failed) the verdict says so instead of holding."""
    engine = _engine(result)
    lines = [command, f"  config: {' '.join(f'{k}={v}' for k, v in result.config.items())}"]
    lines.append(f"  properties: {', '.join(result.properties) or '(none)'}")
    for v in result.violations:
        where = f" -> {v.trace_file}" if v.trace_file else ""
        if v.trace.loop is not None:
            shape = f"lasso of {v.trace_length} states, looping back to state {v.trace.loop}"
        else:
            shape = f"{'shortest trace' if engine.shortest else 'trace'} of {v.trace_length} states"
        lines.append(f"  VIOLATED {v.property} ({v.kind}): {shape}{where}")
    own = engine.summary(result)
    lines.extend([f"  {line}" for line in own] if own is not None else _statistics(result))
    if result.seed is not None:
        lines.append(f"  seed {result.seed} (rerun with --seed {result.seed})")
    needed = (result.coverage or {}).get("never_needed") or []
    if needed:
        lines.append(
            f"  never needed: {', '.join(needed)} (recovery steps: nothing this search reached called for them)"
        )
    for warning in result.warnings:
        lines.append(f"  warning: {warning}")
    lines.append(f"  verdict: {_verdict(result, engine, vacuous)}")
    return "\n".join(lines)


def _statistics(result: CheckResult) -> list[str]:
    """States, rates and memory, as every engine that counts states reports them."""
    s = result.stats
    lines = [
        f"  {s.distinct_states:,} distinct states, {s.generated_states:,} generated, depth {s.depth}, "
        f"{s.elapsed_s:.2f} s, {s.states_per_second:,.0f} states/s"
    ]
    memory = f"  peak memory {format_bytes(s.peak_memory_bytes)}"
    if s.bytes_per_state is not None:
        memory += f", ~{s.bytes_per_state:,.0f} B/state"
    if s.collision_probability is not None:
        memory += f", fingerprint collision probability (optimistic) {s.collision_probability:.1e}"
    elif s.storage == "states":
        memory += ", states stored exactly (no fingerprint collisions)"
    lines.append(memory)
    spill = s.extra.get("spill")
    if spill is not None:
        lines.append(_spill_line(spill))
    return lines


def _verdict(result: CheckResult, engine: Engine, vacuous: list[str] | None) -> str:
    if result.interrupted:
        return f"interrupted ({interrupts.reason()}): the statistics above are of the part explored; not a proof"
    if vacuous:
        return f"vacuous (--fail-on-vacuity): {'; '.join(vacuous)}; no violation was found, which says nothing of those"
    own = engine.verdict(result)
    if own is not None:
        return own
    if result.status is Status.VIOLATED:
        if result.complete:
            tail = ""
        elif result.bound_reason:
            tail = f" (searched within {result.bound_reason})"
        else:
            tail = " (stopped at the first violation; --continue explores the rest)"
        return f"violated{tail}"
    if result.complete:
        return "holds (complete: every reachable state was explored)"
    return f"holds within bounds only ({result.bound_reason}): not a proof"


def _spill_line(spill: dict[str, Any]) -> str:
    """How much a run larger than memory (bfs --memory) put on disk."""
    budget = spill["memory_budget_bytes"]
    head = f"  disk (--memory {format_bytes(budget)})" if budget is not None else "  disk"
    peak = format_bytes(spill["peak_bytes_on_disk"])
    return (
        f"{head}: {spill['visited_on_disk']:,} fingerprints on disk, at most {peak}"
        f" there, {format_bytes(spill['bytes_written'])} written; {spill['flushes']} flushes, {spill['merges']} merges,"
        f" {spill['level_spills']} level spills"
    )


def coverage_text(coverage: dict[str, Any]) -> str:
    """The coverage table: per action enabled/taken, per property evaluated/exercised."""
    lines = ["  coverage:"]
    actions = coverage.get("actions", {})
    width = max([len(n) for n in [*actions, *coverage.get("properties", {})]] + [10])
    lines.append(f"    {'action':<{width}} {'enabled in':>12} {'taken':>12}")
    for name, (enabled, taken) in actions.items():
        off = name in coverage.get("inactive", ())
        needed = name in coverage.get("never_needed", ())
        mark = (
            "  (off in this config)"
            if taken == 0 and off
            else "  (a recovery, never needed)"
            if needed
            else "  <- never taken"
            if taken == 0
            else ""
        )
        lines.append(f"    {name:<{width}} {enabled:>12,} {taken:>12,}{mark}")
    lines.append(f"    {'property':<{width}} {'evaluated':>12} {'exercised':>12}")
    for name, (evaluated, exercised) in coverage.get("properties", {}).items():
        mark = "  <- never exercised" if exercised == 0 else ""
        lines.append(f"    {name:<{width}} {evaluated:>12,} {exercised:>12,}{mark}")
    return "\n".join(lines)
