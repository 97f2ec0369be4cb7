"""Re-executing a stored trace against its model, so a counterexample is a regression test."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kmc.checker.errors import UserError
from kmc.checker.model import Model
from kmc.checker.properties import holds, select_properties
from kmc.checker.registry import load_model_class
from kmc.checker.result import Trace
from kmc.checker.traces.itf import action_to_json, format_action, format_value, state_vars


@dataclass
class Replayed:
    model: Model
    trace: Trace
    meta: dict[str, Any]


def _vars_of(itf_state: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in itf_state.items() if k != "#meta"}


def _first_difference(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
    for name in sorted(set(expected) | set(actual)):
        if expected.get(name) != actual.get(name):
            return (
                f"{name}: trace has {format_value(expected.get(name, '(absent)'))}, "
                f"model gives {format_value(actual.get(name, '(absent)'))}"
            )
    return "(no difference)"


def model_for_trace(doc: Mapping[str, Any], model: str | None = None) -> Model:
    """The model a trace names, built with its config; ``model`` (a registered name, module:Class or
    file.py:Class) stands in for the one the trace names, for a trace copied away from its model file."""
    meta = doc["#meta"]
    if not isinstance(meta.get("model"), str):
        raise UserError("malformed trace: '#meta'.model is missing")
    named = model or meta.get("model_ref") or meta["model"]
    try:
        cls = load_model_class(named)
    except UserError as exc:
        if model or not meta.get("model_ref"):
            raise
        raise UserError(
            f"{exc} (named by the trace's '#meta'.model_ref, relative to the trace's folder; "
            f"for a trace copied alone, give its model with --model file.py:Class)"
        ) from None
    if (model or meta.get("model_ref")) and cls.name and cls.name != meta["model"]:
        given = f"--model {model}" if model else "its model_ref"
        raise UserError(f"the trace is of model {meta['model']}, but {given} is model {cls.name}")
    config = meta.get("config") or {}
    if not isinstance(config, dict):
        raise UserError("malformed trace: '#meta'.config must be an object")
    return cls.build(None, config)


def replay(doc: Mapping[str, Any], model: str | None = None) -> Replayed:
    """Check every state of the trace against the model (``model``: see model_for_trace); raise
    UserError at the first mismatch."""
    if doc.get("#meta", {}).get("observed"):
        raise UserError(
            "this is an observed trace (what a real cluster logged), not a model's: there are no model "
            "steps to replay; kmc show and kmc render read it"
        )
    built = model_for_trace(doc, model)
    itf_states = [_vars_of(s) for s in doc["states"]]
    inits = [s for s in built.init_states() if state_vars(s) == itf_states[0]]
    if not inits:
        closest = next(iter(built.init_states()), None)
        detail = _first_difference(itf_states[0], state_vars(closest)) if closest is not None else ""
        raise UserError(f"trace does not replay: state 0 is not an initial state of {built.name} ({detail})")
    states = [inits[0]]
    actions: list[Any] = [None]
    for index in range(1, len(itf_states)):
        want_action = doc["states"][index]["#meta"]["action"]
        want_action = {"name": want_action["name"], "args": want_action.get("args", {})}
        current = states[-1]
        candidates = [(a, t) for a, t in built.successors(current) if action_to_json(a) == want_action]
        if not candidates:
            raise UserError(
                f"trace does not replay: step {index}: action {format_action(want_action)} "
                f"is not enabled in state {index - 1}"
            )
        match = next(((a, t) for a, t in candidates if state_vars(t) == itf_states[index]), None)
        if match is None:
            detail = _first_difference(itf_states[index], state_vars(candidates[0][1]))
            raise UserError(
                f"trace does not replay: step {index}: after {format_action(want_action)} the state differs ({detail})"
            )
        actions.append(match[0])
        states.append(match[1])
    loop = doc.get("loop")
    if loop is not None and loop != len(itf_states) - 1:  # a loop on the last state is stuttering
        back = itf_states[loop]
        if not any(state_vars(t) == back for _a, t in built.successors(states[-1])):
            raise UserError(f"trace does not replay: the last state has no step back to state {loop} (loop)")
    return Replayed(model=built, trace=Trace(states=states, actions=actions, loop=loop), meta=dict(doc["#meta"]))


def _confirm_lasso(done: Replayed, prop: Any) -> str:
    """A liveness counterexample is a lasso (replay checked its loop step) on which the goal never holds
    after the trigger (for eventually: never at all). Fairness is the search's to judge, not this."""
    trace = done.trace
    if trace.loop is None:
        raise UserError(f"the trace of {prop.name} has no loop: a liveness counterexample is a lasso")
    goal = prop.bind(done.model)
    reached = [holds(prop.name, goal, state) for state in trace.states]
    if prop.kind == "eventually":
        starts = [0]
    else:
        trigger = prop.bind_trigger(done.model)
        starts = [i for i, state in enumerate(trace.states) if holds(prop.name, trigger, state)]
    # Some trigger after which the goal never holds again: the rest of the path, and the whole loop.
    if any(not any(reached[min(start, trace.loop) :]) for start in starts):
        return prop.name
    raise UserError(f"the lasso no longer shows {prop.name} violated (its goal is reached on the loop)")


def confirm_violation(done: Replayed, spec_files: tuple[str, ...] = ()) -> str:
    """The property a replayed safety counterexample violates, checked again on the model: it must
    hold up to the last state (or step) and fail there. Raise UserError otherwise. A property of a
    spec file is looked for in ``spec_files``, else in the spec files the trace names."""
    name = done.meta.get("property")
    if not isinstance(name, str):
        raise UserError("malformed trace: '#meta'.property is missing")
    spec_files = spec_files or tuple(done.meta.get("spec_files") or ())
    props = select_properties(type(done.model), spec_files, [name])
    states, actions = done.trace.states, done.trace.actions
    if props.invariants:
        pred = props.invariants[0].bind(done.model)
        verdicts = [holds(name, pred, state) for state in states]
    elif props.steps:
        pred = props.steps[0].bind(done.model)
        verdicts = [True] + [holds(name, pred, states[i - 1], actions[i], states[i]) for i in range(1, len(states))]
    elif props.liveness:
        return _confirm_lasso(done, props.liveness[0])
    else:
        raise UserError(f"{name} is not a property of {done.model.name}")
    if all(verdicts[:-1]) and not verdicts[-1]:
        return name
    where = "nowhere" if all(verdicts) else f"first at state {verdicts.index(False)} of {len(states)}"
    raise UserError(f"the trace no longer shows {name} violated at its last state (violated {where})")


def recheck(done: Replayed, spec_files: tuple[str, ...] = ()) -> Replayed:
    """The replayed trace with its recorded violation checked again on the model as it is now. One
    that is not confirmed loses ``property`` from its metadata and gains ``not_violated`` (the
    property and why), so no report or chart marks a step where nothing fails."""
    name = done.meta.get("property")
    if not name:
        return done
    try:
        confirm_violation(done, spec_files)
    except UserError as exc:
        meta = {key: value for key, value in done.meta.items() if key != "property"}
        meta["not_violated"] = {"property": name, "reason": str(exc)}
        return Replayed(model=done.model, trace=done.trace, meta=meta)
    return done
