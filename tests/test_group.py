"""The classic consumer-group model: exact state counts, the bugs it reproduces, its bounds."""

from __future__ import annotations

import pytest
from conftest import walk_checking_kept_steps
from kmc.checker import Check, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.models.group import (
    ACTION_ARGS,
    ASSIGNOR_FAILED,
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    VALID_PREVIOUS_STATES,
    GroupModel,
    _normalise,
)

HOLDING = {
    "eager-range": 7360,
    "cooperative-sticky": 10778,
    "static": 3592,
    "slow-coordinator": 4192,
    "join-retry": 7984,
    "join-group-v0": 151,
}


@pytest.mark.parametrize(("preset", "distinct"), HOLDING.items())
def test_fixed_presets_hold_completely(preset: str, distinct: int) -> None:
    """Every safety property and both liveness properties, on the whole state space; every action
    is taken but those the config turns off (``inactive_actions``)."""
    result = Check("group", preset=preset).run()
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert result.stats.distinct_states == distinct
    assert result.vacuity == [] and result.warnings == []


def test_every_action_is_taken_somewhere() -> None:
    """No entry of ACTION_ARGS is dead: each is taken in some preset (RequestTimeout only with a
    coordinator slower than the client's request timeout)."""
    taken: set[str] = set()
    for preset in ("eager-range", "slow-coordinator", "kafka-12890"):
        result = Check("group", preset=preset, property_names=["CommitFencedByGeneration"]).run()
        taken |= {name for name, (_enabled, count) in result.coverage["actions"].items() if count}
    assert taken == set(ACTION_ARGS)
    coordinator = Check("group", preset="slow-coordinator", property_names=["NoLiveConsumerFenced"]).run()
    assert coordinator.coverage["actions"]["RequestTimeout"] == [36, 40]
    assert "RequestTimeout" in GroupModel.build("static").inactive_actions()


def test_an_abandoned_join_replaced_by_its_own_rejoin_fences_nobody() -> None:
    """A static consumer whose first JoinGroup timed out rejoins with no member id: the coordinator
    replaces the parked member and fences the old callback, but the client closed that connection,
    so the answer reaches nobody (the model once delivered it to the new request: a 6-state
    NoLiveConsumerFenced violation of its own making)."""
    model = GroupModel.build("slow-coordinator")
    [s] = model.init_states()
    for name in ("SendJoinGroup", "HandleJoinGroup", "RequestTimeout", "SendJoinGroup", "HandleJoinGroup"):
        [s] = [t for a, t in model.successors(s) if a.name == name and a.args.get("consumer") == 0]
    [member] = s.group.members
    assert (member.memberId, member.awaitingJoin, s.group.state) == ("c0-1", True, PREPARING_REBALANCE)
    assert s.consumers[0].response is None and s.consumers[0].phase == "joining"


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


ASSIGNOR_FAILS = {
    "assignor": "sticky",
    "sanitise_owned_partitions": False,
    "timeouts": "any",
    "max_faults": 0,
    "max_generation": 3,
    "require_known_member_id": False,
    "initial_rebalance_delay": False,
}
"""Before KAFKA-12984 the sticky assignor throws "No more unfilled consumers" on a stale claim."""


def test_an_assignor_that_throws_is_a_protocol_outcome() -> None:
    """The leader's assignor throws (the BFS once aborted here with exit 2): it sends no SyncGroup
    and rejoins (a changed subscription starts a rebalance), or the coordinator's DelayedSync
    removes it. The whole bounded space is explored and the stored
    assignment never names a partition twice."""
    result = Check("group", preset="eager-range", overrides=ASSIGNOR_FAILS,
                   property_names=["NoPartitionTwiceInGeneration", "LegalGroupTransition"]).run()  # fmt: skip
    assert result.status is Status.HOLDS_BOUNDED and result.violations == []
    assert result.bound_reason == "the model's own bounds (within_bounds)"
    assert result.stats.distinct_states == 26679
    model = GroupModel.build("eager-range", ASSIGNOR_FAILS)
    frontier, seen, depth, failed = model.init_states(), set(model.init_states()), 1, None
    while failed is None:
        depth += 1
        successors = [(a, s, t) for s in frontier for a, t in model.successors(s) if model.within_bounds(t)]
        failed = next(((a, s, t) for a, s, t in successors if a.args.get("error") == ASSIGNOR_FAILED), None)
        frontier = list(dict.fromkeys(t for _, _, t in successors if t not in seen))
        seen.update(frontier)
    action, before, after = failed
    assert (action.name, depth) == ("ReceiveJoinGroup", 19)  # the shortest: 19 states
    c = action.args["consumer"]
    leader = after.group.leaderId
    assert after.consumers[c].memberId == leader and after.consumers[c].phase == "unjoined"
    assert after.consumers[c].generationId == after.group.generationId and after.consumers[c].request is None
    assert after.group.state == COMPLETING_REBALANCE and leader in after.group.pendingSyncMembers
    # The sync timer may fire although the leader's process runs; so may its rejoin.
    [(_, rejoined)] = [
        (a, t) for a, t in model.successors(after) if a.name == "SendJoinGroup" and a.args["consumer"] == c
    ]
    [(_, answered)] = [
        (a, t) for a, t in model.successors(rejoined) if a.name == "HandleJoinGroup" and a.args["consumer"] == c
    ]
    # Its subscription now names the new generation, so the coordinator starts a rebalance.
    assert answered.group.state == PREPARING_REBALANCE and before.consumers[c].response is not None
    [(_, expired)] = [(a, t) for a, t in model.successors(after) if a.name == "SyncTimeout"]
    assert leader not in {m.memberId for m in expired.group.members}
    assert (expired.group.state, expired.group.members) == (EMPTY, ())  # the follower had not synced either


def test_kept_steps_are_the_steps_computed_afresh() -> None:
    """The successors a model computes from what it has kept (a consumer's own steps by the consumer,
    actions by their arguments) equal, in order, those of a model that has kept nothing, across a
    search with stalls, slow requests and failovers, so that each kept kind of step is taken."""
    warm = GroupModel.build("kafka-12890", {"slow_coordinator": True, "max_faults": 1, "max_generation": 3})
    seen, taken = walk_checking_kept_steps(warm, lambda: GroupModel(warm.config))
    kept = {"ConsumerStart", "ConsumerCrash", "ConsumerStall", "SendJoinGroup", "ReceiveJoinGroup", "ReceiveSyncGroup"}
    assert kept <= taken
    assert len(seen) == 8165
    assert len(warm._own_steps_of) < len(seen)
