"""One Kafka node of a real cluster: a combined broker and controller (KRaft), run as a JVM.

A node has a folder of its own in the run directory: its ``server.properties``, its data
(``data/``: the metadata log and the partitions' logs) and its logs (``logs/server.log``,
``logs/state-change.log``, ``out.log``). Where the cluster runs as root each node runs as a Unix
user of its own, so that network partitions can be made by matching a packet's owner.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kmc.checker.errors import UserError

JVM_OPTIONS = (
    "-Xmx128m",
    "-Xms64m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
)
"""A small heap and a quick start (about 8 s for three nodes, 170 MB each); the cleaner's buffer is
made to fit in server.properties. No perf data: it would leave a /tmp/hsperfdata_<user> folder per
node user behind."""
READY_LINE = "Kafka Server started"
FULL_DISK_BYTES = 1 << 20
"""Less room than this where a node writes: its disk is full (the JVM cannot even log why it died)."""
PR_SET_PDEATHSIG = 1


@dataclass
class Node:
    """A node's identity, where it lives, and its process while it runs."""

    node_id: int
    port: int
    """The broker's listener (clients and replication)."""
    controller_port: int
    folder: Path
    directory_id: str
    """KIP-853's directory id of its metadata log directory (a new one when the disk is lost)."""
    user: str | None = None
    """The Unix user it runs as (root only); None: as this process's user."""
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    paused: bool = False

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    @property
    def properties(self) -> Path:
        return self.folder / "server.properties"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def to_json(self) -> dict[str, Any]:
        fields = ("node_id", "port", "controller_port", "directory_id", "user", "pid")
        return {**{name: getattr(self, name) for name in fields}, "folder": str(self.folder)}

    # -- the process -----------------------------------------------------------------------------
    def start(self, java: str, classpath: str, logging_option: str, die_with_parent: bool) -> None:
        """Start the JVM; it dies with this process (``die_with_parent``) or runs on in the background."""
        if self.running():
            return
        self.logs.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            (self.logs / "server.log").rename(self.logs / f"server.log.{int(time.time() * 1000)}")
        argv = [
            java,
            *JVM_OPTIONS,
            f"-Dkafka.logs.dir={self.logs}",
            logging_option,
            "-cp",
            classpath,
            "kafka.Kafka",
            str(self.properties),
        ]
        out = open(self.folder / "out.log", "ab")  # noqa: SIM115 - the child's, closed below once it has it
        try:
            self.process = subprocess.Popen(
                argv,
                cwd=self.folder,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_as(self.user, die_with_parent),
            )
        finally:
            out.close()
        self.paused = False

    def wait_ready(self, deadline: float) -> None:
        """Until the node logs that it started; an error naming its log if it dies or never does."""
        log = self.logs / "server.log"
        while time.monotonic() < deadline:
            if not self.running():
                code = self.process.poll() if self.process is not None else None
                said = last_words(self.folder / "out.log")
                raise UserError(
                    f"node {self.node_id} exited during start-up (code {code}, {said}{_full_disk(self.folder)}): "
                    f"see {self.folder / 'out.log'}"
                )
            with contextlib.suppress(FileNotFoundError):
                if READY_LINE in log.read_text(errors="replace"):
                    return
            time.sleep(0.1)
        raise UserError(f"node {self.node_id} did not become ready in time: see {log}")

    def signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, sig)

    def kill(self) -> None:
        """kill -9 (a crash: nothing unflushed is written)."""
        self.signal(signal.SIGCONT)  # a paused JVM must be running to die promptly
        self.signal(signal.SIGKILL)
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
        self.paused = False

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        self.signal(signal.SIGCONT)
        self.paused = False


def _as(user: str | None, die_with_parent: bool) -> Any:
    """What the child runs before exec: become the node's user, and ask the kernel for SIGKILL when the
    process that started it dies (set after the user changes: changing it clears the request)."""

    def become() -> None:
        if user is not None:
            import pwd

            entry = pwd.getpwnam(user)
            os.setgroups([])
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
        if die_with_parent:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return become


def last_words(log: Path) -> str:
    """The last line a tool wrote, for an error line (the whole log stays on disk)."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "it wrote nothing"


def _full_disk(folder: Path) -> str:
    """'; the disk is full' when the node's folder has no room left: a node that cannot write dies silently."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    return f"; its disk is full ({free:,} bytes free)" if free < FULL_DISK_BYTES else ""
