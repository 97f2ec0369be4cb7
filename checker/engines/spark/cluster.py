"""A Spark standalone cluster on 127.0.0.1: one master and N workers, for tests and benchmarks.

    with LocalCluster(workdir, workers=2) as cluster:
        kmc check replication --engine spark --spark-master {cluster.master_url}

pip's pyspark ships `bin/spark-class` but no `sbin/start-*.sh`, so the daemons are started here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


@dataclass
class LocalCluster:
    workdir: Path
    workers: int = 2
    master_url: str = ""
    cores_per_worker: int = 1
    memory_per_worker: str = "2g"
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def _env(self) -> dict[str, str]:
        import pyspark

        return {
            **os.environ,
            "SPARK_HOME": str(Path(pyspark.__file__).parent),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_NO_DAEMONIZE": "1",
        }

    def _launch(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(
            [spark_class(), *args], stdout=log, stderr=subprocess.STDOUT, env=self._env(), start_new_session=True
        )
        self.procs.append(proc)
        return proc

    def start(self, timeout: float = 60.0) -> LocalCluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self.master_url = f"spark://127.0.0.1:{port}"
        self._launch(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(free_port()),
            ],
        )
        self._wait_for_port(port, timeout)
        for i in range(self.workers):
            self._launch_worker(i)
        self._wait_for_workers(self.workers, timeout)
        return self

    def _launch_worker(self, index: int) -> None:
        work = self.workdir / f"worker-{index}"
        work.mkdir(parents=True, exist_ok=True)
        args = ["org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1"]
        args += ["--cores", str(self.cores_per_worker), "--memory", self.memory_per_worker]
        args += ["--work-dir", str(work), "--webui-port", str(free_port())]
        self._launch(f"worker-{index}", args)

    def add_worker(self, timeout: float = 60.0) -> int:
        """Start one more worker and wait until the master has registered it; its index."""
        index = len(self.procs) - 1
        self._launch_worker(index)
        self._wait_for_workers(index + 1, timeout)
        return index

    def _wait_for_port(self, port: int, timeout: float) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                return
            time.sleep(0.2)
        raise RuntimeError(f"Spark master did not start; see {self.workdir / 'master.log'}")

    def _wait_for_workers(self, registered: int, timeout: float) -> None:
        deadline = time.time() + timeout
        log = self.workdir / "master.log"
        while time.time() < deadline:
            if log.exists() and log.read_text(errors="replace").count("Registering worker") >= registered:
                return
            time.sleep(0.3)
        raise RuntimeError(f"Spark workers did not register; see {log}")

    def kill_worker(self, index: int) -> None:
        """Kill a worker and everything it started (its executor and Python workers)."""
        proc = self.procs[1 + index]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        for proc in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
