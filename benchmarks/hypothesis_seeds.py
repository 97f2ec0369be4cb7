"""How often the Hypothesis engine finds each known bug with default settings, over 20 seeds,
and how close its shrunk trace is to the BFS shortest one.

    python benchmarks/hypothesis_seeds.py [--seeds 20] [--models replication ...]
    python benchmarks/hypothesis_seeds.py --beyond --seeds 10

``--beyond`` runs the case BFS cannot exhaust in 10 minutes (truncate-to-hw with 5 replicas)
instead; its BFS shortest trace, which BFS does reach, takes a few minutes.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from pathlib import Path

from kmc.checker import BfsOptions, Check
from kmc.checker.engines.hypothesis.options import HypothesisOptions

HERE = Path(__file__).resolve().parent
DEFAULTS = HypothesisOptions()
CASES = [  # model, preset, overrides, property
    ("replication", "truncate-to-hw", {}, "StrongIsr"),
    ("replication", "kip-101", {}, "StrongIsr"),
    ("replication", "kip-279", {"replicas": 3}, "StrongIsr"),
    ("replication", "kip-320-first-try", {"replicas": 3}, "StrongIsr"),
    ("group", "cooperative-unsafe-assignor", {}, "ExclusiveOwnership"),
    ("group", "static-kafka-10284", {}, "NoLiveConsumerFenced"),
    ("group", "static-kafka-9801", {}, "StableAssignmentCovers"),
    ("group", "static-kafka-8500", {}, "OneProcessPerMemberId"),
    ("group-kip848", "pre-kafka-16147", {}, "ValidPartitionEpoch"),
]
BEYOND = [("replication", "truncate-to-hw", {"replicas": 5}, "StrongIsr")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--models", nargs="*", help="only the cases of these models (default: all)")
    parser.add_argument("--beyond", action="store_true", help="the case too large to exhaust, instead")
    args = parser.parse_args()
    rows = []
    for model, preset, overrides, prop in BEYOND if args.beyond else CASES:
        if args.models and model not in args.models:
            continue
        shortest = Check(
            model,
            preset=preset,
            overrides=overrides,
            property_names=[prop],
            bfs_options=BfsOptions(store="fingerprints"),
        ).run()
        bfs_len = shortest.violations[0].trace_length
        found, lengths, times, missed = 0, [], [], []
        for seed in range(1, args.seeds + 1):
            start = time.perf_counter()
            result = Check(
                model,
                preset=preset,
                overrides=overrides,
                property_names=[prop],
                engine_name="hypothesis",
                hypothesis_options=HypothesisOptions(seed=seed),
            ).run()
            times.append(time.perf_counter() - start)
            if result.violations:
                found += 1
                lengths.append(result.violations[0].trace_length)
            else:
                missed.append(seed)
        row = {
            "case": f"{model} {preset} {overrides or ''} {prop}".replace("  ", " "),
            "bfs_shortest": bfs_len,
            "found": f"{found}/{args.seeds}",
            "missed_seeds": missed,
            "shrunk_lengths": sorted(lengths),
            "max_extra_steps": (max(lengths) - bfs_len) if lengths else None,
            "median_s": round(statistics.median(times), 2),
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    suffix = "-beyond" if args.beyond else "-" + "-".join(args.models) if args.models else ""
    out = HERE / "results" / f"{datetime.date.today().isoformat()}-hypothesis-seeds{suffix}.json"
    defaults = f"examples={DEFAULTS.examples}, steps={DEFAULTS.steps}"
    out.write_text(json.dumps({"defaults": defaults, "rows": rows}, indent=2) + "\n")
    print(f"recorded in {out.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
