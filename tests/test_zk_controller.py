"""The ZooKeeper-era controller model: exact state counts, the three bugs, the guard that fixes each."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import Check, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.zk_controller.model import ZkControllerModel
from kmc.models.zk_controller.state import NO_EPOCH, LeaderAndIsr

ROOT = Path(__file__).resolve().parent.parent
TRACES = sorted((ROOT / "counterexamples" / "zk-controller").glob("*.itf.json"))


def test_kip_380_holds_completely() -> None:
    """Every safety property and EveryBrokerGetsItsState, on the whole state space."""
    result = Check("zk-controller", preset="kip-380").run()
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert result.stats.distinct_states == 45841
    assert result.stats.depth == 15
    assert result.vacuity == []


def test_kafka_1120_a_fast_bounce_is_missed() -> None:
    """The controller writes the partition state and sends it; broker 1 bounces before the
    controller's watch is processed, so the request meant for its old incarnation is rejected
    (STALE_BROKER_EPOCH), and the controller, seeing the same broker ids, never sends the new one
    anything: a lasso that stutters with broker 1 holding no partition state."""
    result = Check("zk-controller", preset="pre-kafka-1120", property_names=["EveryBrokerGetsItsState"]).run()
    [violation] = result.violations
    trace = violation.trace
    assert (violation.kind, trace.loop, len(trace.states)) == ("liveness", 5, 6)
    assert [a.name for a in trace.actions[1:]] == [
        "Elect",
        "ElectLeader",
        "BrokerRestart",
        "HandleLeaderAndIsr",
        "HandleLeaderAndIsr",
    ]
    last = trace.states[-1]
    assert (last.zk.partition.leaderEpoch, last.brokers[1].leaderEpoch, last.requests) == (0, NO_EPOCH, frozenset())
    controller = last.brokers[0]
    assert controller.liveBrokerEpochs == (1, 2) and last.zk.brokerEpochs == (1, 3)  # the bounce, unseen
    assert result.stats.distinct_states == 45239
    assert ZkControllerModel.make_config("pre-kafka-1120") == ZkControllerModel.make_config(
        "kip-380", {"bounced_broker_detection": False}
    )  # the flag alone is what makes the difference


def test_with_the_fix_the_bounced_broker_is_started_again() -> None:
    """After the same three steps, BrokerChange sees broker 1's larger czxid, drops what it queued
    for the old incarnation and sends the new one the partition state, which it applies."""
    model = ZkControllerModel.build("kip-380")
    [s] = model.init_states()
    for name, args in [
        ("Elect", {"broker": 0}),
        ("ElectLeader", {"controller": 0, "leader": 0}),
        ("BrokerRestart", {"broker": 1}),
        ("BrokerChange", {"controller": 0}),
    ]:
        [s] = [t for a, t in model.successors(s) if a.name == name and a.args == args]
    assert s.brokers[0].liveBrokerEpochs == (1, 3)
    assert s.requests == {LeaderAndIsr(1, 0, 1, 0, 0), LeaderAndIsr(1, 1, 3, 0, 0)}
    [(_, s)] = [(a, t) for a, t in model.successors(s) if a.name == "HandleLeaderAndIsr" and a.args["broker"] == 1]
    assert (s.brokers[1].leader, s.brokers[1].leaderEpoch) == (0, 0)


def test_pre_kip_380_misses_the_bounce_too() -> None:
    """Kafka 2.1 had neither guard: the bounce is missed as well (the same 6-state lasso)."""
    result = Check("zk-controller", preset="pre-kip-380", property_names=["EveryBrokerGetsItsState"]).run()
    [violation] = result.violations
    assert (violation.trace.loop, len(violation.trace.states)) == (5, 6)


@pytest.mark.parametrize("trace", TRACES, ids=[t.name for t in TRACES])
def test_checked_in_counterexamples_replay(trace: Path) -> None:
    doc = read_trace(trace)
    done = replay(doc)
    prop = select_properties(ZkControllerModel, names=[doc["#meta"]["property"]]).all()[0]
    states = done.trace.states
    if prop.kind == "step":
        assert not prop.bind(done.model)(states[-2], done.trace.actions[-1], states[-1])
    else:  # a lasso: the trigger held and the goal never holds again
        goal, trigger = prop.bind(done.model), prop.bind_trigger(done.model)
        assert done.trace.loop is not None
        start = min(i for i, s in enumerate(states) if trigger(s) and not goal(s))
        assert not any(goal(s) for s in states[start:])
    suite = (ROOT / "counterexamples" / "suite.toml").read_text()
    assert f'replay = "zk-controller/{trace.name}"' in suite
    assert len(TRACES) == 3


@pytest.mark.parametrize(
    ("preset", "prop", "length", "actions"),
    [
        (
            "pre-kafka-6082",
            "OnlyNewestControllerWrites",
            6,
            ["Elect", "ZkSessionExpire", "ZkReconnect", "Elect", "ElectLeader"],
        ),
        (
            "pre-kip-380",
            "NoRequestForEarlierIncarnation",
            5,
            ["Elect", "ElectLeader", "BrokerRestart", "HandleLeaderAndIsr"],
        ),
    ],
)
def test_bugs_before_their_fix(preset: str, prop: str, length: int, actions: list[str]) -> None:
    result = bfs(ZkControllerModel.build(preset), select_properties(ZkControllerModel, names=[prop]))
    [violation] = result.violations
    assert (violation.property, violation.trace_length) == (prop, length)
    assert [a.name for a in violation.trace.actions[1:]] == actions


@pytest.mark.parametrize(
    ("flag", "prop"),
    [("conditional_writes", "OnlyNewestControllerWrites"), ("broker_epochs", "NoRequestForEarlierIncarnation")],
)
def test_each_guard_alone_is_what_makes_the_difference(flag: str, prop: str) -> None:
    """Switching off one guard of the fixed preset brings back exactly its bug."""
    result = Check("zk-controller", preset="kip-380", overrides={flag: False}, property_names=[prop]).run()
    assert result.status is Status.VIOLATED
    assert [v.property for v in result.violations] == [prop]


def test_controller_epoch_check_is_defence_in_depth() -> None:
    """Without the STALE_CONTROLLER_EPOCH check and without conditional writes, a broker applies a
    zombie's request after hearing from its successor; with conditional writes alone it cannot,
    because the zombie cannot write a newer leader epoch."""
    prop = ["NoStaleControllerEpochApplied"]
    unguarded = Check(
        "zk-controller",
        preset="pre-kafka-6082",
        overrides={"controller_epoch_check": False, "max_leader_epoch": 2},
        property_names=prop,
    ).run()
    assert unguarded.status is Status.VIOLATED
    guarded = Check(
        "zk-controller",
        preset="kip-380",
        overrides={"controller_epoch_check": False, "max_leader_epoch": 2},
        property_names=prop,
    ).run()
    assert guarded.status is Status.HOLDS_COMPLETE


def test_a_broker_checks_its_epoch_before_the_controller_epoch() -> None:
    """KafkaApis rejects a stale broker epoch before ReplicaManager looks at the controller epoch."""
    model = ZkControllerModel.build("kip-380")
    [init] = model.init_states()
    broker = init.brokers[1]._replace(brokerEpoch=5, lastSeenControllerEpoch=3)
    assert model.handle_outcome(broker, LeaderAndIsr(2, 1, 2, 0, 0)) == "STALE_BROKER_EPOCH"
    assert model.handle_outcome(broker, LeaderAndIsr(2, 1, 5, 0, 0)) == "STALE_CONTROLLER_EPOCH"
    assert model.handle_outcome(broker, LeaderAndIsr(3, 1, 5, 0, 0)) == "applied"
    assert model.handle_outcome(broker._replace(leaderEpoch=0), LeaderAndIsr(3, 1, 5, 0, 0)) == "ignored"
