"""Benchmark: the bfs search on every core (``--workers N``) against one process, paired.

    python benchmarks/bfs_workers.py                       # both workloads, 3 rounds, 2 workers
    python benchmarks/bfs_workers.py --rounds 5 --only kraft-replication-b3-1e6
    python benchmarks/bfs_workers.py --only group-kip848-faults2 --only kraft-replication-b3-full

Each round runs each workload with ``--workers 1`` and then with ``--workers N`` (``os.cpu_count()``
by default), one after the other after a few seconds' rest, so that a drift in the machine's speed
falls on both; the ratio is taken round by round and its median reported. A run's time is kmc's
own ``elapsed_s`` (the search, start-up and the liveness check after it left out). Both runs of a
round must count the same distinct and generated states, or the script stops. Raw results go to
benchmarks/results/DATE-bfs-workers[-TAG].json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def safety(model: str) -> list[str]:
    """``--property`` for each of the model's invariants and step properties, in the model's order:
    a liveness property is checked on one process after the search, which is not what is measured."""
    from kmc.checker.properties import model_properties
    from kmc.checker.registry import load_model_class

    names = [p.name for p in model_properties(load_model_class(model)) if p.kind in ("invariant", "step")]
    return [arg for name in names for arg in ("--property", name)]


WORKLOADS = {
    "replication-kip-320-r3": [
        "replication",
        "--preset",
        "kip-320",
        "--set",
        "replicas=3",
        "--property",
        "StrongIsr",
    ],
    "kraft-replication-b3-1e6": ["kraft-replication", "--set", "brokers=3", "--max-states", "1000000"],
    # the rich models' goals, with their safety properties: group-kip848 with two faults, past violations
    "group-kip848-faults2": ["group-kip848", "--set", "max_faults=2", "--continue", *safety("group-kip848")],
    # and kraft-replication's whole space with 3 brokers (8,058,615 states)
    "kraft-replication-b3-full": [
        "kraft-replication",
        *("--set", "brokers=3", "--set", "max_records=1", "--set", "max_leader_epoch=2"),
        *safety("kraft-replication"),
    ],
}
DEFAULT_WORKLOADS = ("replication-kip-320-r3", "kraft-replication-b3-1e6")
"""What a run without --only measures; the rich models' goals are named with --only."""


def run(args: list[str], workers: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="kmc-bench-") as out:
        cmd = [sys.executable, "-m", "kmc.checker.cli", "check", *args, "--workers", str(workers)]
        cmd += ["--json", "--no-progress", "--no-trace", "--out", out]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if done.returncode not in (0, 1, 3):
        raise SystemExit(f"kmc failed: {done.stderr.strip()}")
    data = json.loads(done.stdout)
    return {
        "workers": workers,
        "distinct_states": data["distinct_states"],
        "generated_states": data["generated_states"],
        "search_s": round(data["elapsed_s"], 3),
        "peak_rss_mb": round(data["peak_memory_bytes"] / 2**20),
        "bytes_per_state": data["bytes_per_state"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds of rest before each run")
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    rows: dict[str, dict] = {}
    for name in args.only or DEFAULT_WORKLOADS:
        runs = []
        for number in range(1, args.rounds + 1):
            pair = []
            for workers in (1, args.workers):
                time.sleep(args.settle)
                pair.append({"round": number, **run(WORKLOADS[name], workers)})
                print(f"{name} round {number}: {pair[-1]}", file=sys.stderr)
            one, many = pair
            if (one["distinct_states"], one["generated_states"]) != (many["distinct_states"], many["generated_states"]):
                raise SystemExit(f"{name}: the two searches differ: {pair}")
            runs.extend(pair)
        ratios = [one["search_s"] / many["search_s"] for one, many in zip(runs[::2], runs[1::2], strict=True)]
        rows[name] = {
            "command": "kmc check " + " ".join(WORKLOADS[name]),
            "distinct_states": runs[0]["distinct_states"],
            "one_process_s": statistics.median(r["search_s"] for r in runs[::2]),
            "workers_s": statistics.median(r["search_s"] for r in runs[1::2]),
            "speedup_median": round(statistics.median(ratios), 3),
            "speedups": [round(r, 3) for r in ratios],
            "runs": runs,
        }
    record = {
        "benchmark": f"bfs --workers {args.workers} against --workers 1, paired rounds",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "command": " ".join(["python", "benchmarks/bfs_workers.py", *sys.argv[1:]]),
        "rounds": args.rounds,
        "workloads": rows,
    }
    tag = f"-{args.tag}" if args.tag else ""
    out = HERE / "results" / f"{record['date']}-bfs-workers{tag}.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"| workload | distinct states | one process | {args.workers} workers | speed-up (median of pairs) |")
    print("|---|---|---|---|---|")
    for name, row in rows.items():
        print(
            f"| {name} | {row['distinct_states']:,} | {row['one_process_s']} s | {row['workers_s']} s | "
            f"{row['speedup_median']}× ({', '.join(map(str, row['speedups']))}) |"
        )
    print(f"recorded in {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
