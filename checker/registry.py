"""Finding models by name, without the engine importing any of them.

Models are registered under the ``kmc.models`` entry-point group; a model of one's own is named
as ``package.module:Class`` or ``path/to/file.py:Class``.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from kmc.checker.errors import UserError
from kmc.checker.model import Model
from kmc.checker.properties import load_module


@cache
def registered_models() -> dict[str, type[Model]]:
    found: dict[str, type[Model]] = {}
    for ep in entry_points(group="kmc.models"):
        cls = ep.load()
        found[getattr(cls, "name", ep.name) or ep.name] = cls
    return dict(sorted(found.items()))


def load_model_class(name: str) -> type[Model]:
    """A registered model by name, or a model of one's own: ``path/to/file.py:Class`` (a path as
    given: relative to the current directory, or to the suite or trace that names it once they have
    resolved it) or ``package.module:Class`` (imported from sys.path: installed packages and
    PYTHONPATH, never the current directory by itself)."""
    models = registered_models()
    if name in models:
        return models[name]
    if ":" in name:
        target, _, attr = name.rpartition(":")
        if not target or not attr:
            raise UserError(f"model {name!r}: give it as file.py:Class or module:Class")
        if target.endswith(".py"):
            module = load_module(target, "model file")
        else:
            module = _import_model_module(target)
        cls: Any = getattr(module, attr, None)
        if cls is None:
            own = sorted(n for n, v in vars(module).items() if _is_model(v) and v.__module__ == module.__name__)
            raise UserError(
                f"{target} has no attribute {attr!r}: "
                + (f"its Model classes are {', '.join(own)}" if own else "it defines no kmc Model class")
            )
        if not _is_model(cls):
            raise UserError(f"{name}: {attr!r} is not a kmc Model class in {target} (subclass kmc.checker.Model)")
        return cls
    known = ", ".join(models) or "(none installed)"
    hint = " (a model file is named file.py:Class)" if name.endswith(".py") else ""
    raise UserError(f"unknown model {name!r}; models: {known} (or give module:Class / file.py:Class){hint}")


def _is_model(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, Model) and value is not Model


def _import_model_module(target: str) -> Any:
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name == target or target.startswith(f"{exc.name}."):
            raise UserError(
                f"cannot import model module {target!r}: it is not on sys.path; install its package, add its "
                f"folder to PYTHONPATH, or name the file: {target.replace('.', '/')}.py:Class"
            ) from None
        raise UserError(f"model module {target} failed to import: {exc}") from None
    except UserError as exc:
        raise UserError(f"model module {target}: {exc}") from None
    except Exception as exc:  # the user's code: report, never a traceback
        raise UserError(f"model module {target} failed to import: {type(exc).__name__}: {exc}") from None


def model_reference(name: str) -> str:
    """A model of one's own as replay will find it again: file paths made absolute."""
    target, sep, attr = name.rpartition(":")
    if sep and target.endswith(".py"):
        return f"{Path(target).resolve()}:{attr}"
    return name


@cache
def registered_oracles() -> dict[str, type]:
    """Oracles (``kmc.checker.conformance.run.Oracle`` or ``InputOracle`` classes) by name, from the
    ``kmc.oracles`` entry points. Loading one does not start anything (no JVM)."""
    found: dict[str, type] = {}
    for ep in entry_points(group="kmc.oracles"):
        try:
            cls = ep.load()
        except ImportError as exc:  # a broken install: say so, rather than hide the oracle
            raise UserError(f"oracle {ep.name} ({ep.value}) cannot be loaded: {exc}; reinstall kmc") from None
        found[getattr(cls, "name", "") or ep.name] = cls
    return dict(sorted(found.items()))
