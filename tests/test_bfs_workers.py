"""bfs --workers: the search on several processes is the one-process search, state for state.

Every case runs once on one process and again on two or three, and everything the user sees must
agree: verdict, completeness, bound, distinct and generated states, depth, each violation's kind
and its trace (states and actions), and, for a search that ran to its end, the coverage counts.
Where the one-process search stops inside a level (a violation, --max-states), the counts are
those it had there.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from typing import Any

import pytest
from kmc.checker import BfsOptions, bfs
from kmc.checker.errors import NondeterministicModelError, UserError
from kmc.checker.properties import PropertySet, model_properties, select_properties
from kmc.checker.result import CheckResult
from kmc.checker.runner import Check
from kmc.checker.storage import codec as codec_module
from toy_models import CounterGrid, TwoPhaseCommit

KMC = [sys.executable, "-m", "kmc.checker.cli"]


def summary(result: CheckResult, with_coverage: bool = True) -> dict[str, Any]:
    stats = result.stats
    return {
        "status": result.status,
        "complete": result.complete,
        "bound": result.bound_reason,
        "distinct": stats.distinct_states,
        "generated": stats.generated_states,
        "depth": stats.depth,
        "violations": [(v.property, v.kind, v.trace.states, v.trace.actions) for v in result.violations],
        "coverage": result.coverage if with_coverage and result.complete else None,
    }


def check(model: str, preset: str | None, overrides: dict[str, Any], settings: dict[str, Any]) -> CheckResult:
    return Check(model, preset=preset, overrides=overrides, engine_name="bfs", settings=settings).run()


@pytest.mark.parametrize(
    ("model", "preset", "overrides", "settings", "expected"),
    [
        ("replication", "kip-320", {"replicas": 2}, {"workers": 3}, (5973, 11733, None)),
        ("replication", "truncate-to-hw", {}, {"workers": 2}, (1278, 2794, "WeakIsr")),  # stops inside a level
        ("replication", "kip-101", {}, {"keep_going": True, "workers": 3}, (9045, 21447, "WeakIsr")),
        ("group", None, {}, {"max_states": 3000, "workers": 2}, (3000, 6657, None)),
        ("group", None, {}, {"max_depth": 7, "workers": 3}, (161, 463, None)),
        ("kraft-quorum", None, {}, {"max_states": 5000, "workers": 2}, (5000, 12034, None)),
        ("transactions", None, {}, {"max_states": 5000, "workers": 2}, (5000, 12038, None)),
        ("share-group-membership", "pre-kafka-19468", {}, {"workers": 2}, (2802, 6241, "NoRebalanceWithoutCause")),
        ("zk-controller", None, {}, {"workers": 2}, (45841, 160545, None)),
    ],
)
def test_workers_search_as_one_process_does(
    model: str,
    preset: str | None,
    overrides: dict[str, Any],
    settings: dict[str, Any],
    expected: tuple[int, int, str | None],
) -> None:
    one = check(model, preset, overrides, {**settings, "workers": 1})
    many = check(model, preset, overrides, settings)
    workers = settings["workers"]
    distinct, generated, first_violated = expected
    assert (one.stats.distinct_states, one.stats.generated_states) == (distinct, generated)
    assert (one.violations[0].property if one.violations else None) == first_violated
    assert summary(many) == summary(one)
    assert many.stats.storage == "fingerprints" and many.stats.collision_probability is not None
    assert many.stats.extra["workers"] == workers
    assert multiprocessing.active_children() == []


def grid(n: int, **overrides: int) -> CounterGrid:
    return CounterGrid.build(None, {"n": n, **overrides})


@pytest.mark.parametrize(
    ("model", "props", "options"),
    [
        (grid(6), PropertySet(), BfsOptions(symmetry=True)),
        (grid(5, limit=3), select_properties(CounterGrid, names=["Bounded"]), BfsOptions()),
        (grid(4, limit=3), select_properties(CounterGrid, names=["Bounded", "Monotonic"]), BfsOptions(deadlock=True)),
        (
            grid(4, limit=3),
            select_properties(CounterGrid, names=["Bounded", "Monotonic"]),
            BfsOptions(keep_going=True, deadlock=True),
        ),
        (grid(3), PropertySet(), BfsOptions(deadlock=True)),
        (grid(10), PropertySet(), BfsOptions(max_states=20)),
        (grid(2), PropertySet(), BfsOptions(max_states=9)),
        (grid(5), PropertySet(), BfsOptions(max_depth=3)),
        (grid(2), PropertySet(), BfsOptions(max_depth=5)),  # a depth bound that cuts nothing off: complete
        (TwoPhaseCommit.build("buggy", {"participants": 3}), None, BfsOptions()),
        (TwoPhaseCommit.build("buggy", {"participants": 3}), None, BfsOptions(symmetry=True)),
        (TwoPhaseCommit.build("correct", {"participants": 4}), None, BfsOptions(symmetry=True, store="fingerprints")),
    ],
)
def test_workers_on_every_bound_and_option(model: Any, props: PropertySet | None, options: BfsOptions) -> None:
    props = props if props is not None else PropertySet.of(model_properties(type(model)))
    one = bfs(model, props, options)
    for workers in (2, 3):
        many = bfs(model, props, BfsOptions(**{**options.__dict__, "workers": workers}))
        assert summary(many, with_coverage=False) == summary(one, with_coverage=False)


def test_a_step_violation_stops_where_one_process_stops() -> None:
    from kmc.checker import Action, step

    @step
    def NoYAfterTwoX(s, action: Action, t) -> bool:  # type: ignore[no-untyped-def]
        return not (action.name == "IncY" and s.x == 2)

    props = PropertySet.of([NoYAfterTwoX.__kmc_property__])
    one = bfs(grid(6), props)
    many = bfs(grid(6), props, BfsOptions(workers=2))
    assert summary(many) == summary(one)
    assert [a.name for a in many.violations[0].trace.actions[1:]] == ["IncX", "IncX", "IncY"]


def test_a_property_that_raises_in_a_worker_is_named() -> None:
    from kmc.checker import invariant

    @invariant
    def Broken(s) -> bool:  # type: ignore[no-untyped-def]
        return 1 / (s.x - 1) > -10

    with pytest.raises(UserError) as info:
        bfs(grid(2), PropertySet.of([Broken.__kmc_property__]), BfsOptions(workers=2))
    assert "Broken" in str(info.value) and "ZeroDivisionError" in str(info.value)
    assert "Grid(x=1, y=0)" in str(info.value)
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [(lambda x: 1 / (x - 1) > -10, "ZeroDivisionError"), (lambda x: x == 0 or x, "returned 1 of type int")],
)
def test_a_step_property_that_raises_or_answers_no_bool_in_a_worker_is_named(verdict: Any, expected: str) -> None:
    """A step's verdict is checked as carefully in a worker as in one process: the same error."""
    from kmc.checker import Action, step

    @step
    def Shaky(s, action: Action, t) -> bool:  # type: ignore[no-untyped-def]
        return verdict(t.x)

    props = PropertySet.of([Shaky.__kmc_property__])
    messages = []
    for workers in (1, 2):
        with pytest.raises(UserError) as info:
            bfs(grid(3), props, BfsOptions(workers=workers))
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "Shaky" in messages[1] and expected in messages[1]
    assert multiprocessing.active_children() == []


def test_a_nondeterministic_model_is_detected_in_a_worker() -> None:
    from toy_models import Flaky

    with pytest.raises(NondeterministicModelError):
        bfs(Flaky(), PropertySet(), BfsOptions(workers=2))
    assert multiprocessing.active_children() == []


def kmc_json(*args: str, seed: str, out: Any) -> dict[str, Any]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [*KMC, "check", *args, "--json", "--no-progress", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_the_same_trace_under_every_hash_seed(tmp_path: Any) -> None:
    args = ("replication", "--preset", "kip-101", "--set", "replicas=3", "--workers", "2")
    first = kmc_json(*args, seed="1", out=tmp_path / "first")
    second = kmc_json(*args, seed="4242", out=tmp_path / "second")
    [trace] = (tmp_path / "first").glob("*.itf.json")
    assert trace.read_text() == (tmp_path / "second" / trace.name).read_text()
    assert [v["property"] for v in first["violations"]] == [v["property"] for v in second["violations"]] == ["WeakIsr"]
    assert first["distinct_states"] == second["distinct_states"] == 64684 and first["workers"] == 2


def test_resumed_on_other_workers_it_ends_as_one_uninterrupted_run(tmp_path: Any) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    settings = {"workers": 2, "checkpoint": checkpoint, "max_depth": 12}
    stopped = check("replication", "kip-320", {"replicas": 2}, settings)
    assert stopped.bound_reason == "max depth 12" and stopped.stats.distinct_states < 5973
    resumed = check("replication", "kip-320", {"replicas": 2}, {"workers": 3, "resume": checkpoint})
    whole = check("replication", "kip-320", {"replicas": 2}, {})
    assert summary(resumed) == summary(whole)
    assert (resumed.stats.distinct_states, resumed.stats.generated_states) == (5973, 11733)
    assert sorted(p.name for p in (tmp_path / "checkpoint").glob("frontier-*")) == [
        "frontier-18-0.pkl",
        "frontier-18-1.pkl",
        "frontier-18-2.pkl",
    ]


def kmc_error(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([*KMC, "check", *args, "--no-progress"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.strip().splitlines()
    return line


def test_each_bfs_search_refuses_the_others_checkpoint_in_one_line(tmp_path: Any) -> None:
    parallel, single = str(tmp_path / "parallel"), str(tmp_path / "single")
    check("replication", None, {}, {"workers": 2, "checkpoint": parallel, "max_depth": 3})
    check("replication", None, {}, {"store": "fingerprints", "checkpoint": single, "max_depth": 3})
    assert kmc_error("replication", "--store", "fingerprints", "--resume", parallel) == (
        f"kmc: error: --resume {parallel}: the checkpoint was written by bfs --workers: "
        "resume it with --workers 2 or more"
    )
    assert kmc_error("replication", "--workers", "2", "--resume", single) == (
        f"kmc: error: --resume {single}: the checkpoint was written by bfs on one process: resume it without --workers"
    )
    assert kmc_error("replication", "--workers", "2", "--memory", "1g") == (
        "kmc: error: bfs --workers keeps its visited set in memory: drop --memory, or run with --workers 1"
    )


@pytest.mark.skipif(not codec_module.ACCELERATED, reason="the C codec was not built")
def test_a_checkpoint_resumed_by_a_build_without_the_codec_is_refused_in_one_line(tmp_path: Any) -> None:
    checkpoint = str(tmp_path / "checkpoint")
    check("replication", None, {}, {"workers": 2, "checkpoint": checkpoint, "max_depth": 3})
    line = kmc_error(
        "replication", "--workers", "2", "--resume", checkpoint, env={**os.environ, "KMC_PURE_PYTHON": "1"}
    )
    assert line == (
        "kmc: error: --resume: the checkpoint's levels are in the 'statecodec-1' form and this kmc writes 'pickle' "
        "(its C extensions were built for one and not the other, or KMC_PURE_PYTHON differs): resume with the "
        "build that wrote it, or start again"
    )


def test_liveness_after_a_search_on_workers_says_it_explored_again() -> None:
    one = check("kraft-quorum", None, {}, {"max_states": 2000})
    many = check("kraft-quorum", None, {}, {"max_states": 2000, "workers": 2})
    said = [w for w in many.warnings if "explored again by one process" in w]
    assert len(said) == 1 and said[0].startswith("liveness (EventuallyLeaderElected, ")
    assert not [w for w in one.warnings if "explored again" in w]
    assert [v.property for v in many.violations] == [v.property for v in one.violations]


def test_sigterm_ends_a_search_on_workers_with_its_counts_and_no_process_left() -> None:
    import signal
    import time
    from pathlib import Path

    args = ["kraft-replication", "--set", "brokers=3", "--workers", "2", "--property", "LogMatching"]
    proc = subprocess.Popen(
        [*KMC, "check", *args, "--json", "--no-progress", "--no-trace"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    children: set[int] = set()
    deadline = time.monotonic() + 30
    while len(children) < 2 and time.monotonic() < deadline:  # the workers, once forked
        for task in Path(f"/proc/{proc.pid}/task").glob("*/children"):
            children |= {int(pid) for pid in task.read_text().split()}
        time.sleep(0.05)
    assert len(children) == 2
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    result = json.loads(out)
    assert result["status"] == "holds-bounded" and result["distinct_states"] > 0
    assert "interrupted (SIGTERM)" in json.dumps(result)
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()]
