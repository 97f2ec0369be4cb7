"""`kmc list`: the models, their presets, properties and config keys."""

from __future__ import annotations

import json
import shutil
import textwrap
from typing import Annotated, Any

import typer
from kmc.checker.model import config_keys
from kmc.checker.properties import model_properties
from kmc.checker.registry import load_model_class, registered_models

FALLBACK_WIDTH = 100
"""The width wrapped to when the output is no terminal (a pipe, a file) and COLUMNS is not set."""
MIN_TEXT_WIDTH = 30
"""Columns a description always gets, however narrow the terminal and long the names before it."""
INDENT = "    "
GAP = "  "


def first_paragraph(doc: str) -> str:
    """A docstring's first paragraph on one line: its first line alone is often half a sentence."""
    return " ".join(doc.strip().split("\n\n", 1)[0].split()) if doc.strip() else ""


def list_models(
    model: Annotated[str | None, typer.Argument(help="Show one model only.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List models, their presets, properties and config keys with defaults."""
    models = registered_models()
    if model is not None:
        models = {model: load_model_class(model)}
    out: list[dict[str, Any]] = []
    for name, cls in models.items():
        out.append(
            {
                "model": name,
                "description": cls.description,
                "default_preset": cls.default_preset,
                "presets": {
                    p: {
                        "description": preset.description,
                        "settings": dict(preset.settings),
                        "expected": dict(preset.expected),
                    }
                    for p, preset in cls.presets.items()
                },
                "properties": [
                    {"name": p.name, "kind": p.kind, "doc": first_paragraph(p.doc)} for p in model_properties(cls)
                ],
                "config": [
                    {"key": k.name, "type": k.type_name, "default": k.default, "help": k.help}
                    for k in config_keys(cls.Config)
                ],
                "symmetry": cls.symmetry is not None,
            }
        )
    if as_json:
        print(json.dumps(out, indent=2))
        return
    width = shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns
    for entry in out:
        print(listing_text(entry, width))


def listing_text(entry: dict[str, Any], width: int) -> str:
    """One model's entry of `kmc list`: each row's leading cells in columns as wide as the model's
    longest, and its text wrapped to ``width`` under its own column, so no description is cut."""
    lines = [_wrap(f"{entry['model']}: ", entry["description"], width, hang=2)]
    if entry["presets"]:
        lines.append("  presets:" + (f" (default {entry['default_preset']})" if entry["default_preset"] else ""))
        rows = [(p, "", info["description"]) for p, info in entry["presets"].items()]
        lines += _table(rows, width)
    lines.append("  properties:")
    lines += _table([(prop["name"], prop["kind"], prop["doc"]) for prop in entry["properties"]], width)
    lines.append("  config:")
    rows = [
        (key["key"], "", f"{key['type']}, default {key['default']}" + (f": {key['help']}" if key["help"] else ""))
        for key in entry["config"]
    ]
    lines += _table(rows, width)
    if entry["symmetry"]:
        lines.append("  symmetry: yes (--symmetry)")
    return "\n".join(lines) + "\n"


def _table(rows: list[tuple[str, str, str]], width: int) -> list[str]:
    """Rows of (name, kind, text), the kind column left out when no row has one. The name column is
    as wide as the longest name, unless that would leave the text less than half the width: then a
    name too long for it stands on a line of its own, its kind and text on the next."""
    if not rows:
        return []
    kinds = max(len(kind) for _name, kind, _text in rows)
    fixed = len(INDENT) + len(GAP) + (kinds + len(GAP) if kinds else 0)
    most = width - fixed - max(MIN_TEXT_WIDTH, width // 2)
    lengths = [len(name) for name, _kind, _text in rows]
    names = max((n for n in lengths if n <= most), default=0)
    lines = []
    for name, kind, text in rows:
        kind_cell = f"{kind:<{kinds}}{GAP}" if kinds else ""
        if len(name) > names:
            lines.append(INDENT + name)
            name = ""
        lines.append(_wrap(f"{INDENT}{name:<{names}}{GAP}{kind_cell}", text, width))
    return lines


def _wrap(prefix: str, text: str, width: int, hang: int | None = None) -> str:
    """``prefix`` then ``text`` wrapped, its later lines indented by ``hang`` (by default, under the text)."""
    indent = " " * (len(prefix) if hang is None else hang)
    wrapped = textwrap.fill(
        " ".join(text.split()),
        width=max(width, len(indent) + MIN_TEXT_WIDTH),
        initial_indent=prefix,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return wrapped or prefix.rstrip()
