"""The assignor oracles against Kafka's own assignors: exact counts, 0 mismatches, and broken
variants (of the assignor, and of the group model's leader) that must be caught."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from kmc.checker import Action
from kmc.checker.conformance.run import conform, conform_table, write_mismatch_traces
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.group import assignors
from kmc.models.group.assignors import Member
from kmc.models.group.model import GroupModel, GroupState
from kmc.oracles.assignors import AssignorOracle, GroupAssignmentOracle, every_input

pytestmark = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="needs Kafka's jars and a JVM")


def test_exhaustive_table_up_to_two_partitions() -> None:
    """Every input of the exhaustive table with at most 2 partitions, every assignor (the whole
    table, 151,140 inputs, takes minutes: ``kmc conform assignors --set table=exhaustive``)."""
    oracle = AssignorOracle(settings={"table": "exhaustive", "max_partitions": "2"})
    tally = conform_table(oracle)
    assert (tally.states, tally.comparisons, tally.mismatches) == (4 * 4704, 4 * 4704, 0)
    assert tally.by_question == {f"{s} assignment": 4704 for s in assignors.STRATEGIES}


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_exhaustive_sticky_three_partitions_three_members(strategy: str) -> None:
    """The sticky assignors on every three-member input with 3 partitions over both topics (where the
    general builder's balancing moves and its moves back to older owners happen)."""
    oracle = AssignorOracle(settings={"table": "exhaustive", "strategy": strategy, "max_partitions": "3"})
    cases = [
        case for _, case in oracle.cases() if len(case[1]) == 3 and len(case[2]) == 2 and sum(case[2].values()) == 3
    ]
    assert len(cases) == 2 * 27 * 4**3 * 4
    mismatches = [c for case in cases for c in oracle.compare(case) if not c.agree]
    assert mismatches == []


def test_hypothesis_inputs_of_a_fixed_seed() -> None:
    oracle = AssignorOracle(settings={"table": "hypothesis", "hypothesis_examples": "150", "seed": "7"})
    tally = conform_table(oracle)
    assert (tally.states, tally.comparisons, tally.mismatches) == (600, 600, 0)


def test_kafka_gives_a_partition_back_to_an_unsubscribed_older_owner() -> None:
    """Found by the oracle: Kafka's general sticky builder moves a partition back to the member that
    owned it a generation ago even though that member no longer subscribes to its topic."""
    members = [
        Member("m0", ("t0",), (("t1", 0), ("t1", 1)), 4),
        Member("m1", ("t0", "t1"), (("t0", 0),), 5),
        Member("m2", ("t0", "t1"), (), 5),
    ]
    oracle = AssignorOracle(settings={"strategy": "sticky"})
    (answer,) = oracle.compare(("sticky", members, {"t0": 1, "t1": 2}))
    assert answer.agree
    assert dict(answer.theirs)["m0"] == (("t1", 1),)


class BrokenRange(AssignorOracle):
    """Our range assignor with the first two members (in MemberInfo order) swapped."""

    def ours(self, strategy: str, members: Sequence[Member], layout: Mapping[str, int]):  # type: ignore[no-untyped-def]
        group = sorted(members, key=Member.sort_key)
        if strategy == "range" and len(group) >= 2:
            group[0], group[1] = group[1], group[0]
            result = assignors._range(group, layout)
            return tuple(sorted((m, tuple(sorted(parts))) for m, parts in result.items()))
        return super().ours(strategy, members, layout)


def test_a_broken_assignor_is_caught_naming_the_case() -> None:
    oracle = BrokenRange(settings={"table": "exhaustive", "strategy": "range", "max_partitions": "1"})
    tally = conform_table(oracle)
    assert tally.comparisons == 552
    first = tally.first_mismatch
    assert first is not None and tally.mismatches > 0
    # the first input where the order matters: two members of t0 (1 partition), m0 first
    members, layout = next((m, lay) for m, lay in every_input() if len(m) == 2 and m[1].topics[0] == "t0")
    assert first.inputs["strategy"] == "range" and first.inputs["partitions_per_topic"] == layout
    assert [m["memberId"] for m in first.inputs["members"]] == [m.memberId for m in members]
    assert first.theirs == (("m0", (("t0", 0),)), ("m1", ()))


def _conform_group(preset: str, model: GroupModel | None = None):  # type: ignore[no-untyped-def]
    model = model or GroupModel.build(preset, {})
    return conform(model, [GroupAssignmentOracle(model)], BfsOptions(), preset=preset)


@pytest.mark.parametrize(
    ("preset", "states", "steps"),
    [("eager-range", 7360, 1261), ("cooperative-sticky", 10778, 1673)],
)
def test_group_assignment_on_the_presets(preset: str, states: int, steps: int) -> None:
    result = _conform_group(preset)
    tally = result.tallies[0]
    assert result.check.stats.distinct_states == states
    assert (tally.steps, tally.comparisons, tally.mismatches) == (steps, steps, 0)
    assert tally.by_action == {"ReceiveJoinGroup": steps}


class ReversedLeader(GroupModel):
    """A leader that hands out the assignment of its members in reverse member order."""

    def _run_assignor(self, response):  # type: ignore[no-untyped-def]
        result = super()._run_assignor(response)
        ids = [m for m, _ in result]
        parts = [p for _, p in result][::-1]
        return tuple(sorted(zip(ids, parts, strict=True)))


def test_a_broken_leader_gives_the_shortest_mismatch_that_replays(tmp_path: Path) -> None:
    model = ReversedLeader.build("eager-range", {})
    result = _conform_group("eager-range", model)
    assert result.mismatched
    (violation,) = result.check.violations
    assert violation.property == "Conforms-group-assignment"
    tally = result.tallies[0]
    assert tally.first_mismatch is not None and len(tally.first_mismatch.inputs["members"]) == 2
    result.check.model_ref = f"{__file__}:ReversedLeader"
    write_mismatch_traces(result, tmp_path)
    doc = read_trace(next(tmp_path.glob("*.itf.json")))
    assert doc["#meta"]["mismatch"]["oracle"] == "group-assignment"
    assert len(replay(doc).trace) == len(violation.trace)
    # shortest: no shorter trace reaches a leader computing for two members
    assert len(violation.trace) == _shortest_two_member_assignment()


def _shortest_two_member_assignment() -> int:
    """Depth (trace length) of the first ReceiveJoinGroup where a leader assigns to two members."""
    model = GroupModel.build("eager-range", {})
    frontier: list[GroupState] = list(model.init_states())
    seen = set(frontier)
    depth = 1
    while frontier:
        depth += 1
        nxt = []
        for s in frontier:
            for action, t in model.successors(s):
                if _leader_assigns_two(s, action):
                    return depth
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    raise AssertionError("no leader ever assigns to two members")


def _leader_assigns_two(s: GroupState, action: Action) -> bool:
    if action.name != "ReceiveJoinGroup":
        return False
    response = s.consumers[action.args["consumer"]].response
    return (
        bool(response is not None and response.error == "NONE" and response.leaderId == response.memberId)
        and len(response.members) >= 2
    )


def test_java_hash_order_decides_who_keeps_its_partitions() -> None:
    """Equal subscriptions, 4 partitions, 3 members: only one of the two members owning 2 keeps both,
    the first in Java HashMap order of the ids ("a" hashes to bucket 1, "Z" to bucket 10), not the
    first in id order ("Z" < "a")."""
    assert assignors.hash_order(["Z", "a", "c"]) == ("a", "c", "Z")
    t = ("t",)
    members = [Member("Z", t, (("t", 0), ("t", 1)), 3), Member("a", t, (("t", 2), ("t", 3)), 3), Member("c", t)]
    oracle = AssignorOracle(settings={"strategy": "sticky"})
    (answer,) = oracle.compare(("sticky", members, {"t": 4}))
    assert answer.agree
    assert dict(answer.theirs) == {"a": (("t", 2), ("t", 3)), "Z": (("t", 0),), "c": (("t", 1),)}
