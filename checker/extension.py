"""C twins of hot Python: whether one is there to use, and whether a model may use its own.

The Python stays the definition. ``pip install`` compiles each extension where a C compiler is
found; without one, or with ``KMC_PURE_PYTHON=1``, the Python runs alone and finds the same states.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from inspect import getattr_static
from types import ModuleType
from typing import Any


def c_extension(name: str) -> ModuleType | None:
    """The extension module ``name`` (e.g. ``kmc.models.replication._successors``); None when it was not
    built or ``KMC_PURE_PYTHON`` is set."""
    if os.environ.get("KMC_PURE_PYTHON"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:  # installed without a C compiler
        return None


def keeps_methods(instance: object, definition: type) -> bool:
    """Whether the instance's class leaves every method of ``definition`` and its bases as they are
    defined there. A model's C successor function stands in for those methods, so a subclass that
    changes one (an oracle test's deliberately broken model) runs its Python instead."""
    cls = type(instance)
    if cls is definition:
        return True
    methods = {name for klass in definition.__mro__[:-1] for name, f in vars(klass).items() if _is_method(f)}
    return all(getattr_static(cls, name) is getattr_static(definition, name) for name in methods)


def _is_method(attribute: object) -> bool:
    return callable(attribute) or isinstance(attribute, (classmethod, staticmethod, property))


class SuccessorsInC:
    """For a model whose successor function has a C twin: ``successors`` asks the twin, and runs the
    Python ``_successors`` (the definition) where no twin is used or for a state it leaves to Python."""

    _twin: Callable[[Any, Any], list[Any] | None] | None = None
    """The twin's successors(context, state): the Python's list, or None for a state it does not read."""
    _twin_ctx: Any = None
    """What the twin reads (state types, action tables, the config as ints); None where it is not used."""

    def use_c_twin(self, module: str, definition: type, context: Callable[[], Any]) -> ModuleType | None:
        """Use the successors of the extension ``module``, with ``context()``, where it was built and
        this class keeps the methods of ``definition``; return the module, or None."""
        extension = c_extension(module) if keeps_methods(self, definition) else None
        self._twin = extension.successors if extension is not None else None
        self._twin_ctx = context() if extension is not None else None
        return extension

    def successors(self, state: Any) -> list[Any]:
        """The steps of every action from ``state``: the twin's list where it gives one (the same
        list, several times faster), else the Python's."""
        if self._twin_ctx is not None:
            out = self._twin(self._twin_ctx, state)  # type: ignore[misc]
            if out is not None:
                return out
        return self._successors(state)

    def _successors(self, state: Any) -> list[Any]:
        raise NotImplementedError
