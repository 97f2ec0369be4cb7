"""Classic group timing: the KIP-394 handshake, KAFKA-7610's new-member join timeout, pending-member
gating and JoinGroup v0 (KIP-62, KAFKA-8653) -- each flag before and after its fix."""

from __future__ import annotations

from kmc.checker import Check, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.models.group.model import COMPLETING_REBALANCE, PREPARING_REBALANCE, STABLE, GroupModel


def test_a_retried_join_group_mints_a_second_member_before_kip_394() -> None:
    """The first JoinGroup (no member id) is parked in the initial delay, the client's request times
    out, and its retry (still no member id) adds another member for the same process."""
    model = GroupModel.build("kafka-7610")
    result = bfs(model, select_properties(GroupModel, names=["MembersWithinLiveProcesses"]))
    [violation] = result.violations
    trace = violation.trace
    assert violation.trace_length == 6
    assert [(a.name, a.args.get("consumer")) for a in trace.actions[1:]] == [
        ("SendJoinGroup", 0),
        ("HandleJoinGroup", 0),
        ("RequestTimeout", 0),
        ("SendJoinGroup", 0),
        ("HandleJoinGroup", 0),
    ]
    for before, action, after in zip(trace.states[:-1], trace.actions[1:], trace.states[1:], strict=True):
        assert (action, after) in model.successors(before)
    last = trace.states[-1]
    assert [(m.memberId, m.consumer, m.incarnation, m.connected) for m in last.group.members] == [
        ("c0-0", 0, 0, False),
        ("c0-1", 0, 0, True),
    ]
    # Without KAFKA-7610 the minted member stays until the join completes; with it, it can be removed.
    assert not any(a.name == "NewMemberJoinTimeout" for a, _ in model.successors(last))
    fixed = GroupModel.build("kafka-7610", {"new_member_join_timeout": True})
    [removed] = [t for a, t in fixed.successors(last) if a.name == "NewMemberJoinTimeout"]
    assert [m.memberId for m in removed.group.members] == ["c0-1"]


def test_kip_394_alone_keeps_members_within_live_processes() -> None:
    """KAFKA-7610 alone still lets the retry mint a member (the same 6 states); KIP-394 alone holds:
    the first JoinGroup is answered at once, and a retry carries the member id."""
    names = ["MembersWithinLiveProcesses"]
    timeout_only = Check(
        "group", preset="kafka-7610", property_names=names, overrides={"new_member_join_timeout": True}
    ).run()
    assert timeout_only.violations[0].trace_length == 6
    handshake = Check(
        "group", preset="kafka-7610", property_names=names, overrides={"require_known_member_id": True}
    ).run()
    assert handshake.status is Status.HOLDS_COMPLETE and handshake.stats.distinct_states == 6924


def test_kafka_8653_drops_every_member_that_has_not_rejoined_forever() -> None:
    """A v0 JoinGroup whose rebalance timeout is -1: the join phase ends as soon as it starts, the
    members that have not rejoined are dropped, they rejoin and drop the others: a lasso through
    PreparingRebalance and CompletingRebalance that never reaches Stable, with no fault at all."""
    result = Check("group", preset="kafka-8653", property_names=["RebalanceCompletes"]).run()
    [violation] = result.violations
    trace = violation.trace
    assert (trace.loop, len(trace.states)) == (11, 47)
    assert {s.group.state for s in trace.states[trace.loop :]} == {PREPARING_REBALANCE, COMPLETING_REBALANCE}
    assert STABLE not in {s.group.state for s in trace.states}
    assert all(s.faults == 0 for s in trace.states)
    assert any(a is not None and a.name == "RebalanceTimeout" for a in trace.actions[trace.loop :])
    fixed = Check("group", preset="join-group-v0", property_names=["RebalanceCompletes"]).run()
    assert fixed.status is Status.HOLDS_COMPLETE and fixed.stats.distinct_states == 151


def test_a_parked_member_keeps_its_session_unless_it_is_new() -> None:
    """``hasSatisfiedHeartbeat``: a member parked in a join or sync is not expired by its session
    timer; a new member's parked JoinGroup is completed by the new-member join timeout instead."""
    model = GroupModel.build("eager-range")
    [s] = model.init_states()
    for name in (
        "SendJoinGroup",
        "HandleJoinGroup",
        "ReceiveJoinGroup",
        "SendJoinGroup",
        "HandleJoinGroup",
        "ConsumerCrash",
    ):
        [s] = [t for a, t in model.successors(s) if a.name == name and a.args.get("consumer") == 0]
    [member] = s.group.members
    assert (member.isNew, member.awaitingJoin) == (True, True)
    timers = {a.name for a, _ in model.successors(s) if "Timeout" in a.name}
    assert timers == {"NewMemberJoinTimeout"}
