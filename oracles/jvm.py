"""The bridge to Kafka's classes: one JVM per process, started on the pinned release's jars.

JPype runs the JVM inside the Python process, so a call into a Kafka class costs a JNI
crossing, not a message to another process (docs/conformance.md has the measured rates).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from kmc.checker.errors import UserError

JAVA_DIR = Path(__file__).resolve().parent / "java"
POM = JAVA_DIR / "pom.xml"

_started_version: str | None = None


def pinned_version() -> str:
    """The Kafka release pom.xml pins (``kafka.version``)."""
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text()) if POM.is_file() else None
    if match is None:
        raise UserError(f"cannot read the pinned Kafka release from {POM}")
    return match.group(1).strip()


def requested_version(version: str | None = None) -> str:
    """The release to call: the argument, else $KMC_KAFKA_VERSION, else the pinned one."""
    return version or os.environ.get("KMC_KAFKA_VERSION") or pinned_version()


def jars_dir(version: str) -> Path:
    override = os.environ.get("KMC_KAFKA_JARS")
    return Path(override) if override else JAVA_DIR / "lib" / version


def _missing_jars(version: str) -> str:
    how = "make kafka-jars" if version == pinned_version() else f"make kafka-jars KAFKA_VERSION={version}"
    where = jars_dir(version)
    return f"Kafka {version}'s jars are not installed (looked in {where}): run `{how}` (needs Maven and a JDK)"


def start(version: str | None = None, folder: Path | None = None) -> str:
    """Start the JVM on the jars of ``version`` (once per process); return the version started.
    ``folder`` holds the jars when they are not the oracles' (a real cluster's server jars, which
    carry the same release's client classes)."""
    global _started_version
    version = requested_version(version)
    if _started_version is not None:
        if version != _started_version:
            raise UserError(
                f"this process already runs Kafka {_started_version}'s classes; one release per process "
                f"(asked for {version})"
            )
        return version
    if not re.fullmatch(r"[0-9A-Za-z.\-]+", version):
        raise UserError(f"not a Kafka release: {version!r}")
    folder = folder or jars_dir(version)
    jars = sorted(folder.glob("*.jar")) if folder.is_dir() else []
    if not any(j.name.startswith("kafka-clients-") for j in jars):
        raise UserError(_missing_jars(version))
    try:
        import jpype
    except ImportError:
        raise UserError("the Python-Java bridge JPype is not installed: pip install jpype1") from None
    if not jpype.isJVMStarted():
        try:
            jvm_path = jpype.getDefaultJVMPath()
        except Exception:
            raise UserError(
                "no Java runtime found for Kafka's classes: install a JDK (sudo apt-get install -y "
                "default-jdk-headless) or set JAVA_HOME"
            ) from None
        # -Xrs and interrupt=False: the JVM inside kmc leaves SIGINT and SIGTERM to kmc, which ends a run
        # with its partial statistics (the JVM's own handlers would shut it down under the run)
        jpype.startJVM(
            jvm_path,
            "-Xss4m",
            "-XX:+UseSerialGC",
            "-Xrs",
            classpath=[str(j) for j in jars],
            convertStrings=True,
            interrupt=False,
        )
    _started_version = version
    return version


def release_tuple(version: str) -> tuple[int, ...]:
    """(major, minor) of a release such as 4.3.1: what an adapter compares to know a release's API."""
    return tuple(int(x) for x in re.findall(r"\d+", version)[:2])


def started_version() -> str | None:
    return _started_version


MOVED = (
    ("org.apache.kafka.common.record.internal.", "org.apache.kafka.common.record."),
    ("org.apache.kafka.common.utils.LogContext", "org.apache.kafka.common.utils.internals.LogContext"),
    (
        "org.apache.kafka.common.message.CreateTopicsRequestData$CreatableTopicConfig",
        "org.apache.kafka.common.message.CreateTopicsRequestData$CreateableTopicConfig",
    ),
    (
        "org.apache.kafka.coordinator.group.streams.assignor.TopologyDescriber",
        "org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber",
    ),
)
"""Classes another release has under another name, the same class: kafka-clients' record classes
(in ``record.internal`` from 4.3), ``LogContext`` (in ``utils.internals`` from 4.4), CreateTopics'
topic config (spelt ``Createable`` before 3.6) and the streams assignor's ``TopologyDescriber`` (in
kafka-group-coordinator-api from 4.4)."""


def _other_names(name: str) -> list[str]:
    others = []
    for a, b in MOVED:
        if name.startswith(a):
            others.append(b + name[len(a) :])
        elif name.startswith(b):
            others.append(a + name[len(b) :])
    return others


def has_constructor(cls: Any, parameters: int) -> bool:
    """Whether a Java class has a public constructor of that many parameters (APIs differ by release)."""
    return any(len(c.getParameterTypes()) == parameters for c in cls.class_.getConstructors())


@cache
def jclass(name: str) -> Any:
    """A Kafka (or JDK) class by its full name, or the name it has in the running release
    (``MOVED``); the JVM must be started."""
    import jpype

    if _started_version is None:
        start()
    for candidate in (name, *_other_names(name)):
        try:
            return jpype.JClass(candidate)
        except Exception:
            continue
    raise UserError(f"class {name} is not in Kafka {_started_version}'s jars")


def coordinator_metadata_image(topics: Iterable[tuple[str, Any, int]]) -> Any:
    """A ``KRaftCoordinatorMetadataImage`` holding these topics (name, Java ``Uuid``, partition count),
    each partition with one replica: the coordinators' classes read only the names, ids and counts."""
    delta = jclass("org.apache.kafka.image.MetadataDelta$Builder")().setImage(
        jclass("org.apache.kafka.image.MetadataImage").EMPTY
    )
    delta = delta.build()
    replicas = jclass("java.util.ArrayList")()
    replicas.add(jclass("java.lang.Integer")(0))
    for name, topic_id, partitions in topics:
        delta.replay(jclass("org.apache.kafka.common.metadata.TopicRecord")().setName(name).setTopicId(topic_id))
        for p in range(partitions):
            record = jclass("org.apache.kafka.common.metadata.PartitionRecord")().setPartitionId(p).setTopicId(topic_id)
            delta.replay(record.setReplicas(replicas).setIsr(replicas).setLeader(0))
    image = delta.apply(jclass("org.apache.kafka.image.MetadataProvenance").EMPTY)
    return jclass("org.apache.kafka.coordinator.common.runtime.KRaftCoordinatorMetadataImage")(image)


def java_exception_text(exc: BaseException) -> str:
    """A thrown Java exception as 'SimpleName: message', the form a mismatch reports."""
    java_class = getattr(exc, "getClass", None)
    if java_class is not None:
        message = exc.getMessage()  # type: ignore[attr-defined]
        return f"{java_class().getSimpleName()}: {message}"
    return f"{type(exc).__name__}: {exc}"


def is_java_exception(exc: BaseException) -> bool:
    import jpype

    return isinstance(exc, jpype.JException)
