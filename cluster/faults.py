"""Faults as actions on a running cluster, each recorded in the history when it is done.

crash and restart (kill -9, then the node started again on its data), pause and resume (SIGSTOP,
SIGCONT), partitions between sets of nodes (symmetric, or one-way: network.py says how), a lost
disk (the node killed, its partitions' log directory emptied and formatted anew before it starts
again), and the active controller crashing.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kmc.checker.errors import UserError
from kmc.cluster.cluster import READY_TIMEOUT_S, Cluster
from kmc.cluster.history import History

KINDS = (
    "crash",
    "pause",
    "partition",
    "one-way-partition",
    "lose-disk",
    "crash-controller",
    "crash-leader",
    "partition-leader",
    "cut-followers",
    "lose-controller-disk",
)
"""The faults a schedule can hold (each undone after a while: restart, resume, heal, rejoin).
crash-leader, partition-leader and cut-followers aim at the leader of the workload's first partition,
as a client's metadata shows it at the time; crash-controller at the quorum's leader."""


class Nemesis:
    """The faults of one cluster, recorded in one history. ``leader`` finds the node leading the
    partition the leader-aimed faults target (None when it has none)."""

    def __init__(self, cluster: Cluster, history: History, leader: Callable[[], int | None] | None = None) -> None:
        self.cluster, self.history = cluster, history
        self.leader = leader or (lambda: None)
        self._replaced: dict[int, str] = {}
        """Nodes whose metadata disk was lost: the directory id of the voter they were."""
        self.stopped: set[int] = set()
        """Nodes a fault stopped and none has started again: any other node that is down died on its own."""
        self.died: set[int] = set()

    def notice_deaths(self) -> list[int]:
        """Nodes down that no fault stopped (killed from outside, or Kafka crashed), each recorded once."""
        dead = [n.node_id for n in self.cluster.nodes if not n.running() and n.node_id not in self.stopped]
        new = [n for n in dead if n not in self.died]
        for node_id in new:
            self.died.add(node_id)
            self.history.fault("died", [node_id])
        return new

    def crash(self, node_id: int, kind: str = "crash") -> None:
        """kill -9, recorded as ``kind`` (the fault that chose the node: crash-leader, ...)."""
        self.cluster.node(node_id).kill()
        self.stopped.add(node_id)
        self.history.fault(kind, [node_id])

    def restart(self, node_id: int, wait: bool = True) -> None:
        node = self.cluster.node(node_id)
        self.cluster.start_node(node)
        self.stopped.discard(node_id)
        self.history.fault("restart", [node_id])
        if wait:
            node.wait_ready(time.monotonic() + READY_TIMEOUT_S)

    def pause(self, node_id: int) -> None:
        self.cluster.node(node_id).pause()
        self.history.fault("pause", [node_id])

    def resume(self, node_id: int) -> None:
        self.cluster.node(node_id).resume()
        self.history.fault("resume", [node_id])

    def partition(self, a: Sequence[int], b: Sequence[int], one_way: bool = False, kind: str | None = None) -> None:
        """Cut the nodes of ``a`` from those of ``b`` (with ``one_way``, only a -> b); recorded as
        ``kind`` (the fault that asked for it), else as partition or one-way-partition."""
        firewall = self.cluster.firewall
        if firewall is None:
            raise UserError("this cluster's nodes do not run as users of their own: no partitions (start it as root)")
        side = lambda ids: [(self.cluster.node(i).user, self._ports(i)) for i in ids]  # noqa: E731
        firewall.partition(side(a), side(b), one_way)  # type: ignore[arg-type]
        recorded = kind or ("one-way-partition" if one_way else "partition")
        self.history.fault(recorded, {"from": list(a), "to": list(b), "one_way": one_way})

    def _ports(self, node_id: int) -> list[int]:
        node = self.cluster.node(node_id)
        return [node.port, node.controller_port]

    def heal(self) -> None:
        if self.cluster.firewall is not None:
            self.cluster.firewall.heal()
        self.history.fault("heal")

    def lose_disk(self, node_id: int) -> None:
        """The node dies and its partitions' log directory is lost: emptied and formatted anew (the metadata
        log, on a disk of its own, survives), then the node starts on it and replicates again."""
        node = self.cluster.node(node_id)
        node.kill()
        self.stopped.add(node_id)
        shutil.rmtree(node.data / "logs", ignore_errors=True)
        (node.data / "logs").mkdir(parents=True)
        self.cluster.format_storage([node])
        self.history.fault("lose-disk", [node_id])

    def active_controller(self) -> int | None:
        """The leader of the metadata quorum, from the nodes' quorum-state files (the newest epoch wins)."""
        best: tuple[int, int] | None = None
        for node in self.cluster.nodes:
            path = node.data / "metadata" / "__cluster_metadata-0" / "quorum-state"
            with contextlib.suppress(OSError, ValueError, KeyError):
                state = json.loads(path.read_text())
                epoch, leader = int(state["leaderEpoch"]), int(state.get("leaderId", -1))
                if leader >= 0 and (best is None or epoch > best[0]):
                    best = (epoch, leader)
        return best[1] if best is not None else None

    def crash_controller(self) -> int | None:
        leader = self.active_controller()
        if leader is not None:
            self.crash(leader, "crash-controller")
        return leader

    def crash_leader(self) -> int | None:
        leader = self.leader()
        if leader is not None:
            self.crash(leader, "crash-leader")
        return leader

    def partition_leader(self) -> int | None:
        """The partition's leader cut off from every other node; clients still reach it."""
        leader = self.leader()
        if leader is None:
            return None
        others = [n.node_id for n in self.cluster.nodes if n.node_id != leader]
        self.partition([leader], others, kind="partition-leader")
        return leader

    def cut_followers(self) -> int | None:
        """The followers can no longer fetch from the partition's leader (their requests to its
        broker port are dropped), while the controllers still talk: the ISR shrinks to the leader."""
        leader = self.leader()
        firewall = self.cluster.firewall
        if leader is None:
            return None
        if firewall is None:
            raise UserError("this cluster's nodes do not run as users of their own: no partitions (start it as root)")
        followers = [n for n in self.cluster.nodes if n.node_id != leader]
        for node in followers:
            firewall.drop(node.user, [self.cluster.node(leader).port])  # type: ignore[arg-type]
        self.history.fault("cut-followers", {"leader": leader, "followers": [n.node_id for n in followers]})
        return leader

    def lose_controller_disk(self, node_id: int) -> None:
        """The node dies with the disk of its metadata log: KIP-853 makes it a new voter. Its metadata
        directory is formatted anew without initial controllers (a new directory id); ``rejoin``
        starts it as an observer, removes the old voter and adds the new one."""
        node = self.cluster.node(node_id)
        node.kill()
        self.stopped.add(node_id)
        shutil.rmtree(node.data / "metadata", ignore_errors=True)
        (node.data / "metadata").mkdir(parents=True)
        self.cluster.format_storage([node], initial=False)
        old, node.directory_id = node.directory_id, _directory_id(node.data / "metadata")
        self.cluster.save()
        self.history.fault("lose-controller-disk", {"node": node_id, "old": old, "new": node.directory_id})
        self._replaced[node_id] = old

    def rejoin(self, node_id: int) -> None:
        """Start a node whose metadata disk was lost and make it a voter again: remove-controller of
        its old directory id, then add-controller of the new one (kafka-metadata-quorum).

        The node starts once the others have a leader other than its old self (at most
        READY_TIMEOUT_S): restarted while they still name it leader of their epoch, Kafka 4.3.1's
        raft client stops the node ("Received request or response with leader ... which is
        inconsistent with current leader"; docs/real-clusters.md)."""
        node = self.cluster.node(node_id)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while self.active_controller() in (node_id, None) and time.monotonic() < deadline:
            time.sleep(0.2)
        self.cluster.start_node(node)
        self.stopped.discard(node_id)
        node.wait_ready(time.monotonic() + READY_TIMEOUT_S)
        old = self._replaced.pop(node_id, None)
        if old is not None:
            self.cluster.metadata_quorum(
                "remove-controller", "--controller-id", str(node_id), "--controller-directory-id", old
            )
        self.cluster.metadata_quorum("--command-config", str(node.properties), "add-controller")
        self.history.fault("rejoin", {"node": node_id, "directory": node.directory_id})


def _directory_id(folder: Path) -> str:
    for line in (folder / "meta.properties").read_text().splitlines():
        if line.startswith("directory.id="):
            return line.split("=", 1)[1].strip()
    raise UserError(f"{folder}/meta.properties has no directory.id: the format failed")
