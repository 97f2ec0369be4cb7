"""kraft-quorum's kip-853 lasso, on a real Kafka: a leader that removes itself and restarts before the
removal commits leaves a quorum that never elects again.

The model's counterexample (counterexamples/kraft-quorum/kip-853-EventuallyLeaderElected) on three
controllers: voter X is removed; the leader L then removes itself while the last other voter Y is
paused, so the VotersRecord {Y} is appended on L alone; L restarts. L reads {Y} from its own log:
it is no voter, so it never stands (its election timeout is infinite). Y's log holds {L, Y}: it
needs L's vote, and L, whose log is longer by that record, refuses it. This test drives those
steps with ``kafka-metadata-quorum`` and watches the quorum stay leaderless for many election
timeouts.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kmc.checker.errors import UserError
from kmc.cluster.cluster import Cluster, ClusterSpec, started
from kmc.cluster.faults import Nemesis
from kmc.cluster.history import History

WATCH_S = 20.0
"""About twenty election timeouts (controller.quorum.election.timeout.ms is 1 s by default)."""


@contextlib.contextmanager
def kip853_cluster() -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix="kmc-kip853-tests-"))
    base.chmod(0o711)
    try:
        with started(base / "run", ClusterSpec(nodes=3, node_users=False)) as running:
            yield running
    finally:
        shutil.rmtree(base, ignore_errors=True)


def quorum_states(cluster: Cluster) -> dict[int, dict]:
    states = {}
    for node in cluster.nodes:
        path = node.data / "metadata" / "__cluster_metadata-0" / "quorum-state"
        try:
            states[node.node_id] = json.loads(path.read_text())
        except (OSError, ValueError):
            states[node.node_id] = {}
    return states


def log_text(cluster: Cluster, node_id: int) -> str:
    """A node's server.log with those of its earlier lives (a restart moves the last one aside)."""
    logs = cluster.node(node_id).logs
    return "".join(path.read_text(errors="replace") for path in sorted(logs.glob("server.log*")))


def appended_alone(log: str, leader: int, voter: int) -> bool:
    """Whether the leader has appended a voter set of ``voter`` alone (KafkaRaftClient logs each set
    it reads from its log, uncommitted ones included)."""
    prefix = f"[RaftManager id={leader}] Latest set of voters is VoterSet(voters={{{voter}=VoterNode("
    return any(prefix in line and line.count("VoterNode(") == 1 for line in log.splitlines())


def has_voter_set(log: str, node: int, voters: set[int]) -> bool:
    """Whether ``node`` has read the voter set ``voters`` from its log."""
    prefix = f"[RaftManager id={node}] Latest set of voters is VoterSet(voters={{"
    return any(
        prefix in line and line.count("VoterNode(") == len(voters) and all(f"{v}=VoterNode(" in line for v in voters)
        for line in log.splitlines()
    )


def wait_for(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def remove_and_restart(cluster: Cluster, tmp_path: Path) -> tuple[int, int, int, int] | None:
    """Remove X, pause Y, let the leader L append VotersRecord {Y} and crash it: (L, X, Y, the leader
    epoch at the crash), or None when L did not append {Y} or the restarted L never read it back from its
    own log (the model's precondition did not hold)."""
    history = History(tmp_path / "history.jsonl")
    nemesis = Nemesis(cluster, history)
    assert wait_for(lambda: nemesis.active_controller() is not None, 30)
    leader = nemesis.active_controller()
    removed, last = (n.node_id for n in cluster.nodes if n.node_id != leader)
    cluster.metadata_quorum(
        "remove-controller",
        "--controller-id",
        str(removed),
        "--controller-directory-id",
        cluster.node(removed).directory_id,
    )
    assert wait_for(lambda: has_voter_set(log_text(cluster, last), last, {leader, last}), 30)
    time.sleep(2)  # the last voter's next fetch tells the leader, which commits the removal
    nemesis.pause(last)

    # The leader appends VotersRecord {last} and waits for it to commit, which it cannot: the command
    # times out in the background while the leader crashes.
    def remove_leader() -> None:
        with contextlib.suppress(UserError):
            cluster.metadata_quorum(
                "remove-controller",
                "--controller-id",
                str(leader),
                "--controller-directory-id",
                cluster.node(leader).directory_id,
                timeout_s=15,
                through=[leader],  # not through the paused voter, which would stall the tool
            )

    self_removal = threading.Thread(target=remove_leader, daemon=True)
    self_removal.start()
    if not wait_for(lambda: appended_alone(log_text(cluster, leader), leader, last), 30):
        self_removal.join(20)  # the removal was refused: the first one had not committed before the pause
        history.close()
        return None
    epoch = int(quorum_states(cluster)[leader].get("leaderEpoch", 0))
    nemesis.crash(leader)
    nemesis.restart(leader, wait=False)
    nemesis.resume(last)
    self_removal.join(20)
    history.close()
    current_life = cluster.node(leader).logs / "server.log"
    if not wait_for(lambda: appended_alone(current_life.read_text(errors="replace"), leader, last), 30):
        return None
    return leader, removed, last, epoch


def test_a_leader_removed_and_restarted_before_the_removal_commits_leaves_no_leader(tmp_path: Path) -> None:
    for attempt in range(2):
        with kip853_cluster() as cluster:
            roles = remove_and_restart(cluster, tmp_path / f"attempt-{attempt}")
            if roles is not None:
                check_no_leader_for_good(cluster, *roles)
                return
    pytest.fail("twice, the leader did not append VotersRecord {Y} or did not read it back after its restart")


def check_no_leader_for_good(cluster: Cluster, leader: int, removed: int, last: int, epoch: int) -> None:
    """No leader in any epoch after the crash's (the first election may take more than one epoch)."""
    no_timeout = re.compile(rf"UnattachedState\(epoch=\d+, .*voters=\[{last}\], electionTimeoutMs=9223372036854775807")
    found = wait_for(lambda: bool(no_timeout.search(log_text(cluster, leader))), 30)
    transitions = [line[:200] for line in log_text(cluster, leader).splitlines() if "Completed transition" in line]
    assert found, f"the restarted leader {leader} (removed {removed}, paused {last}): {transitions[-4:]}"
    begin = time.monotonic()
    while time.monotonic() - begin < WATCH_S:
        leaders = {n: s.get("leaderId") for n, s in quorum_states(cluster).items() if s.get("leaderEpoch", 0) > epoch}
        assert all(leader_id == -1 for leader_id in leaders.values()), leaders
        time.sleep(0.5)
    last_log = log_text(cluster, last)
    rounds = len(re.findall(rf"\[RaftManager id={last}\] Completed transition to ProspectiveState", last_log))
    assert rounds >= 8, f"voter {last} stood {rounds} times"
    rejected = f"replicaId={last}, "
    leader_log = log_text(cluster, leader)
    assert sum(1 for line in leader_log.splitlines() if rejected in line and "is rejected" in line) >= 8
