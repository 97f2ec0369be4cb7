"""Conformance: a model held, at every reachable step, to a reference implementation of the protocol.

An :class:`Oracle` answers, for a step of the model, the question the step decides (who is elected,
what the ISR becomes, which partitions a member keeps) the way the reference implementation decides
it, and says what the model answered. :func:`conform` runs the exhaustive BFS with one step
property per oracle, "the reference agrees with this step", so a disagreement is found at its
shortest depth and written, replayed and rendered like any counterexample. The engine knows
nothing about where the reference answers come from (for kmc, Kafka's own Java classes, in
``kmc.oracles``).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kmc.checker.conformance.oracle import ORACLE_PREFIX, Comparison, InputOracle, Oracle, Tally, mismatch_json
from kmc.checker.engines.bfs.engine import bfs
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model, State
from kmc.checker.properties import Property, PropertySet
from kmc.checker.result import CheckResult, Status
from kmc.checker.search.observers import SearchObserver
from kmc.checker.search.progress import Progress


@dataclass
class ConformResult:
    check: CheckResult
    tallies: list[Tally]
    release: str | None = None
    """The release of the reference the oracles called."""

    @property
    def mismatched(self) -> bool:
        return any(t.mismatches for t in self.tallies)

    def to_json(self) -> dict[str, Any]:
        out = self.check.to_json()
        out["verdict"] = "mismatch" if self.mismatched else "conforms"
        out["release"] = self.release
        out["oracles"] = [t.to_json() for t in self.tallies]
        return out


def _step_property(oracle: Oracle, tally: Tally) -> Property:
    """ "The reference agrees with this step", counting what it compares."""

    def agrees(state: State, action: Action, next_state: State) -> bool:
        started = time.perf_counter()
        try:
            answers = list(oracle.compare_step(state, action, next_state))
        finally:
            tally.seconds += time.perf_counter() - started
        return _count(tally, answers, action.name if isinstance(action, Action) else str(action), step=True)

    return Property(name=f"{ORACLE_PREFIX}{oracle.name}", kind="step", fn=agrees, doc=oracle.description)


def _state_property(oracle: Oracle, tally: Tally) -> Property:
    seen: set[int] = set()  # the BFS asks again at a state where a property fails: count once

    def agrees(state: State) -> bool:
        started = time.perf_counter()
        try:
            answers = list(oracle.compare_state(state))
        finally:
            tally.seconds += time.perf_counter() - started
        if answers and id(state) in seen:
            return all(a.agree for a in answers)
        if answers and not all(a.agree for a in answers):
            seen.add(id(state))
        return _count(tally, answers, "(state)", step=False)

    return Property(name=f"{ORACLE_PREFIX}{oracle.name}.state", kind="invariant", fn=agrees, doc=oracle.description)


def _count(tally: Tally, answers: list[Comparison], action_name: str, *, step: bool) -> bool:
    if not answers:
        return True
    if step:
        tally.steps += 1
        tally.by_action[action_name] += 1
    else:
        tally.states += 1
    return _tally_answers(tally, answers)


def _tally_answers(tally: Tally, answers: list[Comparison]) -> bool:
    """Count each answer as an agreement or a mismatch; True when all agree."""
    ok = True
    for answer in answers:
        tally.comparisons += 1
        tally.by_question[answer.question] += 1
        if answer.agree:
            tally.agreements += 1
        else:
            tally.mismatches += 1
            ok = False
            if tally.first_mismatch is None:
                tally.first_mismatch = answer
    return ok


class TalliesKept(SearchObserver):
    """The oracles' counts, kept in a checkpoint with the search, so that a resumed ``kmc conform``
    ends with the totals of a run never stopped."""

    def __init__(self, tallies: list[Tally]) -> None:
        self.tallies = tallies

    def saved_counts(self) -> dict[str, Any]:
        return {"tallies": [_tally_counts(t) for t in self.tallies]}

    def restore_counts(self, counts: dict[str, Any]) -> None:
        for tally, saved in zip(self.tallies, counts.get("tallies", []), strict=False):
            if saved.get("oracle") != tally.oracle:
                raise UserError(f"the checkpoint's counts are of oracle {saved.get('oracle')}, not {tally.oracle}")
            for name in ("states", "steps", "comparisons", "agreements", "mismatches", "seconds"):
                setattr(tally, name, saved[name])
            tally.by_question, tally.by_action = Counter(saved["by_question"]), Counter(saved["by_action"])
            first = saved.get("first_mismatch")
            if first is not None:
                tally.first_mismatch = Comparison(first["question"], first["ours"], first["theirs"], first["inputs"])


def _tally_counts(tally: Tally) -> dict[str, Any]:
    first = tally.first_mismatch
    return {
        "oracle": tally.oracle,
        "states": tally.states,
        "steps": tally.steps,
        "comparisons": tally.comparisons,
        "agreements": tally.agreements,
        "mismatches": tally.mismatches,
        "seconds": tally.seconds,
        "by_question": dict(tally.by_question),
        "by_action": dict(tally.by_action),
        # the answers as they were printed: a checkpoint holds plain values only
        "first_mismatch": None
        if first is None
        else {
            "question": first.question,
            "ours": repr(first.ours),
            "theirs": repr(first.theirs),
            "inputs": {k: repr(v) for k, v in first.inputs.items()},
        },
    }


def conform(
    model: Model,
    oracles: Iterable[Oracle],
    options: BfsOptions | None = None,
    progress: Progress | None = None,
    preset: str | None = None,
) -> ConformResult:
    """Explore every reachable state within the model's bounds and compare each step with the oracles.

    An oracle stops being asked after its first mismatch (as a property stops being checked after
    its first violation): that mismatch comes with the shortest trace to it."""
    oracles = list(oracles)
    options = options or BfsOptions()
    if not oracles:
        raise UserError(f"no oracle compares model {model.name}")
    _refuse_unsupported(oracles, model)
    tallies: list[Tally] = []
    props: list[Property] = []
    for oracle in oracles:
        tally = Tally(oracle=oracle.name, reference=tuple(oracle.reference))
        tallies.append(tally)
        props.append(_step_property(oracle, tally))
        if oracle.compares_states():
            props.append(_state_property(oracle, tally))
    if options.symmetry:
        raise UserError("conformance compares every state as the model reaches it: run it without --symmetry")
    following = [o.name for o in oracles if o.follows_paths]
    if following and options.checkpoint is not None:
        raise UserError(
            f"oracle {', '.join(following)} replays the path to each state, which a checkpoint does not keep: "
            "run it without --checkpoint and --resume"
        )
    opts = dataclasses.replace(options, keep_going=True)
    release = next((o.release for o in oracles if o.release), None)
    checked = PropertySet.of(props)
    # a checkpoint names the release too: another release's answers are another run
    job = {"engine": "conform", "model_ref": model.name, "config": model.config_dict(), "properties": checked.names()}
    job["kafka_version"] = release
    result = bfs(model, checked, opts, progress, preset=preset, observers=[TalliesKept(tallies)], job=job)
    result.engine = "conform"
    for tally in tallies:
        result.stats.extra.setdefault("oracle_seconds", 0.0)
        result.stats.extra["oracle_seconds"] += round(tally.seconds, 3)
    if result.violations:
        result.status = Status.VIOLATED
    return ConformResult(check=result, tallies=tallies, release=release)


def _refuse_unsupported(oracles: list[Oracle], model: Model) -> None:
    for oracle in oracles:
        reason = oracle.unsupported()
        if reason is not None:
            raise UserError(f"oracle {oracle.name} cannot compare this config of {model.name}: {reason}")


@dataclass
class TraceConformResult:
    """The oracles' answers along one trace: where each first disagreed (a step number), if anywhere."""

    model: Model
    preset: str | None
    steps: int
    tallies: list[Tally]
    first_mismatch_step: dict[str, int]
    release: str | None = None

    @property
    def mismatched(self) -> bool:
        return bool(self.first_mismatch_step)


def conform_trace(
    model: Model, oracles: Iterable[Oracle], states: list[State], actions: list[Action | None], preset: str | None
) -> TraceConformResult:
    """Ask the oracles about every step of a trace, in its order (a counterexample held to the
    reference: does Kafka's code take these very steps?)."""
    oracles = list(oracles)
    _refuse_unsupported(oracles, model)
    tallies = [Tally(oracle=o.name, reference=tuple(o.reference)) for o in oracles]
    first: dict[str, int] = {}
    for index in range(1, len(states)):
        action = actions[index]
        assert action is not None
        for oracle, tally in zip(oracles, tallies, strict=True):
            started = time.perf_counter()
            answers = list(oracle.compare_step(states[index - 1], action, states[index]))
            tally.seconds += time.perf_counter() - started
            if not _count(tally, answers, action.name, step=True) and oracle.name not in first:
                first[oracle.name] = index
    release = next((o.release for o in oracles if o.release), None)
    return TraceConformResult(model, preset, len(states) - 1, tallies, first, release)


def conform_table(oracle: InputOracle, progress: Progress | None = None, limit: int | None = None) -> Tally:
    """Ask both sides every case of an input oracle; count every mismatch (the table has no
    depth, so unlike a search it is not cut at the first)."""
    tally = Tally(oracle=oracle.name, reference=tuple(oracle.reference))
    for index, (label, case) in enumerate(oracle.cases()):
        if limit is not None and index >= limit:
            break
        started = time.perf_counter()
        answers = list(oracle.compare(case))
        tally.seconds += time.perf_counter() - started
        tally.states += 1
        tally.by_action[label] += 1
        _tally_answers(tally, answers)
        if progress is not None and index % 1000 == 0:
            progress.update(distinct=index, generated=tally.comparisons, depth=0, queue=0)
    if progress is not None:
        progress.close()
    return tally


def tally_for(result: ConformResult, property_name: str) -> Tally | None:
    """The tally of the oracle behind a conformance property name."""
    name = property_name.removeprefix(ORACLE_PREFIX).removesuffix(".state")
    return next((t for t in result.tallies if t.oracle == name), None)


@dataclass
class ConformJob:
    """One conformance run from names: a model (or an input oracle) and the oracles to ask.

    ``target`` is a model name (every registered oracle of that model is asked, or those named
    in ``oracle_names``) or the name of an input oracle such as ``assignors``."""

    target: str
    preset: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    oracle_names: tuple[str, ...] = ()
    release: str | None = None
    bfs_options: BfsOptions = field(default_factory=BfsOptions)

    def input_oracle(self) -> InputOracle | None:
        """The input oracle named by ``target``, built with the settings, or None for a model."""
        from kmc.checker.registry import load_model_class, registered_models, registered_oracles

        oracles = registered_oracles()
        cls = oracles.get(self.target)
        if cls is None or not issubclass(cls, InputOracle):
            if self.target not in registered_models() and ":" not in self.target:
                load_model_class(self.target)  # the usual one-line error for an unknown model
            return None
        if self.preset is not None:
            raise UserError(f"{self.target} compares a table of inputs: it has no presets (use --set)")
        if self.oracle_names:
            raise UserError(f"{self.target} is itself an oracle: --oracle does not apply")
        return cls(release=self.release, settings={k: str(v) for k, v in self.overrides.items()})

    def model_oracles(self) -> tuple[Model, list[Oracle]]:
        from kmc.checker.registry import load_model_class

        cls = load_model_class(self.target)
        model = cls.build(self.preset, self.overrides)
        return model, self.oracles_for(model)

    def oracles_for(self, model: Model) -> list[Oracle]:
        """The oracles asked about ``model``: those named, else every registered one of the model."""
        from kmc.checker.registry import registered_oracles

        available = {
            name: o for name, o in registered_oracles().items() if issubclass(o, Oracle) and o.model_name == model.name
        }
        chosen: list[type[Oracle]] = []
        for name in self.oracle_names:
            if name in available:
                chosen.append(available[name])
            elif ":" in name:
                chosen.append(_load_oracle_class(name))
            else:
                known = ", ".join(available) or "(none)"
                raise UserError(f"no oracle {name!r} for model {model.name}; its oracles: {known}")
        if not self.oracle_names:
            chosen = list(available.values())
        if not chosen:
            every = ", ".join(sorted({o.model_name for o in registered_oracles().values() if issubclass(o, Oracle)}))
            raise UserError(
                f"no oracle compares model {model.name}: models with oracles: {every or '(none)'} "
                "(or give --oracle module:Class)"
            )
        return [o(model, release=self.release) for o in chosen]

    def run(self, progress: Progress | None = None) -> ConformResult:
        from kmc.checker.registry import model_reference

        model, oracles = self.model_oracles()
        preset = self.preset if self.preset is not None else type(model).default_preset
        result = conform(model, oracles, self.bfs_options, progress, preset=preset)
        if self.target != model.name:  # a model of one's own: its traces must find it again
            result.check.model_ref = model_reference(self.target)
        return result


def _load_oracle_class(name: str) -> type[Oracle]:
    import importlib

    from kmc.checker.properties import load_module

    target, _, attr = name.rpartition(":")
    try:
        module = load_module(target) if target.endswith(".py") else importlib.import_module(target)
    except ImportError as exc:
        raise UserError(f"cannot import oracle module {target!r}: {exc}") from None
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Oracle)):
        raise UserError(f"{name}: {attr!r} is not a kmc Oracle class in {target}")
    return cls


def write_mismatch_traces(result: ConformResult, out_dir: str | Path) -> None:
    """Each mismatch's shortest trace as ITF, with both answers in its ``#meta``."""
    from kmc.checker.traces.files import write_traces
    from kmc.checker.traces.itf import read_trace, write_trace

    write_traces(result.check, out_dir)
    for violation in result.check.violations:
        tally = tally_for(result, violation.property)
        if tally is None or tally.first_mismatch is None or violation.trace_file is None:
            continue
        doc = read_trace(violation.trace_file)
        doc["#meta"]["mismatch"] = {
            "oracle": tally.oracle,
            "reference": list(tally.reference),
            "release": result.release,
            **mismatch_json(tally.first_mismatch),
        }
        write_trace(Path(violation.trace_file), doc)


def write_table_mismatches(tally: Tally, path: str | Path, release: str | None) -> None:
    """An input oracle's first mismatch as JSON: the input, both answers, and the oracle."""
    import json

    assert tally.first_mismatch is not None
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"oracle": tally.oracle, "reference": list(tally.reference), "release": release}
    doc.update(mismatch_json(tally.first_mismatch))
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(out)
