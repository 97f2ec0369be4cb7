"""The `kmc` command: its subcommands, one module each, and the one place errors become exit codes.

A bad input is one line on stderr and exit 2 (with --json also one JSON object), never a
traceback; --debug prints the traceback before that line. See exit_codes.py for the codes.
"""

from __future__ import annotations

import json
import sys
import traceback
from importlib.metadata import entry_points
from typing import Any

import typer
from kmc.checker import interrupts
from kmc.checker.cli.bugs import bugs
from kmc.checker.cli.check import check, with_engine_settings
from kmc.checker.cli.ci import ci
from kmc.checker.cli.conform import conform
from kmc.checker.cli.diff import diff
from kmc.checker.cli.exit_codes import EXIT_BAD_INPUT, EXIT_HOLDS, InterruptedCheckError
from kmc.checker.cli.explore import explore
from kmc.checker.cli.listing import list_models
from kmc.checker.cli.prove import prove
from kmc.checker.cli.summary import summary_text
from kmc.checker.cli.traces import graph, render, replay_traces, show
from kmc.checker.errors import UserError
from typer.exceptions import Abort, TyperException


def make_app() -> typer.Typer:
    """The command, its `check` taking the settings of the engines registered now, and the commands
    other packages register under the ``kmc.commands`` entry point group (each a function that
    adds them to the app: the real-cluster commands come this way)."""
    app = typer.Typer(
        name="kmc",
        help="Kafka model checker: check Kafka's replication and rebalance protocols.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.command("list")(list_models)
    app.command("check")(with_engine_settings(check))
    app.command("conform")(conform)
    app.command("render")(render)
    app.command("graph")(graph)
    app.command("replay")(replay_traces)
    app.command("show")(show)
    app.command("prove")(prove)
    app.command("ci")(ci)
    app.command("explore")(explore)
    app.command("bugs")(bugs)
    app.command("diff")(diff)
    for entry_point in entry_points(group="kmc.commands"):
        try:
            register = entry_point.load()
        except ImportError as exc:  # a plug-in that cannot load costs its commands, not the others
            print(f"kmc: warning: commands of {entry_point.value} are unavailable: {exc}", file=sys.stderr)
            continue
        register(app)
    return app


def _traceback(debug: bool) -> None:
    """With --debug, the traceback on stderr before the one error line; the exit code stays 2."""
    if debug:
        traceback.print_exc()


def _error(message: str, as_json: bool, code: int = EXIT_BAD_INPUT) -> int:
    """One line on stderr; with --json also one JSON object on stdout, so a script always gets one."""
    print(f"kmc: error: {message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"verdict": "error", "error": message, "exit_code": code}))
    return code


class _QuietWhenClosed:
    """Standard output that goes quiet when its reader goes away (`kmc check ... | head -1`): the
    rest is written to /dev/null, so the run goes on and its exit code still carries the verdict."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._silence()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._silence()

    def _silence(self) -> None:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


TYPER_INTERRUPTED = 130
"""What typer returns for a KeyboardInterrupt (Ctrl-C, or SIGTERM through kmc.checker.interrupts) that
a command did not handle itself."""


def _interrupted() -> int:
    """Say that Ctrl-C or SIGTERM ended the command, and the exit code that says which."""
    print(f"kmc: interrupted ({interrupts.reason()})", file=sys.stderr)
    return interrupts.exit_code()


def main(argv: list[str] | None = None) -> int:
    if argv is None and hasattr(sys.stdout, "fileno"):  # the `kmc` command itself, not a test calling main
        sys.stdout = _QuietWhenClosed(sys.stdout)
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    if not args:
        args = ["--help"]
    as_json = "--json" in args
    if argv is None:  # the `kmc` command: SIGTERM stops it as Ctrl-C does
        interrupts.install()
    try:
        result = make_app()(args=args, prog_name="kmc", standalone_mode=False)
        if result == TYPER_INTERRUPTED:  # typer returns an interrupt it caught as 130
            return _interrupted()
        if isinstance(result, int) and result:
            return result
    except typer.Exit as exc:
        return exc.exit_code
    except InterruptedCheckError as exc:
        if exc.result is not None:
            if as_json:
                print(json.dumps({**exc.result.to_json(), "verdict": "interrupted"}, indent=2))
            else:
                print(summary_text(exc.result, f"kmc check {exc.result.model} ({exc.result.engine})"))
        return _interrupted()
    except KeyboardInterrupt:
        if as_json:
            print(json.dumps({"verdict": "interrupted"}))
        return _interrupted()
    except TyperException as exc:  # usage errors: unknown option, bad option value
        _traceback(debug)
        return _error(" ".join(exc.format_message().split()), as_json)
    except Abort:
        return _error("aborted", as_json)
    except UserError as exc:
        _traceback(debug)
        if interrupts.sigterm_received():  # an error the interrupt caused, reported as the model's
            return _interrupted()
        return _error(" ".join(str(exc).split("\n")), as_json)
    except RecursionError as exc:
        _traceback(debug)
        return _error(f"recursion too deep ({exc}); a state or property recurses without end", as_json)
    except Exception as exc:  # a bug: still one line, the traceback with --debug
        _traceback(debug)
        if interrupts.sigterm_received():
            # a library's error while SIGTERM unwound through its C code (confluent-kafka turns the
            # pending interrupt into a TypeError): the command was interrupted, and its cleanup ran
            return _interrupted()
        text = " ".join(str(exc).split("\n"))
        hint = "" if debug else " (rerun with --debug for the traceback)"
        return _error(f"internal error: {type(exc).__name__}: {text}{hint}", as_json)
    return EXIT_HOLDS
