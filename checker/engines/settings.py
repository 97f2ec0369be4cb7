"""The user-facing settings of a check, derived from what the registered engines declare.

The CLI's flags, the suite's TOML keys and the pytest helpers' keyword arguments are all read here:
the search bounds, then every option each engine declares. Two engines may take an option of the
same name (``seed``, ``depth``, ``checkpoint``) as long as it has the same type; its help says
which engines take it. A setting the chosen engine does not take is an error naming the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from kmc.checker.engines import ENGINES
from kmc.checker.engines.api import BOUND_OPTIONS, Engine, OptionSpec, SearchBounds
from kmc.checker.errors import UserError


def all_options() -> dict[str, OptionSpec]:
    """Every setting by name: the bounds, then each engine's options in registration order. An
    option several engines take appears once, its help prefixed with their names, its default
    theirs where they agree."""
    table: dict[str, OptionSpec] = {spec.name: spec for spec in BOUND_OPTIONS}
    takers: dict[str, list[tuple[str, OptionSpec]]] = {}
    for name, engine in ENGINES.items():
        for spec in engine.options:
            if spec.name in table and table[spec.name].bound:
                raise UserError(f"engine {name} declares option {spec.name}, which is a search bound")
            takers.setdefault(spec.name, []).append((name, spec))
    for option, declared in takers.items():
        first = declared[0][1]
        clash = [
            name
            for name, spec in declared
            if (spec.kind, spec.cli_flag, spec.toml_key, spec.path)
            != (first.kind, first.cli_flag, first.toml_key, first.path)
        ]
        if clash:
            raise UserError(f"engines {declared[0][0]} and {clash[0]} declare option {option} differently")
        helps = list(dict.fromkeys(spec.help for _name, spec in declared))
        if len(helps) == 1:
            text = f"{', '.join(name for name, _spec in declared)}: {helps[0]}"
        else:
            text = "; ".join(f"{name}: {spec.help}" for name, spec in declared)
        defaults = {repr(spec.default) for _name, spec in declared}
        table[option] = replace(first, help=text, default=first.default if len(defaults) == 1 else None)
    return table


def options_by_toml() -> dict[str, OptionSpec]:
    return {spec.toml_key: spec for spec in all_options().values()}


def settings_from(raw: Mapping[str, Any], where: str, *, toml: bool = False) -> dict[str, Any]:
    """Check user-facing settings by name (TOML keys when ``toml``): known names, right types."""
    table = options_by_toml() if toml else all_options()
    out: dict[str, Any] = {}
    for key, value in raw.items():
        spec = table.get(key)
        if spec is None:
            known = ", ".join(sorted(table))
            raise UserError(f"{where + ': ' if where else ''}unknown setting {key!r}; settings: {known}")
        out[spec.name] = spec.check(value, where)
    return out


def takes(engine: type[Engine], spec: OptionSpec) -> bool:
    """Whether the engine takes the setting (a bound it honours, or an option it declares)."""
    return spec.name in engine.bounds if spec.bound else spec.name in engine.defaults()


def split_settings(engine: type[Engine], settings: Mapping[str, Any]) -> tuple[SearchBounds, dict[str, Any]]:
    """The bounds and the engine's options; a setting the engine does not take is an error naming it.
    A bound left at false (a flag not given) is no setting."""
    table = all_options()
    refused = [
        table[name].cli_flag
        for name in settings
        if not takes(engine, table[name]) and not (table[name].bound and settings[name] is False)
    ]
    if refused:
        offered = sorted(spec.cli_flag for spec in table.values() if takes(engine, spec))
        offer = ", ".join(offered) or "no options"
        raise UserError(f"the {engine.name} engine does not take {', '.join(refused)}; it takes: {offer}")
    bounds = SearchBounds(**{k: v for k, v in settings.items() if table[k].bound})
    options = engine.defaults()
    options.update({k: v for k, v in settings.items() if not table[k].bound})
    return bounds, options
