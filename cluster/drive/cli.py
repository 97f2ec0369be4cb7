"""`kmc drive TRACE`: a counterexample played request by request on a real broker."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from kmc.checker.cli.exit_codes import EXIT_HOLDS, EXIT_VIOLATED


def drive(
    trace: Annotated[Path, typer.Argument(help="An ITF trace of a model with a driver (kmc drive --help).")],
    kafka_version: Annotated[
        str | None, typer.Option("--kafka-version", help="Kafka release to drive on (default: the pinned one).")
    ] = None,
    run_dir: Annotated[Path | None, typer.Option("--run-dir", help="Default: kmc-out/drive-<trace>.")] = None,
    cluster: Annotated[
        Path | None, typer.Option("--cluster", help="Drive on a cluster started by `kmc cluster start` (its run dir).")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Where the result goes (default: next to the trace).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Each step on stderr.")] = True,
) -> None:
    """Start a cluster of the release, perform each step of the trace on it (requests sent in the
    trace's order with Kafka's own message classes), compare the broker's answers and reports with
    the model's next state, and say whether the trace's property is violated on the real broker.
    Exit 0 when the broker does what the trace shows, 1 when it diverges, 2 on bad input.
    Drivers: group, group-kip848, producer, transactions, consumer-delivery, streams-group, share-group,
    share-session."""
    from kmc.checker.outputs import check_output_file
    from kmc.checker.traces.files import drive_result_path
    from kmc.cluster.drive.run import drive_trace, write_result

    if out is not None:
        check_output_file(out, "--out", (".json",))

    shown = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else (lambda _line: None)
    result = drive_trace(trace, kafka_version, run_dir=run_dir, progress=shown, cluster_dir=cluster)
    written = write_result(result, out or drive_result_path(trace, result.release))
    if as_json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        print(
            f"{trace}: Kafka {result.release}: {result.verdict} ({len(result.steps)} of {result.total_steps} steps, "
            f"{result.seconds:.1f} s)"
        )
        print(f"result: {written}")
    if result.interrupted:
        raise KeyboardInterrupt  # kmc says so and exits 130 or 143, the result kept
    raise typer.Exit(EXIT_HOLDS if result.agreed else EXIT_VIOLATED)
