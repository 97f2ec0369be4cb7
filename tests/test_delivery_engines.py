"""The producer, transactions, consumer-delivery, share-group, share-session, share-group-membership and
streams-group models in every
engine: BFS, simulate, Hypothesis, Spark (local mode) and the liveness check, each on a small preset."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import Check
from kmc.checker.engines.spark.context import spark_context
from kmc.checker.result import Status
from kmc.checker.traces.files import write_traces

CHECKED_IN = [
    # model, preset, property, length of the checked-in shortest trace, a Hypothesis seed that finds it quickly
    ("producer", "non-idempotent", "NoDuplicates", 6, 1),
    ("transactions", "pre-kip-890", "OpenTransactionKnownToCoordinator", 15, 1),
    ("consumer-delivery", "auto-commit", "AtMostOnce", 15, 4),
    ("share-group", "pre-kafka-19476-cancelled-lock", "NoRecordUnderTwoLocks", 8, 1),
    ("streams-group", "kafka-4.3", "EmptyGroupAtAssignmentEpoch", 6, 1),
    ("share-session", "kafka-4.1.0", "NoAcknowledgementsOnTheInitialEpoch", 8, 1),
    ("share-group-membership", "pre-kafka-19468", "NoRebalanceWithoutCause", 12, 1),
]

SMALL = [
    # model, preset, overrides: a few hundred to a few thousand states
    ("producer", "kip-360", {}),
    ("transactions", "zombie", {}),
    ("consumer-delivery", "commit-after-processing-kip-848", {}),
    ("share-group", "kafka-4.2-log-start", {}),
    ("streams-group", "heartbeat-after-reconciliation", {}),
    ("share-session", "kafka-4.4", {}),
    ("share-group-membership", "lost-responses", {}),
]


@pytest.mark.parametrize(("model", "preset", "prop", "length", "seed"), CHECKED_IN)
def test_simulate_finds_the_checked_in_violation(model: str, preset: str, prop: str, length: int, seed: int) -> None:
    result = Check(
        model,
        preset=preset,
        property_names=[prop],
        engine_name="simulate",
        settings={"seed": 1, "walks": 300, "depth": 60},
    ).run()
    assert result.status is Status.VIOLATED
    [violation] = result.violations
    assert violation.property == prop
    assert violation.trace_length >= length  # a random walk is never shorter than the BFS's shortest trace


@pytest.mark.parametrize(("model", "preset", "prop", "length", "seed"), CHECKED_IN)
def test_hypothesis_finds_and_shrinks_the_checked_in_violation(
    kmc, tmp_path: Path, model: str, preset: str, prop: str, length: int, seed: int
) -> None:
    result = Check(
        model,
        preset=preset,
        property_names=[prop],
        engine_name="hypothesis",
        settings={"seed": seed, "examples": 300, "steps": 25},
    ).run()
    assert result.status is Status.VIOLATED
    [violation] = result.violations
    assert violation.property == prop
    assert violation.trace_length == length  # shrunk to the length of the checked-in shortest trace
    [path] = write_traces(result, tmp_path)
    assert kmc("replay", path)[0] == 0


@pytest.mark.parametrize(("model", "preset", "overrides"), SMALL)
def test_simulate_holds_bounded_on_a_fixed_preset(model: str, preset: str, overrides: dict) -> None:
    result = Check(
        model,
        preset=preset,
        overrides=overrides,
        engine_name="simulate",
        settings={"seed": 2, "walks": 50, "depth": 40},
    ).run()
    assert result.status is Status.HOLDS_BOUNDED
    assert not result.violations


LIVENESS = [
    # model, preset, liveness property, expected status, lasso length when violated
    ("producer", "idempotent", "EverySendCompletes", Status.HOLDS_COMPLETE, None),
    ("producer", "kip-360", "EverySendCompletes", Status.VIOLATED, 11),  # the known stuck retry (model page)
    ("transactions", "zombie", "LastStableOffsetAdvances", Status.HOLDS_COMPLETE, None),
    ("transactions", "zombie", "TransactionCompletes", Status.HOLDS_COMPLETE, None),
    ("consumer-delivery", "commit-after-processing-kip-848", "EventuallyAllCommitted", Status.HOLDS_COMPLETE, None),
    ("share-group", "kafka-4.2-log-start", "EveryRecordFinished", Status.HOLDS_COMPLETE, None),
    (
        "share-group",
        "pre-kafka-19476-expired-lock",
        "EveryRecordFinished",
        Status.VIOLATED,
        6,
    ),  # KAFKA-19476's 2nd race
    ("streams-group", "heartbeat-after-reconciliation", "EveryRebalanceCompletes", Status.HOLDS_COMPLETE, None),
    ("streams-group", "pre-kafka-19233", "EveryMemberJoins", Status.VIOLATED, 26),  # KAFKA-19233
    ("share-session", "kafka-4.4", "SessionsFollowTheLeader", Status.HOLDS_COMPLETE, None),
    ("share-session", "kafka-4.3", "SessionsFollowTheLeader", Status.VIOLATED, 13),  # KAFKA-20736
    ("share-group-membership", "pre-kafka-19233", "EveryMemberJoins", Status.VIOLATED, 18),  # KAFKA-19233
]


@pytest.mark.parametrize(("model", "preset", "prop", "status", "length"), LIVENESS)
def test_liveness(model: str, preset: str, prop: str, status: Status, length: int | None) -> None:
    result = Check(model, preset=preset, property_names=[prop]).run()
    assert result.status is status
    assert [(v.property, v.trace_length) for v in result.violations] == ([(prop, length)] if length else [])


@pytest.fixture(scope="module")
def sc():
    context = spark_context("local[2]")
    yield context
    context.stop()


@pytest.mark.spark
@pytest.mark.parametrize(("model", "preset", "overrides"), SMALL)
def test_spark_counts_equal_bfs(sc, model: str, preset: str, overrides: dict) -> None:
    """Liveness is the BFS engine's alone, so both run the safety properties."""
    from kmc.checker.properties import model_properties
    from kmc.checker.registry import load_model_class

    safety = [p.name for p in model_properties(load_model_class(model)) if p.kind not in ("eventually", "leads_to")]
    reference = Check(model, preset=preset, overrides=overrides, property_names=safety).run()
    spark = Check(
        model,
        preset=preset,
        overrides=overrides,
        property_names=safety,
        engine_name="spark",
        settings={"partitions": 3},
        spark_context=sc,
    ).run()
    assert reference.status is Status.HOLDS_COMPLETE
    assert spark.engine == "spark"
    assert spark.status is reference.status
    assert spark.stats.distinct_states == reference.stats.distinct_states
    assert spark.stats.generated_states == reference.stats.generated_states
    assert spark.stats.depth == reference.stats.depth
    assert spark.coverage["actions"] == reference.coverage["actions"]


@pytest.mark.spark
def test_spark_finds_the_checked_in_violation(sc) -> None:
    spark = Check(
        "transactions",
        preset="pre-kip-890",
        property_names=["OpenTransactionKnownToCoordinator"],
        engine_name="spark",
        settings={"partitions": 3},
        spark_context=sc,
    ).run()
    assert spark.status is Status.VIOLATED
    assert [(v.property, v.trace_length) for v in spark.violations] == [("OpenTransactionKnownToCoordinator", 15)]
