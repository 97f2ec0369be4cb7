"""Finding models by name, without the engine importing any of them.

Models are registered under the ``kmc.models`` entry-point group; a model of one's own is named
as ``package.module:Class`` or ``path/to/file.py:Class``.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from .errors import UserError
from .model import Model
from .properties import load_module


@cache
def registered_models() -> dict[str, type[Model]]:
    found: dict[str, type[Model]] = {}
    for ep in entry_points(group="kmc.models"):
        cls = ep.load()
        found[getattr(cls, "name", ep.name) or ep.name] = cls
    return dict(sorted(found.items()))


def load_model_class(name: str) -> type[Model]:
    models = registered_models()
    if name in models:
        return models[name]
    if ":" in name:
        target, _, attr = name.rpartition(":")
        try:
            module = load_module(target) if target.endswith(".py") else importlib.import_module(target)
        except ImportError as exc:
            raise UserError(f"cannot import model module {target!r}: {exc}") from None
        cls: Any = getattr(module, attr, None)
        if not (isinstance(cls, type) and issubclass(cls, Model)):
            raise UserError(f"{name}: {attr!r} is not a kmc Model class in {target}")
        return cls
    known = ", ".join(models) or "(none installed)"
    raise UserError(f"unknown model {name!r}; models: {known} (or give module:Class / file.py:Class)")


@cache
def registered_oracles() -> dict[str, type]:
    """Oracles (``kmc.checker.conformance.Oracle`` or ``InputOracle`` classes) by name, from the
    ``kmc.oracles`` entry points. Loading one does not start anything (no JVM)."""
    found: dict[str, type] = {}
    for ep in entry_points(group="kmc.oracles"):
        try:
            cls = ep.load()
        except ImportError as exc:  # a broken install: say so, rather than hide the oracle
            raise UserError(f"oracle {ep.name} ({ep.value}) cannot be loaded: {exc}; reinstall kmc") from None
        found[getattr(cls, "name", "") or ep.name] = cls
    return dict(sorted(found.items()))
