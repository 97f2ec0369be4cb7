"""One engine interface, one set of search bounds, one table of user-facing options.

Every engine (bfs, simulate, hypothesis, spark, bmc) is a class with a ``name``, the bounds and
options it takes, and ``run(task) -> CheckResult``; it is registered in :data:`ENGINES`
(checker/engines/__init__.py). The CLI, the suite TOML and the pytest helpers all go through
:func:`settings_from` and :data:`OPTIONS`: a setting an engine does not take is an error naming
the engine, never silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Protocol

from kmc.checker.errors import UserError
from kmc.checker.model import Model
from kmc.checker.properties import PropertySet
from kmc.checker.result import CheckResult
from kmc.checker.search.observers import SearchObserver
from kmc.checker.search.progress import Progress

MAX_PARTITIONS = 4096
"""Spark shards of the visited set: each is a file per level and a task's share of memory; more
than this only costs (a partition per core is the default)."""


@dataclass(frozen=True)
class SearchBounds:
    """The bounds every exhaustive engine shares; an engine says which of them it honours."""

    max_depth: int | None = None
    """Explore states up to this depth (in states; the initial states are depth 1)."""
    max_states: int | None = None
    """Explore at most this many distinct states."""
    symmetry: bool = False
    deadlock: bool = False
    keep_going: bool = False
    """Like TLC's -continue: report every violated property."""

    def given(self) -> list[str]:
        """The bounds set to something other than their default."""
        return [f.name for f in fields(self) if getattr(self, f.name) != f.default]


@dataclass(frozen=True)
class OptionSpec:
    """One user-facing setting: its name in Python (pytest helpers), in TOML and on the command line."""

    name: str
    kind: type
    help: str
    toml: str = ""
    flag: str = ""
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    bound: bool = False
    """A field of SearchBounds rather than an engine's own option."""

    @property
    def toml_key(self) -> str:
        return self.toml or self.name

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    def check(self, value: Any, where: str) -> Any:
        """The value, checked against the option's type and range; a UserError naming it otherwise."""
        where = f"{where}: bad setting" if where else "bad setting"
        if self.kind is bool:
            if not isinstance(value, bool):
                raise UserError(f"{where}: {self.toml_key} must be true or false, got {value!r}")
            return value
        if self.kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise UserError(f"{where}: {self.toml_key} must be an integer, got {value!r}")
            if self.minimum is not None and value < self.minimum:
                raise UserError(f"{where}: {self.toml_key} must be at least {self.minimum}, got {value}")
            if self.maximum is not None and value > self.maximum:
                raise UserError(f"{where}: {self.toml_key} must be at most {self.maximum}, got {value}")
            return value
        if not isinstance(value, str):
            raise UserError(f"{where}: {self.toml_key} must be a string, got {value!r}")
        if self.choices and value not in self.choices:
            raise UserError(f"{where}: {self.toml_key} must be one of {', '.join(self.choices)}, got {value!r}")
        if not value.strip():
            raise UserError(f"{where}: {self.toml_key} must not be empty")
        return value


OPTIONS: dict[str, OptionSpec] = {
    spec.name: spec
    for spec in (
        OptionSpec("max_depth", int, "Bound: depth in states (init = 1).", minimum=1, bound=True),
        OptionSpec("max_states", int, "Bound: at most this many distinct states.", minimum=1, bound=True),
        OptionSpec("symmetry", bool, "Deduplicate symmetric states.", bound=True),
        OptionSpec("deadlock", bool, "Report states without successors.", bound=True),
        OptionSpec(
            "keep_going",
            bool,
            "Keep exploring after a violation; report all.",
            toml="continue",
            flag="--continue",
            bound=True,
        ),
        OptionSpec(
            "store", str, "states (exact) or fingerprints (64-bit, less memory).", choices=("states", "fingerprints")
        ),
        OptionSpec("seed", int, "Random seed.", minimum=0, maximum=2**64 - 1),
        OptionSpec("depth", int, "simulate: steps per walk (100); bmc: steps to unroll (10).", minimum=1),
        OptionSpec("walks", int, "Number of random walks.", minimum=1),
        OptionSpec("examples", int, "Hypothesis runs to try.", minimum=1),
        OptionSpec("steps", int, "Most steps per Hypothesis run.", minimum=1),
        OptionSpec("database", str, "Keep Hypothesis's failing examples in this directory."),
        OptionSpec("guide", bool, "Prefer states no run has reached (--no-guide: plain random runs)."),
        OptionSpec("master", str, "Spark master: local[N], local[*] or spark://HOST:PORT.", flag="--spark-master"),
        OptionSpec(
            "partitions",
            int,
            f"Shards of the visited set (at most {MAX_PARTITIONS}).",
            minimum=1,
            maximum=MAX_PARTITIONS,
        ),
        OptionSpec("memory", str, "bfs: spill to disk past this much memory, e.g. 4g (with --store fingerprints)."),
        OptionSpec("checkpoint", str, "Keep each completed level in this directory."),
        OptionSpec("resume", str, "Continue the run checkpointed in this directory."),
        OptionSpec("driver_memory", str, "The Spark driver JVM's memory, e.g. 2g."),
        OptionSpec("spark_verbose", bool, "Spark's logs and UI on."),
    )
}
"""Every setting a check takes beyond model, config and properties: the one mapping from the CLI,
suite TOML keys and pytest keyword arguments to the engines."""

BY_TOML = {spec.toml_key: spec for spec in OPTIONS.values()}


@dataclass
class EngineTask:
    """Everything one run of an engine needs."""

    model: Model
    props: PropertySet
    bounds: SearchBounds
    options: Mapping[str, Any]
    """The engine's own options, every one it takes filled in (the user's value or its default)."""
    observers: Sequence[SearchObserver] = ()
    progress: Progress | None = None
    preset: str | None = None
    model_ref: str = ""
    """How executors in other processes find the model again (a name, module:Class or file.py:Class)."""
    spec_files: tuple[str, ...] = ()
    runtime: Mapping[str, Any] = field(default_factory=dict)
    """Resources of this process that are not options (an existing SparkContext for tests)."""


class Engine(Protocol):
    """A search strategy. Adding one: a class with these members, registered in engines.py."""

    name: ClassVar[str]
    bounds: ClassVar[frozenset[str]]
    """The SearchBounds fields it honours."""
    defaults: ClassVar[Mapping[str, Any]]
    """Its own options (names of OPTIONS) and their defaults."""
    observes: ClassVar[bool]
    """Whether it calls the observers (reports coverage)."""
    exhaustive: ClassVar[bool]

    def run(self, task: EngineTask) -> CheckResult: ...


def settings_from(raw: Mapping[str, Any], where: str, *, toml: bool = False) -> dict[str, Any]:
    """Check user-facing settings by name (TOML keys when ``toml``): known names, right types."""
    table = BY_TOML if toml else OPTIONS
    out: dict[str, Any] = {}
    for key, value in raw.items():
        spec = table.get(key)
        if spec is None:
            known = ", ".join(sorted(table))
            raise UserError(f"{where + ': ' if where else ''}unknown setting {key!r}; settings: {known}")
        out[spec.name] = spec.check(value, where)
    return out


def split_settings(engine: type[Engine], settings: Mapping[str, Any]) -> tuple[SearchBounds, dict[str, Any]]:
    """The bounds and the engine's options; a setting the engine does not take is an error naming it."""
    refused = [
        OPTIONS[name].cli_flag
        for name in settings
        if (name not in engine.bounds if OPTIONS[name].bound else name not in engine.defaults)
        and not (OPTIONS[name].bound and settings[name] is False)
    ]
    if refused:
        takes = sorted(OPTIONS[n].cli_flag for n in (*engine.bounds, *engine.defaults))
        raise UserError(
            f"the {engine.name} engine does not take {', '.join(refused)}; it takes: {', '.join(takes) or 'no options'}"
        )
    bounds = SearchBounds(**{k: v for k, v in settings.items() if OPTIONS[k].bound})
    options = dict(engine.defaults)
    options.update({k: v for k, v in settings.items() if not OPTIONS[k].bound})
    return bounds, options
