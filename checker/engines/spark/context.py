"""Starting Spark for a search: a SparkContext that runs this Python everywhere, binds to loopback
and stays quiet; a master checked before a JVM starts; the slots a cluster offers."""

from __future__ import annotations

import os
import re
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kmc.checker.errors import UserError

LOG4J2 = """\
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
rootLogger.level = off
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


# -- driver side --------------------------------------------------------------------------------
def spark_context(master: str, driver_memory: str = "2g", verbose: bool = False, app: str = "kmc") -> Any:
    """A SparkContext that runs this Python everywhere, binds to loopback and stays quiet."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    from pyspark import SparkConf, SparkContext

    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName(app)
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.driver.memory", driver_memory)
        .set("spark.pyspark.python", sys.executable)
        .set("spark.executorEnv.PYTHONHASHSEED", "0")
        .set("spark.python.worker.reuse", "true")
        .set("spark.ui.showConsoleProgress", "false")
        # A level is a barrier stage; if an executor is lost and the rest cannot run it, give up
        # in seconds (not Spark's ten minutes) so the engine reruns it on the slots left.
        .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s")
        .set("spark.scheduler.barrier.maxConcurrentTasksCheck.maxFailures", "3")
        # A failed search stage comes back to the engine, which restarts it from the last saved
        # level in a fresh exchange directory: Spark must not rerun it on its own.
        .set("spark.stage.maxConsecutiveAttempts", "1")
    )
    pythonpath = os.environ.get("PYTHONPATH")
    if pythonpath:
        conf.set("spark.executorEnv.PYTHONPATH", pythonpath)
    if not verbose:
        log_config = Path(tempfile.gettempdir()) / "kmc-spark-log4j2.properties"
        log_config.write_text(LOG4J2)
        java_opt = f"-Dlog4j2.configurationFile=file:{log_config}"
        conf.set("spark.ui.enabled", "false")
        conf.set("spark.driver.extraJavaOptions", java_opt)
        conf.set("spark.executor.extraJavaOptions", java_opt)
    if SparkContext._active_spark_context is not None or verbose:
        sc = SparkContext.getOrCreate(conf)
    else:
        sc = SparkContext(conf=conf, gateway=quiet_gateway(conf))
    # quiet means quiet: a job cancelled by Ctrl-C logs its tasks' errors, and kmc reports failures itself
    sc.setLogLevel("WARN" if verbose else "OFF")
    return sc


JVM_NOISE = (
    "WARNING: Using incubator modules",
    # Spark's Logging prints these to the JVM's stderr itself, whatever log4j is told
    'Setting default log level to "',
    "To adjust logging level use sc.setLogLevel(newLevel).",
)


def quiet_gateway(conf: Any) -> Any:
    """Launch the driver JVM with its stderr filtered: the JVM's own start-up notices are dropped."""
    import subprocess
    import threading

    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    proc = getattr(gateway, "proc", None)
    if proc is None or proc.stderr is None:
        return gateway

    def forward() -> None:
        for raw in iter(proc.stderr.readline, b""):
            line = raw.decode(errors="replace")
            if not line.startswith(JVM_NOISE):
                sys.stderr.write(line)
                sys.stderr.flush()

    threading.Thread(target=forward, name="kmc-spark-stderr", daemon=True).start()
    return gateway


def slots_available(sc: Any) -> int:
    """How many tasks the cluster can run at once now (a barrier stage needs them all)."""
    try:
        jsc = sc._jsc.sc()
        return int(jsc.maxNumConcurrentTasks(jsc.resourceProfileManager().defaultResourceProfile()))
    except Exception:  # an API private to Spark: fall back to what it reports at start
        return int(sc.defaultParallelism)


def wait_for_slots(sc: Any, wanted: int, timeout: float = 60.0, settle: float = 1.0) -> int:
    """The slots to run on. A cluster's executors register after the context starts, one by one:
    wait for the first, then until there are ``wanted`` or none has come for ``settle`` seconds.
    (One that comes later still gets work: the search rescales onto it.)"""
    deadline = time.monotonic() + timeout
    while (slots := slots_available(sc)) < 1:
        if sc._jsc is None or sc._jsc.sc().isStopped():
            raise UserError(f"spark: the context on {sc.master} stopped (the master refused the application)")
        if time.monotonic() > deadline:
            raise UserError(f"spark: no executor registered within {timeout:.0f} s; is the cluster up?")
        time.sleep(0.2)
    if sc.master.startswith("local"):
        return slots
    last_change = time.monotonic()
    while slots < wanted and time.monotonic() - last_change < settle:
        time.sleep(0.1)
        if (now := slots_available(sc)) != slots:
            slots, last_change = now, time.monotonic()
    return slots


def failure_text(exc: Exception) -> str:
    java = getattr(exc, "java_exception", None)
    text = str(java.getMessage() if java is not None else exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


_LOCAL_MASTER = re.compile(r"local(\[(\*|[1-9][0-9]*)(,\s*[0-9]+)?\])?")


_MEMORY = re.compile(r"[1-9][0-9]*[kmgtKMGT]?")


MASTER_CONNECT_TIMEOUT_S = 5.0


def check_master(master: str, driver_memory: str) -> None:
    """Refuse a master Spark cannot use before a JVM starts: a malformed one at once, a standalone
    master nobody answers at within seconds -- one line each, never a Java stack or a hang."""
    if not _MEMORY.fullmatch(driver_memory):
        raise UserError(f"bad --driver-memory {driver_memory!r}: use a size such as 512m or 2g")
    if _LOCAL_MASTER.fullmatch(master) or master == "yarn" or master.startswith(("k8s://", "mesos://")):
        return
    if not master.startswith("spark://"):
        raise UserError(f"bad --spark-master {master!r}: use local[*], local[N] or spark://HOST:PORT")
    for address in master.removeprefix("spark://").split(","):
        host, sep, port = address.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UserError(f"bad --spark-master {master!r}: {address!r} is not HOST:PORT")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=MASTER_CONNECT_TIMEOUT_S):
                return  # one master that answers is enough (the others are standbys)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
    raise UserError(f"cannot reach the Spark master {master} ({reason}); is the cluster up?")
