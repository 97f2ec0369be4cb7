"""Drives as entries of a `kmc ci` suite::

    [[drive]]
    name = "KIP-848: a heartbeat reporting an older reconciliation double-assigns a partition"
    trace = "group-kip848/kip-848-NoDoubleClientAssignment.itf.json"
    expect = "reproduces"                         # reproduces | fixed
    kafka_version = "4.3.1"                       # default: the pinned release

``reproduces``: the broker agrees with every step and the trace's property is violated on it;
``fixed``: the broker does not show the violation (it diverges from the trace, or the property
holds). Drives that need the same cluster (release, settings and features: `cluster_key`) share
one, since a start takes about as long as a drive: `kmc ci` runs them one after another in one
process, the cluster started by the first and stopped after the last, in
``<out>/drives/kafka-<release>-<models>`` (``kmc ci --out``, else ``kmc-out``). Every driver names
what it creates afresh for each drive (topics, group and transactional ids; producer ids are the
broker's), so the drives do not meet. A drive that shares with none runs on a cluster of its own in
``<out>/drives/<name>``. Each is still judged and reported alone.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kmc.checker.errors import UserError

if TYPE_CHECKING:
    from kmc.cluster.drive.run import SharedCluster

EXPECTATIONS = ("reproduces", "fixed")


@dataclass
class DriveJob:
    name: str
    trace: Path
    expect: str
    kafka_version: str | None
    kind: str = "drive"
    cluster: SharedCluster | None = None
    """The cluster it shares while `shared` lasts; None: it starts one of its own."""

    def run(self, out_dir: Path | None) -> tuple[bool, str]:
        from kmc.cluster.drive.run import drive_trace

        base = out_dir if out_dir is not None else Path("kmc-out")
        run_dir = base / "drives" / _slug(self.name)
        result = drive_trace(self.trace, self.kafka_version, run_dir=run_dir, shared=self.cluster)
        if result.interrupted:  # Ctrl-C or SIGTERM: the suite ends, not just this entry
            raise KeyboardInterrupt
        outcome = "reproduces" if result.agreed and result.violated_on_broker else "fixed"
        summary = f"Kafka {result.release}: {result.verdict} ({len(result.steps)} of {result.total_steps} steps)"
        if outcome != self.expect:
            return False, f"expected the trace to be {self.expect} on the broker, but it {outcome}: {summary}" + _where(
                result
            )
        return True, summary

    def share_key(self) -> Hashable | None:
        """The cluster it needs; None when that cannot be told (its run says why)."""
        from kmc.cluster.drive.run import cluster_key

        try:
            return cluster_key(self.trace, self.kafka_version)
        except UserError:
            return None

    @contextmanager
    def shared(self, jobs: list[DriveJob], out_dir: Path | None) -> Iterator[None]:
        """One cluster for ``jobs`` (of one `share_key`), stopped when the block ends however it ends."""
        from kmc.cluster.drive.run import SharedCluster, trace_model
        from kmc.cluster.release import requested

        models = "+".join(sorted({trace_model(job.trace) for job in jobs}))
        base = out_dir if out_dir is not None else Path("kmc-out")
        with SharedCluster(base / "drives" / f"kafka-{requested(self.kafka_version)}-{models}") as cluster:
            for job in jobs:
                job.cluster = cluster
            try:
                yield
            finally:
                for job in jobs:
                    job.cluster = None


def load_drive(raw: dict[str, Any], base: Path, where: str) -> DriveJob:
    known = {"name", "trace", "expect", "kafka_version"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(unknown)} (a drive takes {', '.join(sorted(known))})")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise UserError(f"{where}: a drive needs a name")
    trace = raw.get("trace")
    if not isinstance(trace, str) or not trace:
        raise UserError(f"{where}: a drive needs a trace (a path relative to the suite file)")
    path = base / trace
    if not path.is_file():
        raise UserError(f"{where}: no trace at {path}")
    expect = raw.get("expect")
    if expect not in EXPECTATIONS:
        raise UserError(f"{where}: 'expect' must be one of {', '.join(EXPECTATIONS)}")
    version = raw.get("kafka_version")
    if version is not None and not isinstance(version, str):
        raise UserError(f"{where}: 'kafka_version' must be a string such as \"4.3.1\"")
    return DriveJob(name, path, expect, version)


def _where(result: Any) -> str:
    """What differed at the first step that diverged: the one line a failed suite entry needs."""
    first = next((step for step in result.steps if not step.agreed), None)
    if first is None or not first.differences:
        return ""
    shown = "; ".join(f"{d.field}: model {d.model!r}, broker {d.broker!r}" for d in first.differences[:4])
    more = f" (and {len(first.differences) - 4} more)" if len(first.differences) > 4 else ""
    return f"; at step {first.index}: {shown}{more}"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()[:60] or "drive"
