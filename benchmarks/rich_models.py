"""Benchmark: the rich models' safety search, this tree against an older commit, in one run.

    python benchmarks/rich_models.py                      # every configuration, 3 rounds
    python benchmarks/rich_models.py --model group --rounds 5
    python benchmarks/rich_models.py --base 6f68187       # the commit to compare with
    python benchmarks/rich_models.py --tag c-successors   # results/DATE-rich-models-all-c-successors.json

The older commit is checked out in a temporary git worktree (its C extension built there) and
imported ahead of the installed toolkit, so both run the same `kmc check` command line. Each
round runs the old and the new code back to back, configuration by configuration, because the
machine's speed drifts; the reported time is the median of the rounds. Both check the same
safety properties (those both versions define), so the state counts are identical unless the
model itself changed. Every run goes on past violations (`--continue`), so a configuration with a
known violation is searched whole too; the largest one is capped at 10^6 states unless `--whole`.
`replication` (kip-320, 3 replicas) runs in every round as the yardstick for states per second.
Where a model's semantics changed since the older commit (new
mechanisms behind flags that the configuration turns on), the counts differ; the script then says
so and compares states per second instead. Results are recorded in benchmarks/results/.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_BASE = "6f68187"  # the code when the performance issue was opened

CONFIGS: list[tuple[str, list[str]]] = [
    ("replication", ["--preset", "kip-320", "--set", "replicas=3"]),
    ("kraft-replication", []),
    # 7,297,479 states, 701 s at the base commit: the first 10^6 of them, by default
    (
        "kraft-replication",
        ["--set", "brokers=3", "--set", "max_records=1", "--set", "max_leader_epoch=2", "--max-states", "1000000"],
    ),
    ("kraft-quorum", []),
    ("kraft-quorum", ["--set", "voters=4", "--set", "max_partitions=0"]),
    ("group", []),
    ("group", ["--set", "max_faults=2"]),
    ("group-kip848", []),
    ("group-kip848", ["--set", "max_faults=2"]),
]

LIST_SAFETY = """
import json, sys
from kmc.checker.registry import load_model_class
from kmc.checker.properties import model_properties
cls = load_model_class(sys.argv[1])
print(json.dumps(sorted(p.name for p in model_properties(cls) if p.kind in ("invariant", "step"))))
"""


def base_tree(commit: str) -> Path:
    """`commit` installed (with its C extensions, built as its own setup.py says) into a folder of
    its own, to be put on PYTHONPATH: the toolkit of any commit, whatever its layout."""
    sha = subprocess.run(
        ["git", "rev-parse", "--short", commit], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    work = Path(tempfile.gettempdir()) / f"kmc-bench-base-{sha}"
    if not (work / "checker").is_dir():
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(work), sha], cwd=ROOT, check=True, capture_output=True
        )
    root = work / "_installed"
    if not (root / "kmc").is_dir():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(root), str(work)],
            check=True,
            capture_output=True,
        )
    return root


def git_head() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip()


def env_for(importable: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if importable is not None:
        env["PYTHONPATH"] = str(importable)
    return env


def safety_properties(model: str, importable: Path | None) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", LIST_SAFETY, model], env=env_for(importable), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def run(model: str, args: list[str], properties: list[str], importable: Path | None) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "kmc.checker.cli",
        "check",
        model,
        *args,
        "--continue",
        "--json",
        "--no-progress",
        "--out",
        tempfile.mkdtemp(prefix="kmc-bench-"),
    ]
    for name in properties:
        cmd += ["--property", name]
    done = subprocess.run(cmd, env=env_for(importable), capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip()[-2000:]}")
    data = json.loads(done.stdout)
    return {
        "distinct_states": data["distinct_states"],
        "generated_states": data.get("generated_states"),
        "depth": data.get("depth"),
        "search_s": data["elapsed_s"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default=DEFAULT_BASE, help="the commit to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", action="append", help="only these models (replication always runs)")
    parser.add_argument("--whole", action="store_true", help="no --max-states cap on the largest configuration")
    parser.add_argument("--tag", help="a word for the results file name, so a run keeps others of its day")
    args = parser.parse_args()
    if args.whole:
        CONFIGS[:] = [(m, [a for a in c if a not in ("--max-states", "1000000")]) for m, c in CONFIGS]
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    configs = [(m, a) for m, a in CONFIGS if m == "replication" or not args.model or m in args.model]
    if len(configs) == 1 and args.model:
        parser.error(f"no configuration for {args.model}: choose from {sorted({m for m, _ in CONFIGS})}")

    base = base_tree(args.base)
    props: dict[str, list[str]] = {}
    for model in dict.fromkeys(m for m, _ in configs):
        new, old = safety_properties(model, None), safety_properties(model, base)
        props[model] = [p for p in new if p in old]

    times: dict[int, dict[str, list[float]]] = {i: {"old": [], "new": []} for i in range(len(configs))}
    counts: dict[int, dict] = {}
    for r in range(args.rounds):
        for i, (model, cargs) in enumerate(configs):
            for side, tree in (("old", base), ("new", None)):
                res = run(model, cargs, props[model], tree)
                key = (res["distinct_states"], res["generated_states"], res["depth"])
                seen = counts.setdefault(i, {}).setdefault(side, key)
                if seen != key:
                    raise SystemExit(f"{model} {' '.join(cargs)}: {side} gives {key} in round {r + 1}, {seen} before")
                times[i][side].append(res["search_s"])
                print(
                    f"round {r + 1} {side} {model} {' '.join(cargs)}: {res['distinct_states']:,} states "
                    f"in {res['search_s']:.2f} s",
                    flush=True,
                )

    rows = []
    for i, (model, cargs) in enumerate(configs):
        old, new = statistics.median(times[i]["old"]), statistics.median(times[i]["new"])
        (states, generated, depth), old_key = counts[i]["new"], counts[i]["old"]
        row = {
            "model": model,
            "args": " ".join(cargs),
            "properties": props[model],
            "distinct_states": states,
            "generated_states": generated,
            "depth": depth,
            "old_s": times[i]["old"],
            "new_s": times[i]["new"],
            "old_median_s": old,
            "new_median_s": new,
            "speedup": round(old / new, 2),
            "new_states_per_s": round(states / new),
            "same_states": True,
        }
        if old_key != counts[i]["new"]:  # the model's semantics changed since the base: compare rates
            row.update(
                same_states=False,
                old_distinct_states=old_key[0],
                old_generated_states=old_key[1],
                speedup=round((states / new) / (old_key[0] / old), 2),
            )
            print(
                f"note: {model} {row['args']}: {old_key[0]:,} states before, {states:,} now; "
                "its speedup compares states per second",
                file=sys.stderr,
            )
        rows.append(row)
    yardstick = rows[0]["new_states_per_s"]
    for row in rows:
        row["share_of_replication_rate"] = round(row["new_states_per_s"] / yardstick, 2)
    record = {
        "benchmark": f"safety search, {args.base} against this tree, median of {args.rounds} rounds",
        "base": args.base,
        "head": git_head(),
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "rows": rows,
    }
    suffix = "-".join(args.model) if args.model else "all"
    if args.tag:
        suffix += f"-{args.tag}"
    out = HERE / "results" / f"{record['date']}-rich-models-{suffix}.json"
    out.write_text(json.dumps(record, indent=2) + "\n")
    print("| model | settings | states | before | after | speedup | states/s | of replication's |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        states = f"{row['distinct_states']:,}"
        if not row["same_states"]:
            states += f" (was {row['old_distinct_states']:,})"
        print(
            f"| {row['model']} | {row['args'] or 'defaults'} | {states} | "
            f"{row['old_median_s']:.1f} s | {row['new_median_s']:.1f} s | {row['speedup']}x | "
            f"{row['new_states_per_s']:,} | {row['share_of_replication_rate']}x |"
        )
    print(f"recorded in {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
