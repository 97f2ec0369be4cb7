"""The share-group model against Kafka's SharePartition itself (the broker's class, with its persister
and lock timer held by kmc): exact counts and 0 mismatches on Kafka 4.3.1 and 4.4.0, the findings'
traces taken step by step by Kafka's code, and a broken model that must mismatch.

Each run is a process of its own: the oracle needs the server jars in its JVM."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, TESTS

pytestmark = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="needs the Kafka jars")

SHARE = ROOT / "counterexamples" / "share-group"


def _conform(*args: str) -> tuple[int, dict, str]:
    argv = [sys.executable, "-m", "kmc.checker.cli", "conform", *args, "--oracle", "share-partition", "--json"]
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}, done.stderr


@pytest.mark.parametrize(
    ("preset", "release", "steps", "decisions"),
    [
        ("kafka-4.2", "4.3.1", 1562, 5372),
        ("kafka-4.2-log-start", "4.3.1", 3992, 13574),
        ("kafka-4.2-session-release", "4.4.0", 338, 1107),
        ("kafka-4.2-leader-change", "4.3.1", 1983, 6497),
    ],
)
def test_every_step_is_the_one_kafkas_share_partition_takes(
    preset: str, release: str, steps: int, decisions: int
) -> None:
    code, doc, err = _conform("share-group", "--preset", preset, "--kafka-version", release, "--out", "/dev/null")
    assert code == 0, err
    [tally] = doc["oracles"]
    assert (doc["verdict"], doc["release"]) == ("conforms", release)
    assert (tally["steps_compared"], tally["comparisons"], tally["mismatches"]) == (steps, decisions, 0)


@pytest.mark.parametrize(
    ("trace", "steps"),
    [
        ("kafka-4.2-stale-available-EveryRecordFinished", 9),
        ("kafka-4.2-start-offset-back-StartOffsetNeverMovesBack", 5),
        ("kafka-4.2-leader-change-DeliveriesWithinTheLimit", 6),
    ],
)
def test_kafka_takes_every_step_of_the_findings(trace: str, steps: int) -> None:
    """The model's findings in the fixed code: Kafka 4.3.1's SharePartition takes each step."""
    code, doc, err = _conform("--trace", str(SHARE / f"{trace}.itf.json"))
    assert code == 0, err
    assert (doc["verdict"], doc["steps"], doc["first_mismatch_step"]) == ("conforms", steps, {})
    assert doc["oracles"][0]["mismatches"] == 0


def test_a_release_that_ignores_the_delivery_limit_mismatches(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = f"{TESTS / 'broken_share_partition.py'}:ReleaseIgnoresTheLimit"
    # the broken release redelivers for ever (the delivery count grows without end): bounded in depth
    code, doc, err = _conform(model, "--preset", "kafka-4.2", "--max-depth", "8", "--out", str(tmp_path))
    assert code == 1, err
    [tally] = doc["oracles"]
    assert tally["mismatches"] == 1 and tally["first_mismatch"]["question"] == "records"
    [violation] = doc["violations"]
    assert (
        violation["trace_length"] == 6
    )  # fetch, release and its write, fetch again (delivery 2), release at the limit


def test_a_trace_and_a_model_together_are_refused() -> None:
    code, _doc, err = _conform("share-group", "--trace", str(SHARE / "kafka-4.2-NoRecordAccepted.itf.json"))
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("kmc: error: --trace takes the model and its config from the trace")


def test_a_checkpointed_run_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The oracle rebuilds each state by replaying the path the search took to it, which a checkpoint
    does not keep: a resumed run would replay from nothing."""
    code, _doc, err = _conform("share-group", "--checkpoint", str(tmp_path / "ckpt"))
    assert code == 2
    assert "replays the path to each state, which a checkpoint does not keep" in err.strip().splitlines()[-1]
