"""A real Kafka cluster on loopback: started, faulted, and stopped with nothing left behind, and a
short campaign under faults whose history and metadata log are checked.

Every test here runs Kafka's broker (the pinned release's jars, fetched by `make kafka-server`). The
nodes of one cluster are shared by the fault tests; the tests of what is left after each way out
start one-node clusters of their own. Partitions need root and iptables: without them those tests
skip, with the reason."""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import default_sigint
from kmc.cluster import network
from kmc.cluster.cluster import Cluster, ClusterSpec, live_pids, read_info, started
from kmc.cluster.faults import Nemesis
from kmc.cluster.history import History

HERE = Path(__file__).resolve().parent
KMC = Path(sys.executable).parent / "kmc"
NO_PARTITIONS = network.available()
needs_partitions = pytest.mark.skipif(NO_PARTITIONS is not None, reason=str(NO_PARTITIONS))


@pytest.fixture(scope="module")
def cluster(runs: Path) -> Iterator[Cluster]:
    with started(runs / "shared", ClusterSpec(nodes=3)) as running:
        yield running


@pytest.fixture
def nemesis(cluster: Cluster, tmp_path: Path) -> Iterator[Nemesis]:
    history = History(tmp_path / "history.jsonl")
    yield Nemesis(cluster, history)
    history.close()


def reaches(user: str | None, port: int) -> bool:
    """Whether a process of ``user`` can open a connection to 127.0.0.1:port (2 s)."""
    entry = pwd.getpwnam(user) if user else None

    def become() -> None:
        if entry is not None:
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)

    probe = ["timeout", "2", "bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port}"]
    done = subprocess.run(probe, preexec_fn=become, cwd="/", capture_output=True, timeout=20)
    return done.returncode == 0


def leftovers(run_dir: Path, run_id: str) -> list[str]:
    """What of a run is still there: processes naming its directory, its firewall chain, its users."""
    found = []
    ps = subprocess.run(["pgrep", "-f", str(run_dir)], capture_output=True, text=True)
    found += [f"process {pid}" for pid in ps.stdout.split()]
    if NO_PARTITIONS is None:
        rules = subprocess.run(["iptables", "-w", "-S"], capture_output=True, text=True).stdout
        found += [f"iptables chain KMC-{run_id}" for line in rules.splitlines() if f"KMC-{run_id}" in line][:1]
    users = subprocess.run(["getent", "passwd"], capture_output=True, text=True).stdout
    found += [f"user {line.split(':')[0]}" for line in users.splitlines() if line.startswith(f"kmc{run_id}n")]
    return found


def test_the_cluster_runs_every_node_as_a_broker_and_a_controller(cluster: Cluster) -> None:
    info = read_info(cluster.run_dir)
    assert len(live_pids(info)) == 3
    assert info["release"] == str(cluster.release)
    assert Nemesis(cluster, History(cluster.run_dir / "probe.jsonl")).active_controller() in (1, 2, 3)
    for node in cluster.nodes:
        properties = node.properties.read_text()
        assert "process.roles=broker,controller" in properties
        assert (
            f"listeners=PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}" in properties
        )


def test_a_crashed_node_restarts_on_its_data(cluster: Cluster, nemesis: Nemesis) -> None:
    node = cluster.node(3)
    nemesis.crash(3)
    assert not node.running() and len(live_pids(read_info(cluster.run_dir))) == 2
    nemesis.restart(3)
    assert node.running() and len(live_pids(read_info(cluster.run_dir))) == 3
    assert [e.f for e in nemesis.history.events] == ["crash", "restart"]


def test_a_paused_node_is_stopped_until_resumed(cluster: Cluster, nemesis: Nemesis) -> None:
    node = cluster.node(2)

    def state() -> str:
        return next(
            line for line in Path(f"/proc/{node.pid}/status").read_text().splitlines() if line.startswith("State")
        )

    def settles(stopped: bool) -> bool:  # a signal is delivered to the JVM's threads in a moment
        deadline = time.monotonic() + 5
        while ("stopped" in state()) != stopped and time.monotonic() < deadline:
            time.sleep(0.05)
        return ("stopped" in state()) == stopped

    nemesis.pause(2)
    assert settles(stopped=True)
    nemesis.resume(2)
    assert settles(stopped=False)


@needs_partitions
def test_a_partition_cuts_the_nodes_apart_and_nobody_else(cluster: Cluster, nemesis: Nemesis) -> None:
    one, two, three = (cluster.node(i) for i in (1, 2, 3))
    assert reaches(one.user, two.port) and reaches(two.user, one.controller_port)
    nemesis.partition([1], [2, 3])
    try:
        assert not reaches(one.user, two.port) and not reaches(one.user, three.controller_port)
        assert not reaches(two.user, one.port)  # both ways
        assert reaches(two.user, three.port)  # the majority side still talks
        assert reaches(None, one.port)  # clients (root here) are not cut off
    finally:
        nemesis.heal()
    assert reaches(one.user, two.port) and reaches(two.user, one.port)


@needs_partitions
def test_a_one_way_partition_drops_what_one_side_sends(cluster: Cluster, nemesis: Nemesis) -> None:
    one, two, three = (cluster.node(i) for i in (1, 2, 3))
    nemesis.partition([1], [2], one_way=True)
    try:
        assert not reaches(one.user, two.port)
        assert reaches(one.user, three.port)
        # 2 -> 1: its SYN arrives, but 1's answer on a connection 2 opened is dropped (connmark)
        assert not reaches(two.user, one.port)
        assert reaches(three.user, one.port)
    finally:
        nemesis.heal()
    assert nemesis.history.events[0].value == {"from": [1], "to": [2], "one_way": True}


def test_a_lost_disk_comes_back_formatted_and_empty(cluster: Cluster, nemesis: Nemesis) -> None:
    node = cluster.node(3)
    (node.data / "logs" / "kmc-marker").mkdir(exist_ok=True)
    nemesis.lose_disk(3)
    assert not (node.data / "logs" / "kmc-marker").exists()
    assert "directory.id=" in (node.data / "logs" / "meta.properties").read_text()
    nemesis.restart(3)
    assert node.running()


def test_a_controller_that_lost_its_disk_rejoins_as_a_new_voter(cluster: Cluster, nemesis: Nemesis) -> None:
    """KIP-853: the node comes back with a new directory id; the old voter is removed and the new one
    added, while the bootstrap voters stay what format wrote."""
    old = cluster.node(2).directory_id
    nemesis.lose_controller_disk(2)
    new = cluster.node(2).directory_id
    assert new != old
    nemesis.rejoin(2)
    status = cluster.metadata_quorum("describe", "--status")
    [voters] = [line.split(":", 1)[1] for line in status.splitlines() if line.startswith("CurrentVoters:")]
    ids = {v["id"]: v["directoryId"] for v in json.loads(voters)}
    assert ids[2] == new and sorted(ids) == [1, 2, 3]
    assert [2, old] in read_info(cluster.run_dir)["bootstrap_voters"]
    assert [e.f for e in nemesis.history.events] == ["lose-controller-disk", "rejoin"]


@pytest.mark.parametrize("way_out", ["exit", "raise", "SIGINT", "SIGTERM", "SIGKILL"])
def test_nothing_is_left_after_the_owner_ends(way_out: str, runs: Path) -> None:
    """An owned cluster dies with its owner however it ends: the JVMs by the parent-death signal or
    the owner's own stop, the firewall chain and the users by the stop or, after kill -9, the reaper."""
    if os.geteuid() != 0:
        pytest.skip("nodes run as users of their own only as root")
    run_dir = runs / f"owner-{way_out}"
    mode = way_out if way_out in ("exit", "raise") else "wait"
    owner = subprocess.Popen(
        [sys.executable, str(HERE / "cluster_owner.py"), str(run_dir), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline().split()
        assert line[:1] == ["ready"], owner.stderr.read() if owner.stderr else ""
        run_id = line[1]
        assert leftovers(run_dir, run_id)  # there is something to clean up
        if mode == "wait":
            time.sleep(1)
            owner.send_signal(getattr(signal, way_out))
        owner.wait(timeout=60)
    finally:
        if owner.poll() is None:  # the test failed: the owner's own stop still cleans up
            owner.terminate()
            owner.wait(timeout=60)
    deadline = time.monotonic() + 30
    while leftovers(run_dir, run_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers(run_dir, run_id) == []
    assert owner.returncode != 0 if way_out != "exit" else owner.returncode == 0


def test_a_short_campaign_under_faults_holds_and_its_metadata_log_validates(runs: Path, tmp_path: Path) -> None:
    run_dir = runs / "campaign"
    junit = tmp_path / "junit.xml"
    done = subprocess.run(
        [
            str(KMC),
            "campaign",
            "--run-dir",
            str(run_dir),
            "--seed",
            "3",
            "--duration",
            "24",
            "--faults",
            "crash,pause,partition,crash-leader" if NO_PARTITIONS is None else "crash,pause,crash-leader",
            "--json",
            "--junit",
            str(junit),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["verdict"] == "holds" and result["findings"] == [] and result["not_exercised"] == []
    assert result["faults"] == 2 and result["operations"]["ok"] > 500
    assert result["checks"]["AcknowledgedWriteNeverLost"] > 500
    models = result["validation"]["models"]
    assert models["kraft-replication"]["transitions"] >= 4
    assert all(m["validated"] == m["transitions"] for m in models.values())
    assert "cluster up in" in done.stderr and "stopping the cluster" in done.stderr
    for name in ("campaign.json", "schedule.json", "history.jsonl", "result.json", "clients.log"):
        assert (run_dir / name).is_file(), name
    assert json.loads((run_dir / "schedule.json").read_text())["seed"] == 3
    assert 'name="kraft-replication trace validation"' in junit.read_text()
    assert leftovers(run_dir, read_info(run_dir / "cluster")["run_id"]) == []
    again = subprocess.run([str(KMC), "verify", str(run_dir), "--json"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    rechecked = json.loads(again.stdout)
    assert rechecked["validation"]["models"] == models and rechecked["checks"] == result["checks"]


def test_transactions_and_a_kip_848_group_under_a_leader_crash(runs: Path) -> None:
    """The transactional workload (some transactions aborted on purpose) read by a consumer-protocol
    group with read_committed: every transaction check is exercised, and holds."""
    run_dir = runs / "transactions"
    argv = [str(KMC), "campaign", "--run-dir", str(run_dir), "--seed", "4", "--duration", "15"]
    argv += ["--transactional", "--group-protocol", "consumer", "--faults", "crash-leader", "--json", "--no-validate"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["verdict"] == "holds" and result["not_exercised"] == []
    assert set(result["checks"]) >= {"AtomicVisibility", "AbortedNeverVisible"}
    assert result["checks"]["AbortedNeverVisible"] > 0 and result["operations"]["fail"] > 0  # aborted on purpose
    polled = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    assert any(e["process"] == 2 and e["f"] == "poll" and e["type"] == "ok" for e in polled)  # the group read


def test_sigterm_ends_a_campaign_with_its_nodes_stopped(runs: Path) -> None:
    """`kmc campaign` in the background, ended by SIGTERM once its cluster is up: it says so, exits
    143, stops every node and leaves its history."""
    run_dir = runs / "terminated"
    argv = [str(KMC), "campaign", "--run-dir", str(run_dir), "--duration", "60", "--faults", "crash"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines = [proc.stderr.readline() for _ in range(2)]  # starting ..., cluster up in ...
    assert lines[1].startswith("cluster up in"), lines
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1] == "kmc: interrupted (SIGTERM)"
    assert leftovers(run_dir, read_info(run_dir / "cluster")["run_id"]) == []
    assert (run_dir / "history.jsonl").is_file()


def test_a_node_killed_from_outside_is_reported_not_taken_for_a_fault(runs: Path) -> None:
    """A Kafka process killed by someone else mid-campaign: the campaign says which node died with no
    fault of its schedule behind it, its verdict is error (exit 2), the schedule ends at once, and
    nothing is left running."""
    run_dir = runs / "killed-from-outside"
    config = runs / "killed-from-outside.toml"
    config.write_text('duration_s = 8\nvalidate = false\nsteps = [{ at_s = 1, action = "heal" }]\n')
    argv = [str(KMC), "campaign", "--config", str(config), "--run-dir", str(run_dir)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    lines = [proc.stderr.readline() for _ in range(3)]  # starting ..., cluster up in ..., 1.0 s heal
    assert lines[1].startswith("cluster up in") and "heal" in lines[2], lines
    victim = read_info(run_dir / "cluster")["nodes"][2]  # the workload runs: its topic has all three replicas
    os.kill(victim["pid"], signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (out, err)
    said = (
        f"node {victim['node_id']} died during the campaign and no fault of its schedule stopped it (killed from "
        f"outside, or Kafka crashed): see {run_dir / 'cluster'}/node-{victim['node_id']}/out.log"
    )
    assert said in out and "verdict: error" in out, (out, err)
    assert f"node {victim['node_id']} died, and no fault stopped it" in err
    assert "the schedule ends here: a death no fault explains" in err  # not after the 8 s the campaign was given
    assert leftovers(run_dir, read_info(run_dir / "cluster")["run_id"]) == []
