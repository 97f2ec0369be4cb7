"""One engine interface and one set of search bounds.

An engine is a subclass of :class:`Engine`: a ``name``, the bounds it honours, the options it takes
(each an :class:`OptionSpec` with its default), what it can promise (exhaustive, shortest traces,
liveness on what it explored) and ``run(task) -> CheckResult``. It is registered by one line in
``kmc.checker.engines`` (or under the ``kmc.engines`` entry point group); the CLI's flags, the suite's
TOML keys and the pytest helpers' keyword arguments are all derived from the options the registered
engines declare (``kmc.checker.engines.settings``), so adding an engine touches nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.checker.model import Model
from kmc.checker.properties import PropertySet
from kmc.checker.result import CheckResult
from kmc.checker.search.observers import SearchObserver
from kmc.checker.search.progress import Progress


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
    """One user-facing setting: its name in Python (pytest helpers), in TOML and on the command line,
    its type, its range and an engine's default for it."""

    name: str
    kind: type
    help: str
    default: Any = None
    toml: str = ""
    flag: str = ""
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    bound: bool = False
    """A field of SearchBounds rather than an engine's own option."""
    path: bool = False
    """A file or directory: on the command line a path, in a suite relative to the suite's folder."""

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


BOUND_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("max_depth", int, "Bound: depth in states (init = 1).", minimum=1, bound=True),
    OptionSpec("max_states", int, "Bound: at most this many distinct states.", minimum=1, bound=True),
    OptionSpec("symmetry", bool, "Deduplicate symmetric states.", default=False, bound=True),
    OptionSpec("deadlock", bool, "Report states without successors.", default=False, bound=True),
    OptionSpec(
        "keep_going",
        bool,
        "Keep exploring after a violation; report all.",
        default=False,
        toml="continue",
        flag="--continue",
        bound=True,
    ),
)
"""The options that set SearchBounds: shared by the engines that honour them."""

SEED = OptionSpec("seed", int, "Random seed.", minimum=0, maximum=2**64 - 1)
"""The seed of an engine that samples (simulate, hypothesis): one declaration, so one flag."""


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


class Engine:
    """A search strategy: subclass it, declare what it takes and promises, implement ``run``.

    Its module should import quickly (what ``kmc --help`` lists is read from every registered
    engine): heavy libraries are imported inside ``run``."""

    name: ClassVar[str] = ""
    bounds: ClassVar[frozenset[str]] = frozenset()
    """The SearchBounds fields it honours."""
    options: ClassVar[tuple[OptionSpec, ...]] = ()
    """Its own options, each with its default."""
    observes: ClassVar[bool] = True
    """Whether it calls the observers (reports coverage)."""
    exhaustive: ClassVar[bool] = False
    """Whether a run that hits no bound explores every reachable state."""
    shortest: ClassVar[bool] = False
    """Whether its counterexamples are shortest (breadth-first)."""
    liveness: ClassVar[bool] = False
    """Whether liveness properties are checked on the state graph after its search."""

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Its options and their defaults."""
        return {spec.name: spec.default for spec in cls.options}

    def run(self, task: EngineTask) -> CheckResult:
        raise NotImplementedError

    @classmethod
    def keeps_graph(cls, bounds: SearchBounds, options: Mapping[str, Any]) -> bool:
        """Whether, with these settings, its search hands the graph it explored to a GraphRecorder
        among the observers (as arrays), so that the liveness check need not explore it again."""
        return False

    def summary(self, result: CheckResult) -> list[str] | None:
        """Lines that say what its run covered, in place of the usual state counts and memory; None
        for those (an engine that counts no states, such as a symbolic one, says what it did)."""
        return None

    def verdict(self, result: CheckResult) -> str | None:
        """Its own words for the verdict, or None for the usual ones."""
        return None
