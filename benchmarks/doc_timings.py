"""Benchmark: the run times the docs quote, measured as a user sees them.

    python benchmarks/doc_timings.py                       # every timing, 3 rounds (1 for the long ones)
    python benchmarks/doc_timings.py --only zk-controller --only kraft-quorum

A doc that says how long something takes names the timing after the figure, as
``about 25 s <!-- timing: replication-kip-320-r3 -->``, and tests/test_doc_timings.py holds the
figure to the median recorded here (within a factor of 1.5, as "about" allows). Each timing is the
wall-clock time of the whole command, start-up included, since that is what the reader waits for.
Results go to benchmarks/results/DATE-doc-timings.json; the test reads the newest such file.
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
import tomllib
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
KMC = [sys.executable, "-m", "kmc.checker.cli"]


def _kmc(*args: str) -> Callable[[Path], float]:
    """A kmc command, timed from start to exit (exit 0, 1 and 3 are verdicts, not failures)."""

    def run(scratch: Path) -> float:
        start = time.perf_counter()
        done = subprocess.run(
            [*KMC, *args, *(["--no-progress"] if args[0] == "check" else []), "--out", str(scratch)],
            capture_output=True,
            text=True,
            timeout=3600,
            cwd=ROOT,
        )
        seconds = time.perf_counter() - start
        if done.returncode not in (0, 1, 3):
            raise SystemExit(f"kmc {' '.join(args)} failed: {done.stderr.strip()[-400:]}")
        return seconds

    return run


def _cluster(part: str) -> Callable[[Path], float]:
    """`kmc cluster start` or `stop` of a three-node cluster of the pinned release."""

    def run(scratch: Path) -> float:
        scratch.chmod(0o711)  # the nodes run as users of their own and must pass through it
        run_dir = scratch / "cluster"
        start = time.perf_counter()
        started = subprocess.run([*KMC, "cluster", "start", "--run-dir", str(run_dir)], capture_output=True, text=True)
        up = time.perf_counter() - start
        start = time.perf_counter()
        stopped = subprocess.run([*KMC, "cluster", "stop", "--run-dir", str(run_dir)], capture_output=True, text=True)
        down = time.perf_counter() - start
        if started.returncode or stopped.returncode:
            raise SystemExit(f"kmc cluster failed: {started.stderr.strip()[-400:]} {stopped.stderr.strip()[-400:]}")
        return up if part == "start" else down

    return run


def _jvm_start(_scratch: Path) -> float:
    """The oracles' JVM started on the pinned release's jars, inside a fresh Python process."""
    code = (
        "import time; from kmc.oracles import jvm; t = time.perf_counter(); jvm.start(); print(time.perf_counter() - t)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return float(done.stdout.strip().splitlines()[-1])


def _suite_properties(model: str, preset: str) -> list[str]:
    """The properties the suite's exhaustive check of a preset names: the docs quote that run."""
    suite = tomllib.loads((ROOT / "counterexamples" / "suite.toml").read_text())
    entry = next(
        e
        for e in suite["check"]
        if (e["model"], e.get("preset"), e.get("expect")) == (model, preset, "holds-complete") and not e.get("set")
    )
    return list(entry["properties"])


TIMINGS: dict[str, tuple[Callable[[Path], float], int]] = {
    # name: (what to time, the most rounds worth its time)
    "replication-kip-320-r3": (_kmc("check", "replication", "--preset", "kip-320", "--set", "replicas=3"), 3),
    "zk-controller": (_kmc("check", "zk-controller"), 3),
    "kraft-quorum": (_kmc("check", "kraft-quorum"), 3),
    "group-kip848": (_kmc("check", "group-kip848"), 3),
    "group-kip848-pre-kafka-16615": (_kmc("check", "group-kip848", "--preset", "pre-kafka-16615"), 3),
    "kraft-replication": (_kmc("check", "kraft-replication"), 3),
    "kraft-replication-reassignment": (
        _kmc(
            "check",
            "kraft-replication",
            "--preset",
            "reassignment",
            *(f"-P{p}" for p in _suite_properties("kraft-replication", "reassignment")),
        ),
        3,
    ),
    "kraft-replication-pre-kip-320": (
        _kmc("check", "kraft-replication", "--preset", "pre-kip-320", "--store", "fingerprints"),
        1,
    ),
    "share-group-membership": (_kmc("check", "share-group-membership"), 3),
    "share-session": (_kmc("check", "share-session"), 3),
    "consumer-membership": (_kmc("check", "consumer-membership"), 3),
    "diff-steps-kraft-replication": (
        _kmc("diff", "kraft-replication", "--preset", "pre-kip-966", "--preset", "kip-966", "--only", "steps"),
        3,
    ),
    "diff-kraft-replication": (_kmc("diff", "kraft-replication", "--preset", "pre-kip-966", "--preset", "kip-966"), 1),
    "diff-kraft-quorum": (_kmc("diff", "kraft-quorum", "--preset", "kip-595", "--preset", "kip-996"), 1),
    "cluster-start": (_cluster("start"), 3),
    "cluster-stop": (_cluster("stop"), 3),
    "jvm-start": (_jvm_start, 3),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(TIMINGS), help="Time these only (repeatable).")
    parser.add_argument("--rounds", type=int, default=3, help="Rounds of each timing (at most its own limit).")
    parser.add_argument("--merge", action="store_true", help="Add to today's results file instead of replacing it.")
    args = parser.parse_args()
    today = datetime.date.today().isoformat()
    path = HERE / "results" / f"{today}-doc-timings.json"
    timings: dict[str, dict] = json.loads(path.read_text())["timings"] if args.merge and path.exists() else {}
    for name in args.only or TIMINGS:
        measure, most = TIMINGS[name]
        seconds = []
        for _ in range(min(args.rounds, most)):
            with tempfile.TemporaryDirectory(prefix="kmc-doc-timing-") as scratch:
                seconds.append(round(measure(Path(scratch)), 2))
        timings[name] = {"seconds": seconds, "median_s": round(statistics.median(seconds), 2)}
        print(f"{name}: {timings[name]['median_s']} s ({seconds})", flush=True)
        _write(path, today, timings)  # after each timing, so a failure later keeps what was measured
    print(f"-> {path}")


def _write(path: Path, today: str, timings: dict[str, dict]) -> None:
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    doc = {"date": today, "machine": machine, "load": os.getloadavg(), "timings": timings}
    path.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
