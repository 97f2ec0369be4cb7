"""The registered engines: adding one is its module plus a line here. An engine's module is imported
when the engine is first used, so a command pays for z3 or Hypothesis only when it runs them."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from kmc.checker.engines.api import Engine

_ENGINE_CLASSES = {
    "bfs": "kmc.checker.engines.bfs:BfsEngine",
    "simulate": "kmc.checker.engines.simulate:SimulateEngine",
    "spark": "kmc.checker.engines.spark.engine:SparkEngine",
    "hypothesis": "kmc.checker.engines.hypothesis:HypothesisEngine",
    "bmc": "kmc.checker.engines.symbolic.bmc:BmcEngine",
}


class _Registry(Mapping[str, type[Engine]]):
    """Engine name -> engine class, importing the class's module on first use."""

    def __getitem__(self, name: str) -> type[Engine]:
        module, _, cls = _ENGINE_CLASSES[name].partition(":")
        return getattr(importlib.import_module(module), cls)

    def __iter__(self) -> Iterator[str]:
        return iter(_ENGINE_CLASSES)

    def __len__(self) -> int:
        return len(_ENGINE_CLASSES)


ENGINES: Mapping[str, type[Engine]] = _Registry()


def engine_class(name: str) -> type[Engine]:
    """The engine called ``name``; an unknown one is an error listing the others."""
    if name not in ENGINES:
        raise_unknown(name)
    return ENGINES[name]


def raise_unknown(name: str) -> None:
    from kmc.checker.errors import UserError

    raise UserError(f"unknown engine {name!r}; engines: {', '.join(ENGINES)}")
