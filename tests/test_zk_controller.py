"""The ZooKeeper-era controller model: exact state counts, the two bugs, the guard that fixes each."""

from __future__ import annotations

import pytest
from kmc.checker import Check, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.models.zk_controller import LeaderAndIsr, ZkControllerModel


def test_kip_380_holds_completely() -> None:
    result = Check("zk-controller", preset="kip-380").run()
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert result.stats.distinct_states == 29705
    assert result.stats.depth == 14


@pytest.mark.parametrize(
    ("preset", "prop", "length", "actions"),
    [
        (
            "pre-kafka-6082",
            "OnlyNewestControllerWrites",
            6,
            ["Elect", "ZkSessionExpire", "ZkReconnect", "Elect", "ElectLeader"],
        ),
        ("pre-kip-380", "NoRequestForEarlierIncarnation", 5, ["Elect", "ElectLeader", "BrokerRestart",
                                                              "HandleLeaderAndIsr"]),
    ],
)  # fmt: skip
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
    unguarded = Check("zk-controller", preset="pre-kafka-6082", overrides={"controller_epoch_check": False,
                      "max_leader_epoch": 2}, property_names=prop).run()  # fmt: skip
    assert unguarded.status is Status.VIOLATED
    guarded = Check("zk-controller", preset="kip-380", overrides={"controller_epoch_check": False,
                    "max_leader_epoch": 2}, property_names=prop).run()  # fmt: skip
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
