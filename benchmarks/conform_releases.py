"""Every oracle against every Kafka release from 3.7 on: where each release's code agrees with the models.

    python benchmarks/conform_releases.py [--releases 3.9.2 4.4.0 ...] [--only ORACLE ...]

One `kmc conform` subprocess per (oracle, release), since one process holds one release's classes:
each oracle on its model's default preset and bounds (the assignors on their default tables),
`--kafka-version RELEASE`. A release's jars must be fetched first (`make kafka-jars
KAFKA_VERSION=RELEASE`); a cell whose oracle cannot run on a release holds the one line kmc printed
(exit 2). Results go to benchmarks/results/DATE-conform-releases.json, with each first mismatch
(question, both answers), and a markdown table is printed: the table in docs/conformance.md,
"Across releases".
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KMC = [sys.executable, "-m", "kmc.checker.cli.app"]

RELEASES = ("3.7.2", "3.8.1", "3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0")
"""The newest patch of each minor release on Maven Central from 3.7 on."""

TIMEOUT_S = 600


def kmc_command() -> list[str]:
    """The `kmc` of this environment (the console script next to this Python), else the module."""
    script = Path(sys.executable).with_name("kmc")
    if script.is_file():
        return [str(script)]
    found = shutil.which("kmc")
    return [found] if found else KMC


def list_oracles() -> list[dict[str, object]]:
    out = subprocess.run([*kmc_command(), "conform", "--list", "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def default_preset(model: str) -> str | None:
    from kmc.checker.registry import load_model_class

    return getattr(load_model_class(model), "default_preset", None)


def _one_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("kmc: error:")]
    line = (errors or lines or ["(no message)"])[-1]
    return line.removeprefix("kmc: error:").strip()


def run_cell(oracle: str, model: str, release: str, out_dir: Path) -> dict[str, object]:
    if model == "(inputs)":
        cmd = [*kmc_command(), "conform", oracle]
    else:
        cmd = [*kmc_command(), "conform", model, "--oracle", oracle]
    cmd += ["--kafka-version", release, "--json", "--no-progress", "--no-trace", "--out", str(out_dir)]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"outcome": "timeout", "reason": f"no answer within {TIMEOUT_S} s", "command": cmd[1:]}
    seconds = round(time.perf_counter() - started, 2)
    cell: dict[str, object] = {
        "command": ["kmc", *cmd[len(kmc_command()) :]],
        "exit": proc.returncode,
        "seconds": seconds,
    }
    if proc.returncode == 2:
        reason = _one_line(proc.stderr)
        cell.update(outcome="n/a", reason=reason)
        if "Traceback" in proc.stderr or reason.startswith("internal error"):
            cell["outcome"] = "crash"
        return cell
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        cell.update(outcome="crash", reason=_one_line(proc.stderr) or "no JSON on stdout")
        return cell
    tally = next(o for o in doc["oracles"] if o["oracle"] == oracle) if "oracles" in doc else doc
    cell.update(
        outcome="mismatch" if tally["mismatches"] else "conforms",
        preset=doc.get("preset"),
        distinct_states=doc.get("distinct_states"),
        steps_compared=tally.get("steps_compared"),
        states_compared=tally.get("states_compared"),
        decisions=tally["comparisons"],
        mismatches=tally["mismatches"],
        first_mismatch=tally.get("first_mismatch"),
        by_action=tally.get("by_action"),
    )
    return cell


def cell_text(cell: dict[str, object]) -> str:
    if cell["outcome"] == "conforms":
        return f"0 mismatches ({cell['decisions']:,} compared)"
    if cell["outcome"] == "mismatch":
        m = cell["mismatches"]
        return f"{m} mismatch{'' if m == 1 else 'es'}"
    reason = str(cell.get("reason", ""))
    # the release is the column already: keep the reason short
    reason = re.sub(r"\s*\(looked in [^)]*\)", "", reason)
    reason = re.sub(r"^oracle \S+ cannot compare this config of \S+: ", "", reason)
    return f"n/a: {reason}" if cell["outcome"] == "n/a" else f"{cell['outcome']}: {reason}"


def markdown(results: list[dict[str, object]], releases: list[str]) -> str:
    by_row: dict[tuple[str, str], dict[str, dict[str, object]]] = {}
    for r in results:
        by_row.setdefault((str(r["oracle"]), str(r["target"])), {})[str(r["release"])] = r["cell"]  # type: ignore[assignment]
    lines = ["| oracle (model, preset) | " + " | ".join(releases) + " |", "|---" * (len(releases) + 1) + "|"]
    for (oracle, target), cells in by_row.items():
        cells_text = [cell_text(cells[v]).replace("|", "\\|") if v in cells else "" for v in releases]
        lines.append(f"| `{oracle}` ({target}) | " + " | ".join(cells_text) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--releases", nargs="*", default=list(RELEASES), help="Kafka releases (fetched jars).")
    parser.add_argument("--only", nargs="*", help="Only these oracles.")
    parser.add_argument("--table", type=Path, help="Only print the table of an earlier results file.")
    args = parser.parse_args()
    if args.table is not None:
        doc = json.loads(args.table.read_text())
        print(markdown(doc["results"], doc["releases"]))
        return
    oracles = [o for o in list_oracles() if not args.only or o["oracle"] in args.only]
    results = []
    with tempfile.TemporaryDirectory(prefix="kmc-conform-releases-") as tmp:
        for o in oracles:
            oracle, model = str(o["oracle"]), str(o["model"])
            target = "inputs" if model == "(inputs)" else f"{model}, {default_preset(model) or 'default'}"
            for release in args.releases:
                cell = run_cell(oracle, model, release, Path(tmp) / f"{oracle}-{release}")
                results.append({"oracle": oracle, "target": target, "release": release, "cell": cell})
                print(f"{oracle:<20} {release:<7} {cell_text(cell)}  ({cell.get('seconds', '?')} s)", flush=True)
    out = Path(__file__).parent / "results" / f"{datetime.date.today()}-conform-releases.json"
    out.write_text(json.dumps({"releases": args.releases, "results": results}, indent=2) + "\n")
    print(f"-> {out}\n")
    print(markdown(results, args.releases))


if __name__ == "__main__":
    main()
