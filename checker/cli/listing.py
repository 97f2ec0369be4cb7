"""`kmc list`: the models, their presets, properties and config keys."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from kmc.checker.model import config_keys
from kmc.checker.properties import model_properties
from kmc.checker.registry import load_model_class, registered_models


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
                    {"name": p.name, "kind": p.kind, "doc": p.doc.splitlines()[0] if p.doc else ""}
                    for p in model_properties(cls)
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
    for entry in out:
        print(f"{entry['model']}: {entry['description']}")
        if entry["presets"]:
            print("  presets:" + (f" (default {entry['default_preset']})" if entry["default_preset"] else ""))
            for p, info in entry["presets"].items():
                print(f"    {p:<20} {info['description']}")
        print("  properties:")
        for prop in entry["properties"]:
            print(f"    {prop['name']:<28} {prop['kind']:<9} {prop['doc']}")
        print("  config:")
        for key in entry["config"]:
            print(f"    {key['key']:<20} {key['type']:<10} default {key['default']!s:<8} {key['help']}")
        if entry["symmetry"]:
            print("  symmetry: yes (--symmetry)")
        print()
