"""`kmc drive`: a counterexample played request by request on a real broker, each step's answers and
the broker's reports compared with the model's next state.

A drive agrees when every step agrees: the broker answered each request as the trace says and
reports afterwards what the model's next state holds (through the driver's projection). The clients
are the driver's, acting on those answers as the model's clients do, so a drive that agrees to the
end shows the trace's violation on the real broker. A drive stops at its first divergence: from
there on the broker and the trace are in different states.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kmc.checker.errors import UserError
from kmc.checker.properties import holds, select_properties
from kmc.checker.result import Trace
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import Replayed, confirm_violation, replay
from kmc.cluster.drive import drivers
from kmc.cluster.drive.base import Difference, Driver, differences
from kmc.cluster.drive.reorder import regroup
from kmc.cluster.drive.session import NODE_START_TIMEOUT_S, Session
from kmc.cluster.drive.wire import BrokerGoneError

if TYPE_CHECKING:
    from kmc.cluster.cluster import Cluster, ClusterSpec

Progress = Callable[[str], None]
SETTLE_PAUSE_S = 0.05
LASSO_WATCH_S = 5.0
LASSO_ROUNDS = 2
"""How many times a lasso's loop through several states is driven round after its stem."""


@dataclass
class StepResult:
    index: int
    action: str
    requests: list[str]
    agreed: bool
    differences: list[Difference]
    answered: dict[str, Any]
    observed: dict[str, Any]
    deferred: bool = False
    """Taken by the broker with the next steps: its state was compared after them."""

    def to_json(self) -> dict[str, Any]:
        return {
            "compared_with_next": self.deferred,
            "step": self.index,
            "action": self.action,
            "requests": self.requests,
            "agreed": self.agreed,
            "differences": [d.to_json() for d in self.differences],
            "answered": self.answered,
            "observed": self.observed,
        }


@dataclass
class DriveResult:
    trace: str
    model: str
    preset: str | None
    property: str | None
    release: str
    steps: list[StepResult] = field(default_factory=list)
    total_steps: int = 0
    violated_on_broker: bool | None = None
    seconds: float = 0.0
    unseen: tuple[str, ...] = ()
    interrupted: str = ""
    """What stopped the drive before its end (Ctrl-C, SIGTERM), if anything."""
    unconfirmed: str = ""
    """Why the property's verdict cannot be read from the broker (it reads state the broker hides)."""
    watched_s: float = 0.0
    """How long the broker was watched staying in a stuttering lasso's last state."""
    reordered: tuple[str, ...] = ()
    """Steps driven in another order than the trace's, the model's states showing the orders equivalent."""
    loop_rounds: int = 0
    """How many times a lasso's loop through several states was driven round, back to where it begins."""

    @property
    def agreed(self) -> bool:
        return len(self.steps) >= self.total_steps and all(s.agreed for s in self.steps)

    @property
    def verdict(self) -> str:
        if self.interrupted:
            agreed = all(s.agreed for s in self.steps)
            return f"interrupted ({self.interrupted}) after step {len(self.steps)}" + (
                ": every step so far agreed" if agreed else ": it had diverged"
            )
        if not self.agreed:
            first = next((s for s in self.steps if not s.agreed), None)
            where = f"at step {first.index} ({first.action})" if first else "before its end"
            return f"diverged {where}"
        if self.property is None:
            return "agreed at every step"
        if self.violated_on_broker is None:
            return f"agreed at every step the broker shows; {self.property} not confirmed: {self.unconfirmed}"
        shown = "violated" if self.violated_on_broker else "not violated"
        stayed = f" (it stayed in the lasso's last state for {self.watched_s:g} s)" if self.watched_s else ""
        if self.loop_rounds:
            stayed = f" (its loop driven round {self.loop_rounds} times, the broker back where it begins)"
        return f"agreed at every step: {self.property} {shown} on the real broker{stayed}"

    def to_json(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "model": self.model,
            "preset": self.preset,
            "property": self.property,
            "kafka_version": self.release,
            "verdict": self.verdict,
            "agreed": self.agreed,
            "violated_on_broker": self.violated_on_broker,
            "not_confirmed": self.unconfirmed or None,
            "interrupted": self.interrupted or None,
            "steps_driven": len(self.steps),
            "steps": self.total_steps,
            "seconds": round(self.seconds, 1),
            "not_compared": list(self.unseen),
            "reordered": list(self.reordered),
            "last_state_watched_s": self.watched_s or None,
            "loop_rounds_driven": self.loop_rounds or None,
            "results": [s.to_json() for s in self.steps],
        }


@dataclass
class DrivenTrace(Replayed):
    """A replayed trace in the order it is driven: the steps a broker takes at once brought together
    by swaps of commuting steps (reorder.py), each numbered as in the trace as written."""

    numbers: list[int] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)


def load(trace_path: Path) -> tuple[DrivenTrace, type[Driver]]:
    """The trace, replayed on its model, and its model's driver; UserError if it cannot be driven."""
    if not trace_path.is_file():
        raise UserError(f"no trace at {trace_path}")
    replayed = replay(read_trace(trace_path))
    done = DrivenTrace(replayed.model, replayed.trace, replayed.meta, list(range(len(replayed.trace.states))))
    name = done.model.name
    driver = drivers().get(name)
    if driver is None:
        known = ", ".join(sorted(drivers())) or "none"
        raise UserError(f"model {name} has no driver: traces of {known} can be driven")
    for action in [*done.trace.actions[1:], *_closing_actions(done)]:
        reason = driver.not_driven.get(action.name)
        if reason is not None:
            raise UserError(f"the trace's action {action.name} cannot be driven: {reason}")
    glued = getattr(driver, "glued", None)
    if glued is not None:
        order = regroup(done.model, done.trace.states, done.trace.actions, glued)
        done.trace = Trace(states=order.states, actions=order.actions, loop=done.trace.loop)
        done.numbers, done.moved = order.original, order.moved
    check = getattr(driver, "check_trace", None)
    if check is not None:
        check(list(done.trace.actions))
    return done, driver


def drive(
    trace_path: Path, driver_class: type[Driver], done: DrivenTrace, session: Session, progress: Progress
) -> DriveResult:
    """Play the replayed trace on the session's cluster; stop at the first divergence."""
    states, actions = done.trace.states, done.trace.actions
    result = DriveResult(
        trace=str(trace_path),
        model=done.model.name,
        preset=done.meta.get("preset"),
        property=done.meta.get("property"),
        release=session.release,
        total_steps=len(states) - 1,
        unseen=driver_class.unseen,
        reordered=tuple(done.moved),
    )
    for moved in done.moved:
        progress(f"  (driven in an order the model shows equivalent: {moved}, which commute)")
    began = time.monotonic()
    driver = driver_class(session, done.model, states[0])
    plan = getattr(driver, "plan", None)
    if plan is not None:
        plan(list(actions))
    try:
        # a drive begins on a settled cluster: a node an earlier drive stopped or paused is back
        wanted = set(session.brokers) - session.down
        session.until("list every node as live", lambda: wanted <= session.live_brokers() or None)
        driver.setup()
        session.applied_everywhere()  # what the setup made, known to the coordinators before step 1
        start = _compare_state(driver, states[0])
        if start:
            result.steps.append(StepResult(0, "Init", [], False, start, {}, driver.observed()))
            return result
        limit = getattr(driver_class, "max_drive_s", None)  # the steps' time: the setup is not counted
        steps_began = time.monotonic()
        for index in range(1, len(states)):
            step = _step(driver, done.numbers[index], actions[index], states[index - 1], states[index])
            if limit is not None and time.monotonic() - steps_began > limit:
                step.agreed = False
                step.differences.append(Difference("(time)", f"within {limit:.0f} s", "the drive took longer"))
            result.steps.append(step)
            progress(_line(step))
            if not step.agreed:
                break
        if result.agreed and done.trace.loop == len(states) - 1:
            _watch_last_state(driver, states[-1], result, progress)
        elif result.agreed and done.trace.loop is not None:
            _drive_loop(driver, done, result, progress)
    except BrokerGoneError as exc:
        raise UserError(f"the broker stopped answering: {exc}") from None
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the steps driven so far are the result
        from kmc.checker import interrupts

        result.interrupted = interrupts.reason()
        return result
    finally:
        driver.close()
        result.seconds = time.monotonic() - began
    hidden = driver_class.unseen_properties.get(result.property or "")
    if hidden is not None:
        result.unconfirmed = hidden
    elif result.agreed and result.property is not None and not result.interrupted:
        result.violated_on_broker = _violated(done, result.property, looped=result.loop_rounds > 0)
    return result


def _step(driver: Driver, index: int, action: Any, before: Any, after: Any) -> StepResult:
    performed = driver.perform(action, before, after)
    answers = differences(performed.expected, performed.answered, "response.", driver.epochs)
    if performed.deferred:
        return StepResult(index, str(action), performed.requests, not answers, answers, performed.answered, {}, True)
    expected = driver.expected(after)
    observed = driver.observed()
    found = differences(expected, observed, "", driver.epochs)
    # a request still parked at the coordinator was sent, not necessarily handled yet: look again, briefly
    deadline = time.monotonic() + driver.settle_s
    while found and time.monotonic() < deadline:
        time.sleep(SETTLE_PAUSE_S)
        observed = driver.observed()
        found = differences(expected, observed, "", driver.epochs)
    found = answers + found
    return StepResult(index, str(action), performed.requests, not found, found, performed.answered, observed)


def _watch_last_state(driver: Driver, state: Any, result: DriveResult, progress: Progress) -> None:
    """A lasso that stutters on its last state (a liveness counterexample where nothing more happens):
    the broker must stay there too. Watched for a while; a broker that moves on diverges."""
    progress(f"  the lasso stays in its last state: watching the broker for {LASSO_WATCH_S:g} s")
    time.sleep(LASSO_WATCH_S)
    found = _compare_state(driver, state)
    if found:
        step = StepResult(result.total_steps, "(the lasso's loop: nothing more happens)", [], False, found, {}, {})
        result.steps.append(step)
        progress(_line(step))
    result.watched_s = LASSO_WATCH_S


def _closing_actions(done: Replayed) -> list[Any]:
    """The step from a lasso's last state back to the state its loop begins at (none for a trace that is
    no lasso, or one that stutters on its last state)."""
    states, loop = done.trace.states, done.trace.loop
    if loop is None or loop == len(states) - 1:
        return []
    return [next(a for a, t in done.model.successors(states[-1]) if t == states[loop])]


def _drive_loop(driver: Driver, done: DrivenTrace, result: DriveResult, progress: Progress) -> None:
    """A lasso whose loop runs through several states: its loop driven round ``LASSO_ROUNDS`` times, each
    step compared as the stem's were. The broker, back each time where the loop begins and answering the
    same requests alike, repeats the loop; one that moves elsewhere diverges."""
    states, actions, loop = done.trace.states, done.trace.actions, done.trace.loop
    assert loop is not None
    # from the last state, where the stem left the broker: back to the loop's first state, then on
    steps = [(_closing_actions(done)[0], states[-1], states[loop])]
    steps += [(actions[i], states[i - 1], states[i]) for i in range(loop + 1, len(states))]
    index = result.total_steps
    result.total_steps += len(steps) * LASSO_ROUNDS
    progress(f"  the lasso loops back to state {loop}: driving its loop round {LASSO_ROUNDS} times")
    for _round in range(LASSO_ROUNDS):
        for action, before, after in steps:
            index += 1
            step = _step(driver, index, action, before, after)
            result.steps.append(step)
            progress(_line(step))
            if not step.agreed:
                return
    result.loop_rounds = LASSO_ROUNDS


def _compare_state(driver: Driver, state: Any) -> list[Difference]:
    return differences(driver.expected(state), driver.observed(), "", driver.epochs)


def _violated(done: Replayed, name: str, looped: bool = False) -> bool:
    """Whether the last state, which the broker's side agreed with, violates the trace's property; a
    liveness property's lasso, when the broker stayed in its last state or went round its loop."""
    props = select_properties(type(done.model), tuple(done.meta.get("spec_files") or ()), [name])
    states, actions = done.trace.states, done.trace.actions
    if props.invariants:
        return not holds(name, props.invariants[0].bind(done.model), states[-1])
    if props.steps:
        return not holds(name, props.steps[0].bind(done.model), states[-2], actions[-1], states[-1])
    if props.liveness and (done.trace.loop == len(states) - 1 or looped):
        try:  # the broker stayed in the lasso's last state or went round its loop, where the goal is never reached
            confirm_violation(done)
        except UserError:
            return False
        return True
    raise UserError(f"{name} is a liveness property and its lasso's loop was not driven round: not confirmed")


def _line(step: StepResult) -> str:
    mark = "agreed  " if step.agreed else "DIVERGED"
    mark = "(with next)" if step.deferred and step.agreed else mark
    line = f"  {step.index:>3} {mark} {step.action}"
    if step.requests:
        line += "  -> " + "; ".join(step.requests)
    for d in step.differences:
        line += f"\n        {d.field}: model {json.dumps(d.model)}, broker {json.dumps(d.broker)}"
    return line


def write_result(result: DriveResult, path: Path) -> Path:
    path.write_text(json.dumps(result.to_json(), indent=2, default=str) + "\n")
    return path


def session_of(cluster: Any) -> Session:
    """A drive's session on a started cluster."""
    brokers = {n.node_id: f"127.0.0.1:{n.port}" for n in cluster.nodes}
    return Session(brokers, str(cluster.release), cluster=cluster if cluster.owned else None)


def check_release(driver_class: type[Driver], release: Any, model: Any) -> None:
    """Refuse, before a node starts, a release whose protocol the driver cannot speak for this trace."""
    check = getattr(driver_class, "check_release", None)
    if check is not None:
        check(release, model)


def settings_of(driver_class: type[Driver], release: Any) -> dict[str, str]:
    """The server.properties a drive of this driver needs on this release."""
    for_release = getattr(driver_class, "settings_for", None)
    return for_release(release) if for_release is not None else dict(driver_class.settings)


def features_of(driver_class: type[Driver], release: Any) -> dict[str, str]:
    """The feature levels a drive of this driver needs the storage formatted with on this release."""
    for_release = getattr(driver_class, "features_for", None)
    return for_release(release) if for_release is not None else {}


def missing_settings(driver_class: type[Driver], release: Any, cluster_info: dict[str, Any]) -> list[str]:
    """The driver's settings and features a running cluster does not have (its timers could fire
    mid-drive; a feature is fixed when the storage is formatted)."""
    wanted = settings_of(driver_class, release)
    missing = [f"{k}={v}" for k, v in wanted.items() if cluster_info["settings"].get(k) != v]
    features = cluster_info.get("features", {})
    wanted_features = features_of(driver_class, release)
    return missing + [f"feature {k}={v}" for k, v in wanted_features.items() if features.get(k) != v]


def drive_trace(
    trace_path: Path,
    release: str | None = None,
    cluster: Any = None,
    run_dir: Path | None = None,
    progress: Progress = lambda _line: None,
    cluster_dir: Path | None = None,
    shared: SharedCluster | None = None,
) -> DriveResult:
    """Drive a trace on ``cluster``, on the ``shared`` one (started by its first drive), or on a cluster
    of ``release`` started for it (and stopped after)."""
    from kmc.cluster.cluster import started
    from kmc.cluster.release import requested, server_jars
    from kmc.oracles import jvm

    done, driver_class = load(trace_path)
    if cluster_dir is not None:
        cluster = running_cluster(cluster_dir)
    if cluster is not None:
        missing = missing_settings(driver_class, cluster.release, cluster.info)
        if missing:
            raise UserError(f"the cluster lacks what a {done.model.name} drive needs: {', '.join(missing)}")
        check_release(driver_class, cluster.release, done.model)
        jvm.start(str(cluster.release), server_jars(cluster.release))
        return drive(trace_path, driver_class, done, session_of(cluster), progress)
    wanted = requested(release)
    check_release(driver_class, wanted, done.model)
    jvm.start(str(wanted), server_jars(wanted))
    spec = cluster_spec(driver_class, wanted)
    if shared is not None:
        return drive(trace_path, driver_class, done, session_of(shared.cluster(spec, progress)), progress)
    folder = run_dir or Path("kmc-out") / f"drive-{trace_path.name.removesuffix('.itf.json')}"
    progress(f"starting Kafka {wanted} (3 nodes) in {folder}")
    with started(folder, spec) as running:
        return drive(trace_path, driver_class, done, session_of(running), progress)


def cluster_spec(driver_class: type[Driver], release: Any) -> ClusterSpec:
    """The cluster a drive of this driver needs on this release."""
    from kmc.cluster.cluster import ClusterSpec

    # no node users: a drive cuts no network path, so the nodes run as this user, anywhere
    return ClusterSpec(
        nodes=3,
        release=release,
        settings=settings_of(driver_class, release),
        features=features_of(driver_class, release),
        node_users=False,
    )


def spec_key(spec: ClusterSpec) -> Hashable:
    """What makes two clusters the same for a drive: release, nodes, settings and features."""
    return (str(spec.release), spec.nodes, tuple(sorted(spec.settings.items())), tuple(sorted(spec.features.items())))


def trace_model(trace_path: Path) -> str:
    """The name of the model a trace is of, read from its metadata (the trace is not replayed)."""
    return str(read_trace(trace_path)["#meta"]["model"])


def cluster_key(trace_path: Path, release: str | None) -> Hashable:
    """The key of the cluster a drive of this trace needs, read without replaying it: drives of equal
    keys can share one cluster. UserError for a trace without a driver or a malformed release."""
    from kmc.cluster.release import requested

    model = trace_model(trace_path)
    driver_class = drivers().get(model)
    if driver_class is None:
        raise UserError(f"model {model} has no driver")
    return spec_key(cluster_spec(driver_class, requested(release)))


class SharedCluster:
    """One cluster for several drives that need the same one (`kmc ci`'s, see `cluster_key`): its start
    takes about as long as a drive. Started by the first drive in ``run_dir``, its nodes made whole
    again for each next one, stopped by `close` (or the ``with`` block's end) however the drives ended."""

    def __init__(
        self, run_dir: Path, start: Callable[[Path, ClusterSpec], AbstractContextManager[Cluster]] | None = None
    ) -> None:
        from kmc.cluster.cluster import started

        self.run_dir = run_dir
        self.running: Cluster | None = None
        self._start = start or started
        self._key: Hashable = None
        self._stack = ExitStack()

    def cluster(self, spec: ClusterSpec, progress: Progress = lambda _line: None) -> Cluster:
        """The running cluster, started on first use; UserError if a drive needs another one."""
        if self.running is None:
            progress(f"starting Kafka {spec.release} (3 nodes, shared by the next drives) in {self.run_dir}")
            self.running = self._stack.enter_context(self._start(self.run_dir, spec))
            self._key = spec_key(spec)
        elif spec_key(spec) != self._key:
            raise UserError(f"the shared cluster in {self.run_dir} is not the one this drive needs ({spec_key(spec)})")
        else:
            _restore(self.running)
        return self.running

    def close(self) -> None:
        self._stack.close()
        self.running = None

    def __enter__(self) -> SharedCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _restore(cluster: Cluster) -> None:
    """Every node running and not paused, as a new cluster's: a drive that failed may have left one
    stopped or paused (one that ended well has already brought it back)."""
    for node in cluster.nodes:
        node.resume()
        if not node.running():
            cluster.start_node(node)
            node.wait_ready(time.monotonic() + NODE_START_TIMEOUT_S)


def running_cluster(run_dir: Path) -> Any:
    """A cluster started in the background (``kmc cluster start``), read from its run directory."""
    from kmc.cluster.cluster import Cluster, read_info, status
    from kmc.cluster.node import Node

    shown = status(run_dir.resolve())
    if not shown["nodes"] or not all(n["running"] for n in shown["nodes"]):
        raise UserError(f"the cluster in {run_dir} is not running (kmc cluster status --run-dir {run_dir})")
    info = read_info(run_dir.resolve())
    nodes = [
        Node(n["node_id"], n["port"], n["controller_port"], Path(n["folder"]), n["directory_id"]) for n in info["nodes"]
    ]
    return Cluster(run_dir.resolve(), info, nodes, owned=False)
