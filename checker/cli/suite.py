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

Other kinds of job join a suite as arrays of tables named after them, each kind registered under the
``kmc.suite_jobs`` entry point group by the package that runs it (``[[campaign]]``: a real cluster
under faults, from ``kmc.cluster``). Such a job passes when its own verdict is the one it expects.
Jobs that can share what they need (``[[drive]]``s of one cluster: see `SharingJob`) run one after
another in one process, where the first of them stands, each still judged and reported alone.

Every path in a suite is relative to the suite's own folder: ``model = "file.py:Class"``, ``spec``,
``replay`` and the engines' directories; ``model = "module:Class"`` is imported from sys.path.

An expected violation that is no longer found fails just like an unexpected one. A counterexample
too deep to search for in CI (found once by a long search, as its docs say) is kept as an entry with
``search = false``: the stored trace is replayed on the entry's model and config and must still
violate its property exactly at its last state, with ``expect_trace_length`` states.
"""

from __future__ import annotations

import json
import multiprocessing
import signal
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kmc.checker.cli.junit import Case
from kmc.checker.conformance.run import ConformJob, conform_table, write_mismatch_traces
from kmc.checker.engines import ENGINES
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.engines.settings import options_by_toml, settings_from
from kmc.checker.errors import UserError
from kmc.checker.result import CheckResult
from kmc.checker.runner import Check
from kmc.checker.search.observers import vacuity_failures
from kmc.checker.traces.files import write_traces
from kmc.checker.traces.itf import file_reference, read_trace
from kmc.checker.traces.replay import confirm_violation, model_for_trace, replay

EXPECTATIONS = ("holds", "holds-complete", "violated")
CONFORM_EXPECTATIONS = ("conforms", "mismatch")
_ENTRY_KEYS = {
    *("name", "model", "preset", "set", "properties", "spec", "engine", "expect", "expect_property"),
    *("expect_trace_length", "expect_distinct_states", "replay", "search", "conform", "oracles"),
    *("expect_comparisons", "fail_on_vacuity", "expect_vacuous"),
}
_CONFORM_SETTINGS = {"max_depth", "max_states", "store"}
"""The settings of a conformance entry (its BFS's); every other engine setting is a check's only."""
_CHECK_ONLY_KEYS = {"properties", "spec", "engine", "replay", "fail_on_vacuity", "expect_vacuous"}
_SUITE_KEYS = {"check", "fail_on_vacuity"}


class SuiteJob(Protocol):
    """An entry of another kind than a check (a campaign on a real cluster): it runs and judges itself."""

    name: str
    kind: str
    """What it is, as JUnit's classname and ``kmc ci --model`` show it (``campaign``)."""

    def run(self, out_dir: Path | None) -> tuple[bool, str]:
        """Whether its verdict is the expected one, and a one-line summary."""
        ...


@runtime_checkable
class SharingJob(SuiteJob, Protocol):
    """A job that can share what it needs with others (a drive its real cluster, whose start takes
    longer than many a drive): the jobs of its kind with an equal key run one after another in one
    process, inside the first one's ``shared`` context."""

    def share_key(self) -> Hashable | None:
        """What it needs, as a key equal to another job's when one thing serves both; None: it runs alone."""
        ...

    def shared(self, jobs: list[Any], out_dir: Path | None) -> AbstractContextManager[object]:
        """What ``jobs`` (this one first) share while they run; left after the last, however it ended."""
        ...


def job_kinds() -> dict[str, Callable[[dict[str, Any], Path, str], SuiteJob]]:
    """The registered kinds of job, by their table name in a suite; each loads one table."""
    return {ep.name: ep.load() for ep in entry_points(group="kmc.suite_jobs")}


@dataclass
class Entry:
    name: str
    check: Check | None
    expect: str
    expect_property: list[str] = field(default_factory=list)
    expect_trace_length: int | None = None
    expect_distinct_states: int | None = None
    replay: Path | None = None
    search: bool = True
    conform: ConformJob | None = None
    expect_comparisons: int | None = None
    fail_on_vacuity: bool = False
    expect_vacuous: list[str] = field(default_factory=list)
    """Actions and properties this entry's config leaves vacuous on purpose (a variant turns them off)."""
    job: SuiteJob | None = None

    @property
    def label(self) -> str:
        """The model it checks, or the kind of job it is."""
        return self.job.kind if self.job is not None else self.check.model_name  # type: ignore[union-attr]


@dataclass
class Outcome:
    entry: Entry
    ok: bool
    message: str
    seconds: float
    result: CheckResult | None = None

    def as_case(self) -> Case:
        classname = f"kmc.{self.entry.label}"
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
    kinds = job_kinds() if set(data) - _SUITE_KEYS else {}
    unknown_top = set(data) - _SUITE_KEYS - set(kinds)
    if unknown_top:
        raise UserError(f"malformed suite {path}: unknown top-level key(s) {', '.join(sorted(unknown_top))}")
    vacuity_default = _typed(data, "fail_on_vacuity", bool, str(path)) or False
    raw_entries = data.get("check", [])
    if not isinstance(raw_entries, list) or not (raw_entries or set(data) & set(kinds)):
        raise UserError(f"malformed suite {path}: it needs at least one [[check]] table")
    base = path.parent
    entries = []
    names: set[str] = set()
    tables = [("check", raw) for raw in raw_entries]
    for kind in sorted(set(data) & set(kinds)):
        if not isinstance(data[kind], list):
            raise UserError(f"malformed suite {path}: {kind} must be an array of tables ([[{kind}]])")
        tables += [(kind, raw) for raw in data[kind]]
    counts: dict[str, int] = {}
    for kind, raw in tables:
        counts[kind] = counts.get(kind, 0) + 1
        where = f"{path} {kind} #{counts[kind]}"
        if not isinstance(raw, dict):
            raise UserError(f"{where}: an entry must be a table")
        if kind == "check":
            entry = _entry(raw, base, where, vacuity_default)
        else:
            job = kinds[kind](raw, base, where)
            entry = Entry(name=job.name, check=None, expect="", job=job)
        if entry.name in names:
            raise UserError(f"{where}: another entry is already named {entry.name!r}")
        names.add(entry.name)
        entries.append(entry)
    return entries


def _entry(raw: dict[str, Any], base: Path, where: str, vacuity_default: bool) -> Entry:
    """One [[check]] table as an Entry, every key checked."""
    settings_keys = options_by_toml()  # every engine setting, by its TOML key
    unknown = set(raw) - _ENTRY_KEYS - set(settings_keys)
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    model = _typed(raw, "model", str, where)
    expect = _typed(raw, "expect", str, where)
    if not model:
        raise UserError(f"{where}: 'model' is required")
    given, model = model, _model_beside(model, base)
    if _typed(raw, "conform", bool, where):
        return _conform_entry(raw, model, expect, where, given)
    for key in ("oracles", "expect_comparisons"):
        if key in raw:
            raise UserError(f"{where}: '{key}' goes with 'conform = true'")
    if expect not in EXPECTATIONS:
        raise UserError(f"{where}: 'expect' must be one of {', '.join(EXPECTATIONS)}")
    engine = _typed(raw, "engine", str, where) or "bfs"
    if engine not in ENGINES:
        raise UserError(f"{where}: unknown engine {engine!r}; engines: {', '.join(ENGINES)}")
    props = _strings(raw, "properties", where)
    specs = [str(base / s) for s in _strings(raw, "spec", where)]
    expect_property = _typed(raw, "expect_property", (str, list), where) or []
    if isinstance(expect_property, str):
        expect_property = [expect_property]
    elif not all(isinstance(p, str) for p in expect_property):
        raise UserError(f"{where}: 'expect_property' must be a string or a list of strings")
    settings = settings_from({k: v for k, v in raw.items() if k in settings_keys}, where, toml=True)
    for spec in settings_keys.values():  # a path is relative to the suite's folder
        if spec.path and spec.name in settings:
            settings[spec.name] = str(base / settings[spec.name])
    overrides = _typed(raw, "set", dict, where) or {}
    check = Check(
        model_name=model,
        preset=_typed(raw, "preset", str, where),
        overrides=overrides,
        property_names=props,
        spec_files=specs,
        engine_name=engine,
        settings=settings,
    )
    engine_cls, _bounds, _options = _planned(check, where)
    explicit_vacuity = _typed(raw, "fail_on_vacuity", bool, where)
    if explicit_vacuity and not engine_cls.observes:
        raise UserError(f"{where}: the {engine} engine observes no states: it does not take fail_on_vacuity")
    fail_on_vacuity = explicit_vacuity if explicit_vacuity is not None else vacuity_default and engine_cls.observes
    replay_path = _typed(raw, "replay", str, where)
    search = _typed(raw, "search", bool, where)
    if replay_path and expect != "violated":
        raise UserError(f"{where}: a 'replay' trace is a counterexample: it needs expect = \"violated\"")
    if search is False and not replay_path:
        raise UserError(f"{where}: 'search = false' needs a 'replay' trace and expect = \"violated\"")
    if replay_path and not (base / replay_path).is_file():
        raise UserError(f"{where}: replay trace not found: {base / replay_path}")
    if replay_path:
        _recorded_as_the_entry(check, base / replay_path, expect_property, where)
    if expect_property and expect != "violated":
        raise UserError(f"{where}: 'expect_property' names the property violated: it goes with expect = \"violated\"")
    for key in ("expect_trace_length", "expect_distinct_states"):
        value = _typed(raw, key, int, where)
        if value is not None and value < 1:
            raise UserError(f"{where}: '{key}' must be a positive integer")
    name = _typed(raw, "name", str, where)
    if not name:
        raise UserError(f'{where}: an entry needs a name (name = "..."): its result line and JUnit case carry it')
    return Entry(
        name=name,
        check=check,
        expect=expect,
        expect_property=list(expect_property),
        expect_trace_length=_typed(raw, "expect_trace_length", int, where),
        expect_distinct_states=_typed(raw, "expect_distinct_states", int, where),
        replay=base / replay_path if replay_path else None,
        search=search is not False,
        fail_on_vacuity=bool(fail_on_vacuity),
        expect_vacuous=_strings(raw, "expect_vacuous", where),
    )


def _strings(raw: dict[str, Any], key: str, where: str) -> list[str]:
    value = _typed(raw, key, list, where) or []
    if not all(isinstance(v, str) and v for v in value):
        raise UserError(f"{where}: '{key}' must be a list of non-empty strings")
    return list(value)


def _planned(check: Check, where: str) -> Any:
    """The entry's engine plan, with its model, preset, config and properties checked: a typo in a
    suite is bad input (exit 2) before anything runs, not a failed entry after the others ran."""
    try:
        plan = check.plan()
        check.build(require_properties=True)
    except UserError as exc:
        raise UserError(f"{where}: {exc}") from None
    return plan


def _model_beside(model: str, base: Path) -> str:
    """A suite's ``file.py:Class`` is relative to the suite's folder, as its spec files and traces
    are; a registered name and ``module:Class`` (found on sys.path) are kept as they are."""
    parts = file_reference(model)
    if parts is None or Path(parts[0]).is_absolute():
        return model
    return f"{(base / parts[0]).as_posix()}:{parts[1]}"


def _conform_entry(raw: dict[str, Any], model: str, expect: str | None, where: str, given: str) -> Entry:
    if expect not in CONFORM_EXPECTATIONS:
        raise UserError(f"{where}: a conformance entry expects one of {', '.join(CONFORM_EXPECTATIONS)}")
    check_only = _CHECK_ONLY_KEYS | (set(options_by_toml()) - _CONFORM_SETTINGS)
    misplaced = sorted(set(raw) & check_only)
    if misplaced:
        raise UserError(f"{where}: {', '.join(misplaced)} do(es) not apply to a conformance entry")
    oracles = _typed(raw, "oracles", list, where) or []
    job = ConformJob(
        target=model,
        preset=_typed(raw, "preset", str, where),
        overrides=_typed(raw, "set", dict, where) or {},
        oracle_names=tuple(str(o) for o in oracles),
        bfs_options=BfsOptions(**_conform_settings(raw, where)),
    )
    return Entry(
        name=_typed(raw, "name", str, where) or " ".join(filter(None, (given, job.preset, expect))),
        check=Check(model_name=model, preset=job.preset, overrides=job.overrides),
        expect=expect,
        expect_distinct_states=_typed(raw, "expect_distinct_states", int, where),
        conform=job,
        expect_comparisons=_typed(raw, "expect_comparisons", int, where),
    )


def _conform_settings(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """The BFS bounds a conformance entry takes, checked like every other entry's settings."""
    settings = settings_from({k: v for k, v in raw.items() if k in _CONFORM_SETTINGS}, where, toml=True)
    return {"store": "states", **settings}


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
            write_mismatch_traces(outcome, Path(out_dir) / outcome.check.model)
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


def _recorded_as_the_entry(check: Check, path: Path, expect_property: list[str], where: str) -> None:
    """A stored trace recorded on another model, preset or config than its entry's contradicts the
    entry: refused before anything runs (whether it still replays is the run's question)."""
    model, props = check.build()
    doc = read_trace(path)
    meta = doc["#meta"]
    if meta.get("model") != model.name:
        raise UserError(
            f"{where}: {path.name} was recorded on model {meta.get('model')}, the entry checks {model.name}"
        )
    preset = check.preset if check.preset is not None else type(model).default_preset
    if meta.get("preset") != preset:
        raise UserError(f"{where}: {path.name} was recorded on preset {meta.get('preset')}, the entry checks {preset}")
    recorded = json.loads(json.dumps(model_for_trace(doc).config_dict(), default=str))
    entry_config = json.loads(json.dumps(model.config_dict(), default=str))
    if recorded != entry_config:
        differ = sorted(k for k in entry_config if recorded.get(k) != entry_config[k])
        raise UserError(
            f"{where}: {path.name} was recorded on another config than the entry's ({', '.join(differ)} differ)"
        )
    if meta.get("property") not in props.names():
        raise UserError(f"{where}: {path.name} is a trace of {meta.get('property')}, which the entry does not check")
    if expect_property and meta.get("property") not in expect_property:
        raise UserError(
            f"{where}: {path.name} is a trace of {meta.get('property')}, the entry expects "
            f"{' or '.join(expect_property)} violated"
        )


def _judge_replay(entry: Entry) -> tuple[list[str], str]:
    """The entry's stored trace still replays on the model, has the expected length, and violates its
    property exactly at its last state. Checked for every entry with a ``replay``, whether or not it
    also searches (that it was recorded as the entry says is checked when the suite is loaded)."""
    assert entry.replay is not None
    assert entry.check is not None
    problems: list[str] = []
    # Its model, preset, config and property were checked against the entry when it was loaded.
    done = replay(read_trace(entry.replay))
    prop = confirm_violation(done, tuple(str(s) for s in entry.check.spec_files))
    if entry.expect_trace_length is not None and len(done.trace) != entry.expect_trace_length:
        problems.append(f"expected a trace of {entry.expect_trace_length} states, the stored one has {len(done.trace)}")
    return problems, f"{prop} at state {len(done.trace)} of the stored trace"


def _vacuity_summary(entry: Entry) -> str:
    if entry.expect_vacuous:
        return f", every action taken and property exercised but the {len(entry.expect_vacuous)} declared vacuous"
    return ", every action taken and property exercised"


def _judge_vacuity(entry: Entry, result: CheckResult) -> list[str]:
    """With fail_on_vacuity: every action taken and every property exercised, except those the
    entry declares vacuous -- and those must really be (a stale declaration hides nothing)."""
    if not entry.fail_on_vacuity or result.violations:
        return []
    problems = [f"vacuous: {line}" for line in vacuity_failures(result, entry.expect_vacuous)]
    vacuous_names = {line.split(" ")[1] for line in result.vacuity}
    vacuous_names |= set((result.coverage or {}).get("inactive", ()))  # the model now declares it off itself
    vacuous_names |= set((result.coverage or {}).get("never_needed", ()))  # or a recovery nothing called for
    known = {*(result.coverage or {}).get("actions", {}), *(result.coverage or {}).get("properties", {})}
    for name in entry.expect_vacuous:
        if name not in known:
            problems.append(f"expect_vacuous names {name}, which is no action or property of this check")
        elif name not in vacuous_names:
            problems.append(f"expect_vacuous names {name}, but it was taken or exercised")
    return problems


def run_suite(
    entries: list[Entry],
    out_dir: str | Path | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    jobs: int = 1,
) -> list[Outcome]:
    """Every entry's outcome, in the suite's order. Entries run in batches (`_batches`): jobs that share
    what they need together, every other entry alone. With ``jobs`` > 1 the batches run in that many
    forked processes, one each: ``on_outcome`` sees them in the order they finish, and an outcome carries
    no result; one at a time, ``on_outcome`` sees them in the suite's order. A process that already runs
    other threads (a JVM's, a Spark context's) runs them one at a time."""
    batches = _batches(entries)
    if jobs <= 1 or len(batches) <= 1 or threading.active_count() > 1:  # forking a threaded process can deadlock
        outcomes: dict[int, Outcome] = {}
        done = _in_order(outcomes, on_outcome)
        for batch in batches:
            _run_batch(entries, batch, out_dir, done)
        return [outcomes[i] for i in range(len(entries))]
    global _FORKED
    _FORKED = (entries, batches, out_dir)
    by_index: dict[int, Outcome] = {}
    # Workers die on SIGTERM at once (as multiprocessing expects of terminate()), and a finished suite
    # closes its pool rather than terminating it: a worker forked to replace one that ended its task
    # could miss terminate()'s signal and wait on the task queue for ever.
    pool = multiprocessing.get_context("fork").Pool(
        min(jobs, len(batches)), initializer=_worker_signals, maxtasksperchild=1
    )
    try:
        for finished in pool.imap_unordered(_run_forked, range(len(batches))):
            for index, ok, message, seconds in finished:
                by_index[index] = Outcome(entries[index], ok, message, seconds)
                if on_outcome:
                    on_outcome(by_index[index])
        pool.close()
        pool.join()
    except BaseException:
        pool.terminate()
        raise
    finally:
        _FORKED = None
    return [by_index[i] for i in range(len(entries))]


def _batches(entries: list[Entry]) -> list[list[int]]:
    """The entries' indices in the order they run: the jobs of one kind with an equal ``share_key()``
    in one batch, where the first of them stands; every other entry in a batch of its own."""
    batches: list[list[int]] = []
    sharing: dict[tuple[str, Hashable], list[int]] = {}
    for index, entry in enumerate(entries):
        job = entry.job
        key = (job.kind, job.share_key()) if isinstance(job, SharingJob) else None
        if key is None or key[1] is None:
            batches.append([index])
            continue
        if key not in sharing:
            sharing[key] = []
            batches.append(sharing[key])
        sharing[key].append(index)
    return batches


def _run_batch(
    entries: list[Entry], batch: list[int], out_dir: str | Path | None, done: Callable[[int, Outcome], None]
) -> None:
    """One batch's entries one after another, each judged alone; jobs that share, inside the first
    one's ``shared`` context (left when the last is done, or when one is interrupted)."""
    first = entries[batch[0]].job
    context: AbstractContextManager[object] = nullcontext()
    if isinstance(first, SharingJob) and len(batch) > 1:
        context = first.shared([entries[i].job for i in batch], Path(out_dir) if out_dir is not None else None)
    with context:
        for index in batch:
            done(index, _run_entry(entries[index], out_dir))


def _in_order(
    outcomes: dict[int, Outcome], on_outcome: Callable[[Outcome], None] | None
) -> Callable[[int, Outcome], None]:
    """Keeps each outcome in ``outcomes``; reports them in the suite's order, each as soon as those
    before it are in (a batch runs later entries of the suite early)."""
    reported = 0

    def done(index: int, outcome: Outcome) -> None:
        nonlocal reported
        outcomes[index] = outcome
        while reported in outcomes:
            if on_outcome:
                on_outcome(outcomes[reported])
            reported += 1

    return done


_FORKED: tuple[list[Entry], list[list[int]], str | Path | None] | None = None
"""The suite a forked worker runs batches of: inherited through fork, so models of one's own need not pickle."""


def _worker_signals() -> None:
    """A suite's worker process: SIGTERM ends it at once, as a pool's terminate() means it."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.unraisablehook = sys.__unraisablehook__


def _run_forked(batch: int) -> list[tuple[int, bool, str, float]]:
    assert _FORKED is not None
    entries, batches, out_dir = _FORKED
    finished: list[tuple[int, bool, str, float]] = []
    _run_batch(entries, batches[batch], out_dir, lambda i, o: finished.append((i, o.ok, o.message, o.seconds)))
    return finished


def _run_entry(entry: Entry, out_dir: str | Path | None) -> Outcome:
    start = time.perf_counter()
    result = None
    try:
        if entry.job is not None:
            ok, message = entry.job.run(Path(out_dir) if out_dir is not None else None)
        elif entry.conform is not None:
            ok, message, result = _judge_conform(entry, out_dir)
            if result is not None and result.interrupted:
                raise KeyboardInterrupt
        elif entry.search:
            assert entry.check is not None
            result = entry.check.run()
            if result.interrupted:  # Ctrl-C or SIGTERM: the suite ends, not just this entry
                raise KeyboardInterrupt
            if out_dir is not None:
                write_traces(result, Path(out_dir) / result.model)
            problems = _judge(entry, result) + _judge_vacuity(entry, result)
            if entry.replay is not None:
                problems += _judge_replay(entry)[0]
            summary = (
                f"{result.verdict}: {result.stats.distinct_states} distinct states, depth {result.stats.depth}"
                + (f", {', '.join(v.property for v in result.violations)} violated" if result.violations else "")
                + (_vacuity_summary(entry) if entry.fail_on_vacuity and not problems and not result.violations else "")
            )
            ok, message = not problems, "; ".join(problems) or summary
        else:
            problems, where = _judge_replay(entry)
            ok = not problems
            message = "; ".join(problems) or f"violated: {where} (replayed, not searched)"
        return Outcome(entry, ok, message, time.perf_counter() - start, result)
    except UserError as exc:
        return Outcome(entry, False, f"error: {exc}", time.perf_counter() - start, result)
