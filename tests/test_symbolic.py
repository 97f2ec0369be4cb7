"""The z3 engines: the symbolic next relations agree with the explicit models, bmc finds the same
shortest violations as BFS, and `kmc prove` proves or returns a real counterexample to induction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kmc.checker import Check
from kmc.checker.engines.symbolic.encoding import StepComparer, steps_from_anywhere
from kmc.checker.engines.symbolic.induction import prove_property
from kmc.checker.result import Status
from kmc.checker.search.explored import explore
from kmc.models.replication.model import ReplicationModel
from kmc.models.zk_controller.model import ZkControllerModel
from kmc.models.zk_controller.state import LeaderAndIsr, PartitionState

ZK_LEMMAS = ["ControllerEpochsBoundedByZooKeeper", "NewestControllerHoldsTheNode", "NodeHolderIsRegistered"]
BEYOND_BFS = {
    "brokers": 4,
    "max_controller_epoch": 5,
    "max_leader_epoch": 5,
    "max_session_expiries": 3,
    "max_restarts": 3,
}


def _agree(model, stride: int) -> int:  # type: ignore[no-untyped-def]
    """Compare the two next relations from every stride-th reachable state, and from the first state
    (in BFS order) where each action the space takes is enabled, so that the sample compares every
    action; return how many states."""
    graph, _ = explore(model)
    order = list(graph)
    sample = set(range(0, len(order), stride))
    enabled = {a.name for i in sample for a, _ in graph[order[i]]}
    for i, state in enumerate(order):
        new = {a.name for a, _ in graph[state]} - enabled
        if new:
            sample.add(i)
            enabled |= new
    comparer = StepComparer(model.symbolic())
    for i in sorted(sample):
        disagreement = comparer.compare(order[i])
        assert disagreement is None, disagreement
    assert enabled == {a.name for edges in graph.values() for a, _ in edges}
    return len(sample)


def test_zk_controller_encoding_agrees_on_every_state_of_a_small_space() -> None:
    model = ZkControllerModel.build("kip-380", {"max_restarts": 0, "max_controller_epoch": 1})
    assert _agree(model, 1) == 1275


@pytest.mark.parametrize(
    ("preset", "stride", "sampled"), [("kip-380", 1000, 46), ("pre-kip-380", 1000, 54), ("pre-kafka-6082", 1500, 56)]
)
def test_zk_controller_encoding_agrees_on_a_sample_of_each_preset(preset: str, stride: int, sampled: int) -> None:
    assert _agree(ZkControllerModel.build(preset), stride) == sampled


@pytest.mark.parametrize(
    ("preset", "prop", "length"),
    [("pre-kafka-6082", "OnlyNewestControllerWrites", 6), ("pre-kip-380", "NoRequestForEarlierIncarnation", 5)],
)
def test_bmc_finds_the_bfs_depth(preset: str, prop: str, length: int, tmp_path: Path) -> None:
    bfs_result = Check("zk-controller", preset=preset, property_names=[prop]).run()
    bmc_result = Check("zk-controller", preset=preset, property_names=[prop], engine_name="bmc").run()
    assert bmc_result.status is Status.VIOLATED
    [violation] = bmc_result.violations
    assert violation.property == prop
    assert violation.trace_length == bfs_result.violations[0].trace_length == length


def test_bmc_bounded_and_its_trace_replays(kmc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = kmc("check", "zk-controller", "--engine", "bmc", "--depth", "4", "--json", "--out", tmp_path)
    assert code == 0
    data = json.loads(out)
    assert (data["verdict"], data["complete"], data["bmc_depth"]) == ("holds", False, 4)
    code, out, _ = kmc("check", "zk-controller", "-p", "pre-kip-380", "--engine", "bmc", "--json", "--out", tmp_path)
    assert code == 1
    [violation] = json.loads(out)["violations"]
    assert kmc("replay", violation["trace"])[0] == 0


def test_bmc_needs_an_encoding_and_symbolic_properties(kmc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, _, err = kmc("check", "group", "--engine", "bmc")
    assert code == 2 and "has no symbolic encoding" in err
    spec = tmp_path / "mine.py"
    spec.write_text("from kmc.checker import invariant\n@invariant\ndef Mine(s):\n    return True\n")
    code, _, err = kmc("check", "zk-controller", "--engine", "bmc", "--spec", spec, "-P", "Mine")
    assert code == 2 and "no symbolic form of Mine" in err


@pytest.mark.parametrize(
    ("model", "sampled"),
    [(ZkControllerModel.build("kip-380", BEYOND_BFS), 80), (ReplicationModel.build("kip-320"), 90)],
    ids=["zk-controller", "replication"],
)
def test_every_step_from_an_unreachable_state_is_a_step_of_the_model(model, sampled: int) -> None:  # type: ignore[no-untyped-def]
    steps = list(steps_from_anywhere(model.symbolic(), per_action=10))
    assert len(steps) == sampled
    for before, action, after in steps:
        assert (action, after) in set(model.successors(before)), (before, action, after)


def test_the_encoding_takes_no_step_whose_result_it_cannot_hold() -> None:
    """A request of controller epoch 2 that no run has sent: whichever broker is elected controller
    2 sends leader epoch 0 to broker 0 again, led by another broker, and the frame holds one leader
    per leader epoch."""
    model = ZkControllerModel.build("kip-380")
    init = model.init_states()[0]
    state = init._replace(
        zk=init.zk._replace(controllerEpoch=1, partition=PartitionState(leader=1, leaderEpoch=0, zkVersion=1)),
        requests=frozenset({LeaderAndIsr(controllerEpoch=2, broker=0, brokerEpoch=1, leader=0, leaderEpoch=0)}),
    )
    disagreement = StepComparer(model.symbolic()).compare(state)
    assert disagreement is not None and disagreement.extra == []
    assert [(action.name, action.args) for action, _ in disagreement.missing] == [
        ("Elect", {"broker": 0}),
        ("Elect", {"broker": 1}),
    ]
    for _, after in disagreement.missing:
        with pytest.raises(ValueError, match="two requests of leader epoch 0 from controller epoch 2 to 0"):
            model.symbolic().values(after)


def test_prove_with_lemmas_beyond_what_bfs_exhausts() -> None:
    model = ZkControllerModel.build("kip-380", BEYOND_BFS)
    alone = prove_property(model, "OneControllerPerEpoch", [])
    assert not alone.proven and alone.failure is not None and alone.failure.phase == "step"
    proof = prove_property(model, "OneControllerPerEpoch", [*ZK_LEMMAS, "ControllerNodeIsCurrent"])
    assert proof.proven, proof.failure


@pytest.mark.parametrize(
    "prop", ["NoRequestForEarlierIncarnation", "LeaderEpochsOnlyIncrease", "OnlyNewestControllerWrites"]
)
def test_the_other_properties_are_proven_with_a_lemma(prop: str) -> None:
    model = ZkControllerModel.build("kip-380")
    assert prove_property(model, prop, ["BrokerEpochsNeverRunAhead"]).proven


def test_a_counterexample_to_induction_is_a_step_of_the_explicit_model() -> None:
    model = ZkControllerModel.build("pre-kip-380")
    result = prove_property(model, "NoRequestForEarlierIncarnation", ["BrokerEpochsNeverRunAhead"])
    failure = result.failure
    assert not result.proven and failure is not None
    assert failure.claim == "NoRequestForEarlierIncarnation"
    assert failure.action is not None and failure.action.name == "HandleLeaderAndIsr"
    assert (failure.action, failure.after) in set(model.successors(failure.before))


def test_prove_cli(kmc, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lemmas = [arg for name in ZK_LEMMAS for arg in ("-l", name)]
    code, out, _ = kmc(
        "prove", "zk-controller", "-i", "OneControllerPerEpoch", *lemmas, "-l", "ControllerNodeIsCurrent"
    )
    assert code == 0 and "proven" in out
    code, out, _ = kmc("prove", "zk-controller", "-i", "OneControllerPerEpoch")
    assert code == 1 and "counterexample to induction" in out
    code, _, err = kmc("prove", "zk-controller", "-i", "NoSuchThing")
    assert code == 2 and "no symbolic form of NoSuchThing" in err
    user = tmp_path / "lemmas.py"
    user.write_text("from kmc.checker import lemma\n@lemma\ndef Mine(enc, v):\n    return v.zkControllerEpoch >= 0\n")
    code, out, _ = kmc("prove", "zk-controller", "-i", "Mine", "--lemmas", user, "--json")
    assert code == 0 and json.loads(out)["verdict"] == "proven"
    (tmp_path / "empty.py").write_text("x = 1\n")
    code, _, err = kmc("prove", "zk-controller", "-i", "Mine", "--lemmas", tmp_path / "empty.py")
    assert code == 2 and "defines no lemmas" in err


# -- replication ----------------------------------------------------------------------------------
REPLICATION_SAMPLES = {"truncate-to-hw": 254, "kip-101": 227, "kip-279": 226, "kip-320-first-try": 211, "kip-320": 150}


@pytest.mark.parametrize("preset", sorted(ReplicationModel.presets))
def test_replication_encoding_agrees_on_a_sample_of_each_preset(preset: str) -> None:
    """Every preset, every 40th reachable state and each action's first (all of them agree; tests
    keep to a sample)."""
    assert _agree(ReplicationModel.build(preset), 40) == REPLICATION_SAMPLES.get(preset)


def test_bmc_finds_the_truncate_to_hw_bug_at_the_bfs_depth() -> None:
    result = Check("replication", preset="truncate-to-hw", property_names=["StrongIsr"], engine_name="bmc").run()
    [violation] = result.violations
    assert (violation.property, violation.trace_length) == ("StrongIsr", 10)
    assert result.stats.extra["bmc_depth"] == 9


def test_strong_isr_is_proven_for_kip_320_beyond_what_bfs_exhausts() -> None:
    """LogSize = MaxRecords = MaxLeaderEpoch = 6: BFS does not finish in 10 minutes."""
    model = ReplicationModel.build("kip-320", {"log_size": 6, "max_records": 6, "max_leader_epoch": 6})
    lemmas = list(model.symbolic().lemmas)
    assert len(lemmas) == 13
    proof = prove_property(model, "StrongIsr", lemmas)
    assert proof.proven, proof.failure
    assert proof.claims[:2] == ["well_formed", "StrongIsr"]
    assert not prove_property(model, "StrongIsr", []).proven


def test_the_lemmas_fail_where_the_protocol_is_different() -> None:
    """The same lemmas do not carry KIP-279, whose truncation is not fenced by the leader's epoch."""
    model = ReplicationModel.build("kip-279")
    result = prove_property(model, "StrongIsr", list(model.symbolic().lemmas))
    assert not result.proven and result.failure is not None and result.failure.phase == "step"
    assert (result.failure.action, result.failure.after) in set(model.successors(result.failure.before))
