"""The registered engines: adding one is its module plus one line in :data:`BUILT_IN`.

An engine's module is imported when the engine is first looked up; each keeps its heavy imports
(z3, Hypothesis, PySpark) inside ``run``, so listing the engines costs nothing. Engines of other
packages register under the ``kmc.engines`` entry point group, or in-process with
:func:`register_engine`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from functools import cache
from importlib.metadata import entry_points

from kmc.checker.engines.api import Engine
from kmc.checker.errors import UserError

BUILT_IN: dict[str, str] = {
    "bfs": "kmc.checker.engines.bfs.engine:BfsEngine",
    "simulate": "kmc.checker.engines.simulate:SimulateEngine",
    "spark": "kmc.checker.engines.spark.engine:SparkEngine",
    "hypothesis": "kmc.checker.engines.hypothesis.engine:HypothesisEngine",
    "bmc": "kmc.checker.engines.symbolic.engine:BmcEngine",
}
_REGISTERED: dict[str, str | type[Engine]] = {}


@cache
def _plugins() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group="kmc.engines") if ep.name not in BUILT_IN}


def register_engine(name: str, engine: str | type[Engine]) -> None:
    """Register an engine in this process: a class, or ``module:Class`` imported on first use."""
    if name in _targets() and _targets()[name] != engine:
        raise UserError(f"an engine named {name!r} is already registered")
    _REGISTERED[name] = engine


def unregister_engine(name: str) -> None:
    _REGISTERED.pop(name, None)


def _targets() -> dict[str, str | type[Engine]]:
    return {**BUILT_IN, **_plugins(), **_REGISTERED}


class _Registry(Mapping[str, type[Engine]]):
    """Engine name -> engine class, importing the class's module on first use."""

    def __getitem__(self, name: str) -> type[Engine]:
        target = _targets()[name]
        if isinstance(target, type):
            return target
        module, _, cls = target.partition(":")
        try:
            found = getattr(importlib.import_module(module), cls)
        except (ImportError, AttributeError) as exc:
            raise UserError(f"engine {name} ({target}) cannot be loaded: {exc}") from None
        if not (isinstance(found, type) and issubclass(found, Engine)):
            raise UserError(f"engine {name} ({target}) is not a subclass of kmc.checker.engines.api.Engine")
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(_targets())

    def __len__(self) -> int:
        return len(_targets())


ENGINES: Mapping[str, type[Engine]] = _Registry()


def engine_class(name: str) -> type[Engine]:
    """The engine called ``name``; an unknown one is an error listing the others."""
    if name not in ENGINES:
        raise UserError(f"unknown engine {name!r}; engines: {', '.join(ENGINES)}")
    return ENGINES[name]
