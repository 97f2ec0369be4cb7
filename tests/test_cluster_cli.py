"""Bad input to the real-cluster commands: one line on stderr, exit 2, and nothing left running."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from kmc.checker.cli.app import main
from kmc.checker.cli.suite import load_suite

KMC = Path(sys.executable).parent / "kmc"


def one_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kmc: error: "), err
    return err[0]


@pytest.fixture
def reachable(tmp_path: Path) -> Iterator[Path]:
    """A folder the node users can reach (pytest's own temporary folders are private)."""
    base = Path(tempfile.mkdtemp(prefix="kmc-cli-tests-"))
    base.chmod(0o711)
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["campaign", "--duration", "2"], "a campaign lasts 5 to 3600 seconds, not 2"),
        (["campaign", "--faults", "crash,meteor"], "unknown fault meteor"),
        (["campaign", "--acks", "2"], "acks must be 0, 1 or all, not '2'"),
        (["campaign", "--depth", "99"], "the validation depth must be 1 to 20 steps, not 99"),
        (["campaign", "--release", "3.9.1"], "a campaign runs Kafka 4.0.0 or later, not 3.9.1"),
        (["campaign", "--release", "3.2.3"], "production-ready from Kafka 3.3.0: 3.2.3 is older"),
        (["campaign", "--release", "4.x"], "not a Kafka release: '4.x'"),
        (["campaign", "--config", "/nonexistent.toml"], "campaign file not found"),
        (["cluster", "status", "--run-dir", "/nonexistent/run"], "is not a run directory of kmc"),
        (["verify", "/nonexistent/run"], "is not a directory"),
        (["campaign", "--faults", ","], "a schedule needs at least one fault kind"),
        (["campaign", "--acks", "1"], "an idempotent producer needs acks=all: with acks=1, give --no-idempotent"),
        (
            ["cluster", "start", "--base-port", "80"],
            "Invalid value for '--base-port': Input should be greater than or equal to 1024",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], error: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert error in one_error(args, capsys)


def test_a_campaign_file_with_an_unknown_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.toml"
    config.write_text('duration_s = 30\nworkload = { acks = "all", colour = "blue" }\n')
    assert "workload: unknown key(s) colour" in one_error(["campaign", "--config", str(config)], capsys)


def test_a_directory_that_is_not_ours_is_left_alone(reachable: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (reachable / "precious.txt").write_text("not kmc's")
    assert "is not a run directory of kmc" in one_error(["cluster", "start", "--run-dir", str(reachable)], capsys)
    assert (reachable / "precious.txt").read_text() == "not kmc's"
    assert "is not a run directory of kmc" in one_error(["cluster", "stop", "--run-dir", str(reachable)], capsys)


def test_a_finished_run_whose_history_is_not_a_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "campaign.json").write_text('{"seed": 1, "duration_s": 30}')
    (tmp_path / "history.jsonl").write_text("this is not a history\n")
    assert "not a history: the line is not JSON" in one_error(["verify", str(tmp_path)], capsys)


def test_without_java_nothing_is_started(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # kmc, but no java
    done = subprocess.run(
        [str(KMC), "cluster", "start", "--run-dir", str(tmp_path / "run")], env=env, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "kmc: error: no Java runtime: Kafka's broker needs one (sudo apt-get install -y default-jre-headless)"
    )
    assert not (tmp_path / "run").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="nodes run as users of their own only as root")
def test_a_run_dir_the_node_users_cannot_reach(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    error = one_error(["cluster", "start", "--run-dir", str(private / "run")], capsys)
    assert error == (
        f"kmc: error: the nodes run as users of their own and cannot reach {private}/run: {private} is not "
        "searchable by others (chmod o+x it, or give a --run-dir elsewhere)"
    )
    assert not (private / "run").exists()


def test_a_port_in_use(reachable: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        error = one_error(["cluster", "start", "--run-dir", str(reachable / "run"), "--base-port", str(port)], capsys)
    assert error == f"kmc: error: port {port} on 127.0.0.1 is in use: give another --base-port"


def test_a_node_that_never_becomes_ready_is_given_up(reachable: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = reachable / "run"
    error = one_error(["cluster", "start", "--run-dir", str(run), "--nodes", "1", "--ready-timeout", "0.5"], capsys)
    assert error == f"kmc: error: node 1 did not become ready in time: see {run.resolve()}/node-1/logs/server.log"
    assert subprocess.run(["pgrep", "-f", str(run)], capture_output=True).stdout == b""


def test_a_suite_entry_can_be_a_campaign(tmp_path: Path) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text(
        """
[[campaign]]
name = "acks=1 loses acknowledged writes when the leader is cut off"
expect = "violated"
expect_findings = ["AcknowledgedWriteNeverLost"]
duration_s = 30
workload = { acks = "1", idempotent = false }
steps = [{ at_s = 6, action = "partition-leader" }, { at_s = 20, action = "heal" }]
"""
    )
    [entry] = load_suite(suite)
    assert entry.check is None and entry.label == "campaign"
    assert entry.job.spec.workload.acks == "1" and entry.job.expect_findings == ["AcknowledgedWriteNeverLost"]
    suite.write_text('[[campaign]]\nname = "x"\nexpect = "maybe"\n')
    with pytest.raises(Exception, match="'expect' must be one of holds, violated"):
        load_suite(suite)


def test_a_history_whose_values_are_not_operations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "campaign.json").write_text('{"seed": 1, "duration_s": 30}')
    event = {"index": 0, "time": 0.1, "process": 0, "type": "ok", "f": "send", "value": [["send", "kmc-0", "x"]]}
    (tmp_path / "history.jsonl").write_text(json.dumps(event) + "\n")
    error = one_error(["verify", str(tmp_path), "--no-validate"], capsys)
    assert error.endswith(
        'history.jsonl:1: not a history event: a send is ["send", key, value] or ["send", key, [offset, value]]'
    )


def test_a_campaign_does_not_write_into_a_folder_that_is_not_a_campaign_s(
    reachable: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (reachable / "notes.txt").write_text("mine")
    error = one_error(["campaign", "--run-dir", str(reachable), "--faults", "crash"], capsys)
    assert (
        error
        == f"kmc: error: {reachable} is not a campaign's run directory (no campaign.json): give a new or empty one"
    )
    assert sorted(p.name for p in reachable.iterdir()) == ["notes.txt"]


def test_a_run_where_nothing_was_acknowledged_is_not_exercised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "campaign.json").write_text('{"seed": 1, "duration_s": 30}')
    events = [
        {"index": 0, "time": 0.1, "process": 0, "type": "invoke", "f": "send", "value": [["send", "kmc-0", 7]]},
        {"index": 1, "time": 0.2, "process": 0, "type": "info", "f": "send", "value": [["send", "kmc-0", 7]]},
        {
            "index": 2,
            "time": 9.0,
            "process": "final-read_uncommitted",
            "type": "invoke",
            "f": "poll",
            "value": [["poll"]],
        },
        {
            "index": 3,
            "time": 9.1,
            "process": "final-read_uncommitted",
            "type": "ok",
            "f": "poll",
            "value": [["poll", {"kmc-0": []}]],
        },
    ]
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    junit = tmp_path / "junit.xml"
    assert main(["verify", str(tmp_path), "--no-validate", "--junit", str(junit)]) == 1
    out = capsys.readouterr().out
    assert "AcknowledgedWriteNeverLost   not exercised" in out
    assert out.rstrip().splitlines()[-1].startswith("  verdict: not exercised")
    assert 'name="AcknowledgedWriteNeverLost"' in junit.read_text()


def test_kafka_uuids_never_start_with_a_dash() -> None:
    """`kafka-storage format --cluster-id -Xyz...` reads the id as an option: one draw in 64 would fail."""
    from kmc.cluster.cluster import random_kafka_uuid

    drawn = [random_kafka_uuid() for _ in range(5000)]
    assert not [u for u in drawn if u.startswith("-")]
    assert all(
        len(u) == 22 and set(u) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for u in drawn
    )


def test_without_the_client_library_no_campaign_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)  # import confluent_kafka now fails
    run = tmp_path / "run"
    error = one_error(["campaign", "--run-dir", str(run), "--duration", "5"], capsys)
    assert error == "kmc: error: the Kafka client confluent-kafka is not installed: pip install confluent-kafka"
    assert not (run / "cluster").exists()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting a small tmpfs needs root")
def test_a_full_disk_is_one_line_and_leaves_nothing_running(capsys: pytest.CaptureFixture[str]) -> None:
    """A run directory on a disk with no room: the node cannot even log why it dies; kmc says so."""
    disk = Path(tempfile.mkdtemp(prefix="kmc-full-disk-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48k,mode=0755", "tmpfs", str(disk)], check=True)
    try:
        run = disk / "run"
        error = one_error(["cluster", "start", "--run-dir", str(run), "--nodes", "1"], capsys)
        assert error.startswith("kmc: error: node 1 exited during start-up")
        assert "its disk is full" in error
        assert subprocess.run(["pgrep", "-f", str(run)], capture_output=True).stdout == b""
    finally:
        subprocess.run(["umount", str(disk)], check=True)
        disk.rmdir()
