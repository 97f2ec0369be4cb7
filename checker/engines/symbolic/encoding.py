"""Symbolic encodings: a model's transition system as z3 formulas, for bmc and prove.

A model offers one through ``Model.symbolic()``. The encoding declares its state variables once
(a schema of int and bool arrays), and writes ``init``, ``next`` and its properties as formulas
over *frames*: one copy of those variables per step. Conversions between a frame's values and the
explicit model's states keep the two semantics comparable, so every symbolic answer is replayed on
the explicit model before it is reported, and tests can check the two next relations agree.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import z3
from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model, State

Formula = z3.BoolRef
Nested = Any
"""A z3 expression, or nested lists of them, one level per dimension of the variable's shape."""


class EncodingMismatchError(UserError):
    """The symbolic encoding and the explicit model disagree: a bug in the encoding."""


@dataclass(frozen=True)
class Var:
    """A state (or action) variable: an int or a bool, or an array of them of a fixed shape."""

    sort: Literal["int", "bool"]
    shape: tuple[int, ...] = ()


def _declare(name: str, var: Var) -> Nested:
    if not var.shape:
        return z3.Int(name) if var.sort == "int" else z3.Bool(name)
    first, rest = var.shape[0], var.shape[1:]
    return [_declare(f"{name}[{i}]", Var(var.sort, rest)) for i in range(first)]


def _leaves(value: Nested) -> Iterator[Any]:
    if isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _zip_leaves(a: Nested, b: Nested) -> Iterator[tuple[Any, Any]]:
    if isinstance(a, list):
        if not isinstance(b, list | tuple) or len(a) != len(b):
            raise ValueError(f"shape mismatch: {len(a)} variables, value {b!r}")
        for x, y in zip(a, b, strict=True):
            yield from _zip_leaves(x, y)
    else:
        yield a, b


class Frame:
    """One copy of the variables of a schema, tagged with its step: ``frame.hw[2]`` is replica 2's HW."""

    def __init__(self, schema: Mapping[str, Var], tag: str | int) -> None:
        self.schema = schema
        self.tag = tag
        self.vars: dict[str, Nested] = {name: _declare(f"{name}@{tag}", var) for name, var in schema.items()}

    def __getattr__(self, name: str) -> Nested:
        try:
            return self.__dict__["vars"][name]
        except KeyError:
            raise AttributeError(name) from None

    def leaves(self) -> list[Any]:
        return [leaf for name in self.schema for leaf in _leaves(self.vars[name])]

    def equals(self, values: Mapping[str, Nested]) -> Formula:
        """This frame holds exactly these Python values (ints, bools, nested lists or tuples)."""
        return z3.And(
            [leaf == value for name in self.schema for leaf, value in _zip_leaves(self.vars[name], values[name])]
        )

    def read(self, model: z3.ModelRef) -> dict[str, Nested]:
        """The frame's values in a z3 model, as Python ints and bools in nested lists."""

        def value(leaf: Nested) -> Any:
            if isinstance(leaf, list):
                return [value(item) for item in leaf]
            v = model.eval(leaf, model_completion=True)
            return z3.is_true(v) if z3.is_bool(leaf) else v.as_long()

        return {name: value(self.vars[name]) for name in self.schema}


SymbolicProperty = Callable[..., Formula]
"""An invariant or lemma ``(enc, frame) -> Formula``, or a step property ``(enc, frame, action, next) -> Formula``."""


class SymbolicEncoding:
    """Base class of an encoding. Subclasses set the two schemas and implement the methods below.

    The encoding must be *exact*: the states satisfying ``well_formed`` and reachable by ``init``
    and ``next`` are the explicit model's, and ``next`` relates two frames exactly when the explicit
    model has that transition with that action. ``tests/`` check this on every reachable state.
    From a well-formed state no run reaches, ``next`` takes only the explicit model's steps: none
    whose result the frame cannot hold (``steps_from_anywhere`` samples them).
    """

    state_schema: Mapping[str, Var]
    """Set per instance: the shapes depend on the config (how many replicas, how long a log)."""
    action_schema: ClassVar[Mapping[str, Var]] = {}
    invariants: ClassVar[Mapping[str, SymbolicProperty]] = {}
    """Symbolic forms of the model's invariants, under the same names as in its spec module."""
    step_properties: ClassVar[Mapping[str, SymbolicProperty]] = {}
    lemmas: ClassVar[Mapping[str, SymbolicProperty]] = {}
    """Further invariants that help ``prove``: strengthenings of the properties, checked like them."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.config = model.config

    def state_frame(self, tag: str | int) -> Frame:
        return Frame(self.state_schema, tag)

    def action_frame(self, tag: str | int) -> Frame:
        return Frame(self.action_schema, f"act{tag}")

    # -- the transition system -----------------------------------------------------------------
    def well_formed(self, v: Frame) -> Formula:
        """The type invariant: every variable in its domain, unused slots pinned, so that one explicit
        state is one assignment of the frame."""
        raise NotImplementedError

    def init(self, v: Frame) -> Formula:
        raise NotImplementedError

    def next(self, v: Frame, a: Frame, w: Frame) -> Formula:
        """The transition relation: ``a`` is the action taken from ``v`` to ``w``."""
        raise NotImplementedError

    # -- explicit <-> symbolic -----------------------------------------------------------------
    def values(self, state: State) -> dict[str, Nested]:
        raise NotImplementedError

    def state(self, values: Mapping[str, Nested]) -> State:
        raise NotImplementedError

    def action(self, values: Mapping[str, Nested]) -> Action:
        raise NotImplementedError

    # -- names ---------------------------------------------------------------------------------
    def all_invariants(self) -> dict[str, SymbolicProperty]:
        return {**self.invariants, **self.lemmas}


def encoding_of(model: Model) -> SymbolicEncoding:
    encoding = model.symbolic()
    if encoding is None:
        raise UserError(
            f"model {model.name} has no symbolic encoding; the bmc engine and `kmc prove` need one "
            "(see docs/symbolic.md for how to write it)"
        )
    return encoding


def choose_invariants(
    encoding: SymbolicEncoding, names: Sequence[str], extra: Mapping[str, SymbolicProperty] | None = None
) -> dict[str, SymbolicProperty]:
    """The symbolic invariants by name (all of the model's when none are named)."""
    known = {**encoding.all_invariants(), **(extra or {})}
    if not names:
        return dict(encoding.invariants)
    missing = [n for n in names if n not in known]
    if missing:
        have = ", ".join(known) or "(none)"
        raise UserError(
            f"no symbolic form of {', '.join(missing)} for {encoding.model.name}; symbolic invariants: {have}"
        )
    return {n: known[n] for n in names}


def solutions(solver: z3.Solver, frames: Sequence[Frame], limit: int = 10_000) -> Iterator[list[dict[str, Nested]]]:
    """Every assignment of the frames the solver allows, each blocked once found."""
    leaves = [leaf for frame in frames for leaf in frame.leaves()]
    for _ in itertools.count():
        if len(leaves) == 0 or solver.check() != z3.sat:
            return
        model = solver.model()
        yield [frame.read(model) for frame in frames]
        solver.add(z3.Or([leaf != model.eval(leaf, model_completion=True) for leaf in leaves]))
        limit -= 1
        if limit == 0:
            raise RuntimeError("more than the limit of solutions: is a variable left unconstrained?")


def steps_from_anywhere(encoding: SymbolicEncoding, per_action: int = 10) -> Iterator[tuple[State, Action, State]]:
    """Up to ``per_action`` symbolic steps of each action from well-formed states, reachable or
    not, each from a different state. A counterexample to induction is such a step, so every one
    must be a step of the explicit model too."""
    v, a, w = encoding.state_frame("any"), encoding.action_frame("any"), encoding.state_frame("next")
    solver = z3.Solver()
    solver.add(encoding.well_formed(v), encoding.next(v, a, w))
    while solver.check() == z3.sat:
        act = solver.model().eval(a.act, model_completion=True)
        solver.push()
        solver.add(a.act == act)
        for _ in range(per_action):
            if solver.check() != z3.sat:
                break
            solution = solver.model()
            before = encoding.state(v.read(solution))
            yield before, encoding.action(a.read(solution)), encoding.state(w.read(solution))
            solver.add(z3.Not(v.equals(encoding.values(before))))
        solver.pop()
        solver.add(a.act != act)


# -- helpers for writing encodings -----------------------------------------------------------------
def select(items: Sequence[Any], index: Any, default: Any = None) -> Any:
    """``items[index]`` for a symbolic index: an if-then-else chain over the positions (the last
    item, or ``default``, when the index is out of range)."""
    result = items[-1] if default is None else default
    for i in range(len(items) - 1, -1, -1):
        result = z3.If(index == i, items[i], result)
    return result


def paths(frame: Frame) -> dict[tuple[Any, ...], Any]:
    """Every variable of the frame by its path: ("hw", 2) is replica 2's HW, ("log", 1, 0) an entry."""
    out: dict[tuple[Any, ...], Any] = {}

    def walk(prefix: tuple[Any, ...], value: Nested) -> None:
        if isinstance(value, list):
            for i, item in enumerate(value):
                walk((*prefix, i), item)
        else:
            out[prefix] = value

    for name in frame.schema:
        walk((name,), frame.vars[name])
    return out


def becomes(v: Frame, w: Frame, updates: Mapping[tuple[Any, ...], Any]) -> Formula:
    """``w`` is ``v`` with these variables (by path) given new values and every other one kept."""
    before, after = paths(v), paths(w)
    unknown = [p for p in updates if p not in before]
    if unknown:
        raise KeyError(f"no such variables: {unknown}")
    return z3.And([after[p] == updates.get(p, before[p]) for p in before])


@dataclass
class Disagreement:
    state: State
    missing: list[tuple[Action, State]]
    """Explicit transitions the symbolic next relation does not allow."""
    extra: list[tuple[Action, State]]
    """Symbolic solutions the explicit model does not have."""


class StepComparer:
    """Do the two next relations agree from a given state? Every solution of one symbolic step
    from it must be an explicit successor, and every explicit successor a solution. The formula is
    built once; each state is one push, enumeration and pop."""

    def __init__(self, encoding: SymbolicEncoding) -> None:
        self.encoding = encoding
        self.v, self.a, self.w = encoding.state_frame("x"), encoding.action_frame("x"), encoding.state_frame("y")
        self.solver = z3.Solver()
        self.solver.add(encoding.next(self.v, self.a, self.w))

    def compare(self, state: State) -> Disagreement | None:
        enc, solver = self.encoding, self.solver
        solver.push()
        try:
            solver.add(self.v.equals(enc.values(state)))
            found = solutions(solver, [self.a, self.w], limit=100_000)
            symbolic = {(enc.action(act), enc.state(nxt)) for act, nxt in found}
        finally:
            solver.pop()
        explicit = set(enc.model.successors(state))
        if symbolic == explicit:
            return None
        return Disagreement(state, sorted(explicit - symbolic, key=repr), sorted(symbolic - explicit, key=repr))


class ActionLabels:
    """Actions in a frame: an index into the model's action names and its integer arguments,
    padded with zeros, so a symbolic step names the same ``Action`` as the explicit model."""

    def __init__(self, action_args: Mapping[str, tuple[str, ...]]) -> None:
        self.action_args = dict(action_args)
        self.names = tuple(action_args)
        self.width = max((len(args) for args in action_args.values()), default=0)
        self.schema = {"act": Var("int"), "args": Var("int", (self.width,))}

    def label(self, a: Frame, name: str, args: Sequence[Any]) -> Formula:
        padded = [*args, *([0] * (self.width - len(args)))]
        return z3.And(a.act == self.names.index(name), *(a.args[i] == padded[i] for i in range(self.width)))

    def is_(self, a: Frame, name: str) -> Formula:
        return a.act == self.names.index(name)

    def decode(self, values: Mapping[str, Nested]) -> Action:
        name = self.names[values["act"]]
        names = self.action_args[name]
        return Action.of(name, zip(names, values["args"][: len(names)], strict=True))
