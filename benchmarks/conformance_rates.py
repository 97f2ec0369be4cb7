"""How fast Kafka's classes answer: decisions compared per second, for every oracle.

    python benchmarks/conformance_rates.py [--only NAME ...]

Each row is one `kmc conform` run (the model's BFS with its oracles, or an input oracle's table);
the rate is decisions compared per second spent inside the oracle (building Kafka's inputs from
the state, the call into Kafka's class through JPype, and reading its answer back), so the BFS's
own time does not dilute it. The JVM starts once, before the first row. Results go to
benchmarks/results/DATE-conformance-rates.json and the table in docs/conformance.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

from kmc.checker.conformance.run import ConformJob, conform_table
from kmc.checker.engines.bfs.options import BfsOptions

ROWS: list[tuple[str, str | None, dict[str, str]]] = [
    ("assignors", None, {"table": "exhaustive"}),
    ("group", None, {}),
    ("group", "cooperative-sticky", {}),
    ("kraft-replication", None, {}),
    ("kraft-replication", "unclean", {}),
    ("group-kip848", None, {}),
    ("kraft-quorum", None, {"max_epoch": "1"}),
    ("producer", "zombie", {}),
    ("transactions", "zombie", {}),
    ("consumer-delivery", "eos-v2-kip-848", {}),
]


def run_row(target: str, preset: str | None, sets: dict[str, str]) -> list[dict[str, object]]:
    job = ConformJob(target=target, preset=preset, overrides=sets, bfs_options=BfsOptions())
    started = time.perf_counter()
    table = job.input_oracle()
    if table is not None:
        tallies, states = [conform_table(table)], None
    else:
        outcome = job.run()
        tallies, states = outcome.tallies, outcome.check.stats.distinct_states
    elapsed = time.perf_counter() - started
    rows = []
    for t in tallies:
        rows.append(
            {
                "target": target,
                "preset": preset,
                "set": sets,
                "oracle": t.oracle,
                "distinct_states": states,
                "cases_or_steps": t.states if table is not None else t.steps,
                "decisions": t.comparisons,
                "mismatches": t.mismatches,
                "oracle_seconds": round(t.seconds, 3),
                "decisions_per_s": round(t.per_second),
                "run_seconds": round(elapsed, 2),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", help="Only rows whose target is one of these.")
    args = parser.parse_args()
    results = []
    for target, preset, sets in ROWS:
        if args.only and target not in args.only:
            continue
        for row in run_row(target, preset, sets):
            results.append(row)
            print(
                f"{row['target']:<18} {row['preset'] or '(default)':<20} {row['oracle']:<20} "
                f"{row['cases_or_steps']:>9,} compared {row['decisions']:>9,} decisions "
                f"{row['mismatches']:>3} mismatches {row['decisions_per_s']:>9,}/s  ({row['run_seconds']} s)",
                flush=True,
            )
    out = Path(__file__).parent / "results" / f"{datetime.date.today()}-conformance-rates.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"-> {out}")


if __name__ == "__main__":
    main()
