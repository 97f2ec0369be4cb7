"""The registered engines: adding one is its module plus a line here."""

from __future__ import annotations

from .bfs import BfsEngine
from .bmc import BmcEngine
from .engine import Engine
from .hypothesis_engine import HypothesisEngine
from .simulation import SimulateEngine
from .spark import SparkEngine

ENGINES: dict[str, type[Engine]] = {
    engine.name: engine for engine in (BfsEngine, SimulateEngine, SparkEngine, HypothesisEngine, BmcEngine)
}


def engine_class(name: str) -> type[Engine]:
    """The engine called ``name``; an unknown one is an error listing the others."""
    if name not in ENGINES:
        raise_unknown(name)
    return ENGINES[name]


def raise_unknown(name: str) -> None:
    from .errors import UserError

    raise UserError(f"unknown engine {name!r}; engines: {', '.join(ENGINES)}")
