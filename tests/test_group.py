"""The classic consumer-group model: exact state counts, the bugs it reproduces, its bounds."""

from __future__ import annotations

import pytest
from kmc.checker import Check, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.models.group import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    VALID_PREVIOUS_STATES,
    GroupModel,
    _normalise,
)

HOLDING = {"eager-range": 7360, "cooperative-sticky": 10778, "static": 3560}


@pytest.mark.parametrize(("preset", "distinct"), HOLDING.items())
def test_fixed_presets_hold_completely(preset: str, distinct: int) -> None:
    """Every safety property and both liveness properties, on the whole state space."""
    result = Check("group", preset=preset).run()
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert result.stats.distinct_states == distinct
    # Vacuity (actions a preset leaves off) is judged by the suite's fail_on_vacuity and expect_vacuous.
    assert not [w for w in result.warnings if w not in result.vacuity]


@pytest.mark.parametrize(
    ("preset", "prop", "length"),
    [
        ("cooperative-unsafe-assignor", "ExclusiveOwnership", 23),
        ("static-kafka-10284", "StaticReplacementPersisted", 10),
        ("static-kafka-10284", "NoLiveConsumerFenced", 14),
        ("static-kafka-8500", "OneProcessPerMemberId", 9),
        ("static-kafka-9801", "StableAssignmentCovers", 13),
    ],
)
def test_bugs_before_their_fix_shortest_traces(preset: str, prop: str, length: int) -> None:
    result = bfs(GroupModel.build(preset), select_properties(GroupModel, names=[prop]))
    [violation] = result.violations
    assert (violation.property, violation.trace_length) == (prop, length)


def test_the_fix_is_what_makes_the_difference() -> None:
    """Each pre-fix preset differs from `static` or `cooperative-sticky` in one flag."""
    covers = Check("group", preset="static", property_names=["StableAssignmentCovers"])
    assert covers.run().status is Status.HOLDS_COMPLETE
    unsafe = Check("group", preset="cooperative-sticky", overrides={"assignor": "sticky"},
                   property_names=["ExclusiveOwnership"])  # fmt: skip
    assert unsafe.run().status is Status.VIOLATED


def test_static_replacement_during_a_rebalance_is_not_persisted() -> None:
    """KAFKA-10284 persists a static member's new id only when it rejoins a Stable group. Replaced
    during PreparingRebalance, the new id lives in memory until the rebalance completes, and a
    coordinator failover in between still fences the live consumer."""
    result = Check("group", preset="static", property_names=["NoLiveConsumerFenced"], overrides={"max_faults": 2}).run()
    [violation] = result.violations
    assert violation.trace_length == 16
    trace = violation.trace
    replaced = [
        trace.states[i - 1].group.state
        for i in range(1, len(trace.states))
        if trace.actions[i].name == "HandleJoinGroup"
        and {m.memberId for m in trace.states[i].group.members if m.groupInstanceId == "i0"}
        - {m.memberId for m in trace.states[i - 1].group.members if m.groupInstanceId == "i0"}
        and any(m.groupInstanceId == "i0" for m in trace.states[i - 1].group.members)
    ]
    assert replaced == [PREPARING_REBALANCE]
    assert [a.name for a in trace.actions if a is not None].count("CoordinatorUnload") == 1


def test_kafka_12890_stuck_in_completing_rebalance() -> None:
    """A consumer whose application stops polling keeps heartbeating: before DelayedSync nothing
    removes it, and the group waits in CompletingRebalance forever (a lasso that stutters there)."""
    result = Check("group", preset="kafka-12890", property_names=["SyncCompletes"]).run()
    [violation] = result.violations
    trace = violation.trace
    assert (trace.loop, len(trace.states)) == (15, 16)
    assert trace.states[-1].group.state == COMPLETING_REBALANCE
    assert any(a is not None and a.name == "ConsumerStall" for a in trace.actions)
    fixed = Check("group", preset="eager-range", overrides={"poll_stalls": True}).run()
    assert fixed.status is Status.HOLDS_COMPLETE and fixed.stats.distinct_states == 7980


def test_slow_member_lasso() -> None:
    """A member that keeps missing its rebalance timeout: a lasso that never reaches Stable or Empty."""
    result = Check("group", preset="slow-member", property_names=["RebalanceCompletes"]).run()
    [violation] = result.violations
    trace = violation.trace
    assert violation.kind == "liveness" and trace.loop is not None
    loop_states = trace.states[trace.loop :]
    assert {s.group.state for s in loop_states} == {PREPARING_REBALANCE, COMPLETING_REBALANCE}
    assert (trace.loop, len(trace.states)) == (9, 42)
    assert any("bound cut the graph" in w for w in result.warnings)


def test_slow_member_processes_a_partition_twice_but_cannot_commit_it() -> None:
    """With slow consumers two of them may process one partition at once; commits stay fenced."""
    dup = Check(
        "group",
        preset="slow-member",
        property_names=["ExclusiveOwnership"],
        overrides={"partitions": 2, "max_generation": 3},
    ).run()
    assert dup.status is Status.VIOLATED
    commits = Check("group", preset="slow-member", property_names=["CommitFencedByGeneration"]).run()
    assert commits.status is Status.HOLDS_BOUNDED
    assert commits.bound_reason == "the model's own bounds (within_bounds)"


def test_every_transition_is_legal_and_every_state_is_reached() -> None:
    """The coordinator only makes ClassicGroupState's transitions, and reaches all five states."""
    from kmc.checker.bfs import explore_graph

    graph = explore_graph(GroupModel.build("eager-range"))
    seen = {s.group.state for s in graph}
    assert seen == {EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD}
    direct = {(s.group.state, t.group.state) for s, edges in graph.items() for a, t in edges
              if a.name != "CoordinatorLoad" and s.group.state != t.group.state}  # fmt: skip
    for before, after in direct:  # or two transitions through PreparingRebalance in one handler
        via_preparing = (
            before in VALID_PREVIOUS_STATES[PREPARING_REBALANCE]
            and PREPARING_REBALANCE in (VALID_PREVIOUS_STATES[after])
        )
        assert before in VALID_PREVIOUS_STATES[after] or via_preparing
    assert (STABLE, COMPLETING_REBALANCE) in direct  # the only member, the leader, rejoins


def test_generations_are_shifted_not_lost() -> None:
    model = GroupModel.build("eager-range")
    [init] = model.init_states()
    group = init.group._replace(generationId=7)
    consumers = (init.consumers[0]._replace(generationId=5), init.consumers[1])
    shifted = _normalise(init._replace(group=group, consumers=consumers))
    assert (shifted.group.generationId, shifted.consumers[0].generationId) == (3, 1)
    assert shifted.consumers[1].generationId == -1


def test_bad_assignor_is_one_clear_error(kmc) -> None:
    code, _out, err = kmc("check", "group", "--set", "assignor=uniform")
    assert code == 2
    assert "assignor" in err and "range" in err and "Traceback" not in err


def test_hypothesis_finds_the_unsafe_cooperative_assignor() -> None:
    result = Check("group", preset="cooperative-unsafe-assignor", property_names=["ExclusiveOwnership"],
                   engine_name="hypothesis", settings={"seed": 1}).run()  # fmt: skip
    assert result.status is Status.VIOLATED
    assert result.violations[0].trace_length <= 23 + 2


def test_bfs_options_depth_bound_is_reported() -> None:
    result = Check("group", settings={"max_depth": 5}).run()
    assert result.status is Status.HOLDS_BOUNDED and not result.complete
