"""Which Kafka release a real cluster runs, and its server's jars.

The release is the one the oracles pin (``oracles/java/pom.xml``: one variable for both) unless
another is asked for. Its jars -- the broker, its tools and a log4j2 binding (3.x: Kafka's reload4j
one), about 90 jars and 55 MB -- are copied from Maven Central by Maven into
``cluster/java/lib/<release>`` (ignored by git) once, by ``make kafka-server`` or on first use.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kmc.checker.errors import UserError
from kmc.oracles.jvm import pinned_version

JAVA_DIR = Path(__file__).resolve().parent / "java"
POM = JAVA_DIR / "pom.xml"
FETCH_TIMEOUT_S = 600
RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True, order=True)
class Release:
    """A Kafka release in KRaft mode, e.g. 4.3.1: 3.3 (KRaft production-ready) or later."""

    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> Release:
        match = RELEASE.fullmatch(text.strip())
        if match is None:
            raise UserError(f"not a Kafka release: {text!r} (give one such as 4.3.1)")
        release = cls(*(int(part) for part in match.groups()))
        if release < FIRST_KRAFT:
            raise UserError(
                f"real clusters run in KRaft mode, production-ready from Kafka {FIRST_KRAFT}: {release} is older"
            )
        return release

    @property
    def log4j2(self) -> bool:
        """Kafka 4.0 moved the broker to log4j2; 3.x logs through log4j 1 (reload4j)."""
        return self >= FIRST_4X

    @property
    def dynamic_quorum(self) -> bool:
        """Whether the controllers are formatted as a dynamic quorum (KIP-853, which 4.0 completed);
        before, they are a static ``controller.quorum.voters`` list."""
        return self >= FIRST_4X

    def require(self, minimum: Release, what: str) -> None:
        """One error line when ``what`` needs a newer release than this."""
        if self < minimum:
            raise UserError(f"{what} Kafka {minimum} or later, not {self}")

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


FIRST_KRAFT = Release(3, 3, 0)
FIRST_4X = Release(4, 0, 0)


LOG_DUMPER = "org.apache.kafka.tools.DumpLogSegments"
LOG_DUMPER_IN_CORE = "kafka.tools.DumpLogSegments"


def log_dumper(jars: Path) -> str:
    """The DumpLogSegments class the release's jars hold: the tools module's, or the Scala core's
    (where it was until a 4.x release moved it)."""
    entry = LOG_DUMPER.replace(".", "/") + ".class"
    for jar in sorted(jars.glob("kafka-tools-*.jar")):
        with contextlib.suppress(OSError, zipfile.BadZipFile), zipfile.ZipFile(jar) as archive:
            if entry in archive.namelist():
                return LOG_DUMPER
    return LOG_DUMPER_IN_CORE


DUMP_TIMEOUT_S = 120


def dump_log_segments(jars: Path, java: str, paths: Iterable[str], *options: str, what: str) -> str:
    """``DumpLogSegments [OPTIONS] --files PATHS`` of the release whose jars these are: its output, or one
    error line naming ``what`` was dumped (one JVM for every segment: about 1.5 s)."""
    argv = [java, "-cp", str(jars / "*"), log_dumper(jars), *options, "--files", ",".join(paths)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=DUMP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise UserError(f"decoding {what} took over {DUMP_TIMEOUT_S} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UserError(f"DumpLogSegments failed on {what}: {last[:300]}")
    return done.stdout


def requested(version: str | None = None) -> Release:
    """The release asked for, else $KMC_KAFKA_VERSION, else the pinned one."""
    if version is not None:
        return Release.parse(version)  # an empty one too: given, so refused rather than replaced
    return Release.parse(os.environ.get("KMC_KAFKA_VERSION") or pinned_version())


def jars_dir(release: Release) -> Path:
    override = os.environ.get("KMC_KAFKA_SERVER_JARS")
    return Path(override) if override else JAVA_DIR / "lib" / str(release)


def server_jars(release: Release, fetch: bool = True) -> Path:
    """The folder of the release's server jars, fetched from Maven Central first if they are not there."""
    folder = jars_dir(release)
    if (folder / ".complete").is_file() or _has_server(folder):
        return folder
    if not fetch or "KMC_KAFKA_SERVER_JARS" in os.environ:
        raise UserError(
            f"Kafka {release}'s server jars are not in {folder}: run `make kafka-server KAFKA_VERSION={release}`"
        )
    _fetch(release, folder)
    return folder


def _has_server(folder: Path) -> bool:
    return folder.is_dir() and any(p.name.startswith("kafka_2.13-") for p in folder.glob("*.jar"))


def _fetch(release: Release, folder: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise UserError("Maven is not installed: it fetches Kafka's jars (sudo apt-get install -y maven)")
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    argv = [
        mvn,
        "-q",
        "-B",
        "dependency:copy-dependencies",
        f"-Dkafka.version={release}",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={partial}",
    ]
    try:
        done = subprocess.run(argv, cwd=JAVA_DIR, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        shutil.rmtree(partial, ignore_errors=True)
        raise UserError(
            f"fetching Kafka {release}'s jars took over {FETCH_TIMEOUT_S} s: is Maven Central reachable?"
        ) from None
    if done.returncode != 0 or not _has_server(partial):
        shutil.rmtree(partial, ignore_errors=True)
        raise UserError(
            f"Kafka {release} is not on Maven Central (or Maven failed): {_last_error(done.stdout + done.stderr)}"
        )
    if not release.log4j2:
        # one slf4j binding: Kafka's own reload4j one (the pom's log4j2 binding is for 4.0 and later)
        for binding in partial.glob("log4j-slf4j-impl-*.jar"):
            binding.unlink()
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    (folder / ".complete").touch()


def _last_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if "ERROR" in line or "error" in line]
    return (lines[0] if lines else text.strip().splitlines()[-1] if text.strip() else "no output")[:300]


def main(argv: list[str]) -> int:
    """``python -m kmc.cluster.release VERSION``: fetch a release's server jars (``make kafka-server``);
    one line and exit 2 when it cannot."""
    try:
        if len(argv) != 1:
            raise UserError("give one Kafka release, e.g. 4.3.1")
        print(server_jars(Release.parse(argv[0])))
    except UserError as exc:
        print(f"kmc: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
