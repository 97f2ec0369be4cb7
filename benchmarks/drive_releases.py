"""Every checked-in counterexample of a model with a driver, driven on several Kafka releases.

    python benchmarks/drive_releases.py [--release 3.5.2 --release 4.3.1 ...] [--model streams-group ...]

One three-node cluster per release (its own process: a process holds one release's classes), every
trace driven on it in turn. A trace with an action the driver cannot perform is listed with the
reason. Results go to benchmarks/results/DATE-drive-releases.json (with --model, the rows of the
other models already there are kept) and the table in docs/driving-traces.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COUNTEREXAMPLES = ROOT / "counterexamples"
RELEASES = ("3.5.2", "3.6.2", "3.9.1", "4.0.2", "4.3.1", "4.4.0")


def traces(models: list[str] | None = None) -> list[Path]:
    from kmc.cluster.drive import drivers

    folders = {name: COUNTEREXAMPLES / name for name in drivers() if not models or name in models}
    return sorted(p for folder in folders.values() for p in folder.glob("*.itf.json"))


def drive_all(release: str, models: list[str] | None = None) -> list[dict[str, object]]:
    """Drive every trace on clusters of ``release`` (run in a process of its own): one for every
    trace, another for the traces whose driver needs settings the others' cluster must not have
    (KIP-848 switched on before 4.0 also moves classic groups to the new coordinator)."""
    from kmc.checker.errors import UserError
    from kmc.cluster.drive import drivers
    from kmc.cluster.drive.run import check_release, features_of, load, settings_of
    from kmc.cluster.release import Release

    wanted = Release.parse(release)
    base: dict[str, str] = {}
    for driver in drivers().values():
        base.update(driver.settings)
    rows: list[dict[str, object]] = []
    by_settings: dict[tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]], list[Path]] = {}
    for path in traces(models):
        row: dict[str, object] = {"trace": str(path.relative_to(COUNTEREXAMPLES)), "release": release}
        try:
            done, driver = load(path)
            check_release(driver, wanted, done.model)
        except UserError as exc:
            rows.append({**row, "outcome": "not driven", "detail": str(exc)})
            continue
        extra = {k: v for k, v in settings_of(driver, wanted).items() if base.get(k) != v}
        features = features_of(driver, wanted)
        by_settings.setdefault((tuple(sorted(extra.items())), tuple(sorted(features.items()))), []).append(path)
    for (extra, features), paths in by_settings.items():
        rows.extend(_drive_on_one_cluster(wanted, {**base, **dict(extra)}, dict(features), paths))
    return sorted(rows, key=lambda row: str(row["trace"]))


def _drive_on_one_cluster(
    release: object, settings: dict[str, str], features: dict[str, str], paths: list[Path]
) -> list[dict[str, object]]:
    from kmc.cluster.cluster import ClusterSpec, started
    from kmc.cluster.drive.run import drive_trace

    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="kmc-drive-releases-") as base:
        Path(base).chmod(0o711)
        spec = ClusterSpec(nodes=3, release=release, settings=settings, features=features, node_users=False)
        with started(Path(base) / "cluster", spec) as cluster:
            for path in paths:
                row: dict[str, object] = {"trace": str(path.relative_to(COUNTEREXAMPLES)), "release": str(release)}
                began = time.monotonic()
                try:
                    result = drive_trace(path, cluster=cluster)
                except Exception as exc:
                    rows.append({**row, "outcome": "error", "detail": f"{type(exc).__name__}: {exc}"})
                    continue
                outcome = "reproduces" if result.agreed and result.violated_on_broker else "diverges"
                if result.agreed and result.violated_on_broker is None:
                    outcome = "not confirmed"
                elif result.agreed and not result.violated_on_broker:
                    outcome = "agrees, not violated"
                rows.append(
                    {
                        **row,
                        "outcome": outcome,
                        "detail": result.verdict,
                        "steps": f"{len(result.steps)}/{result.total_steps}",
                        "seconds": round(time.monotonic() - began, 1),
                        "reordered": list(result.reordered),
                        "differences": [d.to_json() for s in result.steps if not s.agreed for d in s.differences],
                    }
                )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", action="append", help="a Kafka release (repeatable)")
    parser.add_argument("--model", action="append", help="only this model's traces (repeatable)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(drive_all(args.one, args.model)))
        return
    rows: list[dict[str, object]] = []
    only = [arg for model in args.model or [] for arg in ("--model", model)]
    for release in args.release or RELEASES:
        done = subprocess.run(
            [sys.executable, __file__, "--one", release, *only],
            capture_output=True,
            text=True,
            check=False,
            timeout=1800,
        )
        if done.returncode != 0:
            print(f"Kafka {release}: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            continue
        rows.extend(json.loads(done.stdout.strip().splitlines()[-1]))
    day = datetime.date.today().isoformat()
    out = ROOT / "benchmarks" / "results" / f"{day}-drive-releases.json"
    if args.model and out.is_file():  # the other models' rows of the day stay
        kept = [r for r in json.loads(out.read_text()) if str(r["trace"]).split("/")[0] not in args.model]
        rows = kept + rows
    out.write_text(json.dumps(rows, indent=2) + "\n")
    by_trace: dict[str, dict[str, str]] = {}
    for row in rows:
        by_trace.setdefault(str(row["trace"]), {})[str(row["release"])] = str(row["outcome"])
    releases = sorted({str(r["release"]) for r in rows}, key=lambda r: tuple(int(x) for x in r.split(".")))
    print("| trace | " + " | ".join(releases) + " |")
    print("|---|" + "---|" * len(releases))
    for trace, outcomes in by_trace.items():
        if args.model and trace.split("/")[0] not in args.model:
            continue
        print(f"| `{trace}` | " + " | ".join(outcomes.get(r, "") for r in releases) + " |")
    print(f"\nresults: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
