"""Benchmark: what the liveness check adds to the safety search, on a graph of over a million states.

    python benchmarks/liveness_scale.py                  # kraft-quorum --set max_restarts=1
    python benchmarks/liveness_scale.py --set voters=4 --set max_restarts=0 --set max_partitions=0

One run of this script checks the same model twice, each time in a fresh child process so that its
peak resident memory is its own: once with the safety properties only, once with every property,
safety and liveness (the BFS then keeps the graph as arrays, and the liveness check runs on them).
It reports the safety search time, the time the liveness check adds, their ratio (in wall seconds,
and in CPU seconds of each child, which what else runs on the machine disturbs less), and the
extra memory per state as the difference of the two runs' peak RSS (ru_maxrss) divided by the
number of states. The liveness properties must hold, so that the check examines the whole graph.
Results are written to benchmarks/results/DATE-liveness-scale.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(model: str, preset: str | None, sets: list[str], mode: str) -> dict:
    """One check in this process: its times (wall and CPU) and this process's peak RSS."""
    from kmc.checker import Check, runner
    from kmc.checker.model import parse_sets

    liveness = {"wall_s": 0.0, "cpu_s": 0.0}
    check_liveness = runner.check_liveness

    def timed(*args: object, **kwargs: object) -> object:  # the liveness check alone, as the runner calls it
        wall, used = time.perf_counter(), cpu()
        try:
            return check_liveness(*args, **kwargs)
        finally:
            liveness["wall_s"] += time.perf_counter() - wall
            liveness["cpu_s"] += cpu() - used

    runner.check_liveness = timed
    overrides = parse_sets(sets)
    check = Check(model, preset=preset, overrides=overrides)
    _model, props = check.build()
    names = [p.name for p in (*props.invariants, *props.steps)]
    if mode == "liveness":
        names += [p.name for p in props.liveness]
    check.property_names = names
    start, used = time.perf_counter(), cpu()
    result = check.run()
    wall, used = time.perf_counter() - start, cpu() - used
    return {
        "mode": mode,
        "properties": names,
        "status": result.status.value,
        "violations": [v.property for v in result.violations],
        "distinct_states": result.stats.distinct_states,
        "search_s": round(result.stats.elapsed_s, 2),
        "check_s": round(wall, 2),
        "check_cpu_s": round(used, 2),
        "liveness_s": round(liveness["wall_s"], 2),
        "liveness_cpu_s": round(liveness["cpu_s"], 2),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "warnings": result.warnings,
    }


def run_child(args: argparse.Namespace, mode: str) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, "--model", args.model]
    if args.preset:
        cmd += ["--preset", args.preset]
    for s in args.set:
        cmd += ["--set", s]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no output"]
        print(f"liveness_scale: the {mode} run failed: {lines[-1]}", file=sys.stderr)
        raise SystemExit(2)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="kraft-quorum")
    parser.add_argument("--preset", default=None)
    parser.add_argument("--set", action="append", default=None, help="config key=value (repeatable)")
    parser.add_argument("--child", choices=("safety", "liveness"), help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help="the JSON file (default: benchmarks/results/)")
    args = parser.parse_args()
    if args.set is None:
        args.set = ["max_restarts=1"]
    if args.child:
        from kmc.checker.errors import UserError

        try:
            print(json.dumps(child(args.model, args.preset, args.set, args.child)))
        except UserError as exc:
            print(exc, file=sys.stderr)
            raise SystemExit(2) from None
        return

    safety = run_child(args, "safety")
    print(
        f"safety:   {safety['distinct_states']:,} states, search {safety['search_s']} s "
        f"({safety['check_cpu_s']} s CPU)",
        flush=True,
    )
    live = run_child(args, "liveness")
    print(
        f"liveness: {live['distinct_states']:,} states, search {live['search_s']} s, liveness check "
        f"{live['liveness_s']} s ({live['check_cpu_s']} s CPU in all, {live['liveness_cpu_s']} s of it the "
        "liveness check)",
        flush=True,
    )
    if live["distinct_states"] != safety["distinct_states"]:
        raise SystemExit("the two runs explored different state counts")
    states = safety["distinct_states"]
    extra_s = live["check_s"] - safety["check_s"]
    extra_cpu_s = live["check_cpu_s"] - safety["check_cpu_s"]
    extra_bytes = live["peak_rss_bytes"] - safety["peak_rss_bytes"]
    summary = {
        "benchmark": f"liveness at scale: {args.model}"
        + (f" --preset {args.preset}" if args.preset else "")
        + "".join(f" --set {s}" for s in args.set),
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f} at the end (a shared machine)",
        "distinct_states": states,
        "safety_search_s": safety["search_s"],
        "safety_check_s": safety["check_s"],
        "liveness_run_search_s": live["search_s"],
        "liveness_check_s": live["liveness_s"],
        "liveness_run_check_s": live["check_s"],
        "liveness_extra_s": round(extra_s, 2),
        "extra_over_safety_search": round(extra_s / safety["search_s"], 2),
        "cpu": "the same in CPU seconds of each child (less sensitive to what else the machine runs)",
        "safety_check_cpu_s": safety["check_cpu_s"],
        "liveness_run_check_cpu_s": live["check_cpu_s"],
        "liveness_check_cpu_s": live["liveness_cpu_s"],
        "liveness_extra_cpu_s": round(extra_cpu_s, 2),
        "extra_cpu_over_safety_cpu": round(extra_cpu_s / safety["check_cpu_s"], 2),
        "memory": "peak RSS (ru_maxrss) of the liveness run minus that of the safety run, per state",
        "safety_peak_rss_mb": round(safety["peak_rss_bytes"] / 2**20),
        "liveness_peak_rss_mb": round(live["peak_rss_bytes"] / 2**20),
        "extra_bytes_per_state": round(extra_bytes / states, 1),
        "runs": [safety, live],
    }
    print(
        f"extra time {summary['liveness_extra_s']} s = {summary['extra_over_safety_search']}x the safety search "
        f"(CPU: {summary['liveness_extra_cpu_s']} s = {summary['extra_cpu_over_safety_cpu']}x); "
        f"extra memory {summary['extra_bytes_per_state']} bytes/state (peak RSS)"
    )
    out = args.out or HERE / "results" / f"{summary['date']}-liveness-scale.json"
    out.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
