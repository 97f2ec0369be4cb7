"""The streams-group model (KIP-1071): the presets' verdicts are what a complete search finds, each bug
is a shortest counterexample whose fix, alone, changes the very step that showed it, and the sticky
task assignor keeps Kafka's rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import Check
from kmc.checker.model import Action
from kmc.checker.result import Status
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.streams_group.assignor import assign
from kmc.models.streams_group.model import StreamsGroupModel
from kmc.models.streams_group.state import (
    FENCED_MEMBER_EPOCH,
    NO_TASKS,
    NONE,
    STABLE,
    UNRELEASED_INSTANCE_ID,
    UNREVOKED_TASKS,
    Heartbeat,
    StreamsGroup,
    StreamsGroupMember,
    StreamsGroupState,
    TasksTuple,
)
from suite_entries import searched_by_suite

TRACES = Path(__file__).resolve().parent.parent / "counterexamples" / "streams-group"


def _tasks(active: str = "", standby: str = "") -> TasksTuple:
    return TasksTuple(frozenset(active.split()), frozenset(standby.split()))


@pytest.mark.parametrize("preset", sorted(StreamsGroupModel.presets))
def test_presets_verdicts_are_what_kmc_list_says(preset: str) -> None:
    expected = StreamsGroupModel.presets[preset].expected
    if searched_by_suite("streams-group", preset, expected):
        return
    result = Check("streams-group", preset=preset, settings={"keep_going": True}).run()
    violated = {v.property for v in result.violations}
    assert violated == {name for name, verdict in expected.items() if verdict == "violated"}


@pytest.mark.parametrize(
    ("preset", "overrides", "states"),
    [
        ("heartbeat-after-reconciliation", {}, 1719),
        ("heartbeat-after-reconciliation", {"max_faults": 2}, 2601),
        ("standby-replicas", {}, 31875),
        ("standby-replicas", {"kafka_20665": False}, 53861),
        ("static-rejoin-in-place", {}, 31253),
    ],
)
def test_the_closed_protocol_holds_and_takes_every_action(preset: str, overrides: dict, states: int) -> None:
    result = Check("streams-group", preset=preset, overrides=overrides).run()
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == states
    taken = {name for name, (_distinct, generated) in result.coverage["actions"].items() if generated}
    assert taken == set(StreamsGroupModel.actions) - set(result.coverage["inactive"])


def _replayed_with(trace: str, **flags: object) -> list[tuple[Action, StreamsGroupState]]:
    """The trace's actions taken again by the model with ``flags`` changed, each matched on its name and
    consumer (an error may differ): the fixed model's step where the bug showed."""
    done = replay(read_trace(TRACES / trace))
    model = StreamsGroupModel(StreamsGroupModel.make_config(done.meta["preset"], flags))
    state = next(iter(model.init_states()))
    steps: list[tuple[Action, StreamsGroupState]] = []
    for action in done.trace.actions[1:]:
        assert isinstance(action, Action)
        same = [(a, t) for a, t in model.successors(state) if a == action]
        alike = same or [
            (a, t)
            for a, t in model.successors(state)
            if a.name == action.name and a.args.get("consumer") == action.args.get("consumer")
        ]
        assert alike, f"{action} is not enabled with {flags}"
        steps.append(alike[0])
        state = alike[0][1]
    return steps


def test_kafka_20442_the_last_leave_leaves_the_assignment_epoch_behind_and_its_fix_moves_it() -> None:
    trace = "kafka-4.3-EmptyGroupAtAssignmentEpoch.itf.json"
    before = _replayed_with(trace)[-1][1].group
    fixed = _replayed_with(trace, kafka_20442=True)[-1][1].group
    assert (before.members, before.groupEpoch, before.assignmentEpoch) == ((), 3, 2)
    assert (fixed.members, fixed.groupEpoch, fixed.assignmentEpoch) == ((), 3, 3)


def test_kafka_19233_a_rejoin_with_epoch_zero_is_fenced_and_accepted_once_fixed() -> None:
    trace = "pre-kafka-19233-EveryMemberJoins.itf.json"
    before = _replayed_with(trace)
    fixed = _replayed_with(trace, kafka_19233=True)
    fenced = [i for i, (a, _t) in enumerate(before) if a.args.get("error") == FENCED_MEMBER_EPOCH]
    assert fenced, "the trace shows no fenced rejoin"
    first = fenced[0]
    rejoin = before[first - 1][1].clients[0].request
    assert rejoin is not None and rejoin.memberEpoch == 0
    assert fixed[first][0].args["error"] == NONE  # the same rejoin, accepted


def test_a_static_member_whose_join_answer_was_lost_is_refused_by_its_own_instance_id() -> None:
    """Kafka 4.4 (confirmed on 4.4.0): the retried join of a static member the coordinator already holds
    is UNRELEASED_INSTANCE_ID, fatal for the thread; apache/kafka#23542 accepts the same join in place."""
    trace = "kafka-4.4-static-NoMemberFencedByItsOwnInstanceId.itf.json"
    before = _replayed_with(trace)
    fixed = _replayed_with(trace, static_rejoin_in_place=True)
    assert len(before) == 6 and [a.name for a, _t in before][3] == "HeartbeatResponseLost"
    retried = before[4][1].clients[0].request
    assert retried is not None and (retried.memberId, retried.memberEpoch, retried.instanceId) == ("m0", 0, "i0")
    assert before[-1][0].args["error"] == UNRELEASED_INSTANCE_ID
    assert fixed[-1][0].args["error"] == NONE
    [member] = fixed[-1][1].group.members
    assert (member.memberId, member.instanceId, member.memberEpoch) == ("m0", "i0", 2)


def test_a_static_member_that_leaves_with_minus_2_keeps_its_tasks_and_a_restart_takes_its_place() -> None:
    model = StreamsGroupModel(StreamsGroupModel.make_config("static-rejoin-in-place", {"max_lost_responses": 0}))
    state = next(iter(model.init_states()))
    join = "Subscribe SendHeartbeat HandleHeartbeat ReceiveHeartbeat StartReconciliation AssignTasks"
    leave = "SendHeartbeat HandleHeartbeat ReceiveHeartbeat Unsubscribe SendHeartbeat HandleHeartbeat"
    for name in f"{join} {leave}".split():
        state = next(t for a, t in model.successors(state) if a.name == name and a.args.get("consumer") == 0)
    [left] = state.group.members
    epoch = state.group.groupEpoch
    assert (left.memberId, left.memberEpoch, left.assignedTasks) == ("m0", -2, _tasks("0_0 0_1"))
    for name in ("ReceiveHeartbeat", "RestartConsumer", "SendHeartbeat", "HandleHeartbeat"):
        state = next(t for a, t in model.successors(state) if a.name == name and a.args.get("consumer") == 0)
    [back] = state.group.members
    assert (back.memberId, back.instanceId, back.assignedTasks) == ("m0-1", "i0", _tasks("0_0 0_1"))
    assert state.group.groupEpoch == epoch and dict(state.group.targetAssignment) == {"m0-1": _tasks("0_0 0_1")}


def test_the_lost_response_answers_without_tasks_unless_the_whole_assignment_is_sent() -> None:
    trace = "lost-response-ClientsReachTheirAssignment.itf.json"
    before = _replayed_with(trace)
    lost = next(i for i, (a, _t) in enumerate(before) if a.name == "HeartbeatResponseLost")
    c = before[lost][0].args["consumer"]
    retry = next(
        i
        for i in range(lost + 1, len(before))
        if before[i][0].name == "HandleHeartbeat" and before[i][0].args["consumer"] == c
    )
    assert before[retry][1].clients[c].response.assignment is None
    # the same heartbeat, from the same state, handled with the fix: the whole assignment comes back
    fixed = StreamsGroupModel(StreamsGroupModel.make_config("lost-response", {"full_assignment_on_full_request": True}))
    [(_, after)] = [(a, t) for a, t in fixed.successors(before[retry - 1][1]) if a == before[retry][0]]
    assert after.clients[c].response.assignment == after.group.members[c].assignedTasks != NO_TASKS


def _member(epoch: int, previous: int, assigned: TasksTuple) -> StreamsGroupMember:
    return StreamsGroupMember("m0", epoch, previous, STABLE, "p0", assigned, NO_TASKS)


@pytest.mark.parametrize(
    ("kafka_19233", "epoch", "owned", "valid"),
    [
        (True, 0, NO_TASKS, True),  # a rejoin, whatever the previous epoch
        (False, 0, NO_TASKS, False),  # before KAFKA-19233: 0 is neither the epoch nor the previous one
        (True, 4, NO_TASKS, True),  # the previous epoch, owning what it was assigned: a lost response
        (True, 4, None, False),  # the previous epoch without the owned tasks
        (True, 4, _tasks("0_0 0_1"), False),  # the previous epoch owning a task it no longer has
        (True, 6, NO_TASKS, False),  # ahead of the coordinator
    ],
)
def test_member_epoch_validation(kafka_19233: bool, epoch: int, owned: TasksTuple | None, valid: bool) -> None:
    model = StreamsGroupModel(StreamsGroupModel.make_config("kafka-4.4", {"kafka_19233": kafka_19233}))
    member = _member(5, 4, _tasks("0_0"))
    assert model._epoch_valid(member, Heartbeat("m0", epoch, owned)) is valid


def test_the_assignor_is_sticky_balanced_and_keeps_standbys_off_the_active_process() -> None:
    tasks = ["0_0", "0_1", "0_2", "0_3"]
    first = assign([("m0", "p0", NO_TASKS)], tasks, 0)
    assert first == {"m0": _tasks("0_0 0_1 0_2 0_3")}
    second = assign([("m0", "p0", first["m0"]), ("m1", "p1", NO_TASKS)], tasks, 0)
    assert len(second["m0"].activeTasks) == len(second["m1"].activeTasks) == 2
    assert second["m0"].activeTasks < first["m0"].activeTasks  # m0 keeps what it had, up to its quota
    with_standby = assign([("m0", "p0", second["m0"]), ("m1", "p1", second["m1"])], tasks, 1)
    for member, other in (("m0", "m1"), ("m1", "m0")):
        assert with_standby[member].activeTasks == second[member].activeTasks
        assert with_standby[member].standbyTasks == second[other].activeTasks  # the copy on the other process


def test_the_assignor_gives_fewer_standbys_when_one_process_has_them_all() -> None:
    result = assign([("m0", "p0", NO_TASKS), ("m1", "p0", NO_TASKS)], ["0_0", "0_1"], 1)
    assert all(not t.standbyTasks for t in result.values())  # a standby is never on its active's process
    assert sorted(t for r in result.values() for t in r.activeTasks) == ["0_0", "0_1"]


def test_ties_between_processes_go_as_kafkas_priority_queue_breaks_them() -> None:
    """After p0 takes 0_0 both processes carry one task; java.util.PriorityQueue polls p1, the process that
    stayed in the queue, before p0, the one put back (a smallest-id rule would give 0_1 to p0)."""
    result = assign([("m1", "p1", _tasks("0_2")), ("m2", "p0", NO_TASKS)], ["0_0", "0_1", "0_2"], 0)
    assert result == {"m1": _tasks("0_1 0_2"), "m2": _tasks("0_0")}


@pytest.mark.parametrize(
    ("kafka_20665", "assigned", "pending"),
    [
        (False, _tasks("0_0"), _tasks("0_1")),  # 4.3: the active is revoked first; the standby comes later
        (True, _tasks("0_0", "0_1"), _tasks("0_1")),  # 4.4: the standby is granted at once, in place
    ],
)
def test_an_active_task_demoted_to_standby(kafka_20665: bool, assigned: TasksTuple, pending: TasksTuple) -> None:
    model = StreamsGroupModel(StreamsGroupModel.make_config("kafka-4.4", {"kafka_20665": kafka_20665}))
    me = StreamsGroupMember("m0", 2, 0, STABLE, "p0", _tasks("0_0 0_1"), NO_TASKS)
    other = StreamsGroupMember("m1", 2, 0, STABLE, "p1", NO_TASKS, NO_TASKS)
    target = (("m0", _tasks("0_0", "0_1")), ("m1", _tasks("0_1", "0_0")))
    group = StreamsGroup(3, 3, target, (me, other))
    after = model._reconcile(group, me, _tasks("0_0 0_1"))
    assert (after.state, after.memberEpoch, after.assignedTasks, after.tasksPendingRevocation) == (
        UNREVOKED_TASKS,
        2,
        assigned,
        pending,
    )


@pytest.mark.parametrize(
    ("kafka_20665", "state", "assigned"), [(False, UNREVOKED_TASKS, NO_TASKS), (True, STABLE, _tasks("0_0"))]
)
def test_a_standby_promoted_to_active(kafka_20665: bool, state: str, assigned: TasksTuple) -> None:
    """4.3 revokes the member's standby before its process may take the task as active; 4.4 promotes it."""
    model = StreamsGroupModel(StreamsGroupModel.make_config("kafka-4.4", {"kafka_20665": kafka_20665}))
    me = StreamsGroupMember("m0", 2, 0, STABLE, "p0", _tasks("", "0_0"), NO_TASKS)
    group = StreamsGroup(3, 3, (("m0", _tasks("0_0")),), (me,))
    after = model._reconcile(group, me, _tasks("", "0_0"))
    assert (after.state, after.assignedTasks) == (state, assigned)
