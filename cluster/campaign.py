"""A campaign: start a cluster, run a workload under a seeded fault schedule for a bounded time, heal,
read everything back, stop, then check the history and validate the metadata log against the models.

Everything needed to reproduce it is written in its run directory: ``campaign.json`` (the seed, the
settings, the release), ``schedule.json``, the nodes' configs and logs under ``cluster/``,
``history.jsonl``, and at the end ``result.json`` with every finding; ``observed/`` holds an observed
ITF trace for each metadata transition the models do not explain.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from kmc.checker.errors import UserError
from kmc.cluster.attribution import Attribution, attribute, decode_batches
from kmc.cluster.checkers import (
    FINAL_COMMITTED,
    FINAL_LOG,
    Facts,
    Finding,
    applicable,
    check_history,
    duplicates,
    exercised,
)
from kmc.cluster.cluster import Cluster, ClusterSpec, java, read_info, started
from kmc.cluster.faults import Nemesis
from kmc.cluster.history import History, read_history
from kmc.cluster.mappings import MAPPINGS
from kmc.cluster.metadata import decode
from kmc.cluster.observed import observations
from kmc.cluster.release import FIRST_4X, Release, requested, server_jars
from kmc.cluster.schedule import AIMED, Bounds, Schedule, Step, explicit, generate
from kmc.cluster.validation import RunValidation, validate_run
from kmc.cluster.workload import Workload, WorkloadSpec, client_library, client_log, partition_leader, read_all

SETTLE_S = 8.0
"""After the last fault is undone: time for the ISR to fill again before the final reads."""
CLUSTER_DIR = "cluster"


@dataclass
class CampaignSpec:
    run_dir: Path
    seed: int = 0
    duration_s: float = 60.0
    nodes: int = 3
    release: Release = field(default_factory=requested)
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    bounds: Bounds = field(default_factory=Bounds)
    settings: dict[str, str] = field(default_factory=dict)
    """server.properties of every node, beyond the defaults (cluster.BROKER_DEFAULTS)."""
    steps: list[dict[str, Any]] | None = None
    """An explicit schedule (a scenario) instead of one drawn from the seed."""
    validate: bool = True
    """Validate the metadata log against the models once the cluster is stopped."""
    depth: int | None = None
    """Steps the validation's search allows between two observed states (None: each mapping's own)."""

    def schedule(self) -> Schedule:
        if self.steps is not None:
            return explicit(self.steps, self.duration_s, self.nodes, self.bounds)
        return generate(self.seed, self.duration_s, self.nodes, self.bounds)

    def to_json(self) -> dict[str, Any]:
        out = {
            "seed": self.seed,
            "duration_s": self.duration_s,
            "nodes": self.nodes,
            "release": str(self.release),
            "workload": asdict(self.workload),
            "bounds": asdict(self.bounds),
            "settings": self.settings,
            "validate": self.validate,
            "depth": self.depth,
        }
        if self.steps is not None:
            out["steps"] = self.steps
        return out

    @classmethod
    def from_mapping(cls, raw: dict[str, Any], run_dir: Path, where: str) -> CampaignSpec:
        """A campaign from a TOML table (a suite's [[campaign]], ``kmc campaign --config``): every key
        checked, as ``campaign.json`` writes them."""
        known = {"seed", "duration_s", "nodes", "release", "workload", "bounds", "settings", "steps", "validate"}
        known |= {"depth", "name", "expect", "expect_findings"}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise UserError(f"{where}: unknown key(s) {', '.join(unknown)}")
        spec = cls(run_dir=run_dir)
        for key in ("seed", "nodes", "depth"):
            if raw.get(key) is not None:
                setattr(spec, key, _typed(raw[key], int, f"{where}: {key}"))
        if "duration_s" in raw:
            spec.duration_s = float(_typed(raw["duration_s"], int | float, f"{where}: duration_s"))
        if "validate" in raw:
            spec.validate = _typed(raw["validate"], bool, f"{where}: validate")
        if "release" in raw:
            spec.release = Release.parse(_typed(raw["release"], str, f"{where}: release"))
        if "workload" in raw:
            spec.workload = _dataclass(WorkloadSpec, raw["workload"], f"{where}: workload")
        if "bounds" in raw:
            bounds = dict(_typed(raw["bounds"], dict, f"{where}: bounds"))
            for key in ("kinds", "fault_s", "gap_s"):
                if key in bounds:
                    bounds[key] = tuple(_typed(bounds[key], list, f"{where}: bounds.{key}"))
            spec.bounds = _dataclass(Bounds, bounds, f"{where}: bounds")
        if "settings" in raw:
            settings = _typed(raw["settings"], dict, f"{where}: settings")
            spec.settings = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in settings.items()}
        if "steps" in raw:
            spec.steps = _typed(raw["steps"], list, f"{where}: steps")
        spec.check()
        return spec

    def check(self) -> None:
        """Every setting in range, and the schedule buildable: before anything is started."""
        if not 1 <= self.nodes <= 9:
            raise UserError(f"a campaign runs 1 to 9 nodes, not {self.nodes}")
        # its faults re-add controllers (KIP-853) and its checks read 4.x's metadata decoder
        self.release.require(FIRST_4X, "a campaign runs")
        if not 5 <= self.duration_s <= 3600:
            raise UserError(f"a campaign lasts 5 to 3600 seconds, not {self.duration_s:g}")
        if self.depth is not None and not 1 <= self.depth <= 20:
            raise UserError(f"the validation depth must be 1 to 20 steps, not {self.depth}")
        if self.workload.replication_factor > self.nodes:
            raise UserError(f"replication factor {self.workload.replication_factor} needs as many nodes")
        self.workload.check()
        self.schedule()

    def partitions(self) -> bool:
        """Whether the schedule may cut the network (then the nodes need users of their own)."""
        cuts = ("partition", "one-way-partition", "partition-leader", "cut-followers")
        if self.steps is None:
            return any(kind in cuts for kind in self.bounds.kinds)
        return any(step.action in cuts for step in self.schedule().steps)


def _typed(value: Any, kind: Any, where: str) -> Any:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise UserError(f"{where} has the wrong type ({type(value).__name__})")
    return value


def _dataclass(cls: Any, raw: Any, where: str) -> Any:
    names = {f.name for f in fields(cls)}
    _typed(raw, dict, where)
    unknown = sorted(set(raw) - names)
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(unknown)}: the keys are {', '.join(sorted(names))}")
    try:
        return cls(**raw)
    except TypeError as exc:
        raise UserError(f"{where}: {exc}") from None


@dataclass
class CampaignResult:
    spec: CampaignSpec
    findings: list[Finding]
    checks: dict[str, int]
    """Each history check and how much it looked at (0: it held vacuously)."""
    operations: dict[str, int]
    faults: int
    elapsed_s: float
    validation: RunValidation | None = None
    client_errors: list[str] = field(default_factory=list)
    attributions: list[Attribution] = field(default_factory=list)
    """Who wrote each run of duplicated values: the client or the broker (from the batches' headers)."""
    errors: list[str] = field(default_factory=list)
    """What could not be checked after the run (the decoder failed, the jars are gone): the verdict
    is then ``error``, and the history's findings still stand."""

    @property
    def verdict(self) -> str:
        """``violated`` on a finding or an unexplained transition; ``not exercised`` when no write was
        acknowledged (the clients failed, or acks=0): nothing was tested; else ``holds``."""
        if self.findings or (self.validation is not None and not self.validation.ok):
            return "violated"
        if self.errors:
            return "error"
        if not self.checks.get("AcknowledgedWriteNeverLost"):
            return "not exercised"
        return "holds"

    @property
    def ok(self) -> bool:
        return self.verdict == "holds"

    @property
    def not_exercised(self) -> list[str]:
        out = [name for name, count in self.checks.items() if not count]
        if self.validation is not None:
            out += [f"{m} trace validation" for m, c in self.validation.per_model().items() if not c["transitions"]]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "campaign": self.spec.to_json(),
            "checks": self.checks,
            "not_exercised": self.not_exercised,
            "findings": [f.to_json() for f in self.findings],
            "operations": self.operations,
            "faults": self.faults,
            "elapsed_s": round(self.elapsed_s, 1),
            "validation": self.validation.to_json() if self.validation is not None else None,
            "client_errors": self.client_errors,
            "attributions": [a.to_json() for a in self.attributions],
            "errors": self.errors,
        }


Progress = Callable[[str], None]


def run_campaign(spec: CampaignSpec, progress: Progress = lambda _line: None) -> CampaignResult:
    spec.check()
    client_library()  # no client, no campaign: said before any node starts
    schedule = spec.schedule()
    if spec.run_dir.is_dir() and any(spec.run_dir.iterdir()) and not (spec.run_dir / "campaign.json").exists():
        raise UserError(f"{spec.run_dir} is not a campaign's run directory (no campaign.json): give a new or empty one")
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    for stale in ("result.json", "history.jsonl"):
        (spec.run_dir / stale).unlink(missing_ok=True)
    (spec.run_dir / "campaign.json").write_text(json.dumps(spec.to_json(), indent=2) + "\n")
    schedule.save(spec.run_dir / "schedule.json")
    history = History(spec.run_dir / "history.jsonl")
    start = time.monotonic()
    settings = {
        "min.insync.replicas": str(spec.workload.min_insync_replicas),
        "unclean.leader.election.enable": str(spec.workload.unclean_election).lower(),
        **spec.settings,
    }
    cluster_spec = ClusterSpec(
        nodes=spec.nodes, release=spec.release, settings=settings, node_users=True if spec.partitions() else None
    )
    progress(f"starting {spec.nodes} nodes of Kafka {spec.release} in {spec.run_dir / CLUSTER_DIR}")
    workload: Workload | None = None
    try:
        with client_log(spec.run_dir / "clients.log"), started(spec.run_dir / CLUSTER_DIR, cluster_spec) as cluster:
            progress(f"cluster up in {time.monotonic() - start:.1f} s: {cluster.bootstrap_servers}")
            workload = Workload(cluster.bootstrap_servers, history, spec.workload)
            workload.start()
            leader = lambda: partition_leader(cluster.bootstrap_servers, spec.workload.topic, 0)  # noqa: E731
            _play(cluster, Nemesis(cluster, history, leader), schedule, progress)
            time.sleep(SETTLE_S)
            workload.finish()
            progress("reading every partition back")
            read_all(cluster.bootstrap_servers, spec.workload, "read_uncommitted", history, FINAL_LOG)
            read_all(cluster.bootstrap_servers, spec.workload, "read_committed", history, FINAL_COMMITTED)
            progress("stopping the cluster")
    finally:
        if workload is not None:
            workload.finish()
        history.close()
    result = check_run(spec.run_dir, progress, spec)
    result.elapsed_s = time.monotonic() - start
    result.client_errors = workload.errors if workload else []
    (spec.run_dir / "result.json").write_text(json.dumps(result.to_json(), indent=2) + "\n")
    return result


def check_run(
    run_dir: Path, progress: Progress = lambda _line: None, spec: CampaignSpec | None = None
) -> CampaignResult:
    """The checks of a finished run, from what its directory holds (``kmc verify`` runs them again)."""
    if spec is None:
        spec = spec_of(run_dir)
    events = read_history(run_dir / "history.jsonl")
    names = applicable(spec.workload.idempotent, spec.workload.transactional, spec.workload.isolation)
    findings = check_history(events, names, spec.workload.isolation)
    operations: dict[str, int] = {}
    for event in events:
        if event.process != "nemesis" and event.type != "invoke":
            operations[event.type] = operations.get(event.type, 0) + 1
    faults = sum(
        1 for e in events if e.process == "nemesis" and e.f not in ("restart", "resume", "heal", "rejoin", "died")
    )
    result = CampaignResult(spec, findings, exercised(events, names), operations, faults, 0.0)
    for event in events:
        if event.process == "nemesis" and event.f == "died":
            node = event.value[0]
            result.errors.append(
                f"node {node} died during the campaign and no fault of its schedule stopped it (killed from "
                f"outside, or Kafka crashed): see {run_dir / CLUSTER_DIR}/node-{node}/out.log"
            )
    if any(f.check == "NoDuplicates" for f in findings):
        progress("reading the batches that hold the duplicates")
        try:
            result.attributions = attribute_duplicates(run_dir, events)
        except UserError as exc:
            result.errors.append(f"the duplicates could not be attributed: {exc}")
    if spec.validate:
        progress("validating the metadata log against the models")
        try:
            result.validation = validate_metadata(run_dir, spec.depth)
        except UserError as exc:
            result.errors.append(f"the metadata log could not be validated: {exc}")
    return result


def attribute_duplicates(run_dir: Path, events: list[Any]) -> list[Attribution]:
    """The producer ids, epochs and sequences of the batches holding each duplicate's two copies."""
    found = duplicates(Facts.of(events))
    cluster_dir = run_dir / CLUSTER_DIR
    if not (cluster_dir / "run.json").exists():
        return []
    _info, jars = stopped_cluster(cluster_dir)
    return attribute(found, decode_batches(cluster_dir, found, jars, java()))


def stopped_cluster(cluster_dir: Path) -> tuple[dict[str, Any], Path]:
    """A stopped cluster's run.json and the jars of its release, whose tools decode its logs."""
    info = read_info(cluster_dir)
    return info, server_jars(Release.parse(info["release"]), fetch=False)


def validate_metadata(run_dir: Path, depth: int | None = None) -> RunValidation:
    """Decode every node's metadata log of a stopped run and validate it against every mapped model."""
    cluster_dir = run_dir / CLUSTER_DIR
    info, jars = stopped_cluster(cluster_dir)
    logs = decode(cluster_dir, jars, java())
    voters = info.get("bootstrap_voters") or [(n["node_id"], n["directory_id"]) for n in info["nodes"]]
    bootstrap = tuple(sorted((int(node), str(directory)) for node, directory in voters))
    return validate_run(observations(logs, bootstrap, info.get("settings", {})), MAPPINGS, run_dir / "observed", depth)


def spec_of(run_dir: Path) -> CampaignSpec:
    """The campaign a run directory records (campaign.json)."""
    path = run_dir / "campaign.json"
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{run_dir} is not a campaign's run directory (no campaign.json)") from None
    except ValueError:
        raise UserError(f"{path} is not JSON: is {run_dir} a campaign's run directory?") from None
    if not isinstance(raw, dict):
        raise UserError(f"{path} is not a campaign's description")
    return CampaignSpec.from_mapping(raw, run_dir, str(path))


def _play(cluster: Cluster, nemesis: Nemesis, schedule: Schedule, progress: Progress) -> None:
    """Each step at its time; the end of the campaign's duration, however many steps it holds. A node
    that dies with no fault behind it ends the schedule early: the run's verdict is already an error."""
    begin = time.monotonic()

    def noticed_a_death() -> bool:
        died = nemesis.notice_deaths()
        for node_id in died:
            progress(f"{time.monotonic() - begin:6.1f} s  node {node_id} died, and no fault stopped it")
        if died:
            progress(f"{time.monotonic() - begin:6.1f} s  the schedule ends here: a death no fault explains")
        return bool(died)

    aimed: int | None = None
    for step in schedule.steps:
        if not _sleep_until(begin + step.at_s, noticed_a_death):
            return
        target = _apply(nemesis, step, aimed)
        if step.action in AIMED:
            aimed = target
        shown = step.node if step.node is not None else target
        progress(f"{time.monotonic() - begin:6.1f} s  {step.action} {'' if shown is None else shown}")
    _sleep_until(begin + schedule.duration_s, noticed_a_death)


def _apply(nemesis: Nemesis, step: Step, aimed: int | None) -> int | None:
    """Do a step; returns the node it targeted (an aimed fault's is found now)."""
    node = step.node if step.node is not None else aimed
    action = step.action
    if action == "crash-controller":
        return nemesis.crash_controller()
    if action == "crash-leader":
        return nemesis.crash_leader()
    if action == "partition-leader":
        return nemesis.partition_leader()
    if action == "cut-followers":
        return nemesis.cut_followers()
    if action == "heal":
        nemesis.heal()
        return node
    if node is None:
        return None  # an aimed fault that found no leader: nothing to undo
    if action in ("crash", "lose-disk", "lose-controller-disk"):
        {"crash": nemesis.crash, "lose-disk": nemesis.lose_disk, "lose-controller-disk": nemesis.lose_controller_disk}[
            action
        ](node)
    elif action == "restart":
        nemesis.restart(node, wait=False)
    elif action == "rejoin":
        nemesis.rejoin(node)
    elif action == "pause":
        nemesis.pause(node)
    elif action == "resume":
        nemesis.resume(node)
    elif action in ("partition", "one-way-partition"):
        others = [n.node_id for n in nemesis.cluster.nodes if n.node_id != node]
        nemesis.partition([node], others, one_way=action == "one-way-partition")
    else:
        raise UserError(f"unknown schedule step {action}")
    return node


def _sleep_until(moment: float, stop: Callable[[], bool]) -> bool:
    """Sleep until ``moment``, asking ``stop`` every half second; False when it said stop."""
    while True:
        if stop():
            return False
        left = moment - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(left, 0.5))
