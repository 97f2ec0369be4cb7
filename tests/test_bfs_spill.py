"""The BFS past its memory budget (--memory) and across a stop (--checkpoint / --resume): the same
states, counts, coverage and shortest traces as one run in memory."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kmc.checker.errors import UserError
from kmc.checker.result import CheckResult, Status
from kmc.checker.runner import Check
from kmc.checker.search.progress import NoProgress
from kmc.checker.storage import codec, fpset
from kmc.checker.storage.fpset import parse_size
from kmc.checker.traces.files import write_traces

TESTS = Path(__file__).parent
GRID = f"{TESTS / 'toy_models.py'}:CounterGrid"


@pytest.fixture(autouse=True)
def own_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint key of the test's own, not the user's."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.fixture
def tiny_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Budgets below the 1m floor, to spill a few thousand states many times over."""
    monkeypatch.setattr(fpset, "MIN_MEMORY", 64 << 10)


def counts(result: CheckResult) -> tuple[int, int, int]:
    return result.stats.distinct_states, result.stats.generated_states, result.stats.depth


def kip320(**settings: Any) -> CheckResult:
    return Check("replication", preset="kip-320", settings={"store": "fingerprints", **settings}).run()


def test_a_run_past_its_budget_finds_exactly_what_the_run_in_memory_finds(tiny_budgets: None) -> None:
    whole = kip320()
    spilled = kip320(memory="128k")
    assert counts(whole) == counts(spilled) == (5973, 11733, 18)
    assert spilled.status is Status.HOLDS_COMPLETE and spilled.complete
    assert spilled.coverage == whole.coverage
    spill = spilled.stats.extra["spill"]
    assert spill["flushes"] > 0 and spill["merges"] > 0 and spill["level_spills"] > 0
    assert spill["visited_on_disk"] > 0 and spill["bytes_written"] > 0
    assert "spill" not in whole.stats.extra  # the in-memory search is untouched


def test_a_hundred_thousand_states_through_a_one_megabyte_budget() -> None:
    n = 300
    result = Check(GRID, overrides={"n": n}, settings={"store": "fingerprints", "memory": "1m"}).run()
    assert counts(result) == ((n + 1) ** 2, 1 + 2 * n * (n + 1), 2 * n + 1)
    assert result.status is Status.HOLDS_COMPLETE
    spill = result.stats.extra["spill"]
    assert spill["flushes"] >= 10 and spill["merges"] >= 5
    assert 0 < spill["visited_on_disk"] <= (n + 1) ** 2


def test_a_violation_found_after_spills_has_the_shortest_trace_and_it_replays(
    tmp_path: Path, kmc, tiny_budgets: None
) -> None:
    overrides = {"n": 150, "limit": 250}
    inmemory = Check(GRID, overrides=overrides, property_names=["Bounded"], settings={"store": "fingerprints"}).run()
    spilled = Check(
        GRID, overrides=overrides, property_names=["Bounded"], settings={"store": "fingerprints", "memory": "256k"}
    ).run()
    assert spilled.stats.extra["spill"]["flushes"] >= 10  # found long after the first spill
    assert counts(spilled) == counts(inmemory)
    assert [v.property for v in spilled.violations] == ["Bounded"]
    assert spilled.violations[0].trace_length == inmemory.violations[0].trace_length == 251
    [trace] = write_traces(spilled, tmp_path)
    assert kmc("replay", trace)[0] == 0


def test_the_spill_statistics_are_in_the_text_and_the_json(kmc, tiny_budgets: None) -> None:
    code, out, _err = kmc(
        "check",
        "replication",
        "-p",
        "kip-320",
        "--store",
        "fingerprints",
        "--memory",
        "128k",
        "--no-progress",
        "--json",
    )
    assert code == 0
    spill = json.loads(out)["spill"]
    assert spill["memory_budget_bytes"] == 128 << 10 and spill["merges"] > 0
    code, out, _err = kmc(
        "check", "replication", "-p", "kip-320", "--store", "fingerprints", "--memory", "128k", "--no-progress"
    )
    assert code == 0
    [line] = [line for line in out.splitlines() if line.startswith("  disk (--memory 128 KiB): ")]
    assert f"{spill['merges']} merges" in line and f"{spill['flushes']} flushes" in line


def test_resumed_after_a_depth_bound_it_ends_as_one_uninterrupted_run(tmp_path: Path, tiny_budgets: None) -> None:
    checkpoint = str(tmp_path / "ckpt")
    whole = kip320()
    first = kip320(max_depth=6, checkpoint=checkpoint)
    assert first.bound_reason == "max depth 6" and not first.complete
    assert json.loads((tmp_path / "ckpt" / "meta.json").read_text())["progress"]["depth"] == 6
    resumed = kip320(resume=checkpoint, memory="128k")
    assert resumed.complete and resumed.bound_reason is None and resumed.status is Status.HOLDS_COMPLETE
    assert counts(resumed) == counts(whole) == (5973, 11733, 18)
    assert resumed.coverage == whole.coverage


class _CtrlC(NoProgress):
    """Ctrl-C once the search has reported progress this many times (mid-level)."""

    def __init__(self, after: int) -> None:
        self.left = after

    def update(self, **_fields: Any) -> None:
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt


def test_resumed_after_ctrl_c_mid_level_it_counts_nothing_twice(tmp_path: Path) -> None:
    checkpoint = str(tmp_path / "ckpt")
    grid = {"n": 60}
    settings = {"store": "fingerprints", "memory": "1m"}
    whole = Check(GRID, overrides=grid, settings=settings).run()
    stopped = Check(GRID, overrides=grid, settings={**settings, "checkpoint": checkpoint}).run(progress=_CtrlC(2))
    assert stopped.interrupted and not stopped.complete
    depth = json.loads((tmp_path / "ckpt" / "meta.json").read_text())["progress"]["depth"]
    assert 1 < depth < 121
    resumed = Check(GRID, overrides=grid, settings={"store": "fingerprints", "resume": checkpoint}).run()
    assert resumed.complete and not resumed.interrupted
    assert counts(resumed) == counts(whole) == (61**2, 1 + 2 * 60 * 61, 121)
    assert resumed.coverage == whole.coverage


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--memory", "1g"], "bfs: --memory needs --store fingerprints"),
        (["--store", "fingerprints", "--memory", "4x"], "bad --memory '4x': use a size such as 512m or 4g"),
        (["--store", "fingerprints", "--memory", "0"], "bad --memory '0': use a size such as 512m or 4g"),
        (["--store", "fingerprints", "--memory", "100k"], "bad --memory '100k': at least 1m"),
        (["--checkpoint", "{dir}"], "bfs: --checkpoint needs --store fingerprints"),
        (["--store", "fingerprints", "--resume", "{dir}/none"], "--resume {dir}/none: no such directory"),
        (["--engine", "spark", "--memory", "1g"], "the spark engine does not take --memory"),
    ],
)
def test_bad_settings_are_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path, kmc) -> None:
    args = [a.replace("{dir}", str(tmp_path)) for a in args]
    code, _out, err = kmc("check", "replication", "-p", "kip-320", "--no-progress", *args)
    assert code == 2
    [line] = err.strip().splitlines()
    assert message.replace("{dir}", str(tmp_path)) in line


def test_resume_refuses_another_check_and_a_tampered_checkpoint(tmp_path: Path, kmc) -> None:
    checkpoint = tmp_path / "ckpt"
    kip320(max_depth=4, checkpoint=str(checkpoint), memory="1m")
    resume = ["--store", "fingerprints", "--resume", checkpoint, "--no-progress"]
    code, _out, err = kmc("check", "replication", "-p", "kip-101", *resume)
    assert code == 2 and "the checkpoint is of a different check" in err and len(err.strip().splitlines()) == 1
    code, _out, err = kmc("check", "replication", "-p", "kip-320", "-P", "WeakIsr", *resume)
    assert code == 2 and "the checkpoint is of a different check" in err

    [level] = checkpoint.glob("level-*.pkl")
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, (f"touch {marker}",))

    saved = level.read_bytes()
    level.write_bytes(pickle.dumps(Payload()))  # a crafted file: meta.json names another digest
    code, _out, err = kmc("check", "replication", "-p", "kip-320", *resume)
    assert code == 2 and "is damaged or was not written by your kmc" in err and len(err.strip().splitlines()) == 1
    assert not marker.exists()
    level.write_bytes(saved)

    meta = checkpoint / "meta.json"
    doc = json.loads(meta.read_text())
    doc["progress"]["generated"] += 1  # a tampered count
    meta.write_text(json.dumps(doc))
    code, _out, err = kmc("check", "replication", "-p", "kip-320", *resume)
    assert code == 2 and "meta.json is damaged or was not written by your kmc" in err


@pytest.mark.skipif(not codec.ACCELERATED, reason="the C codec was not built")
def test_a_checkpoint_resumed_by_a_build_without_the_codec_is_refused_in_one_line(tmp_path: Path) -> None:
    checkpoint = tmp_path / "ckpt"
    kip320(max_depth=4, checkpoint=str(checkpoint), memory="1m")
    args = ["check", "replication", "-p", "kip-320", "--store", "fingerprints", "--resume", str(checkpoint)]
    env = {**os.environ, "KMC_PURE_PYTHON": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "kmc.checker.cli", *args, "--no-progress"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "the checkpoint's levels are in the 'statecodec-1' form and this kmc writes 'pickle'" in line


def test_checkpoint_and_resume_must_name_one_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--checkpoint and --resume name different directories"):
        kip320(checkpoint=str(tmp_path / "a"), resume=str(tmp_path / "b"))


@pytest.mark.parametrize(("text", "size"), [("1m", 1 << 20), ("512M", 512 << 20), ("4g", 4 << 30), ("2GiB", 2 << 30)])
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_the_disk_set_finds_every_fingerprint_and_parent_after_merges(tmp_path: Path, monkeypatch) -> None:
    import random

    import numpy as np

    monkeypatch.setattr(fpset, "MERGE_BLOCK", 64)  # merges of many blocks
    rng = random.Random(7)
    visited = fpset.DiskFPSet(tmp_path)
    parents: dict[int, int] = {}
    order: list[int] = []
    for _flush in range(9):
        for _ in range(1000):
            fp = rng.getrandbits(64)
            visited.recent[fp] = parents[fp] = rng.choice(order) if order else fp
            order.append(fp)
        visited.flush()
    assert len(visited) == len(parents) == 9000 and not visited.recent
    assert visited.flushes == 9 and visited.merges == 7 and len(visited.runs) == 2  # 9 = 8 + 1, as a binary counter
    for run in visited.runs:
        assert bool(np.all(run.fps[1:] > run.fps[:-1]))  # sorted, each fingerprint once
    assert visited.found_on_disk([*parents, 1, 2, 3]) == set(parents)
    assert all(visited.parent(fp) == up for fp, up in parents.items())


def _mapped_file_kib() -> int:
    """The process's resident pages of mapped files (RssFile), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile in /proc/self/status")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the process's RssFile")
def test_a_lookup_and_a_merge_leave_no_page_of_the_runs_resident(tmp_path: Path) -> None:
    """A page of a mapped run that a lookup touched counts as the process's memory until it is given
    back: without that, a run of 16 MiB searched everywhere adds its 16 MiB to the process."""
    import numpy as np

    rng = np.random.default_rng(11)
    visited = fpset.DiskFPSet(tmp_path)
    everything = rng.integers(0, 2**63, size=1 << 21, dtype=np.uint64)
    for half in np.split(everything, 2):  # two runs of 8 MiB of fingerprints, then merged into one
        visited.recent.update(zip(half.tolist(), half.tolist(), strict=True))
        before = _mapped_file_kib()
        visited.flush()
        assert _mapped_file_kib() - before < 2048
    assert visited.merges == 1 and visited.runs[0].count == 1 << 21
    wanted = rng.choice(everything, size=200_000, replace=False)  # touches every page of the run
    before = _mapped_file_kib()
    assert visited.found_on_disk(wanted.tolist()) == set(wanted.tolist())
    assert _mapped_file_kib() - before < 2048
