"""The `kmc explore` command: serve the explorer on 127.0.0.1 until Ctrl-C.

Registered in cli/app.py as ``app.command("explore")(explore)``. Everything that can be wrong (model,
preset, config, spec files, the trace, the port) is checked before serving, as a UserError that
the CLI prints as one line with exit code 2.
"""

from __future__ import annotations

import sys
import webbrowser
from pathlib import Path
from typing import Annotated, Any

import typer
from kmc.checker.errors import MissingFileError, UserError
from kmc.checker.model import parse_sets, setting_text

EXIT_STOPPED = 130
"""As a shell reports a command stopped by Ctrl-C (128 + SIGINT)."""


def explore(
    model: Annotated[
        str,
        typer.Argument(
            help="Model name (see `kmc list`), module:Class or file.py:Class; or an ITF trace, to walk it "
            "on the model and config it names."
        ),
    ],
    trace: Annotated[
        Path | None, typer.Argument(help="An ITF trace of this model to start from (walk it, then branch off).")
    ] = None,
    preset: Annotated[str | None, typer.Option("--preset", "-p", help="A named variant.")] = None,
    sets: Annotated[list[str], typer.Option("--set", "-s", help="Config key=value (repeatable).")] = [],  # noqa: B006
    specs: Annotated[list[Path], typer.Option("--spec", help="A Python file of your own properties.")] = [],  # noqa: B006
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free one).", min=0, max=65535)] = 8471,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the page in the default browser.")] = False,
    log: Annotated[bool, typer.Option("--log", help="Log every HTTP request on stderr.")] = False,
) -> None:
    """Walk a model's state space by hand in the browser: enabled actions as buttons, the state as the
    model's tables, properties per state, the path as a sequence chart and in the URL, ITF in and out."""
    from kmc.checker.explorer.server import make_server

    alone = trace is None and model.endswith(".json") and Path(model).is_file()
    if alone:
        trace = Path(model)
        model, named_preset, config = _named_by(trace)
        if preset is None and not sets:
            preset = named_preset
            sets = [f"{key}={setting_text(value)}" for key, value in config.items()]
    try:
        server = make_server(
            model,
            preset=preset,
            overrides=parse_sets(sets),
            spec_files=specs,
            trace=trace,
            port=port,
            quiet=not log,
        )
    except MissingFileError as exc:
        if alone and exc.kind == "model file":  # a trace copied away from its model file
            raise UserError(f"{exc}; give the model first: kmc explore path/to/file.py:Class {trace}") from None
        raise
    explorer = server.explorer
    print(f"kmc explore {explorer.title}: serving {server.url} (Ctrl-C stops)", flush=True)
    if open_browser:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", flush=True)
        raise typer.Exit(EXIT_STOPPED) from None
    finally:
        server.server_close()
        sys.stdout.flush()


def _named_by(trace: Path) -> tuple[str, str | None, dict[str, Any]]:
    """The model a trace names (its model file first, as `kmc replay` finds it), its preset and config."""
    from kmc.checker.traces.itf import read_trace

    meta = read_trace(trace)["#meta"]
    config = meta.get("config") or {}
    preset = meta.get("preset") if isinstance(meta.get("preset"), str) else None
    return str(meta.get("model_ref") or meta.get("model")), preset, config if isinstance(config, dict) else {}
