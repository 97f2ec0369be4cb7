"""Benchmark: the Spark engine against the single-process BFS, and 1 vs 2 standalone workers.

    python benchmarks/spark_scaling.py                 # all cases (about 25 minutes on 2 cores)
    python benchmarks/spark_scaling.py --cases medium  # only the ~10^6-state case

Each run is a `kmc check --json` subprocess; a sampler adds up the resident memory of the whole
process tree (driver, JVM, Python workers) every 0.2 s, since the driver alone hides most of it.
Spark runs also report the visited set's size (the shards' bytes, summed over the executors).
Results are recorded in benchmarks/results/.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kmc.checker.engines.spark.cluster import LocalCluster

HERE = Path(__file__).resolve().parent
CASES = {
    # name: (preset, config overrides)
    "medium": ("kip-320-first-try", {"replicas": 3}),
    "large": ("kip-320", {"replicas": 3, "max_leader_epoch": 3}),
}


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants."""
    total, todo = 0, [pid]
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/statm") as fh:
                total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
        todo.extend(children.get(current, []))
    return total


def run(label: str, args: list[str], properties: list[str]) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "kmc.checker.cli",
        "check",
        "replication",
        *args,
        *properties,
        "--json",
        "--no-progress",
        "--out",
        tempfile.mkdtemp(),
    ]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss(proc.pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    sampler.join()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{label} failed: {err.strip()}")
    data = json.loads(out)
    row = {
        "run": label,
        "distinct_states": data["distinct_states"],
        "depth": data["depth"],
        "search_s": data["elapsed_s"],
        "wall_s": round(wall, 1),
        "states_per_s": round(data["distinct_states"] / data["elapsed_s"]),
        "driver_peak_mb": round(data["peak_memory_bytes"] / 2**20),
        "process_tree_peak_mb": round(peak[0] / 2**20),
    }
    if "visited_bytes" in data:
        row["visited_bytes_per_state"] = round(data["visited_bytes"] / data["distinct_states"], 2)
        row["restarts"] = data["restarts"]
        row["moved_states"] = data["moved_states"]
        row["task_wait_s"] = data["task_wait_s"]
    print(json.dumps(row), flush=True)
    return row


def spark_args(master: str, partitions: int) -> list[str]:
    return ["--engine", "spark", "--spark-master", master, "--partitions", str(partitions), "--driver-memory", "4g"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--partitions", type=int, default=2, help="shards (the engine defaults to one per core)")
    parser.add_argument(
        "--runs",
        nargs="*",
        default=["bfs", "local", "standalone"],
        choices=["bfs", "workers", "local", "standalone"],
        help="workers: bfs --workers with one worker a core",
    )
    parser.add_argument("--tag", default="", help="added to the results file's name, to keep runs of one day apart")
    parser.add_argument(
        "--default-properties", action="store_true", help="check the model's default properties, not LeaderInIsr alone"
    )
    args = parser.parse_args()
    properties = [] if args.default_properties else ["--property", "LeaderInIsr"]
    record: dict = {
        "benchmark": "replication: single-process bfs vs spark local[2] vs standalone workers",
        "properties": "default" if args.default_properties else "LeaderInIsr",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "cases": {},
    }
    scratch = Path(tempfile.mkdtemp(prefix="kmc-bench-"))
    for name in args.cases:
        preset, overrides = CASES[name]
        base = ["--preset", preset] + [f"--set={k}={v}" for k, v in overrides.items()]
        rows = []
        if "bfs" in args.runs:
            rows.append(run("bfs (one process)", base, properties))
        if "workers" in args.runs:
            cores = os.cpu_count() or 1
            rows.append(run(f"bfs --workers {cores}", [*base, "--workers", str(cores)], properties))
        if "local" in args.runs:
            rows.append(run("spark local[2]", base + spark_args("local[2]", args.partitions), properties))
        if "standalone" in args.runs:
            for workers in (1, 2):
                with LocalCluster(scratch / f"cluster-{workers}", workers=workers) as cluster:
                    label = f"spark standalone, {workers} worker(s) x 1 core"
                    rows.append(run(label, base + spark_args(cluster.master_url, args.partitions), properties))
        counts = {r["distinct_states"] for r in rows}
        if len(counts) != 1:
            raise SystemExit(f"state counts differ in {name}: {rows}")
        record["cases"][f"{name}: {preset} {overrides}"] = rows
    shutil.rmtree(scratch, ignore_errors=True)
    tag = f"-{args.tag}" if args.tag else ""
    # a run of the default properties is named apart, so that the two kinds of run never overwrite each other
    checked = "-default-properties" if args.default_properties else ""
    name = f"{record['date']}-spark-scaling-{'-'.join(args.cases)}-{'-'.join(args.runs)}{tag}{checked}.json"
    out = HERE / "results" / name
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"recorded in {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
