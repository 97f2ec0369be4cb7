"""A real Kafka cluster on loopback, started by the toolkit: KRaft, every node a broker and a controller.

Everything lives under one run directory, recorded in its ``run.json``: the release, the nodes
(ports, folders, directory ids, pids, users), the firewall chain. A cluster is started in one of two
ways:

* **owned** (a campaign, a drive, a test: ``Cluster.start(...)`` as a context manager): its nodes die
  with the process that started them on every way out -- the normal end, an exception, Ctrl-C,
  SIGTERM, and ``kill -9`` of that process, through the kernel's parent-death signal for the nodes
  and a reaper process (reaper.py) that removes the firewall rules and the users when the pipe from
  its parent closes;
* **in the background** (``kmc cluster start``): the nodes run on until ``kmc cluster stop``.

A start in a run directory a dead run left first removes what it left (processes, rules, users).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kmc.checker import interrupts
from kmc.checker.errors import UserError
from kmc.cluster import network, users
from kmc.cluster.node import Node, last_words
from kmc.cluster.release import Release, requested, server_jars

RUN_FILE = "run.json"
MARKER = "kmc-cluster"
READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 20.0
TOOL_TIMEOUT_S = 60.0
LOG4J2 = """status = error
appender.server.type = File
appender.server.name = server
appender.server.fileName = ${sys:kafka.logs.dir}/server.log
appender.server.layout.type = PatternLayout
appender.server.layout.pattern = [%d] %p %m (%c)%n
appender.state.type = File
appender.state.name = state
appender.state.fileName = ${sys:kafka.logs.dir}/state-change.log
appender.state.layout.type = PatternLayout
appender.state.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.server.ref = server
logger.state.name = state.change.logger
logger.state.level = info
logger.state.additivity = false
logger.state.appenderRef.state.ref = state
"""
LOG4J1 = """log4j.rootLogger=INFO, server
log4j.appender.server=org.apache.log4j.FileAppender
log4j.appender.server.File=${kafka.logs.dir}/server.log
log4j.appender.server.layout=org.apache.log4j.PatternLayout
log4j.appender.server.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.state=org.apache.log4j.FileAppender
log4j.appender.state.File=${kafka.logs.dir}/state-change.log
log4j.appender.state.layout=org.apache.log4j.PatternLayout
log4j.appender.state.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.state.change.logger=INFO, state
log4j.additivity.state.change.logger=false
"""
"""The same two files for the 3.x releases, which log through log4j 1 (reload4j)."""
BROKER_DEFAULTS: dict[str, str] = {
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.partitions": "1",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "transaction.state.log.num.partitions": "3",
    "group.initial.rebalance.delay.ms": "0",
    "log.cleaner.dedupe.buffer.size": "16777216",
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
    "replica.lag.time.max.ms": "6000",
    "auto.create.topics.enable": "false",
    "unclean.leader.election.enable": "false",
}
"""Small and quick: a heap of 128 MB needs the cleaner's buffer made to fit; failures are noticed in
seconds. A campaign or a drive overrides what its scenario needs."""


@dataclass
class ClusterSpec:
    """What to start: how many nodes, which release, and settings for every node's server.properties."""

    nodes: int = 3
    release: Release = field(default_factory=requested)
    settings: Mapping[str, str] = field(default_factory=dict)
    features: Mapping[str, str] = field(default_factory=dict)
    """Feature levels the storage is formatted with (``--feature name=level``), beyond the release's defaults."""
    base_port: int | None = None
    """The first of 2 * nodes consecutive ports on 127.0.0.1 (None: any free ones)."""
    node_users: bool | None = None
    """Run each node as a Unix user of its own (needed for partitions); None: where this is root."""
    ready_timeout_s: float = READY_TIMEOUT_S
    """How long the nodes may take to start before the start is given up (and everything removed)."""


def free_ports(count: int, base: int | None) -> list[int]:
    if base is not None:
        ports = list(range(base, base + count))
        for port in ports:
            with socket.socket() as probe:
                try:
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    raise UserError(f"port {port} on 127.0.0.1 is in use: give another --base-port") from None
        return ports
    found: list[int] = []
    holders = []
    try:
        for _ in range(count):
            holder = socket.socket()
            holder.bind(("127.0.0.1", 0))
            holders.append(holder)
            found.append(holder.getsockname()[1])
    finally:
        for holder in holders:
            holder.close()
    return found


def reachable_by_others(run_dir: Path) -> None:
    """The node users must reach their folders: every folder above the run directory must be
    searchable by others (a private temporary folder is not)."""
    for folder in [run_dir, *run_dir.parents]:
        if folder.exists() and not folder.stat().st_mode & 0o001:
            if folder == run_dir:
                continue  # ours: made searchable when it is set up
            raise UserError(
                f"the nodes run as users of their own and cannot reach {run_dir}: {folder} is not searchable "
                "by others (chmod o+x it, or give a --run-dir elsewhere)"
            )


FORMAT_TIMEOUT_S = 120
TOOL_JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData")
"""Kafka's command-line tools run a moment: a small heap and no JIT beyond the first tier."""


def java() -> str:
    found = shutil.which("java")
    if found is None:
        raise UserError("no Java runtime: Kafka's broker needs one (sudo apt-get install -y default-jre-headless)")
    return found


class Cluster:
    """A started cluster (or one read back from its run directory)."""

    def __init__(self, run_dir: Path, info: dict[str, Any], nodes: list[Node], owned: bool) -> None:
        self.run_dir, self.info, self.nodes, self.owned = run_dir, info, nodes, owned
        self.release = Release.parse(info["release"])
        self.firewall = network.Firewall(info["chain"]) if info.get("chain") else None
        self.reaper: subprocess.Popen[bytes] | None = None
        self.classpath = str(Path(info["jars"]) / "*")

    # -- starting ----------------------------------------------------------------------------------
    @classmethod
    def start(cls, run_dir: Path | str, spec: ClusterSpec | None = None, owned: bool = True) -> Cluster:
        """Format and start the nodes, wait until every one is ready; on any failure, nothing is left."""
        spec = spec or ClusterSpec()
        java()  # before anything is made: no Java is one line, and nothing to clean up
        run_dir = Path(run_dir).resolve()
        cannot_cut = network.available() if spec.node_users is not False else None  # probes iptables
        as_users = spec.node_users if spec.node_users is not None else cannot_cut is None
        if as_users and cannot_cut is not None:
            raise UserError(f"{cannot_cut}: leave the partition faults out (--faults) or run as root")
        if as_users:
            reachable_by_others(run_dir)
        prepare_run_dir(run_dir)
        jars = server_jars(spec.release)
        run_id = uuid.uuid4().hex[:6]
        ports = free_ports(2 * spec.nodes, spec.base_port)
        nodes = [
            Node(
                node_id=i + 1,
                port=ports[2 * i],
                controller_port=ports[2 * i + 1],
                folder=run_dir / f"node-{i + 1}",
                directory_id=random_kafka_uuid(),
                user=users.user_name(run_id, i + 1) if as_users else None,
            )
            for i in range(spec.nodes)
        ]
        info = {
            "kind": MARKER,
            "run_id": run_id,
            "release": str(spec.release),
            "jars": str(jars),
            "cluster_id": random_kafka_uuid(),
            "owner_pid": os.getpid() if owned else None,
            "chain": f"KMC-{run_id}" if as_users else None,
            "settings": {**BROKER_DEFAULTS, **spec.settings},
            "features": dict(spec.features),
            "bootstrap_voters": sorted([n.node_id, n.directory_id] for n in nodes),
            # what format --initial-controllers wrote: a node that loses its disk later gets a new id
            "started": time.time(),
            "nodes": [],
        }
        cluster = cls(run_dir, info, nodes, owned)
        try:
            cluster._launch(spec.ready_timeout_s)
        except OSError as exc:  # a full disk, a folder it may not write: one line, nothing left running
            cluster.stop()
            where = f" ({exc.filename})" if exc.filename else ""
            raise UserError(f"cannot start the cluster in {run_dir}: {exc.strerror or exc}{where}") from None
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _launch(self, ready_timeout_s: float) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.firewall is not None:
            self.run_dir.chmod(0o755)  # the node users pass through it to their folders
        self.logging_config.write_text(LOG4J2 if self.release.log4j2 else LOG4J1)
        self.save()  # before anything that a later start would have to clean up
        if self.owned:
            self.reaper = subprocess.Popen(
                [sys.executable, "-m", "kmc.cluster.reaper", str(self.run_dir)],
                stdin=subprocess.PIPE,
                start_new_session=True,
            )
        for node in self.nodes:
            if node.user is not None:
                users.create(node.user)
        if self.firewall is not None:
            self.firewall.create([n.user for n in self.nodes if n.user is not None])
        for node in self.nodes:
            self._write_config(node)
        self.format_storage(self.nodes)
        for node in self.nodes:
            self.start_node(node)
        deadline = time.monotonic() + ready_timeout_s
        for node in self.nodes:
            node.wait_ready(deadline)

    def _write_config(self, node: Node) -> None:
        for folder in (node.data / "logs", node.data / "metadata", node.logs):
            folder.mkdir(parents=True, exist_ok=True)
        quorum = ",".join(f"127.0.0.1:{n.controller_port}" for n in self.nodes)
        lines = {
            "process.roles": "broker,controller",
            "node.id": str(node.node_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(node.data / "logs"),
            "metadata.log.dir": str(node.data / "metadata"),
            **self.info["settings"],
        }
        if self.release.dynamic_quorum:
            lines["controller.quorum.bootstrap.servers"] = quorum  # KIP-853
        else:
            lines["controller.quorum.voters"] = ",".join(
                f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes
            )
        node.properties.parent.mkdir(parents=True, exist_ok=True)
        node.properties.write_text("".join(f"{key}={value}\n" for key, value in lines.items()))

    def format_storage(self, nodes: Sequence[Node], initial: bool = True) -> None:
        """``kafka-storage format`` for each node, in parallel (3-5 s for three)."""
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}:{n.directory_id}" for n in self.nodes)
        running = []
        for node in nodes:
            argv = [
                java(),
                *TOOL_JVM_OPTIONS,
                "-cp",
                self.classpath,
                "kafka.tools.StorageTool",
                "format",
                "--cluster-id",
                self.info["cluster_id"],
                "--config",
                str(node.properties),
                "--ignore-formatted",
            ]
            if self.release.dynamic_quorum:
                argv += ["--initial-controllers", voters] if initial else ["--no-initial-controllers"]
            for feature, level in self.info.get("features", {}).items():
                argv += ["--feature", f"{feature}={level}"]
            log = open(node.folder / "format.log", "ab")  # noqa: SIM115 - closed once the tool ends
            running.append((node, subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT), log))
        for node, process, log in running:
            try:
                code = process.wait(timeout=FORMAT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                for _node, other, _log in running:
                    other.kill()
                raise UserError(f"formatting node {node.node_id}'s storage took over {FORMAT_TIMEOUT_S} s") from None
            finally:
                log.close()
            if code != 0:
                said = last_words(node.folder / "format.log")
                raise UserError(
                    f"formatting node {node.node_id}'s storage failed ({said}): see {node.folder / 'format.log'}"
                )
            if node.user is not None:
                users.chown_tree(node.folder, node.user)

    def metadata_quorum(
        self, *args: str, timeout_s: float = TOOL_TIMEOUT_S, through: Sequence[int] | None = None
    ) -> str:
        """``kafka-metadata-quorum --bootstrap-controller ... ARGS``: its output, or one error line.
        ``through``: the controllers to bootstrap from (default: all; a paused one can stall the tool)."""
        controllers = self.bootstrap_controllers
        if through is not None:
            controllers = ",".join(f"127.0.0.1:{self.node(i).controller_port}" for i in through)
        argv = [java(), *TOOL_JVM_OPTIONS, "-cp", self.classpath, "org.apache.kafka.tools.MetadataQuorumCommand"]
        argv += ["--bootstrap-controller", controllers, *args]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise UserError(f"kafka-metadata-quorum {' '.join(args)} did not answer in {timeout_s:.0f} s") from None
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no output"])[-1]
            raise UserError(f"kafka-metadata-quorum {' '.join(args)} failed: {last[:300]}")
        return done.stdout

    def start_node(self, node: Node) -> None:
        """Start a node and record its process in run.json, where `kmc cluster status` and `kmc drive
        --cluster` look for it."""
        node.start(java(), self.classpath, self.logging_option, die_with_parent=self.owned)
        self.save()

    @property
    def logging_config(self) -> Path:
        return self.run_dir / ("log4j2.properties" if self.release.log4j2 else "log4j.properties")

    @property
    def logging_option(self) -> str:
        """The JVM option that points the release's logging at the run's file."""
        key = "log4j2.configurationFile" if self.release.log4j2 else "log4j.configuration"
        return f"-D{key}=file:{self.logging_config}"

    # -- the run directory -------------------------------------------------------------------------
    def save(self) -> None:
        self.info["nodes"] = [n.to_json() for n in self.nodes]
        tmp = self.run_dir / f".{RUN_FILE}.tmp"
        tmp.write_text(json.dumps(self.info, indent=2))
        tmp.replace(self.run_dir / RUN_FILE)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    @property
    def bootstrap_controllers(self) -> str:
        return ",".join(f"127.0.0.1:{n.controller_port}" for n in self.nodes)

    def node(self, node_id: int) -> Node:
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise UserError(f"no node {node_id}: the nodes are {', '.join(str(n.node_id) for n in self.nodes)}")

    # -- stopping ----------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop every node (SIGTERM together, then kill -9 what is left), remove the firewall rules and
        the users. Idempotent; every way out calls it."""
        for node in self.nodes:
            node.resume()
            node.signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for node in self.nodes:
            if node.process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    node.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            node.kill()  # a lone last node hangs on SIGTERM (its controlled shutdown needs a quorum)
        cleanup(self.info)
        if self.reaper is not None and self.reaper.stdin is not None:
            with contextlib.suppress(OSError):
                self.reaper.stdin.close()  # the reaper sees EOF: nothing left for it
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.reaper.wait(timeout=10)
        self.info["stopped"] = time.time()
        if (self.run_dir / RUN_FILE).exists():
            with contextlib.suppress(OSError):  # a full disk: the nodes are stopped all the same
                self.save()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def random_kafka_uuid() -> str:
    """A Kafka Uuid (base64 of 16 random bytes, as StorageTool random-uuid prints it), never one that
    starts with "-": like Kafka's Uuid.randomUuid, drawn again, since a command line would take
    `--cluster-id -Xyz...` for an option (one run in 64 failed to format before)."""
    import base64

    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def prepare_run_dir(run_dir: Path) -> None:
    """A run directory that is new, empty, or ours; what a dead run left there is removed first."""
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a directory")
    if not run_dir.exists() or not any(run_dir.iterdir()):
        return
    if not (run_dir / RUN_FILE).exists():
        raise UserError(f"{run_dir} is not a run directory of kmc (no {RUN_FILE}): give a new or empty one")
    info = read_info(run_dir)
    if live_pids(info):
        raise UserError(f"a cluster is running in {run_dir}: stop it first (kmc cluster stop --run-dir {run_dir})")
    cleanup(info)
    for path in run_dir.iterdir():
        if path.is_dir() and path.name.startswith("node-"):
            shutil.rmtree(path, ignore_errors=True)
        elif path.name in (RUN_FILE, "log4j2.properties", "log4j.properties"):
            path.unlink()


def read_info(run_dir: Path) -> dict[str, Any]:
    path = run_dir / RUN_FILE
    try:
        info = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{run_dir} is not a run directory of kmc (no {RUN_FILE})") from None
    except ValueError:
        raise UserError(f"{path} is damaged (not JSON): remove the directory by hand") from None
    if not isinstance(info, dict) or info.get("kind") != MARKER:
        raise UserError(f"{run_dir} is not a run directory of kmc ({RUN_FILE} is another program's)")
    return info


def is_node_process(pid: int, folder: str) -> bool:
    """Whether ``pid`` is still the JVM of that node (a pid can be reused by another program)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"kafka.Kafka" in cmdline and f"{folder}/server.properties".encode() in cmdline


def live_pids(info: Mapping[str, Any]) -> list[int]:
    return [n["pid"] for n in info.get("nodes", []) if n.get("pid") and is_node_process(n["pid"], n["folder"])]


def cleanup(info: Mapping[str, Any]) -> None:
    """Kill what is left of a run's nodes, and remove its firewall chain and its users (idempotent)."""
    for node in info.get("nodes", []):
        pid = node.get("pid")
        if pid and is_node_process(pid, node["folder"]):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
    if info.get("chain") and network.available() is None:
        network.Firewall(info["chain"]).remove()
    for node in info.get("nodes", []):
        if node.get("user"):
            users.remove(node["user"])


def stop_background(run_dir: Path) -> int:
    """Stop a cluster that ``kmc cluster start`` left running: SIGTERM to every node at once, kill -9
    after STOP_TIMEOUT_S, then its firewall rules and users. Returns how many nodes were running."""
    info = read_info(run_dir)
    if info.get("owner_pid") and _alive(info["owner_pid"]) and live_pids(info):
        raise UserError(f"the cluster in {run_dir} belongs to a running campaign or test (pid {info['owner_pid']})")
    pids = live_pids(info)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while live_pids(info) and time.monotonic() < deadline:
        time.sleep(0.2)
    cleanup(info)
    info["stopped"] = time.time()
    (run_dir / RUN_FILE).write_text(json.dumps(info, indent=2))
    return len(pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def status(run_dir: Path) -> dict[str, Any]:
    """What ``kmc cluster status`` shows: the nodes, their ports and whether each runs."""
    info = read_info(run_dir)
    nodes = [{**n, "running": bool(n.get("pid")) and is_node_process(n["pid"], n["folder"])} for n in info["nodes"]]
    return {
        "run_dir": str(run_dir),
        "release": info["release"],
        "run_id": info["run_id"],
        "nodes": nodes,
        "bootstrap_servers": ",".join(f"127.0.0.1:{n['port']}" for n in nodes),
    }


@contextlib.contextmanager
def started(run_dir: Path | str, spec: ClusterSpec | None = None) -> Iterator[Cluster]:
    """A cluster owned by this process for the ``with`` block: SIGTERM stops it as Ctrl-C does."""
    previous = signal.getsignal(signal.SIGTERM)
    interrupts.install()  # SIGTERM raises a KeyboardInterrupt that says it was SIGTERM
    try:
        with Cluster.start(run_dir, spec) as cluster:
            yield cluster
    finally:
        signal.signal(signal.SIGTERM, previous)
