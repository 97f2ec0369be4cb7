"""The Spark engine in local mode: the same answers as the BFS engine, checkpoints and resume."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import ROOT, TESTS
from hypothesis import given
from hypothesis import strategies as st
from kmc.checker import Check
from kmc.checker.engines.spark.context import spark_context
from kmc.checker.engines.spark.shards import claim_workdir
from kmc.checker.errors import UserError
from kmc.checker.properties import model_properties
from kmc.checker.registry import load_model_class
from kmc.checker.result import CheckResult, Status

LIVENESS = ("eventually", "leads_to")

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def sc():
    context = spark_context("local[2]")
    yield context
    context.stop()


def run_both(sc, model: str, preset: str | None = None, overrides: dict | None = None, **bfs_kwargs) -> tuple:
    reference = Check(model, preset=preset, overrides=overrides or {}, settings=bfs_kwargs).run()
    spark = Check(
        model,
        preset=preset,
        overrides=overrides or {},
        engine_name="spark",
        settings={**bfs_kwargs, "partitions": 3},
        spark_context=sc,
    ).run()
    return reference, spark


def assert_same(reference: CheckResult, spark: CheckResult) -> None:
    assert spark.engine == "spark"
    assert spark.status == reference.status
    assert spark.complete == reference.complete
    if reference.complete:
        assert spark.stats.distinct_states == reference.stats.distinct_states
        assert spark.stats.generated_states == reference.stats.generated_states
        assert spark.stats.depth == reference.stats.depth
        # the executors' counts reach the driver; liveness is checked by bfs alone, so only safety compares
        liveness = {
            p.name
            for p in model_properties(load_model_class(reference.model_ref or reference.model))
            if p.kind in LIVENESS
        }
        assert spark.coverage["actions"] == reference.coverage["actions"]
        safety = {k: v for k, v in reference.coverage["properties"].items() if k not in liveness}
        assert {k: v for k, v in spark.coverage["properties"].items() if k not in liveness} == safety
    found = {v.property: v.trace_length for v in spark.violations}
    if reference.complete or not reference.violations:
        assert found == {v.property: v.trace_length for v in reference.violations}
    else:
        # Stopped at the first violation: Spark finishes the level, so it may report more than one
        # property violated at that depth, but never a longer trace and never a different depth.
        for v in reference.violations:
            assert found[v.property] == v.trace_length
        assert set(found.values()) == {reference.violations[0].trace_length}


TOY = str(TESTS / "toy_models.py")
TOY_CASES = [
    (f"{TOY}:CounterGrid", None, {"n": 6}, {}),
    (f"{TOY}:CounterGrid", None, {"n": 6}, {"symmetry": True}),
    (f"{TOY}:CounterGrid", None, {"n": 6, "limit": 5}, {}),
    (f"{TOY}:CounterGrid", None, {"n": 3}, {"deadlock": True}),
    (f"{TOY}:TwoPhaseCommit", "correct", {}, {}),
    (f"{TOY}:TwoPhaseCommit", "correct", {}, {"symmetry": True}),
    (f"{TOY}:TwoPhaseCommit", "buggy", {}, {}),
    (f"{TOY}:TwoPhaseCommit", "buggy", {}, {"symmetry": True}),
    (f"{TOY}:CounterGrid", None, {"n": 5}, {"max_depth": 4}),
]


@pytest.mark.parametrize(("model", "preset", "overrides", "options"), TOY_CASES)
def test_toy_models_match_bfs(sc, model: str, preset: str | None, overrides: dict, options: dict) -> None:
    reference, spark = run_both(sc, model, preset, overrides, **options)
    assert_same(reference, spark)


@pytest.mark.parametrize("preset", ["truncate-to-hw", "kip-101", "kip-279", "kip-320-first-try", "kip-320"])
def test_replication_presets_match_bfs(sc, preset: str) -> None:
    reference, spark = run_both(sc, "replication", preset)
    assert_same(reference, spark)


@pytest.mark.parametrize("preset", ["eager-range", "static-kafka-9801"])
def test_group_presets_match_bfs(sc, preset: str) -> None:
    reference, spark = run_both(sc, "group", preset)
    assert_same(reference, spark)


@pytest.mark.parametrize(
    ("preset", "overrides"),
    [("kip-966", {"max_records": 1, "max_fences": 0}), ("pre-kip-903", {}), ("acks-1", {})],
)
def test_kraft_replication_matches_bfs(sc, preset: str, overrides: dict) -> None:
    reference, spark = run_both(sc, "kraft-replication", preset, overrides)
    assert_same(reference, spark)


@pytest.mark.parametrize(
    ("model", "preset", "overrides"),
    [
        ("zk-controller", "kip-380", {"max_restarts": 0, "max_controller_epoch": 1}),
        ("zk-controller", "pre-kip-380", {}),
        ("kraft-quorum", "kip-996", {"max_partitions": 0}),
        ("kraft-quorum", "pre-kip-853", {}),
        ("group-kip848", "kip-848", {"max_faults": 0}),
        ("group-kip848", "kafka-4.0", {}),
    ],
)
def test_the_other_models_match_bfs(sc, model: str, preset: str, overrides: dict) -> None:
    reference, spark = run_both(sc, model, preset, overrides)
    assert_same(reference, spark)


def test_model_bounds_make_spark_bounded_too(sc) -> None:
    """The group model's within_bounds cuts the slow-member state space: both engines say bounded."""
    checks = {
        engine: Check(
            "group",
            preset="slow-member",
            property_names=["CommitFencedByGeneration"],
            engine_name=engine,
            settings={"partitions": 3} if engine == "spark" else {},
            spark_context=sc,
        ).run()
        for engine in ("bfs", "spark")
    }
    reference, spark = checks["bfs"], checks["spark"]
    assert reference.status is Status.HOLDS_BOUNDED
    assert reference.bound_reason == spark.bound_reason == "the model's own bounds (within_bounds)"
    assert_same(reference, spark)
    assert spark.stats.distinct_states == reference.stats.distinct_states == 9188


def test_replication_symmetry_matches_bfs(sc) -> None:
    reference, spark = run_both(sc, "replication", "kip-320", symmetry=True)
    assert_same(reference, spark)
    assert spark.stats.distinct_states < 5973


def test_spark_trace_replays(sc, tmp_path: Path, kmc) -> None:
    from kmc.checker.traces.files import write_traces

    result = Check(
        "replication", preset="truncate-to-hw", property_names=["StrongIsr"], engine_name="spark", spark_context=sc
    ).run()
    [path] = write_traces(result, tmp_path)
    assert json.loads(path.read_text())["#meta"]["engine"] == "spark"
    assert kmc("replay", path)[0] == 0


def _spark_cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kmc.checker.cli", "check", *args]


def test_checkpoint_resume_after_kill(sc, tmp_path: Path) -> None:
    checkpoint = tmp_path / "ckpt"
    common = [
        "replication",
        "-p",
        "kip-320",
        "--set",
        "max_leader_epoch=4",
        "--engine",
        "spark",
        "--spark-master",
        "local[2]",
        "--partitions",
        "3",
        "--json",
        "--no-progress",
        "--out",
        str(tmp_path),
    ]
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    proc = subprocess.Popen(
        _spark_cli(*common, "--checkpoint", str(checkpoint)),
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    meta = checkpoint / "meta.json"
    deadline = time.time() + 240
    level = 0
    while time.time() < deadline and proc.poll() is None:
        if meta.exists():
            level = json.loads(meta.read_text())["progress"]["level"]
            if level >= 6:
                break
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 6 <= level < 26
    resumed = Check(
        "replication",
        preset="kip-320",
        overrides={"max_leader_epoch": 4},
        engine_name="spark",
        settings={"partitions": 3, "resume": str(checkpoint)},
        spark_context=sc,
    ).run()
    assert resumed.status is Status.HOLDS_COMPLETE
    assert resumed.stats.distinct_states == 119531
    assert resumed.stats.generated_states == 252593
    assert resumed.stats.depth == 26


def test_a_run_stops_when_another_takes_over_its_checkpoint(tmp_path: Path) -> None:
    """Two runs (or an abandoned stage and its successor) never write one work directory: the one
    that lost it stops at its next exchange, with one line, before it saves a level there."""
    checkpoint = tmp_path / "ckpt"
    argv = _spark_cli("replication", "-p", "kip-320", "--set", "max_leader_epoch=4", "--engine", "spark")
    argv += ["--spark-master", "local[2]", "--partitions", "3", "--no-progress", "--out", str(tmp_path)]
    proc = subprocess.Popen(
        [*argv, "--checkpoint", str(checkpoint)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    meta = checkpoint / "meta.json"
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if meta.exists() and json.loads(meta.read_text())["progress"]["level"] >= 3:
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the run finished before its checkpoint could be taken over"
    claim_workdir(str(checkpoint), "another-1")
    saved = json.loads(meta.read_text())["progress"]["level"]
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 2, (out, err)
    assert err.strip().splitlines()[-1] == (
        f"kmc: error: spark: another kmc run took over the work directory {checkpoint}; "
        "this one stops (one search per checkpoint directory)"
    ), err
    assert "Traceback" not in err
    # at most the level being saved when it was taken over is written after it
    assert json.loads(meta.read_text())["progress"]["level"] <= saved + 1


def test_resume_refuses_a_different_check(sc, tmp_path: Path) -> None:
    checkpoint = tmp_path / "ckpt"
    Check(
        "replication",
        preset="kip-320",
        engine_name="spark",
        settings={"max_depth": 3, "partitions": 3, "checkpoint": str(checkpoint)},
        spark_context=sc,
    ).run()
    with pytest.raises(UserError, match="checkpoint is of a different check"):
        Check(
            "replication",
            preset="kip-101",
            engine_name="spark",
            settings={"partitions": 3, "resume": str(checkpoint)},
            spark_context=sc,
        ).run()
    meta = checkpoint / "meta.json"
    older = json.loads(meta.read_text())
    del older["format"]  # as the first format wrote it
    meta.write_text(json.dumps(older))
    with pytest.raises(UserError, match=r"written by another version of kmc \(format 1, this one reads 5\)"):
        Check(
            "replication",
            preset="kip-320",
            engine_name="spark",
            settings={"partitions": 3, "resume": str(checkpoint)},
            spark_context=sc,
        ).run()


def test_user_errors_on_executors_are_reported_as_such(sc, tmp_path: Path) -> None:
    spec = tmp_path / "raises.py"
    spec.write_text("from kmc.checker import invariant\n\n@invariant\ndef Oops(s):\n    return {}[s.x]\n")
    with pytest.raises(UserError, match=r"property Oops raised KeyError: 0 -- in state Grid\(x=0, y=0\)"):
        Check(
            f"{TOY}:CounterGrid",
            spec_files=[spec],
            property_names=["Oops"],
            engine_name="spark",
            settings={"partitions": 3},
            spark_context=sc,
        ).run()
    with pytest.raises(UserError, match=r"raised KeyError in successors\(\).*in state 2"):
        Check(f"{TOY}:Crashy", engine_name="spark", settings={"partitions": 3}, spark_context=sc).run()


def test_a_resumed_run_reports_its_own_bounds_and_the_uninterrupted_counts(sc, tmp_path: Path) -> None:
    """A run stopped by --max-depth, resumed without it, ends exactly as one run without a bound."""
    checkpoint = tmp_path / "ckpt"
    whole = Check(
        "replication", preset="kip-320", engine_name="spark", settings={"partitions": 3}, spark_context=sc
    ).run()
    first = Check(
        "replication",
        preset="kip-320",
        engine_name="spark",
        spark_context=sc,
        settings={"max_depth": 6, "partitions": 3, "checkpoint": str(checkpoint)},
    ).run()
    assert first.bound_reason == "max depth 6" and not first.complete
    resumed = Check(
        "replication",
        preset="kip-320",
        engine_name="spark",
        spark_context=sc,
        settings={"partitions": 3, "resume": str(checkpoint)},
    ).run()
    assert resumed.complete and resumed.bound_reason is None and resumed.status is Status.HOLDS_COMPLETE
    for stat in ("distinct_states", "generated_states", "depth"):
        assert getattr(resumed.stats, stat) == getattr(whole.stats, stat), stat
    assert resumed.coverage == whole.coverage
    assert resumed.stats.distinct_states == 5973


def test_a_damaged_or_foreign_checkpoint_is_never_unpickled(sc, tmp_path: Path) -> None:
    checkpoint = tmp_path / "ckpt"
    settings = {"max_depth": 3, "partitions": 3, "checkpoint": str(checkpoint)}
    Check("replication", preset="kip-320", engine_name="spark", settings=settings, spark_context=sc).run()
    frontier = sorted(checkpoint.glob("frontier-*.pkl"))[0]
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    import pickle

    frontier.write_bytes(b"\0" * 32 + pickle.dumps(Payload()))  # a crafted file without the user's key
    resume = {"partitions": 3, "resume": str(checkpoint)}
    with pytest.raises(UserError, match="damaged or was not written by your kmc"):
        Check("replication", preset="kip-320", engine_name="spark", settings=resume, spark_context=sc).run()
    assert not marker.exists()
    meta = checkpoint / "meta.json"
    doc = json.loads(meta.read_text())
    doc["progress"]["distinct"] += 1  # a tampered count
    meta.write_text(json.dumps(doc))
    with pytest.raises(UserError, match=r"meta\.json is damaged or was not written by your kmc"):
        Check("replication", preset="kip-320", engine_name="spark", settings=resume, spark_context=sc).run()


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=8))
def test_balancing_moves_even_out_the_frontiers(counts: list[int]) -> None:
    from kmc.checker.engines.spark.task import BALANCE_SLACK
    from kmc.checker.engines.spark.task import balancing_moves as _balancing_moves

    share = -(-sum(counts) // len(counts))
    keep = share + int(share * BALANCE_SLACK)
    after = list(counts)
    for source, target, count in _balancing_moves(counts):
        assert count > 0 and counts[source] > keep and counts[target] < share
        after[source] -= count
        after[target] += count
    assert sum(after) == sum(counts)
    assert max(after) <= keep  # no partition waits on more than its share and the slack
    assert all(after[p] == share for p in range(len(counts)) if counts[p] > keep)  # givers give only the excess


def test_balancing_moves_examples() -> None:
    from kmc.checker.engines.spark.task import balancing_moves as _balancing_moves

    assert _balancing_moves([10, 0]) == [(0, 1, 5)]
    assert _balancing_moves([0, 0, 9]) == [(2, 0, 3), (2, 1, 3)]
    assert _balancing_moves([100, 98]) == []  # within the slack: nothing is pickled
    assert _balancing_moves([0, 0]) == []


class Fields(NamedTuple):
    log: tuple[int, ...]
    leader: int | bool
    isr: frozenset[int] | set[int]


def test_frontier_files_share_equal_fields_without_changing_them() -> None:
    from kmc.checker.storage.checkpoint import interned as _interned

    logs = [tuple([1, 2]) for _ in range(3)]  # equal, not identical
    states = [Fields(logs[0], 1, frozenset({0})), Fields(logs[1], True, frozenset({0})), Fields(logs[2], 0, {0})]
    out = _interned(states)
    assert out == states and [type(s) for s in out] == [Fields] * 3
    assert out[0].log is out[1].log and out[0].isr is out[1].isr  # pickled once
    assert out[1].leader is True and type(out[0].leader) is int  # equal to 1, yet kept a bool
    assert out[2] is states[2]  # an unhashable field: the state is left as it was

    class WithAttributes(Fields):  # a subclass with an instance dict: tuple.__new__ would drop it
        pass

    odd = WithAttributes(logs[0], 1, frozenset())
    odd.note = "kept"
    assert _interned([odd])[0] is odd


class Session(NamedTuple):
    epoch: int


class Handler(NamedTuple):
    nextEpoch: int


class Sides(NamedTuple):
    broker: tuple[Session, ...]
    client: tuple[Handler, ...]


def test_frontier_files_never_share_equal_tuples_of_different_named_tuples() -> None:
    """(Session(1),) == (Handler(1),): a field is shared only with the same field of another state."""
    from kmc.checker.storage.checkpoint import interned as _interned

    out = _interned([Sides((Session(1),), (Handler(1),)), Sides((Session(1),), (Handler(1),))])
    assert [type(s.broker[0]) for s in out] == [Session] * 2 and [type(s.client[0]) for s in out] == [Handler] * 2
    assert out[0].broker is out[1].broker and out[0].client is out[1].client


@pytest.mark.spark
def test_an_error_after_spark_started_is_one_line_in_a_fresh_process(sc, tmp_path: Path) -> None:
    """A checkpoint of another check is refused once Spark runs: the error comes alone, without the
    notices Spark's JVM prints to stderr when it starts (kmc's own process, as a user runs it)."""
    checkpoint = tmp_path / "ck"
    settings = {"max_depth": 3, "partitions": 2, "checkpoint": str(checkpoint)}
    Check("replication", preset="kip-320", engine_name="spark", settings=settings, spark_context=sc).run()
    kmc = [sys.executable, "-m", "kmc.checker.cli", "check"]
    common = ["--engine", "spark", "--partitions", "2", "--no-progress", "--out", str(tmp_path / "out")]
    other = [*kmc, "group", *common, "--resume", str(checkpoint)]
    done = subprocess.run(other, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(
        f"kmc: error: --resume {checkpoint}: the checkpoint is of a different check (replication"
    )


@pytest.mark.spark
def test_sigterm_ends_a_spark_search_with_its_partial_statistics_and_no_process_left(tmp_path: Path) -> None:
    """SIGTERM, as a service manager sends it, mid-search: the counts reached, 'interrupted (SIGTERM)',
    exit 143, and nothing of Spark's left in the command's session (the JVM, the Python workers)."""
    argv = [sys.executable, "-m", "kmc.checker.cli", "check", "replication", "--preset", "kip-320"]
    argv += ["--set", "replicas=3", "--set", "max_leader_epoch=3", "--engine", "spark", "--out", str(tmp_path)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the first progress line, after 10 s of search
    assert "distinct" in first, first
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, (out, err)
    assert "kmc: interrupted (SIGTERM)" in err and "verdict: interrupted (SIGTERM)" in out
    reached = int(re.search(r"([\d,]+) distinct states", out).group(1).replace(",", ""))
    shown = int(re.search(r"distinct\s+([\d,]+)", first).group(1).replace(",", ""))
    # the levels the search reached, at least those its first progress line showed (not the first level alone)
    assert reached >= shown > 1, (first, out)
    assert "Traceback" not in out + err and "ERROR" not in err
    time.sleep(1)
    listed = subprocess.run(["ps", "-o", "pid=,args=", "-s", str(proc.pid)], capture_output=True, text=True).stdout
    left = [line for line in listed.splitlines() if "<defunct>" not in line]  # exited, not yet reaped by init
    assert not left, listed
