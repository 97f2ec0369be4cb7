"""The one abstraction: a model is a frozen config plus init_states and successors."""

from __future__ import annotations

import dataclasses
import enum
import operator
import re
import types
import typing
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from kmc.checker.errors import UserError

State = Hashable


class Action(tuple):
    """A hashable action label: a name and keyword arguments, e.g. Action("FollowerFetch", follower=2).

    Arguments keep the order they were given in; they are compared and hashed in that order.
    """

    __slots__ = ()

    def __new__(cls, name: str, /, **args: Any) -> Action:
        return tuple.__new__(cls, (name, tuple(args.items())))

    @classmethod
    def of(cls, name: str, args: Iterable[tuple[str, Any]]) -> Action:
        return tuple.__new__(cls, (name, tuple(args)))

    name: str = property(operator.itemgetter(0), doc="The action's name.")  # type: ignore[assignment]
    """The action's name (a C getter: properties read it on every step)."""

    @property
    def args(self) -> dict[str, Any]:
        return dict(self[1])

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self[1])
        return f"{self[0]}({inner})"

    def __getnewargs__(self) -> tuple[Any, ...]:  # pickling
        return (self[0],)

    def __reduce__(self) -> tuple[Any, ...]:
        return (Action.of, (self[0], self[1]))


def param(
    default: Any,
    help: str,
    *,
    min: int | None = None,
    max: int | None = None,
    choices: tuple[Any, ...] | None = None,
) -> Any:
    """A config key: a dataclass field with its help text and the values it accepts."""
    return dataclasses.field(default=default, metadata={"help": help, "min": min, "max": max, "choices": choices})


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type_name: str
    default: Any
    help: str
    min: int | None
    max: int | None
    choices: tuple[Any, ...] | None


@dataclass(frozen=True)
class Preset:
    """A named bundle of config values, named after the KIP or JIRA people know."""

    description: str
    settings: Mapping[str, Any]
    expected: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Property name -> "holds" or "violated" at the preset's defaults (documentation and `kmc list`)."""

    @classmethod
    def of(cls, description: str, expected: Mapping[str, str], **settings: Any) -> Preset:
        """A preset written as its description, its expected verdicts, then its config values."""
        return cls(description=description, settings=settings, expected=expected)


@dataclass(frozen=True)
class KnownBug:
    """A bug of the modelled system that a preset reproduces: the property it violates, the releases
    it affected and the preset where it is fixed. `kmc bugs` lists them beside the suite's evidence
    (the shortest trace, the fixed preset's state count), so a claim is only as good as its check."""

    key: str
    """The tracker's name for it (an issue or a design proposal); "finding" for one the models found."""
    summary: str
    """The bug in one sentence, in the modelled system's own words."""
    component: str
    """The part of the system it lives in, for filtering."""
    since: str | None
    """The first release it affected; None when no release did (caught in development, or a design)."""
    fixed_in: str | None
    """The release that fixed it; None when none has yet."""
    preset: str
    violates: tuple[str, ...]
    """The properties the preset violates because of it."""
    settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """Config values beside the preset's (`--set`) for the run that shows it."""
    fixed_preset: str | None = None
    fixed_settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    also: tuple[str, ...] = ()
    """Other tracker names for the same bug (the design proposal that fixed an issue, or the reverse)."""
    url: str | None = None

    def releases(self) -> str:
        """The releases that carry it, in one phrase (what `kmc bugs` and the report print)."""
        if self.since is None:
            return f"no release: fixed before {self.fixed_in} shipped" if self.fixed_in else "no release"
        if self.fixed_in is None:
            return f"{self.since} on; no release fixes it yet"
        return f"{self.since} until {self.fixed_in}, which fixed it"

    def affects(self, release: tuple[int, ...]) -> bool:
        """Whether ``release`` (as from :func:`release_tuple`) carries the bug."""
        if self.since is None or release < release_tuple(self.since):
            return False
        return self.fixed_in is None or release < release_tuple(self.fixed_in)


RELEASE = re.compile(r"[0-9]+(\.[0-9]+)*")


def release_tuple(release: str) -> tuple[int, ...]:
    """A release as numbers to compare ("3.3.0" -> (3, 3, 0)); trailing zeros do not count, so 3.3
    and 3.3.0 are one release. ValueError for anything else."""
    if not RELEASE.fullmatch(release):
        raise ValueError(f"not a release: {release!r} (write it as 3.3.0)")
    numbers = [int(part) for part in release.split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def _field_type(config_cls: type, field: dataclasses.Field[Any]) -> Any:
    hints = typing.get_type_hints(config_cls)
    return hints[field.name]


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is Literal:
        return "|".join(str(a) for a in typing.get_args(tp))
    return getattr(tp, "__name__", str(tp))


def config_keys(config_cls: type) -> list[ConfigKey]:
    keys = []
    for field in dataclasses.fields(config_cls):
        meta = field.metadata
        keys.append(
            ConfigKey(
                name=field.name,
                type_name=_type_name(_field_type(config_cls, field)),
                default=field.default,
                help=meta.get("help", ""),
                min=meta.get("min"),
                max=meta.get("max"),
                choices=meta.get("choices"),
            )
        )
    return keys


def _parse_bool(value: Any) -> bool:
    """true or false, as written in TOML or on the command line: 1, yes or on are refused, since a
    user who wrote them may have meant another key."""
    if isinstance(value, bool):
        return value
    lowered = str(value).strip().lower() if isinstance(value, str) else None
    if lowered in ("true", "false"):
        return lowered == "true"
    raise ValueError("expected true or false")


INTEGER = re.compile(r"[+-]?[0-9]+")
"""An integer as a user writes one: ASCII digits, no separators (Python's int() also takes 1_0
and non-ASCII digits)."""


def parse_int(value: Any) -> int:
    """An integer from a setting, strictly (see INTEGER); ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError("expected an integer, got a boolean")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if not INTEGER.fullmatch(text):
        raise ValueError("expected an integer in decimal digits")
    return int(text)


def coerce_value(config_cls: type, key: str, value: Any) -> Any:
    """Turn a CLI string (or a TOML value) into the key's type, and check its range."""
    fields = {f.name: f for f in dataclasses.fields(config_cls)}
    if key not in fields:
        known = ", ".join(sorted(fields))
        raise UserError(f"unknown config key {key!r}; known keys: {known}")
    field = fields[key]
    tp = _field_type(config_cls, field)
    meta = field.metadata
    try:
        if typing.get_origin(tp) is Literal:
            allowed = typing.get_args(tp)
            coerced = value if value in allowed else str(value)
            if coerced not in allowed:
                raise ValueError(f"expected one of {', '.join(map(str, allowed))}")
        elif tp is bool:
            coerced = _parse_bool(value)
        elif tp is int:
            coerced = parse_int(value)
        elif tp is str:
            coerced = str(value)
        else:
            coerced = value
    except ValueError as exc:
        raise UserError(f"bad value for {key}: {value!r} ({exc})") from None
    if meta.get("min") is not None and coerced < meta["min"]:
        raise UserError(f"bad value for {key}: {coerced} is below the minimum {meta['min']}")
    if meta.get("max") is not None and coerced > meta["max"]:
        raise UserError(f"bad value for {key}: {coerced} is above the maximum {meta['max']}")
    if meta.get("choices") is not None and coerced not in meta["choices"]:
        allowed = ", ".join(map(str, meta["choices"]))
        raise UserError(f"bad value for {key}: {coerced!r}; allowed: {allowed}")
    return coerced


class Model:
    """Base class of every model.

    Subclasses set ``name``, ``Config`` (a frozen dataclass whose fields are made with
    :func:`param`), optionally ``presets`` and ``spec_modules``, and implement
    :meth:`init_states` and :meth:`successors`. States must be immutable and hashable:
    tuples, NamedTuples, frozen dataclasses, frozensets, ints, bools, strs and None.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Config: ClassVar[type] = type("NoConfig", (), {})
    presets: ClassVar[Mapping[str, Preset]] = types.MappingProxyType({})
    default_preset: ClassVar[str | None] = None
    bugs: ClassVar[tuple[KnownBug, ...]] = ()
    """The system's bugs the presets reproduce (`kmc bugs`)."""
    spec_modules: ClassVar[tuple[str, ...]] = ()
    """Modules (import paths) whose decorated functions are this model's properties."""

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.Config()

    # -- the interface -------------------------------------------------------------------------
    def init_states(self) -> Iterable[State]:
        raise NotImplementedError

    def successors(self, state: State) -> Iterable[tuple[Action, State]]:
        raise NotImplementedError

    actions: ClassVar[tuple[str, ...]] = ()
    """Optionally every action name the model can take, so coverage reports one never even enabled.
    Without it, the module's ``ACTION_ARGS`` table or the ``Action("Name", ...)`` literals are used."""

    def inactive_actions(self) -> tuple[str, ...]:
        """Actions this config turns off (a variant flag): coverage does not call them vacuous."""
        return ()

    def recovery_actions(self) -> tuple[str, ...]:
        """Actions that recover from a failure (a client's epoch bump after a sequence error, a
        coordinator's abort of a transaction its producer left open): a search in which nothing
        called for one reports it as never needed, not as a gap in coverage."""
        return ()

    symmetry: ClassVar[Callable[[Any, State], State] | None] = None
    """Optionally a method returning a canonical representative of the state's symmetry class."""

    def within_bounds(self, state: State) -> bool:
        """TLC's CONSTRAINT: a state outside the model's own bounds (a counter that would otherwise
        grow forever) is checked against the properties but not expanded, and every engine that
        meets one reports its search as bounded, never complete."""
        return True

    def symbolic(self) -> Any:
        """Optionally a kmc.checker.engines.symbolic.encoding.SymbolicEncoding: the same transition system as z3
        formulas, for the bmc engine and `kmc prove`."""
        return None

    def drawing(self) -> Any:
        """Optionally a kmc.checker.drawing.Drawing: lanes and tables for diagrams of traces."""
        return None

    # -- helpers the engines use ---------------------------------------------------------------
    @classmethod
    def build(cls, preset: str | None = None, overrides: Mapping[str, Any] | None = None) -> Model:
        """The model for a preset plus ``key=value`` overrides, with every value checked."""
        return cls(cls.make_config(preset, overrides))

    @classmethod
    def make_config(cls, preset: str | None = None, overrides: Mapping[str, Any] | None = None) -> Any:
        values: dict[str, Any] = {}
        chosen = preset if preset is not None else cls.default_preset
        if chosen is not None:
            if chosen not in cls.presets:
                known = ", ".join(cls.presets) or "(none)"
                raise UserError(f"unknown preset {chosen!r} for model {cls.name}; presets: {known}")
            for key, value in cls.presets[chosen].settings.items():
                values[key] = coerce_value(cls.Config, key, value)
        for key, value in (overrides or {}).items():
            values[key] = coerce_value(cls.Config, key, value)
        try:
            config = cls.Config(**values)
        except (TypeError, ValueError) as exc:
            raise UserError(f"bad config for {cls.name}: {exc}") from None
        return config

    def config_dict(self) -> dict[str, Any]:
        if dataclasses.is_dataclass(self.config):
            return dataclasses.asdict(self.config)
        return {}


def setting_text(value: Any) -> str:
    """A config value as `--set` and a suite's TOML take it (and as a Kafka engineer writes one):
    true and false in lower case, sequences as lists, sets in braces."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(setting_text(v) for v in value) + "]"
    if isinstance(value, frozenset | set):
        return "{" + ", ".join(setting_text(v) for v in sorted(value, key=str)) + "}"
    return str(value)


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """`--set key=value` pairs as a mapping; a malformed pair or a key given twice is an error."""
    values = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set expects key=value, got {pair!r}")
        key, value = key.strip(), value.strip()
        if key in values:
            raise UserError(f"--set {key} given twice ({values[key]!r} and {value!r}); give it once")
        values[key] = value
    return values


_IMMUTABLE_SCALARS = (bool, int, float, str, bytes, type(None))
_MUTABLE = (
    (list, "a tuple"),
    (dict, "a tuple of (key, value) pairs, or a NamedTuple"),
    (set, "a frozenset"),
    (bytearray, "bytes"),
)


def state_problem(state: Any, where: str = "state") -> str | None:
    """Why a state is no immutable value (a list, a dict, a set, a non-frozen dataclass, an object
    compared by identity), naming the field; None if it is one. The engines hash and store states,
    so a mutable one is either rejected by Python or silently counted twice."""
    if isinstance(state, (*_IMMUTABLE_SCALARS, enum.Enum)):
        return None
    kind = type(state).__name__
    if isinstance(state, tuple):
        names = getattr(state, "_fields", None)
        for index, value in enumerate(state):
            field = f"{where}.{names[index]}" if names else f"{where}[{index}]"
            problem = state_problem(value, field)
            if problem:
                return problem
        return None
    if isinstance(state, frozenset):
        for value in state:
            problem = state_problem(value, f"{where} (an element)")
            if problem:
                return problem
        return None
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        if not type(state).__dataclass_params__.frozen:  # type: ignore[attr-defined]
            return f"{where} is a dataclass ({kind}) that is not frozen: declare it @dataclass(frozen=True)"
        for f in dataclasses.fields(state):
            problem = state_problem(getattr(state, f.name), f"{where}.{f.name}")
            if problem:
                return problem
        return None
    for mutable, instead in _MUTABLE:
        if isinstance(state, mutable):
            return f"{where} is a {kind}, which is mutable: use {instead}"
    if type(state).__hash__ is None:
        return f"{where} is a {kind}, which is not hashable: use a tuple, a NamedTuple or a frozen dataclass"
    if type(state).__eq__ is object.__eq__:
        return (
            f"{where} is an object of class {kind}, compared by identity, so equal states would count as different: "
            "use a tuple, a NamedTuple or a frozen dataclass"
        )
    return None


def check_states(model: Model, states: Iterable[Any], origin: str) -> None:
    """Raise a UserError naming the model and the field if one of the states is no immutable value."""
    for state in states:
        problem = state_problem(state, type(state).__name__)
        if problem:
            raise UserError(
                f"model {model.name or type(model).__name__}: {origin}: {problem} (states must be immutable, "
                "hashable values: tuples, frozensets, NamedTuples, frozen dataclasses, ints, strs, None)"
            )
