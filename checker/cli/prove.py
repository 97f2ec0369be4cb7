"""`kmc prove`: an invariant proven inductive with z3, with the lemmas that strengthen it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from kmc.checker.cli.exit_codes import EXIT_VIOLATED
from kmc.checker.errors import UserError
from kmc.checker.model import parse_sets
from kmc.checker.registry import load_model_class


def prove(
    model: Annotated[str, typer.Argument(help="Model name (see `kmc list`), module:Class or file.py:Class.")],
    invariant: Annotated[str, typer.Option("--invariant", "-i", help="The invariant (or step property) to prove.")],
    lemmas: Annotated[list[str], typer.Option("--lemma", "-l", help="A strengthening lemma (repeatable).")] = [],  # noqa: B006
    lemma_files: Annotated[
        list[Path], typer.Option("--lemmas", help="A Python file of @lemma functions of your own.")
    ] = [],  # noqa: B006
    all_lemmas: Annotated[bool, typer.Option("--all-lemmas", help="Use every lemma the model's encoding has.")] = False,
    preset: Annotated[str | None, typer.Option("--preset", "-p", help="A named variant.")] = None,
    sets: Annotated[list[str], typer.Option("--set", "-s", help="Config key=value (repeatable).")] = [],  # noqa: B006
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Prove with z3 that an invariant, with the lemmas, is inductive: it then holds in every reachable
    state for these constants. Exit 0 proven, 1 not inductive (the counterexample is printed)."""
    from kmc.checker.engines.symbolic.induction import prove_property
    from kmc.checker.properties import lemmas_in, load_module

    cls = load_model_class(model)
    instance = cls.build(preset, parse_sets(sets))
    extra: dict[str, Any] = {}
    for path in lemma_files:
        found = lemmas_in(load_module(path))
        if not found:
            raise UserError(f"lemma file {path} defines no lemmas: decorate functions with @lemma from kmc.checker")
        extra.update(found)
    if all_lemmas:
        encoding = instance.symbolic()
        own = list(encoding.lemmas) if encoding is not None else []
        lemmas = [*own, *(n for n in lemmas if n not in own)]
    result = prove_property(instance, invariant, lemmas, extra, preset=preset or cls.default_preset)
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(proof_text(instance, result))
    if not result.proven:
        raise typer.Exit(EXIT_VIOLATED)


def proof_text(model: Any, result: Any) -> str:
    from kmc.checker.traces.itf import format_value, state_vars
    from kmc.checker.traces.text import changes

    title = f"kmc prove {result.model}" + (f" --preset {result.preset}" if result.preset else "")
    lines = [title, f"  config: {' '.join(f'{k}={v}' for k, v in result.config.items())}"]
    lines.append(f"  claims: {', '.join(result.claims)}")
    lines.append(f"  {result.queries} z3 queries, {result.elapsed_s:.2f} s")
    failure = result.failure
    if failure is None:
        where = "on every step from" if result.step_property else "in"
        lines.append(
            f"  verdict: proven: {result.invariant} holds {where} every reachable state for these constants "
            f"(each claim holds initially and is preserved by every step)"
        )
        return "\n".join(lines)
    if failure.phase == "base":
        lines.append(f"  verdict: {failure.claim} fails in an initial state")
        for key, value in state_vars(failure.after).items():
            lines.append(f"    {key} = {format_value(value)}")
        return "\n".join(lines)
    lines.append(f"  verdict: not inductive: {failure.claim} is not preserved by {failure.action!r}")
    lines.append("  counterexample to induction (all claims hold before, not after):")
    lines.append("  before:")
    for key, value in state_vars(failure.before).items():
        lines.append(f"    {key} = {format_value(value)}")
    lines.append(f"  after {failure.action!r}:")
    for path, old, new in changes(state_vars(failure.before), state_vars(failure.after)):
        lines.append(f"    {path}: {format_value(old)} -> {format_value(new)}")
    lines.append("  either the claim is false, or it needs a lemma that rules out the state before")
    return "\n".join(lines)
