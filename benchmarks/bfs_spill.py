"""Benchmark: the one-process BFS on a run larger than its memory budget (``--memory``).

    python benchmarks/bfs_spill.py                      # the full run: replication kip-320, 4 replicas, --memory 2g
    python benchmarks/bfs_spill.py --scale large        # 9,985,570 states (3.6 GB in memory) under --memory 1g
    python benchmarks/bfs_spill.py --scale medium       # 737,794 states under --memory 64m, and in memory
    python benchmarks/bfs_spill.py --probe 300000       # how fast the full configuration grows (bounded)
    python benchmarks/bfs_spill.py --stores             # 9,985,570 states in every store: bytes a state
    python benchmarks/bfs_spill.py --stores --only spilled   # the same, in the named stores only

The full run is replication's kip-320 preset with 4 replicas: a probe bounded at 300,000 states
reaches only depth 9 of it (3 replicas: 20,935 states by depth 9 of 737,794 in all), which puts the
whole space well past 5*10^7 states -- tens of gigabytes held in memory at the ~450 bytes a state
the in-memory fingerprint search costs, so a budget of 2g is far below what it needs. It runs for
hours on one core: start it and come back. ``--scale large`` is 3 replicas with
``max_leader_epoch=3`` (9,985,570 states, 3.6 GB when held in memory: docs/performance.md) under
``--memory 1g``; ``--scale medium`` is 3 replicas under a budget of a fifth of what the search
takes in memory, with the in-memory run beside it.

``--stores`` runs the large scale once in each store -- the states themselves (``--store states``),
fingerprints in memory, fingerprints under ``--memory`` -- and a run of a one-state space for the
process's fixed size, so that each store's bytes a state are its peak RSS beyond that size over
its distinct states.

Each run is a fresh ``kmc check ... --json`` process; recorded: distinct and
generated states, depth, the search's own time, the whole process's time and CPU time (the steadier
figure on a shared machine), the peak RSS kmc measured
of itself, and what it spilled (bytes on disk and written, flushes, merges, level spills). Results
go to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCALES = {
    "full": {"sets": ["replicas=4"], "memory": "2g", "in_memory": False},
    "large": {"sets": ["replicas=3", "max_leader_epoch=3"], "memory": "1g", "in_memory": False},
    "medium": {"sets": ["replicas=3"], "memory": "64m", "in_memory": True},
}


def run_kmc(
    sets: list[str], memory: str | None, max_states: int | None, spill_dir: str | None, store: str = "fingerprints"
) -> dict:
    out = tempfile.mkdtemp(prefix="kmc-bench-")
    cmd = [
        sys.executable,
        "-m",
        "kmc.checker.cli",
        "check",
        "replication",
        "--preset",
        "kip-320",
        "--store",
        store,
        "--json",
        "--no-progress",
        "--out",
        out,
    ]
    for item in sets:
        cmd += ["--set", item]
    if memory is not None:
        cmd += ["--memory", memory]
    if max_states is not None:
        cmd += ["--max-states", str(max_states)]
    env = {**os.environ, **({"TMPDIR": spill_dir} if spill_dir else {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(out, ignore_errors=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"kmc failed: {done.stderr.strip()}")
    data = json.loads(done.stdout)
    return {
        "command": " ".join(cmd[3:]),
        "memory": memory,
        "verdict": data["verdict"],
        "complete": data["complete"],
        "distinct_states": data["distinct_states"],
        "generated_states": data["generated_states"],
        "depth": data["depth"],
        "search_s": round(data["elapsed_s"], 2),
        "wall_s": round(wall, 2),
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
        "peak_rss_mb": round(data["peak_memory_bytes"] / 2**20),
        "spill": data.get("spill"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="full")
    parser.add_argument("--memory", help="the budget (default: the scale's)")
    parser.add_argument("--probe", type=int, metavar="N", help="stop at N states (a probe of the size)")
    parser.add_argument("--spill-dir", help="where the spill files go (TMPDIR of the run; default: the system's)")
    parser.add_argument("--tag", default="", help="added to the results file's name")
    parser.add_argument("--stores", action="store_true", help="the large scale in every store, and bytes a state")
    parser.add_argument(
        "--only", action="append", choices=sorted(STORES), help="with --stores: this store only (repeatable)"
    )
    args = parser.parse_args()
    if args.only and not args.stores:
        parser.error("--only names stores of --stores")
    if args.stores:
        record_stores(args.memory or "256m", args.tag, args.only or list(STORES))
        return
    scale = SCALES[args.scale]
    memory = args.memory or scale["memory"]
    runs = [run_kmc(scale["sets"], memory, args.probe, args.spill_dir)]
    print(json.dumps(runs[-1]), flush=True)
    if scale["in_memory"] and args.probe is None:
        runs.append(run_kmc(scale["sets"], None, None, None))
        print(json.dumps(runs[-1]), flush=True)
        if runs[0]["distinct_states"] != runs[1]["distinct_states"]:
            raise SystemExit("the spilled run and the run in memory found different numbers of states")
    record = new_record("bfs-spill", scale=args.scale, probe=args.probe, runs=runs)
    if len(runs) == 2:
        record["spilled_over_in_memory"] = {
            "search_time": round(runs[0]["search_s"] / runs[1]["search_s"], 2),
            "cpu_time": round(runs[0]["cpu_s"] / runs[1]["cpu_s"], 2),
            "peak_rss": round(runs[0]["peak_rss_mb"] / runs[1]["peak_rss_mb"], 2),
        }
    probe = f"-probe{args.probe}" if args.probe else ""
    write_record(record, f"bfs-spill-{args.scale}{probe}", args.tag)


def new_record(benchmark: str, **fields: object) -> dict[str, object]:
    return {
        "benchmark": benchmark,
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        **fields,
    }


def write_record(record: dict[str, object], name: str, tag: str) -> None:
    """benchmarks/results/DATE-NAME[-TAG].json"""
    suffix = f"-{tag}" if tag else ""
    out = HERE / "results" / f"{record['date']}-{name}{suffix}.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"recorded {out.relative_to(HERE.parent)}")


STORES = {"states": ("states", False), "fingerprints": ("fingerprints", False), "spilled": ("fingerprints", True)}
"""Each store of --stores: the --store it runs with, and whether under the --memory budget."""


def record_stores(memory: str, tag: str, stores: list[str]) -> None:
    """The large scale in each store, beside a one-state run that measures the process's fixed size."""
    fixed = run_kmc(["replicas=1", "max_leader_epoch=0", "max_records=0"], None, None, None)
    print(json.dumps(fixed), flush=True)
    sets = SCALES["large"]["sets"]
    runs = []
    for name in stores:
        store, spilled = STORES[name]
        budget = memory if spilled else None
        run = run_kmc(sets, budget, None, None, store)
        run["store"] = store if budget is None else f"{store} --memory {budget}"
        run["bytes_per_state_beyond_fixed"] = round(
            (run["peak_rss_mb"] - fixed["peak_rss_mb"]) * 2**20 / run["distinct_states"], 1
        )
        print(json.dumps(run), flush=True)
        runs.append(run)
    if len({run["distinct_states"] for run in runs}) != 1:
        raise SystemExit("the stores found different numbers of states")
    record = new_record("bfs-stores", fixed_peak_rss_mb=fixed["peak_rss_mb"], runs=runs)
    write_record(record, "bfs-stores", tag)


if __name__ == "__main__":
    main()
