"""The Spark engine on a real standalone cluster (one master, two workers on 127.0.0.1)."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest
from kmc.checker import Check
from kmc.checker.engines.spark.cluster import LocalCluster
from kmc.checker.engines.spark.context import slots_available, spark_context
from kmc.checker.result import Status

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    cluster = LocalCluster(tmp_path_factory.mktemp("spark-cluster"), workers=2).start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def sc(cluster: LocalCluster):
    context = spark_context(cluster.master_url, app="kmc-tests")
    # Each executor is a JVM the workers start after the context: on a loaded machine that takes
    # longer than a search waits for its first one, so the tests start once both have registered.
    deadline = time.monotonic() + 180
    while slots_available(context) < cluster.workers and time.monotonic() < deadline:
        time.sleep(0.2)
    assert slots_available(context) == cluster.workers, f"executors did not register; see {cluster.workdir}"
    yield context
    context.stop()


def test_cluster_matches_bfs(sc) -> None:
    result = Check("replication", preset="kip-279", engine_name="spark", spark_context=sc).run()
    assert result.status is Status.HOLDS_COMPLETE
    assert (result.stats.distinct_states, result.stats.depth) == (9027, 18)
    violated = Check(
        "replication", preset="kip-101", property_names=["StrongIsr"], engine_name="spark", spark_context=sc
    ).run()
    assert violated.violations[0].trace_length == 12


class _Background:
    """A kip-320 check on the cluster, run in a thread so a test can act on the cluster meanwhile."""

    def __init__(self, sc, max_leader_epoch: int, settings: dict, progress=None, runtime=None) -> None:
        self.outcome: dict[str, object] = {}
        check = Check(
            "replication",
            preset="kip-320",
            overrides={"max_leader_epoch": max_leader_epoch},  # long enough to act in the middle
            engine_name="spark",
            settings=settings,
            runtime=runtime or {},
            spark_context=sc,
        )
        self.thread = threading.Thread(target=self._run, args=(check, progress))
        self.thread.start()

    def _run(self, check: Check, progress) -> None:
        try:
            self.outcome["result"] = check.run(progress=progress)
        except BaseException as exc:  # reported by result()
            self.outcome["error"] = exc

    def is_alive(self) -> bool:
        return self.thread.is_alive()

    def result(self):
        self.thread.join(timeout=600)
        assert "error" not in self.outcome, self.outcome.get("error")
        return self.outcome["result"]


def test_worker_killed_mid_run_does_not_change_the_result(sc, cluster: LocalCluster, tmp_path: Path) -> None:
    checkpoint = tmp_path / "ckpt"
    worker = _Background(sc, 4, {"partitions": 4, "checkpoint": str(checkpoint)})
    meta = checkpoint / "meta.json"
    deadline = time.time() + 300
    killed_at = None
    while time.time() < deadline and worker.is_alive():
        if meta.exists() and json.loads(meta.read_text())["progress"]["level"] >= 5:
            cluster.kill_worker(1)
            killed_at = json.loads(meta.read_text())["progress"]["level"]
            break
        time.sleep(0.1)
    result = worker.result()
    assert killed_at is not None and killed_at < 26, "the worker was not killed mid-run"
    assert result.stats.extra["restarts"] >= 1, "the search never noticed the lost worker"
    assert result.status is Status.HOLDS_COMPLETE
    assert (result.stats.distinct_states, result.stats.generated_states, result.stats.depth) == (119531, 252593, 26)


def test_a_worker_joining_mid_run_gets_work(sc, cluster: LocalCluster, tmp_path: Path) -> None:
    cluster.kill_worker(1)  # if the test above has not already
    deadline = time.time() + 60
    while slots_available(sc) != 1 and time.time() < deadline:
        time.sleep(0.2)
    assert slots_available(sc) == 1
    checkpoint = tmp_path / "ckpt"
    # long enough (about 30 s on one worker) that the new worker registers before the search ends
    search = _Background(sc, 6, {"partitions": 2, "checkpoint": str(checkpoint)})
    meta = checkpoint / "meta.json"
    while search.is_alive() and not (meta.exists() and json.loads(meta.read_text())["progress"]["level"] >= 1):
        time.sleep(0.1)
    joined_at = json.loads(meta.read_text())["progress"]["level"]
    cluster.add_worker()
    result = search.result()
    assert joined_at < 34, "the search ended before the worker joined"
    assert result.status is Status.HOLDS_COMPLETE
    assert (result.stats.distinct_states, result.stats.generated_states, result.stats.depth) == (1550337, 3430629, 34)
    assert result.stats.extra["restarts"] == 0
    assert len(result.stats.extra["task_wait_s"]) == 2, "the search did not spread onto the new worker"


class _Depth:
    """A progress sink that remembers how deep the search has gone."""

    depth = 0

    def update(self, *, distinct: int, generated: int, depth: int, queue: int) -> None:
        self.depth = depth

    def close(self) -> None:
        pass


def test_without_a_checkpoint_a_lost_worker_resumes_from_a_saved_level(sc, cluster: LocalCluster, capsys) -> None:
    """No --checkpoint: the levels the engine saves on its own (here every one) are what it resumes from."""
    seen = _Depth()
    search = _Background(sc, 4, {"partitions": 4}, progress=seen, runtime={"save_interval_s": 0.0})
    while search.is_alive() and seen.depth < 5:
        time.sleep(0.05)
    killed_at = seen.depth
    cluster.kill_worker(len(cluster.procs) - 2)  # the worker started last
    result = search.result()
    assert killed_at < 26, "the search ended before the worker was killed"
    assert result.stats.extra["restarts"] == 1
    resumed = re.search(r"resuming it from level (\d+)", capsys.readouterr().err)
    assert resumed and int(resumed[1]) >= 5, "the search started again from the beginning"
    assert result.status is Status.HOLDS_COMPLETE
    assert (result.stats.distinct_states, result.stats.generated_states, result.stats.depth) == (119531, 252593, 26)
