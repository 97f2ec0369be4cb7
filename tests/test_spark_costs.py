"""benchmarks/spark_costs.py runs on both of its models: a level's states at a small depth, each cost
timed, and the C and the pure-Python fingerprints of every successor the same numbers (the script
checks them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "spark_costs.py"


@pytest.mark.parametrize(("model", "states"), [("replication", 2244), ("kraft-replication", 1894)])
def test_spark_costs_times_a_level_of_each_model(model: str, states: int) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--model", model, "--depth", "6"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    row = json.loads(done.stdout)
    assert (row["model"], row["depth"], row["states"]) == (model, 6, states)
    assert set(row["us_per_state"]) >= {"successors", "fingerprint_successors", "fingerprint_and_gather_candidates"}
