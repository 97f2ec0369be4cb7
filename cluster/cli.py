"""The real-cluster commands of `kmc`: `kmc cluster start|stop|status`, `kmc campaign` and
`kmc verify`. They join the command through the ``kmc.commands`` entry point group, so the
checker's CLI never imports this package."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from kmc.checker.cli.exit_codes import EXIT_BAD_INPUT, EXIT_HOLDS, EXIT_VIOLATED
from kmc.checker.cli.junit import write_junit
from kmc.checker.errors import UserError
from kmc.checker.model import parse_sets

DEFAULT_CLUSTER_DIR = Path("kmc-out/cluster")


def register(app: typer.Typer) -> None:
    cluster = typer.Typer(help="A Kafka cluster on loopback, started by kmc.", no_args_is_help=True)
    cluster.command("start")(start)
    cluster.command("stop")(stop)
    cluster.command("status")(status)
    app.add_typer(cluster, name="cluster")
    app.command("campaign")(campaign)
    app.command("verify")(verify)
    from kmc.cluster.drive.cli import drive

    app.command("drive")(drive)


RunDir = Annotated[Path, typer.Option("--run-dir", help="The cluster's run directory.")]


def start(
    run_dir: RunDir = DEFAULT_CLUSTER_DIR,
    nodes: Annotated[int, typer.Option(help="Nodes, each a broker and a controller.", min=1, max=9)] = 3,
    release: Annotated[str | None, typer.Option(help="Kafka release (default: the pinned one).")] = None,
    sets: Annotated[list[str], typer.Option("--set", "-s", help="server.properties key=value.")] = [],  # noqa: B006
    base_port: Annotated[
        int | None, typer.Option(min=1024, max=65000, help="First of 2 x nodes ports on 127.0.0.1.")
    ] = None,
    ready_timeout: Annotated[float, typer.Option(help="Seconds the nodes may take to start.", min=0.1)] = 90.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Start a cluster in the background; it runs until `kmc cluster stop`."""
    from kmc.cluster.cluster import Cluster, ClusterSpec
    from kmc.cluster.cluster import status as cluster_status
    from kmc.cluster.release import requested

    began = time.monotonic()
    spec = ClusterSpec(
        nodes=nodes,
        release=requested(release),
        settings=parse_sets(sets),
        base_port=base_port,
        ready_timeout_s=ready_timeout,
    )
    Cluster.start(run_dir, spec, owned=False)
    shown = cluster_status(run_dir.resolve())
    if as_json:
        print(json.dumps({**shown, "started_in_s": round(time.monotonic() - began, 1)}, indent=2))
        return
    print(f"Kafka {shown['release']}: {len(shown['nodes'])} nodes up in {time.monotonic() - began:.1f} s")
    print(f"bootstrap servers: {shown['bootstrap_servers']}")
    print(f"stop it with: kmc cluster stop --run-dir {run_dir}")


def stop(run_dir: RunDir = DEFAULT_CLUSTER_DIR) -> None:
    """Stop a cluster started in the background; remove its firewall rules and users."""
    from kmc.cluster.cluster import stop_background

    stopped = stop_background(run_dir.resolve())
    print(f"stopped {stopped} node(s) in {run_dir}" if stopped else f"nothing was running in {run_dir}")


def status(
    run_dir: RunDir = DEFAULT_CLUSTER_DIR,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """The nodes of a cluster, their ports, and whether each runs; exit 1 if one does not."""
    from kmc.cluster.cluster import status as cluster_status

    shown = cluster_status(run_dir.resolve())
    down = [n["node_id"] for n in shown["nodes"] if not n["running"]]
    if as_json:
        print(json.dumps(shown, indent=2))
    else:
        print(f"Kafka {shown['release']} in {shown['run_dir']}: bootstrap servers {shown['bootstrap_servers']}")
        for n in shown["nodes"]:
            state = "running" if n["running"] else "down"
            print(f"  node {n['node_id']}  {state:7}  broker 127.0.0.1:{n['port']}  controller :{n['controller_port']}")
    if down:
        raise typer.Exit(EXIT_VIOLATED)


def campaign(
    config: Annotated[Path | None, typer.Option(help="A TOML file of the campaign's settings.")] = None,
    run_dir: Annotated[Path | None, typer.Option("--run-dir", help="Default: kmc-out/campaign-<seed>.")] = None,
    seed: Annotated[int | None, typer.Option(help="The fault schedule's seed.")] = None,
    duration: Annotated[float | None, typer.Option(help="Seconds of workload under faults.")] = None,
    faults: Annotated[str | None, typer.Option(help="Comma-separated fault kinds (kmc campaign --help).")] = None,
    acks: Annotated[str | None, typer.Option(help="The producers' acks: 0, 1 or all.")] = None,
    idempotent: Annotated[bool | None, typer.Option("--idempotent/--no-idempotent")] = None,
    transactional: Annotated[bool | None, typer.Option("--transactional/--no-transactional")] = None,
    group_protocol: Annotated[str | None, typer.Option(help="classic or consumer (KIP-848).")] = None,
    isolation: Annotated[str | None, typer.Option(help="read_committed or read_uncommitted.")] = None,
    min_isr: Annotated[int | None, typer.Option(help="The topic's min.insync.replicas.")] = None,
    unclean: Annotated[bool | None, typer.Option("--unclean/--no-unclean", help="Unclean election.")] = None,
    sets: Annotated[list[str], typer.Option("--set", "-s", help="server.properties key=value.")] = [],  # noqa: B006
    release: Annotated[str | None, typer.Option(help="Kafka release (default: the pinned one).")] = None,
    depth: Annotated[int | None, typer.Option(help="Validation: steps between observed states.")] = None,
    validate: Annotated[bool, typer.Option("--validate/--no-validate", help="Validate the metadata log.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    junit: Annotated[Path | None, typer.Option(help="Write a JUnit XML report.")] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Progress on stderr.")] = True,
) -> None:
    """Start a cluster, run a workload under a seeded fault schedule, stop it, check the history and
    validate the metadata log against the models; exit 1 on a finding or when no write was
    acknowledged (nothing tested), 2 on bad input or when a check could not run. Faults: crash, pause,
    partition, one-way-partition, lose-disk, crash-controller, crash-leader, partition-leader,
    cut-followers, lose-controller-disk."""
    from dataclasses import replace

    from kmc.cluster.campaign import CampaignSpec, run_campaign
    from kmc.cluster.release import Release

    raw: dict[str, Any] = {}
    if config is not None:
        raw = _read_toml(config)
    given_seed = seed if seed is not None else raw.get("seed", 0)
    folder = run_dir or Path(f"kmc-out/campaign-{given_seed}")
    spec = CampaignSpec.from_mapping(raw, folder, str(config or "campaign"))
    if seed is not None:
        spec.seed = seed
    if duration is not None:
        spec.duration_s = duration
    if faults is not None:
        spec.bounds = replace(spec.bounds, kinds=tuple(k.strip() for k in faults.split(",") if k.strip()))
    workload = {
        "acks": acks,
        "idempotent": idempotent,
        "transactional": transactional,
        "group_protocol": group_protocol,
        "isolation": isolation,
        "min_insync_replicas": min_isr,
        "unclean_election": unclean,
    }
    spec.workload = replace(spec.workload, **{k: v for k, v in workload.items() if v is not None})
    spec.settings.update(parse_sets(sets))
    if release is not None:
        spec.release = Release.parse(release)
    if depth is not None:
        spec.depth = depth
    spec.validate = validate and spec.validate
    spec.check()
    shown = (lambda line: print(line, file=sys.stderr, flush=True)) if progress else (lambda _line: None)
    result = run_campaign(spec, shown)
    _report(result, as_json, junit, f"kmc campaign seed {spec.seed}")


def verify(
    run_dir: Annotated[Path, typer.Argument(help="A finished campaign's run directory.")],
    depth: Annotated[int | None, typer.Option(help="Validation: steps between observed states.")] = None,
    validate: Annotated[
        bool | None, typer.Option("--validate/--no-validate", help="Validate the metadata log (default: as the run).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    junit: Annotated[Path | None, typer.Option(help="Write a JUnit XML report.")] = None,
) -> None:
    """Check a finished campaign again from its run directory: its history, and its metadata log
    against the models (with another --depth, say); exit 1 on a finding."""
    from kmc.cluster.campaign import check_run, spec_of

    if not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a directory")
    spec = spec_of(run_dir)
    spec.depth = depth if depth is not None else spec.depth
    spec.validate = validate if validate is not None else spec.validate
    spec.check()
    began = time.monotonic()
    result = check_run(run_dir, lambda _line: None, spec)
    result.elapsed_s = time.monotonic() - began
    _report(result, as_json, junit, f"kmc verify {run_dir}")


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"campaign file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"malformed campaign file {path}: {exc}") from None


def _report(result: Any, as_json: bool, junit: Path | None, title: str) -> None:
    from kmc.cluster.report import campaign_cases, campaign_text

    if junit is not None:
        write_junit(junit, title, campaign_cases(result))
    if as_json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(campaign_text(result, title))
    raise typer.Exit({"holds": EXIT_HOLDS, "error": EXIT_BAD_INPUT}.get(result.verdict, EXIT_VIOLATED))
