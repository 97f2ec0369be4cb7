"""Properties as plain Python functions, registered with decorators.

    @invariant
    def LeaderInIsr(state) -> bool: ...

    @step
    def HighWatermarkMonotonic(state, action, next_state) -> bool: ...

A function may take an extra ``model`` parameter to see the model's config.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import xxhash
from kmc.checker.errors import MissingFileError, PropertyError, PropertyTypeError, UserError

Kind = Literal["invariant", "step", "eventually", "leads_to"]
_MARK = "__kmc_property__"


@dataclass(frozen=True)
class Property:
    name: str
    kind: Kind
    fn: Callable[..., Any]
    doc: str = ""
    wants_model: bool = False
    source: str = ""
    trigger: Callable[..., Any] | None = None
    """For leads_to: the condition after which the property's function must eventually hold."""
    guard: Callable[..., Any] | None = None
    """For an invariant, ``guard(state)``; for a step property, ``trigger(state, action, next)``: when
    the property says something non-trivial. Coverage counts how often it held; never is vacuity."""

    def bind(self, model: Any) -> Callable[..., Any]:
        """The predicate with the model bound in, as the engines call it."""
        return _bind(self.fn, model) if self.wants_model else self.fn

    def bind_guard(self, model: Any) -> Callable[..., Any]:
        """The guard (or a step property's trigger), with the model bound in if it takes one."""
        assert self.guard is not None
        return _bind(self.guard, model) if "model" in inspect.signature(self.guard).parameters else self.guard

    def bind_trigger(self, model: Any) -> Callable[..., Any]:
        """For leads_to: the trigger, with the model bound in if it takes a ``model`` parameter."""
        assert self.trigger is not None
        return _bind(self.trigger, model) if "model" in inspect.signature(self.trigger).parameters else self.trigger


def _bind(fn: Callable[..., Any], model: Any) -> Callable[..., Any]:
    """``fn`` with ``model=model``. Where ``model`` is the last parameter after one or three
    positional ones (the usual invariant and step signatures), a closure passes it positionally:
    half the cost of a call through functools.partial with a keyword, paid on every state."""
    params = list(inspect.signature(fn).parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if params and params[-1].name == "model" and all(p.kind in positional for p in params):
        if len(params) == 2:

            def bound_state(s: Any) -> Any:
                return fn(s, model)

            return functools.update_wrapper(bound_state, fn)
        if len(params) == 4:

            def bound_step(s: Any, a: Any, t: Any) -> Any:
                return fn(s, a, t, model)

            return functools.update_wrapper(bound_step, fn)
    return functools.partial(fn, model=model)


def all_true(preds: Sequence[Callable[[Any], Any]]) -> Callable[[Any], bool]:
    """One call that says whether every predicate returns True for a state, False where one fails or
    raises: the quiet check a search makes of every new state before the careful, per-property one
    (``holds``) that names the failure. A plain loop: a generator under ``all()`` costs twice as much
    a state."""
    if len(preds) == 1:
        only = preds[0]

        def one_true(s: Any) -> bool:
            try:
                return only(s) is True
            except Exception:
                return False

        return one_true
    preds = tuple(preds)

    def every_true(s: Any) -> bool:
        try:
            for pred in preds:
                if pred(s) is not True:
                    return False
        except Exception:
            return False
        return True

    return every_true


def holds(name: str, pred: Callable[..., Any], *args: Any) -> bool:
    """Evaluate a property. Only True and False are verdicts: a property that raises, or returns
    anything else ("yes", None, 1), is an error naming it, never a silent pass."""
    try:
        verdict = pred(*args)
    except Exception as exc:
        raise PropertyError(name, args[0] if len(args) == 1 else args, exc) from exc
    if verdict is True or verdict is False:
        return verdict
    raise PropertyTypeError(name, args[0] if len(args) == 1 else args, verdict)


def violated_steps(
    steps: Sequence[tuple[str, Callable[..., Any]]], s: Any, successors: Sequence[tuple[Any, Any]]
) -> Iterator[tuple[int, str, Callable[..., Any]]]:
    """Each step property evaluated once on each of a state's successors, `holds` inlined (this runs
    for every successor a search generates): ``(successor index, name, pred)`` of each violation. A
    violated property is not evaluated again on the later successors of this state."""
    for index, (a, t) in enumerate(successors):
        for step in steps:
            name, pred = step
            try:
                verdict = pred(s, a, t)
            except Exception as exc:
                raise PropertyError(name, (s, a, t), exc) from exc
            if verdict is True:
                continue
            if verdict is not False:
                raise PropertyTypeError(name, (s, a, t), verdict)
            yield index, name, pred
            steps = [other for other in steps if other is not step]  # the loop goes on over the old list


SYMMETRY_WARNING = (
    "symmetry reduction is on: the verdict is sound only for properties that are symmetric "
    "under the model's permutation of ids"
)


def _register(
    kind: Kind,
    fn: Callable[..., Any] | None,
    name: str | None,
    trigger: Callable[..., Any] | None = None,
    guard: Callable[..., Any] | None = None,
) -> Any:
    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        params = inspect.signature(func).parameters
        wants_model = "model" in params
        arity = len([p for p in params if p != "model"])
        expected = 3 if kind == "step" else 1
        if arity != expected:
            shape = "(state, action, next_state)" if kind == "step" else "(state)"
            raise UserError(f"@{kind} {func.__name__} must take {shape}, it takes {arity} arguments")
        prop = Property(
            name=name or func.__name__,
            kind=kind,
            fn=func,
            doc=inspect.getdoc(func) or "",
            wants_model=wants_model,
            source=getattr(func, "__module__", ""),
            trigger=trigger,
            guard=guard,
        )
        setattr(func, _MARK, prop)
        return func

    if fn is not None:
        return decorate(fn)
    return decorate


def invariant(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None, guard: Callable[..., Any] | None = None
) -> Any:
    """Mark ``fn(state) -> bool`` as an invariant: it must hold in every reachable state. ``guard(state)``
    says when it is non-trivial (an implication's premise): coverage reports a guard that never held."""
    return _register("invariant", fn, name, guard=guard)


def step(
    fn: Callable[..., Any] | None = None, /, *, name: str | None = None, trigger: Callable[..., Any] | None = None
) -> Any:
    """Mark ``fn(state, action, next_state) -> bool`` as a property of every transition. ``trigger``
    (same arguments) says which steps it is about: coverage reports one that never occurred."""
    return _register("step", fn, name, guard=trigger)


def eventually(fn: Callable[..., Any] | None = None, /, *, name: str | None = None) -> Any:
    """Mark ``fn(state) -> bool`` as a goal every fair behaviour reaches (TLA+'s <>P)."""
    return _register("eventually", fn, name)


def leads_to(trigger: Callable[..., Any], /, *, name: str | None = None) -> Any:
    """Mark ``fn(state) -> bool`` as a goal that every fair behaviour reaches after any state where
    ``trigger(state)`` holds (TLA+'s P ~> Q); like the goal, the trigger may take ``model`` too::

        @leads_to(lambda s: s.state == "PreparingRebalance")
        def GroupStabilizes(s): return s.state == "Stable"
    """
    return lambda fn: _register("leads_to", fn, name, trigger)


_LEMMA = "__kmc_lemma__"


def lemma(fn: Callable[..., Any] | None = None, /, *, name: str | None = None) -> Any:
    """Mark ``fn(enc, frame) -> z3 formula`` as a lemma that `kmc prove --lemmas FILE` can use (a
    strengthening of the invariant to prove, over the model's symbolic encoding)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        setattr(func, _LEMMA, name or func.__name__)
        return func

    return decorate(fn) if fn is not None else decorate


def lemmas_in(module: ModuleType) -> dict[str, Callable[..., Any]]:
    """The lemmas a module defines, by name."""
    return {getattr(v, _LEMMA): v for v in vars(module).values() if callable(v) and hasattr(v, _LEMMA)}


def properties_of(module: ModuleType) -> list[Property]:
    """The properties a module defines, in definition order."""
    found: list[Property] = []
    for value in vars(module).values():
        prop = getattr(value, _MARK, None)
        if isinstance(prop, Property) and prop not in found:
            found.append(prop)
    return found


def load_module(path: str | Path, kind: str = "spec file") -> ModuleType:
    """Import a user's file (a spec file, a model file); any failure is one clear UserError."""
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(kind, path)
    # A stable name (the same in every process) so that states of the file's classes pickle by
    # reference between Spark's driver and executors; loading the same file twice is one module.
    digest = xxhash.xxh3_64_hexdigest(str(path.resolve()).encode())[:12]
    module_name = f"kmc_user_{path.stem}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    folder = str(path.resolve().parent)
    if folder not in sys.path:  # as `python file.py` does: the file's siblings are importable
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"cannot import {kind} {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except UserError as exc:
        raise UserError(f"{kind} {path}: {exc}") from None
    except BaseException as exc:  # the user's code: report, never a traceback
        sys.modules.pop(module_name, None)
        line = ""
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == str(path):
                line = f" (line {tb.tb_lineno})"
            tb = tb.tb_next
        raise UserError(f"{kind} {path} failed to import{line}: {type(exc).__name__}: {exc}") from None
    return module


def spec_module(model_cls: type, module_name: str) -> ModuleType:
    """One of a model's ``spec_modules``: the file ``<name>.py`` next to the model's own file if
    there is one (``a.b`` is ``a/b.py``), else the module imported by name from sys.path."""
    model_file = getattr(sys.modules.get(model_cls.__module__), "__file__", None)
    if model_file and module_name and not module_name.startswith("."):
        beside = Path(model_file).parent.joinpath(*module_name.split(".")).with_suffix(".py")
        if beside.is_file():
            return load_module(beside)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name and not module_name.startswith(f"{exc.name}."):
            raise UserError(f"spec module {module_name} of {model_cls.__name__} failed to import: {exc}") from None
        where = f" next to {model_file} or" if model_file else ""
        raise UserError(
            f"model {_model_label(model_cls)} names spec module {module_name!r} in spec_modules, but there is no "
            f"{module_name.replace('.', '/')}.py{where} on sys.path (PYTHONPATH)"
        ) from None
    except UserError as exc:
        raise UserError(f"spec module {module_name}: {exc}") from None
    except Exception as exc:  # the user's code: report, never a traceback
        raise UserError(f"spec module {module_name} failed to import: {type(exc).__name__}: {exc}") from None


def spec_module_names(model_cls: type) -> tuple[str, ...]:
    names = getattr(model_cls, "spec_modules", ())
    if isinstance(names, str) or not all(isinstance(n, str) and n for n in names):
        raise UserError(
            f"model {_model_label(model_cls)}: spec_modules must be a tuple of module names, e.g. spec_modules = "
            f"({(names if isinstance(names, str) else 'my_specs')!r},)"
        )
    return tuple(names)


def model_properties(model_cls: type) -> list[Property]:
    """The properties of every module in the model's ``spec_modules``; a module with none is an error
    (a misspelled name may import some unrelated module)."""
    props: list[Property] = []
    for module_name in spec_module_names(model_cls):
        module = spec_module(model_cls, module_name)
        found = properties_of(module)
        if not found:
            where = getattr(module, "__file__", None) or module_name
            raise UserError(
                f"model {_model_label(model_cls)}: spec module {module_name} ({where}) defines no property: decorate "
                "functions with @invariant, @step, @eventually or @leads_to from kmc.checker"
            )
        props.extend(found)
    return props


def _model_label(model_cls: type) -> str:
    """A model as the messages name it: its registered name, else its class."""
    return getattr(model_cls, "name", "") or model_cls.__name__


@dataclass
class PropertySet:
    """The properties one check uses."""

    invariants: list[Property] = field(default_factory=list)
    steps: list[Property] = field(default_factory=list)
    liveness: list[Property] = field(default_factory=list)
    fairness: list[Any] = field(default_factory=list)
    """Fairness constraints (kmc.checker.search.liveness.WF / SF) from the model and the spec files."""

    @classmethod
    def of(cls, props: Iterable[Property], fairness: Iterable[Any] = ()) -> PropertySet:
        result = cls(fairness=list(fairness))
        for prop in props:
            if prop.kind == "invariant":
                result.invariants.append(prop)
            elif prop.kind == "step":
                result.steps.append(prop)
            else:
                result.liveness.append(prop)
        return result

    def all(self) -> list[Property]:
        return [*self.invariants, *self.steps, *self.liveness]

    def names(self) -> list[str]:
        return [p.name for p in self.all()]


def select_properties(model_cls: type, spec_files: Sequence[str | Path] = (), names: Sequence[str] = ()) -> PropertySet:
    """The model's own properties plus those of spec files, narrowed to ``names`` if given. A name is
    one property: a spec file that defines a name twice, or one the model (or an earlier spec file)
    has, is refused, so no check runs a property other than the one its name says."""
    available = [(prop, f"model {model_cls.name}") for prop in model_properties(model_cls)]
    fairness = list(getattr(model_cls, "fairness", ()))
    for module_name in spec_module_names(model_cls):
        fairness.extend(getattr(spec_module(model_cls, module_name), "FAIRNESS", ()))
    for spec_file in spec_files:
        module = load_module(spec_file)
        fairness.extend(getattr(module, "FAIRNESS", ()))
        user_props = properties_of(module)
        if not user_props and not getattr(module, "FAIRNESS", ()):
            raise UserError(
                f"spec file {spec_file} defines no properties: decorate functions with "
                "@invariant, @step, @eventually or @leads_to from kmc.checker"
            )
        available.extend((prop, f"spec file {spec_file}") for prop in user_props)
    by_name: dict[str, Property] = {}
    origin: dict[str, str] = {}
    for prop, where in available:
        if prop.name in by_name and by_name[prop.name].fn is not prop.fn:
            what = "twice" if origin[prop.name] == where else f"again: {origin[prop.name]} has it"
            raise UserError(f"{where} defines the property {prop.name} {what}; give each property its own name")
        by_name[prop.name] = prop
        origin[prop.name] = where
    if not names:
        selected = PropertySet.of(by_name.values(), fairness)
    else:
        chosen = []
        for name in names:
            if list(names).count(name) > 1:
                raise UserError(f"property {name} is asked for twice; name it once")
            if name not in by_name:
                known = ", ".join(by_name) or "(none)"
                raise UserError(f"unknown property {name!r} for model {model_cls.name}; properties: {known}")
            chosen.append(by_name[name])
        selected = PropertySet.of(chosen, fairness)
    return selected
