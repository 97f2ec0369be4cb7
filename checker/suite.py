"""`kmc ci`: a TOML list of checks with their expected verdicts, as a CI gate.

    [[check]]
    name = "KIP-101: truncating to the HW loses committed data"
    model = "replication"
    preset = "truncate-to-hw"
    properties = ["StrongIsr"]
    expect = "violated"              # holds | holds-complete | violated
    expect_property = "StrongIsr"    # optional: which property must be violated
    expect_trace_length = 9          # optional: states in the shortest trace
    expect_distinct_states = 10131   # optional: exact count (complete runs)
    replay = "replication/truncate-to-hw-StrongIsr.itf.json"  # optional: a stored trace that must replay

A conformance run (``kmc conform``) is an entry with ``conform = true``; it expects ``conforms`` or
``mismatch``, optionally names its ``oracles`` and the exact ``expect_distinct_states`` and
``expect_comparisons`` (decisions compared, over all its oracles)::

    [[check]]
    name = "kraft-replication agrees with Kafka's PartitionChangeBuilder"
    model = "kraft-replication"
    conform = true
    expect = "conforms"

An expected violation that is no longer found fails just like an unexpected one. A counterexample
too deep to search for in CI (found once by a long search, as its docs say) is kept as an entry with
``search = false``: the stored trace is replayed on the entry's model and config and must still
violate its property exactly at its last state, with ``expect_trace_length`` states.
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .bfs import BfsOptions
from .conformance import ConformJob, conform_table, write_mismatch_traces
from .errors import UserError
from .hypothesis_engine import HypothesisOptions
from .itf import read_trace
from .junit import Case
from .replay import confirm_violation, replay
from .result import CheckResult
from .runner import ENGINES, Check, write_traces
from .simulation import SimulationOptions

EXPECTATIONS = ("holds", "holds-complete", "violated")
CONFORM_EXPECTATIONS = ("conforms", "mismatch")
_KEYS = {
    "name",
    "model",
    "preset",
    "set",
    "properties",
    "spec",
    "engine",
    "max_depth",
    "max_states",
    "symmetry",
    "deadlock",
    "continue",
    "store",
    "seed",
    "depth",
    "walks",
    "expect",
    "expect_property",
    "expect_trace_length",
    "expect_distinct_states",
    "replay",
    "search",
    "conform",
    "oracles",
    "expect_comparisons",
}
_CHECK_ONLY_KEYS = {
    *("properties", "spec", "engine", "symmetry", "deadlock", "continue", "seed", "depth", "walks", "replay")
}


@dataclass
class Entry:
    name: str
    check: Check
    expect: str
    expect_property: list[str] = field(default_factory=list)
    expect_trace_length: int | None = None
    expect_distinct_states: int | None = None
    replay: Path | None = None
    search: bool = True
    conform: ConformJob | None = None
    expect_comparisons: int | None = None


@dataclass
class Outcome:
    entry: Entry
    ok: bool
    message: str
    seconds: float
    result: CheckResult | None = None

    def as_case(self) -> Case:
        classname = f"kmc.{self.entry.check.model_name}"
        return Case(
            name=self.entry.name,
            classname=classname,
            seconds=self.seconds,
            failure=None if self.ok else self.message,
            output=self.message if self.ok else "",
        )


def _typed(raw: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = raw.get(key)
    if value is not None and not isinstance(value, kind):
        raise UserError(f"{where}: '{key}' has the wrong type ({type(value).__name__})")
    return value


def load_suite(path: str | Path) -> list[Entry]:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"suite file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"malformed suite {path}: {exc}") from None
    raw_entries = data.get("check")
    if not isinstance(raw_entries, list) or not raw_entries:
        raise UserError(f"malformed suite {path}: it needs at least one [[check]] table")
    base = path.parent
    entries = []
    for index, raw in enumerate(raw_entries):
        where = f"{path} check #{index + 1}"
        unknown = set(raw) - _KEYS
        if unknown:
            raise UserError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        model = _typed(raw, "model", str, where)
        expect = _typed(raw, "expect", str, where)
        if not model:
            raise UserError(f"{where}: 'model' is required")
        if _typed(raw, "conform", bool, where):
            entries.append(_conform_entry(raw, model, expect, where))
            continue
        for key in ("oracles", "expect_comparisons"):
            if key in raw:
                raise UserError(f"{where}: '{key}' goes with 'conform = true'")
        if expect not in EXPECTATIONS:
            raise UserError(f"{where}: 'expect' must be one of {', '.join(EXPECTATIONS)}")
        engine = _typed(raw, "engine", str, where) or "bfs"
        if engine not in ENGINES:
            raise UserError(f"{where}: unknown engine {engine!r}")
        props = _typed(raw, "properties", list, where) or []
        specs = [str(base / s) for s in (_typed(raw, "spec", list, where) or [])]
        expect_property = _typed(raw, "expect_property", (str, list), where) or []
        if isinstance(expect_property, str):
            expect_property = [expect_property]
        check = Check(
            model_name=model,
            preset=_typed(raw, "preset", str, where),
            overrides=_typed(raw, "set", dict, where) or {},
            property_names=props,
            spec_files=specs,
            engine_name=engine,
            bfs_options=BfsOptions(
                max_depth=_typed(raw, "max_depth", int, where),
                max_states=_typed(raw, "max_states", int, where),
                symmetry=bool(_typed(raw, "symmetry", bool, where)),
                deadlock=bool(_typed(raw, "deadlock", bool, where)),
                keep_going=bool(_typed(raw, "continue", bool, where)),
                store=_typed(raw, "store", str, where) or "states",
            ),
            hypothesis_options=HypothesisOptions(
                seed=_typed(raw, "seed", int, where),
                examples=_typed(raw, "examples", int, where) or HypothesisOptions.examples,
                steps=_typed(raw, "steps", int, where) or 60,
            ),
            simulation_options=SimulationOptions(
                seed=_typed(raw, "seed", int, where),
                depth=_typed(raw, "depth", int, where) or 100,
                walks=_typed(raw, "walks", int, where) or 1000,
            ),
        )
        replay_path = _typed(raw, "replay", str, where)
        search = _typed(raw, "search", bool, where)
        if search is False and (not replay_path or expect != "violated"):
            raise UserError(f"{where}: 'search = false' needs a 'replay' trace and expect = \"violated\"")
        name = _typed(raw, "name", str, where) or f"{model} {check.preset or ''} {expect}".strip()
        entries.append(
            Entry(
                name=name,
                check=check,
                expect=expect,
                expect_property=list(expect_property),
                expect_trace_length=_typed(raw, "expect_trace_length", int, where),
                expect_distinct_states=_typed(raw, "expect_distinct_states", int, where),
                replay=base / replay_path if replay_path else None,
                search=search is not False,
            )
        )
    return entries


def _conform_entry(raw: dict[str, Any], model: str, expect: str | None, where: str) -> Entry:
    if expect not in CONFORM_EXPECTATIONS:
        raise UserError(f"{where}: a conformance entry expects one of {', '.join(CONFORM_EXPECTATIONS)}")
    misplaced = sorted(set(raw) & _CHECK_ONLY_KEYS)
    if misplaced:
        raise UserError(f"{where}: {', '.join(misplaced)} do(es) not apply to a conformance entry")
    oracles = _typed(raw, "oracles", list, where) or []
    job = ConformJob(
        target=model,
        preset=_typed(raw, "preset", str, where),
        overrides=_typed(raw, "set", dict, where) or {},
        oracle_names=tuple(str(o) for o in oracles),
        bfs_options=BfsOptions(
            max_depth=_typed(raw, "max_depth", int, where),
            max_states=_typed(raw, "max_states", int, where),
            store=_typed(raw, "store", str, where) or "states",
        ),
    )
    return Entry(
        name=_typed(raw, "name", str, where) or f"{model} {job.preset or ''} {expect}".strip(),
        check=Check(model_name=model, preset=job.preset, overrides=job.overrides),
        expect=expect,
        expect_distinct_states=_typed(raw, "expect_distinct_states", int, where),
        conform=job,
        expect_comparisons=_typed(raw, "expect_comparisons", int, where),
    )


def _judge_conform(entry: Entry, out_dir: str | Path | None) -> tuple[bool, str, CheckResult | None]:
    assert entry.conform is not None
    table = entry.conform.input_oracle()
    if table is not None:
        tally = conform_table(table)
        distinct, complete, result = tally.states, True, None
        tallies = [tally]
    else:
        outcome = entry.conform.run()
        if out_dir is not None:
            write_mismatch_traces(outcome, Path(out_dir) / outcome.check.model, None)
        distinct, complete, result = outcome.check.stats.distinct_states, outcome.check.complete, outcome.check
        tallies = outcome.tallies
    mismatches = sum(t.mismatches for t in tallies)
    comparisons = sum(t.comparisons for t in tallies)
    problems = []
    idle = [t.oracle for t in tallies if t.comparisons == 0]
    if idle:
        problems.append(f"oracle {', '.join(idle)} compared nothing")
    if entry.expect == "conforms" and mismatches:
        first = next(t for t in tallies if t.mismatches)
        problems.append(f"expected to conform, but {first.oracle} disagrees ({first.first_mismatch})")
    if entry.expect == "mismatch" and not mismatches:
        problems.append(f"expected a mismatch, every one of {comparisons} decisions agrees")
    if entry.expect_distinct_states is not None and distinct != entry.expect_distinct_states:
        problems.append(f"expected {entry.expect_distinct_states} distinct states, got {distinct}")
    if entry.expect_comparisons is not None and comparisons != entry.expect_comparisons:
        problems.append(f"expected {entry.expect_comparisons} decisions compared, got {comparisons}")
    summary = (
        f"{'mismatch' if mismatches else 'conforms'}: {distinct} {'cases' if table else 'distinct states'}, "
        f"{comparisons} decisions compared, {mismatches} mismatches" + ("" if complete else " (bounded)")
    )
    return not problems, "; ".join(problems) or summary, result


def _judge(entry: Entry, result: CheckResult) -> list[str]:
    problems = []
    violated = [v.property for v in result.violations]
    if entry.expect == "violated":
        if not violated:
            problems.append(
                "expected a violation, none found "
                f"({'complete' if result.complete else 'bounded'} run, {result.stats.distinct_states} states)"
            )
        for prop in entry.expect_property:
            if violated and prop not in violated:
                problems.append(f"expected {prop} to be violated, got {', '.join(violated)}")
        if entry.expect_trace_length is not None and result.violations:
            got = result.violations[0].trace_length
            if got != entry.expect_trace_length:
                problems.append(f"expected a shortest trace of {entry.expect_trace_length} states, got {got}")
    else:
        if violated:
            problems.append(f"expected to hold, but violated: {', '.join(violated)}")
        if entry.expect == "holds-complete" and not result.complete:
            problems.append(f"expected a complete run, it was bounded ({result.bound_reason})")
    if entry.expect_distinct_states is not None and result.stats.distinct_states != entry.expect_distinct_states:
        problems.append(f"expected {entry.expect_distinct_states} distinct states, got {result.stats.distinct_states}")
    return problems


def _judge_stored(entry: Entry) -> tuple[bool, str]:
    """A ``search = false`` entry: the stored trace replays on the entry's model and config and still
    ends in a violation of the expected property, at the expected length."""
    assert entry.replay is not None
    model, _props = entry.check.build()
    done = replay(read_trace(entry.replay))
    if done.model.name != model.name or done.model.config_dict() != model.config_dict():
        return False, f"{entry.replay.name} was recorded on another model or config than the entry's"
    prop = confirm_violation(done, tuple(str(s) for s in entry.check.spec_files))
    problems = []
    if entry.expect_property and prop not in entry.expect_property:
        problems.append(f"expected {' or '.join(entry.expect_property)} to be violated, the trace violates {prop}")
    if entry.expect_trace_length is not None and len(done.trace) != entry.expect_trace_length:
        problems.append(f"expected a trace of {entry.expect_trace_length} states, the stored one has {len(done.trace)}")
    summary = f"violated: {prop} at state {len(done.trace)} of the stored trace (replayed, not searched)"
    return not problems, "; ".join(problems) or summary


def run_suite(
    entries: list[Entry], out_dir: str | Path | None = None, on_outcome: Callable[[Outcome], None] | None = None
) -> list[Outcome]:
    outcomes = []
    for entry in entries:
        start = time.perf_counter()
        result = None
        try:
            if entry.conform is not None:
                ok, message, result = _judge_conform(entry, out_dir)
            elif entry.search:
                result = entry.check.run()
                if out_dir is not None:
                    write_traces(result, Path(out_dir) / result.model)
                if entry.replay is not None:
                    replay(read_trace(entry.replay))
                problems = _judge(entry, result)
                summary = (
                    f"{result.verdict}: {result.stats.distinct_states} distinct states, depth {result.stats.depth}"
                    + (f", {', '.join(v.property for v in result.violations)} violated" if result.violations else "")
                )
                ok, message = not problems, "; ".join(problems) or summary
            else:
                ok, message = _judge_stored(entry)
            outcome = Outcome(entry, ok, message, time.perf_counter() - start, result)
        except UserError as exc:
            outcome = Outcome(entry, False, f"error: {exc}", time.perf_counter() - start, result)
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome)
    return outcomes
