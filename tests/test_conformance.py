"""The conformance loop on toy models and toy references: exact counts, the first mismatch at its
shortest depth with both answers in the trace, and `kmc conform`'s exit codes and errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kmc.checker.cli.app import main
from kmc.checker.conformance.run import conform, conform_table
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from toy_models import CounterGrid, GridConfig
from toy_oracles import BoundOracle, IncrementOracle, SkippingGrid, SquareOracle

HERE = Path(__file__).parent
GRID = f"{HERE / 'toy_models.py'}:CounterGrid"
SKIPPING = f"{HERE / 'toy_oracles.py'}:SkippingGrid"
INCREMENT = f"{HERE / 'toy_oracles.py'}:IncrementOracle"


def test_every_step_is_compared_and_counted() -> None:
    model = CounterGrid(GridConfig(n=3))
    result = conform(model, [IncrementOracle(model), BoundOracle(model)])
    assert not result.mismatched
    assert result.check.stats.distinct_states == 16
    increment, bound = result.tallies
    assert (increment.steps, increment.comparisons, increment.agreements) == (24, 24, 24)
    assert increment.by_action == {"IncX": 12, "IncY": 12}
    assert (bound.states, bound.comparisons, bound.mismatches) == (16, 16, 0)
    assert result.check.complete


def test_a_broken_model_gives_the_shortest_mismatch_with_both_answers(tmp_path: Path) -> None:
    model = SkippingGrid(GridConfig(n=4))
    result = conform(model, [IncrementOracle(model)])
    assert result.mismatched
    (violation,) = result.check.violations
    assert violation.property == "Conforms-increment"
    assert len(violation.trace) == 4  # (0,0) -> (1,0) -> (2,0) -> (4,0)
    tally = result.tallies[0]
    assert tally.first_mismatch is not None
    assert (tally.first_mismatch.ours, tally.first_mismatch.theirs) == (4, 3)


def test_cli_conforms_and_counts(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conform", GRID, "--oracle", INCREMENT, "--set", "n=2", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "9 distinct states" in out
    assert "12 steps compared, 12 decisions, 12 agree, 0 mismatches" in out
    assert "verdict: conforms" in out


def test_cli_mismatch_writes_a_trace_that_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    junit = tmp_path / "conform.xml"
    args = ["conform", SKIPPING, "--oracle", INCREMENT, "--out", str(tmp_path), "--junit", str(junit)]
    code = main([*args, "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "MISMATCH increment: x after IncX" in out
    assert "ours:  4" in out and "Kafka: 3" in out
    trace = next(tmp_path.glob("*.itf.json"))
    doc = read_trace(trace)
    assert doc["#meta"]["mismatch"]["ours"] == 4 and doc["#meta"]["mismatch"]["theirs"] == 3
    assert doc["#meta"]["mismatch"]["oracle"] == "increment"
    assert len(replay(doc).trace) == 4
    assert 'failures="1"' in junit.read_text()


def test_cli_trace_compares_only_the_traces_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mismatch's own trace, held to the oracle again step by step: its first two steps agree, the
    third is where the reference takes another step."""
    assert main(["conform", SKIPPING, "--oracle", INCREMENT, "--out", str(tmp_path), "--no-progress"]) == 1
    trace = next(tmp_path.glob("*.itf.json"))
    capsys.readouterr()
    code = main(["conform", "--trace", str(trace), "--oracle", INCREMENT, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    assert (doc["verdict"], doc["steps"], doc["first_mismatch_step"]) == ("mismatch", 3, {"increment": 3})
    assert (doc["oracles"][0]["agreements"], doc["oracles"][0]["mismatches"]) == (2, 1)
    code = main(["conform", "--trace", str(trace), "--oracle", INCREMENT])
    out = capsys.readouterr().out
    assert code == 1 and "verdict: mismatch: Kafka's code takes another step (increment at step 3)" in out


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conform", GRID, "--oracle", INCREMENT, "--json", "--no-progress"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["verdict"] == "conforms"
    assert doc["oracles"][0]["steps_compared"] == 24 and doc["oracles"][0]["mismatches"] == 0


def test_table_oracle_counts_every_mismatch() -> None:
    tally = conform_table(SquareOracle(settings={"upto": "20", "broken": "true"}))
    assert (tally.states, tally.comparisons, tally.mismatches) == (20, 20, 1)
    assert tally.by_action == {"even": 10, "odd": 10}
    assert tally.first_mismatch is not None and tally.first_mismatch.inputs == {"n": 7}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["conform"], "needs a model"),
        (["conform", "no-such-model"], "unknown model 'no-such-model'"),
        (["conform", GRID], "no oracle compares model counter-grid"),
        (["conform", GRID, "--oracle", "nope"], "no oracle 'nope' for model counter-grid"),
        (["conform", GRID, "--oracle", f"{HERE / 'toy_oracles.py'}:SilentOracle"], "oracle silent compared nothing"),
        (["conform", GRID, "--oracle", f"{HERE / 'toy_oracles.py'}:Grid"], "is not a kmc Oracle class"),
        (["conform", GRID, "--oracle", INCREMENT, "--limit", "3"], "--limit applies to input oracles"),
        (["conform", GRID, "--oracle", INCREMENT, "--set", "n=x"], "bad value for n"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*args, "--no-progress"] if len(args) > 1 else args)
    err = capsys.readouterr().err
    assert code == 2
    assert message in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


def test_without_the_jars_every_oracle_command_says_how_to_get_them(tmp_path: Path) -> None:
    env = {**os.environ, "KMC_KAFKA_JARS": str(tmp_path / "none")}
    for args in (["conform", "kraft-replication"], ["conform", "assignors"]):
        done = subprocess.run(
            [sys.executable, "-m", "kmc.checker.cli", *args, "--no-progress"],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and "make kafka-jars" in done.stderr, done.stderr


def test_a_release_not_fetched_names_the_make_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kmc.checker.cli", "conform", "kraft-replication", "--kafka-version", "0.0.1"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "make kafka-jars KAFKA_VERSION=0.0.1" in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_a_resumed_conform_run_ends_with_the_totals_of_one_never_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--checkpoint keeps each level and the oracles' counts; a run stopped at a bound (or by Ctrl-C)
    and resumed ends with exactly the counts of one run."""
    checkpoint = tmp_path / "ck"
    base = ["conform", "group-kip848", "--json", "--no-progress", "--out", str(tmp_path)]
    assert main([*base, "--checkpoint", str(checkpoint), "--max-depth", "20"]) == 0
    bounded = json.loads(capsys.readouterr().out)
    assert bounded["distinct_states"] == 7609 and not bounded["complete"]
    assert main([*base, "--resume", str(checkpoint)]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert main(base) == 0
    whole = json.loads(capsys.readouterr().out)
    assert (resumed["distinct_states"], resumed["generated_states"]) == (whole["distinct_states"], 185281)
    assert resumed["distinct_states"] == 49665
    assert [o["comparisons"] for o in resumed["oracles"]] == [o["comparisons"] for o in whole["oracles"]] == [229890]
    assert [o["steps_compared"] for o in resumed["oracles"]] == [44970]


def test_a_checkpoint_of_kmc_check_is_not_resumed_by_conform(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint = tmp_path / "ck"
    args = [
        "check",
        "group-kip848",
        "-P",
        "ValidPartitionEpoch",
        "--checkpoint",
        str(checkpoint),
        "--store",
        "fingerprints",
    ]
    assert main([*args, "--no-progress", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["conform", "group-kip848", "--resume", str(checkpoint), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the checkpoint is of a different check" in err[0]
