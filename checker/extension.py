"""C twins of hot Python: whether one is there to use, and whether a model may use its own.

The Python stays the definition. ``pip install`` compiles each extension where a C compiler is
found; without one, or with ``KMC_PURE_PYTHON=1``, the Python runs alone and finds the same states.
"""

from __future__ import annotations

import importlib
import os
from inspect import getattr_static
from types import ModuleType


def c_extension(name: str) -> ModuleType | None:
    """The extension module ``name`` (e.g. ``kmc.models._replication``); None when it was not
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
