"""Build the models' C twins in place, with warnings as errors and, optionally, the sanitizers.

    python -m kmc.models.common.build_twins                 # every twin, -Wall -Wextra -Werror
    python -m kmc.models.common.build_twins group --sanitize  # one twin, with ASan and UBSan

``make sanitize`` builds every twin with AddressSanitizer and UndefinedBehaviorSanitizer, runs each
one's exhaustive comparison with its Python definition with the sanitizers' runtime preloaded, then
builds them again as usual. Run from the repository's root (setup.py names the sources).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

from kmc.models.common.c_fields import PREFIXES

WARNINGS = ["-Wall", "-Wextra", "-Werror"]
SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-O1"]


def _extensions() -> dict[str, object]:
    spec = importlib.util.spec_from_file_location("kmc_setup_py", Path("setup.py"))
    if spec is None or spec.loader is None:
        raise SystemExit("run this from the repository's root: setup.py names the twins' sources")
    setup_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup_py)
    return {extension.name: extension for extension in setup_py.EXTENSIONS}


def build(model: str, sanitize: bool) -> Path:
    """Build ``kmc.models.<model>._successors`` in place; the path of the shared object. (setuptools,
    which pip builds with, is imported here: nothing else of the toolkit needs it.)"""
    from setuptools import Distribution
    from setuptools.command.build_ext import build_ext

    extension = _extensions()[f"kmc.models.{model}._successors"]
    extension.optional = False  # type: ignore[attr-defined]
    extension.extra_compile_args = [*WARNINGS, *(SANITIZERS if sanitize else [])]  # type: ignore[attr-defined]
    extension.extra_link_args = list(SANITIZERS[:1] if sanitize else [])  # type: ignore[attr-defined]
    package_dir = {"kmc.models": "models", "kmc.checker": "checker"}
    command = build_ext(Distribution({"name": "kmc-twins", "ext_modules": [extension], "package_dir": package_dir}))
    command.inplace = True
    command.force = True  # an up-to-date shared object of the other kind (sanitized or not) is rebuilt too
    command.build_temp = tempfile.mkdtemp(prefix=f"kmc-twin-{model}-")
    command.ensure_finalized()
    command.run()
    return Path(command.get_ext_fullpath(extension.name))  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the models' C twins in place.")
    parser.add_argument("models", nargs="*", help=f"the twins to build: {', '.join(PREFIXES)} (default: all)")
    parser.add_argument("--sanitize", action="store_true", help="with AddressSanitizer and UBSan")
    args = parser.parse_args(argv)
    unknown = [model for model in args.models if model not in PREFIXES]
    if unknown:
        parser.error(f"no C twin for {', '.join(unknown)}: the twins are {', '.join(PREFIXES)}")
    for model in args.models or PREFIXES:
        print(f"built {build(model, args.sanitize)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
