"""The classic consumer-group model: exact state counts, the bugs it reproduces, its bounds."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import walk_checking_kept_steps
from kmc.checker import Check, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.group.model import (
    ACTION_ARGS,
    ASSIGNOR_FAILED,
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    VALID_PREVIOUS_STATES,
    GroupModel,
    normalised,
)
from kmc.models.group.state import ILLEGAL_GENERATION, NO_GENERATION, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, Response
from kmc.specs.group import ExclusiveOwnership

COUNTEREXAMPLES = Path(__file__).resolve().parent.parent / "counterexamples"

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
    coordinator slower than the client's request timeout, ConsumerPause only with consumer_pauses)."""
    taken: set[str] = set()
    for preset in ("eager-range", "slow-coordinator", "kafka-12890", "cooperative-kafka-12984"):
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
    unsafe = Check(
        "group", preset="cooperative-sticky", overrides={"assignor": "sticky"}, property_names=["ExclusiveOwnership"]
    )
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
    from kmc.checker.search.explored import explore_graph

    graph = explore_graph(GroupModel.build("eager-range"))
    seen = {s.group.state for s in graph}
    assert seen == {EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD}
    direct = {
        (s.group.state, t.group.state)
        for s, edges in graph.items()
        for a, t in edges
        if a.name != "CoordinatorLoad" and s.group.state != t.group.state
    }
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
    shifted = normalised(init._replace(group=group, consumers=consumers))
    assert (shifted.group.generationId, shifted.consumers[0].generationId) == (3, 1)
    assert shifted.consumers[1].generationId == -1


def test_bad_assignor_is_one_clear_error(kmc) -> None:
    code, _out, err = kmc("check", "group", "--set", "assignor=uniform")
    assert code == 2
    assert "assignor" in err and "range" in err and "Traceback" not in err


def test_hypothesis_finds_the_unsafe_cooperative_assignor() -> None:
    result = Check(
        "group",
        preset="cooperative-unsafe-assignor",
        property_names=["ExclusiveOwnership"],
        engine_name="hypothesis",
        settings={"seed": 1},
    ).run()
    assert result.status is Status.VIOLATED
    assert result.violations[0].trace_length <= 23 + 2


def test_bfs_options_depth_bound_is_reported() -> None:
    result = Check("group", settings={"max_depth": 5}).run()
    assert result.status is Status.HOLDS_BOUNDED and not result.complete


ASSIGNOR_FAILS = {
    "assignor": "sticky",
    "sanitise_owned_partitions": False,
    "sticky_user_data_generation": False,
    "timeouts": "any",
    "max_faults": 0,
    "max_generation": 3,
    "require_known_member_id": False,
    "initial_rebalance_delay": False,
}
"""Before KIP-341 and KAFKA-12984 the sticky assignor throws "No more unfilled consumers" on a stale claim."""


def test_an_assignor_that_throws_is_a_protocol_outcome() -> None:
    """The leader's assignor throws (the BFS once aborted here with exit 2): it sends no SyncGroup
    and rejoins (a changed subscription starts a rebalance), or the coordinator's DelayedSync
    removes it. The whole bounded space is explored and the stored
    assignment never names a partition twice."""
    result = Check(
        "group",
        preset="eager-range",
        overrides=ASSIGNOR_FAILS,
        property_names=["NoPartitionTwiceInGeneration", "LegalGroupTransition"],
    ).run()
    assert result.status is Status.HOLDS_BOUNDED and result.violations == []
    assert result.bound_reason == "the model's own bounds (within_bounds)"
    assert result.stats.distinct_states == 48409
    model = GroupModel.build("eager-range", ASSIGNOR_FAILS)
    action, before, after, depth = _first_assignor_failure(model)
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
    # Version 0 user data names no generation, so the rejoin is unchanged: the coordinator answers
    # it with the same JoinGroup response, and the leader throws again.
    [joined] = [m for m in after.group.members if m.memberId == leader]
    assert rejoined.consumers[c].request.metadata == joined.metadata
    assert answered.group.state == COMPLETING_REBALANCE
    assert answered.consumers[c].response == before.consumers[c].response
    [(_, expired)] = [(a, t) for a, t in model.successors(after) if a.name == "SyncTimeout"]
    assert leader not in {m.memberId for m in expired.group.members}
    assert (expired.group.state, expired.group.members) == (EMPTY, ())  # the follower had not synced either


def test_kip_341_generation_keeps_the_sticky_assignor_from_throwing() -> None:
    """With the generation of the last assignment in the user data (KIP-341), a stale claim loses
    to the newer one and the assignor never throws within the same bounds."""
    model = GroupModel.build("eager-range", dict(ASSIGNOR_FAILS, sticky_user_data_generation=True))
    assert _first_assignor_failure(model) is None
    result = Check(
        "group",
        preset="eager-range",
        overrides=dict(ASSIGNOR_FAILS, sticky_user_data_generation=True),
        property_names=["NoPartitionTwiceInGeneration"],
    ).run()
    assert result.status is Status.HOLDS_BOUNDED and result.stats.distinct_states == 16844


def _first_assignor_failure(model: GroupModel):  # type: ignore[no-untyped-def]
    """The first step (breadth first, within bounds) where the leader's assignor throws."""
    frontier, seen, depth, failed = model.init_states(), set(model.init_states()), 1, None
    while failed is None and frontier:
        depth += 1
        successors = [(a, s, t) for s in frontier for a, t in model.successors(s) if model.within_bounds(t)]
        failed = next(((a, s, t) for a, s, t in successors if a.args.get("error") == ASSIGNOR_FAILED), None)
        frontier = list(dict.fromkeys(t for _, _, t in successors if t not in seen))
        seen.update(frontier)
    if failed is None:
        return None
    return (*failed, depth)


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


def test_kafka_14639_an_older_claim_dropped_hands_a_partition_over_in_one_round() -> None:
    """3.2/3.3 cooperative-sticky: a member whose SyncGroup met REBALANCE_IN_PROGRESS rejoins
    claiming its partition with the generation of its last assignment; another member reports a
    newer one, so the assignor drops the claim and gives the partition away while it is still
    consumed. Keeping an uncontested older claim (KAFKA-14639) holds within the same bounds."""
    # the checked-in shortest trace (kmc ci finds it again and checks it is the shortest)
    trace = replay(read_trace(COUNTEREXAMPLES / "group" / "cooperative-kafka-14639-ExclusiveOwnership.itf.json")).trace
    assert len(trace) == 39
    names = [(a.name, a.args.get("error")) for a in trace.actions[1:]]
    assert ("ReceiveSyncGroup", "REBALANCE_IN_PROGRESS") in names
    last = trace.states[-1]
    assert not ExclusiveOwnership(last)
    owners = [c for c, me in enumerate(last.consumers) if 0 in me.owned]
    assert len(owners) == 2
    stale = next(c for c in owners if last.consumers[c].assignedGeneration < last.group.generationId - 1)
    assert last.consumers[stale].owned == last.consumers[stale].assigned  # never told it lost it
    fixed = Check(
        "group",
        preset="cooperative-kafka-14639",
        overrides={"keep_uncontested_older_claims": True},
        property_names=["ExclusiveOwnership"],
    ).run()
    assert fixed.status is Status.HOLDS_BOUNDED and fixed.stats.distinct_states == 159904


def test_the_leader_validates_a_cooperative_assignment() -> None:
    """``validateCooperativeAssignment`` rejects the unsafe assignor's one-round move, so the leader
    never sends that SyncGroup. Two owners still follow: DelayedSync removes the leader that cannot
    assign while it still consumes, and the partitions go to the other member."""
    model = GroupModel.build("cooperative-unsafe-assignor", {"cooperative_assignment_validation": "except-built-in"})
    moved = (("c0-0", None, ((0, 1), 1)), ("c1-0", None, ((), NO_GENERATION)))
    assert model._run_assignor(moved) is None
    assert GroupModel.build("cooperative-unsafe-assignor")._run_assignor(moved) is not None
    result = bfs(model, select_properties(GroupModel, names=["ExclusiveOwnership"]))
    [violation] = result.violations
    assert violation.trace_length == 27
    assert "SyncTimeout" in [a.name for a in violation.trace.actions[1:]]
    # cooperative-sticky is not validated since KAFKA-13406 (3.2), and was before it
    assert not GroupModel.build("cooperative-sticky").validates_cooperative_assignment
    assert GroupModel.build(
        "cooperative-sticky", {"cooperative_assignment_validation": "all"}
    ).validates_cooperative_assignment


def test_kafka_12983_a_reset_during_the_rebalance_kept_the_owned_partitions() -> None:
    """Before KAFKA-12983, UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION in a JoinGroup or SyncGroup
    response did not run ``onJoinPrepare`` again: the member rejoined claiming what it owned. A
    heartbeat's error always dropped them."""
    for error in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
        for fixed, kept in ((True, frozenset()), (False, frozenset({1}))):
            model = GroupModel.build("cooperative-sticky", {"join_prepare_after_reset": fixed})
            [s] = model.init_states()
            me = s.consumers[0]._replace(phase="syncing", memberId="c0-0", generationId=2, owned=frozenset({1}))
            response = Response("SyncGroup", error, "", NO_GENERATION, "", (), frozenset())
            after = model._on_error(s, 0, me, error, response)
            assert after.consumers[0].owned == kept and after.consumers[0].generationId == NO_GENERATION
            assert model._on_error(s, 0, me, error).consumers[0].owned == frozenset()  # a heartbeat's error
            assert model._metadata(after.consumers[0]) == (tuple(sorted(kept)), NO_GENERATION)


def test_which_generation_the_sticky_claims_carry() -> None:
    """KIP-341 (eager StickyAssignor), KAFKA-12984 and KIP-792 (CooperativeStickyAssignor): the
    generation a subscription reports with its claims."""
    me = GroupModel.build("eager-range").init_states()[0].consumers[0]
    me = me._replace(generationId=5, owned=frozenset({0}), assigned=frozenset({0}), assignedGeneration=3)
    cases = [
        ({"assignor": "sticky"}, ((0,), 3)),
        ({"assignor": "sticky", "sticky_user_data_generation": False}, ((0,), NO_GENERATION)),
        ({"assignor": "range"}, ((), NO_GENERATION)),
        ({"assignor": "cooperative-sticky", "rebalance_protocol": "cooperative"}, ((0,), 5)),
        (
            {"assignor": "cooperative-sticky", "rebalance_protocol": "cooperative", "subscription_generation": False},
            ((0,), 3),
        ),
        (
            {
                "assignor": "cooperative-sticky",
                "rebalance_protocol": "cooperative",
                "subscription_generation": False,
                "cooperative_sticky_generation": False,
            },
            ((0,), NO_GENERATION),
        ),
    ]
    for overrides, metadata in cases:
        assert GroupModel.build("eager-range", overrides)._metadata(me) == metadata, overrides
    # A member claiming nothing reports a generation only where the newest generation's claims alone count
    empty = me._replace(owned=frozenset())
    coop = {"assignor": "cooperative-sticky", "rebalance_protocol": "cooperative"}
    assert GroupModel.build("eager-range", coop)._metadata(empty) == ((), NO_GENERATION)
    older = dict(coop, keep_uncontested_older_claims=False)
    assert GroupModel.build("eager-range", older)._metadata(empty) == ((), 5)


def test_kafka_13891_a_sync_group_rebalance_in_progress_reset_the_generation() -> None:
    """3.3 only: a SyncGroup answered REBALANCE_IN_PROGRESS resets the generation but not the member
    id, and the member rejoins owning nothing; before and after, it keeps both and what it owns."""
    for resets, generation, owned in ((False, 2, frozenset({1})), (True, NO_GENERATION, frozenset())):
        model = GroupModel.build("cooperative-sticky", {"sync_rebalance_resets_generation": resets})
        [s] = model.init_states()
        me = s.consumers[0]._replace(phase="syncing", memberId="c0-0", generationId=2, owned=frozenset({1}))
        response = Response("SyncGroup", REBALANCE_IN_PROGRESS, "", NO_GENERATION, "", (), frozenset())
        after = model._on_error(s, 0, me, REBALANCE_IN_PROGRESS, response).consumers[0]
        assert (after.memberId, after.generationId, after.owned) == ("c0-0", generation, owned)
        heartbeat = model._on_error(s, 0, me, REBALANCE_IN_PROGRESS).consumers[0]
        assert (heartbeat.generationId, heartbeat.owned) == (2, frozenset({1}))


@pytest.mark.parametrize(
    ("fix", "status", "distinct"),
    [
        ({}, Status.VIOLATED, None),
        ({"join_prepare_after_reset": True}, Status.HOLDS_COMPLETE, 14710),
        ({"cooperative_sticky_generation": True}, Status.HOLDS_COMPLETE, 21483),
        ({"sanitise_owned_partitions": True}, Status.HOLDS_COMPLETE, 15404),
        ({"delayed_sync": True}, Status.HOLDS_BOUNDED, 27924),
    ],
)
def test_kafka_12984_stale_claims_make_every_rebalance_throw(fix: dict, status: Status, distinct: int | None) -> None:
    """2.8: a consumer paused past its session timeout gets UNKNOWN_MEMBER_ID for its JoinGroup and,
    before KAFKA-12983, rejoins claiming what it owned; the member that got those partitions claims
    them too, with no generation (before KAFKA-12984), and the assignor throws. The leader's rejoin
    is unchanged, so it throws again, forever (no DelayedSync). Each fix alone ends the loop."""
    properties = ["SyncCompletes", "RebalanceCompletes", "NoPartitionTwiceInGeneration"]
    result = Check("group", preset="cooperative-kafka-12984", overrides=fix, property_names=properties).run()
    assert result.status is status
    if status is Status.VIOLATED:
        [sync, rebalance] = result.violations
        assert (sync.property, sync.trace_length, sync.trace.loop) == ("SyncCompletes", 36, 33)
        assert rebalance.property == "RebalanceCompletes"
        steps = [(a.name, a.args.get("error")) for a in sync.trace.actions[1:]]
        assert "ConsumerPause" in [name for name, _ in steps]
        assert ("ReceiveJoinGroup", UNKNOWN_MEMBER_ID) in steps
        assert steps[32] == ("ReceiveJoinGroup", ASSIGNOR_FAILED)  # the state the loop returns to
    else:
        assert result.stats.distinct_states == distinct


def test_kafka_7026_the_sticky_assignor_gives_a_partition_twice() -> None:
    """Before KIP-341 the eager sticky assignor's user data names no generation: a consumer removed
    while paused rejoins claiming its old assignment, the member that took those partitions claims
    them too, and the assignor (before KAFKA-12984's sanitising) keeps both claims."""
    result = Check("group", preset="sticky-kafka-7026", property_names=["NoPartitionTwiceInGeneration"]).run()
    [violation] = result.violations
    assert violation.trace_length == 22
    assert "ConsumerPause" in [a.name for a in violation.trace.actions[1:]]
    members = violation.trace.states[-1].group.members
    twice = [(m, n) for m in members for n in members if m.memberId < n.memberId and m.assignment & n.assignment]
    [(first, second)] = twice
    assert first.metadata[1] == second.metadata[1] == NO_GENERATION  # neither claim can be told older
    assert first.assignment & second.assignment <= set(first.metadata[0]) & set(second.metadata[0])
