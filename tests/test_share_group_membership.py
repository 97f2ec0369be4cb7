"""The share-group-membership model (KIP-932's share groups at the group coordinator): exact state
counts and verdicts of every preset, KAFKA-19468 and KAFKA-19233 as shortest counterexamples with
their fixes taking the same steps and changing the one that mattered, and the coordinator's rules
step by step."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import Check
from kmc.checker.testing import retake
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.share_group_membership.model import ShareGroupMembershipModel
from kmc.models.share_group_membership.state import (
    FENCED_MEMBER_EPOCH,
    JOINING,
    NONE,
    ShareGroupMembershipState,
)
from suite_entries import checked_whole

TRACES = Path(__file__).resolve().parent.parent / "counterexamples" / "share-group-membership"


@pytest.mark.parametrize(
    ("preset", "states", "violated"),
    [
        ("kafka-4.3", 219941, set()),
        ("kafka-4.2", 36661, set()),
        ("pre-kafka-19233", 13105, {"EveryMemberJoins", "EveryRebalanceCompletes"}),
        ("lost-responses", 12915, set()),
    ],
)
def test_presets_verdicts_and_state_counts(preset: str, states: int, violated: set[str]) -> None:
    expected = ShareGroupMembershipModel.presets[preset].expected
    assert violated == {name for name, verdict in expected.items() if verdict == "violated"}
    if not violated and checked_whole("share-group-membership", preset) == states:  # the CI suite searches it
        return
    result = Check("share-group-membership", preset=preset, settings={"keep_going": True}).run()
    assert result.complete and result.stats.distinct_states == states
    assert {v.property for v in result.violations} == violated
    taken = {name for name, (_distinct, generated) in result.coverage["actions"].items() if generated}
    assert taken == set(ShareGroupMembershipModel.actions) - set(result.coverage["inactive"])


def test_kafka_19468_a_heartbeat_that_changes_nothing_bumps_the_epoch_and_the_fix_does_not() -> None:
    trace = TRACES / "pre-kafka-19468-NoRebalanceWithoutCause.itf.json"
    before = replay(read_trace(trace)).trace.states
    fixed: list[ShareGroupMembershipState] = retake(trace, kafka_19468=True)
    assert len(before) == len(fixed) == 12
    # the member subscribes to t0 only, t1-0 stays initialized: 4.1 bumps the epoch and computes the same target
    last, previous = before[-1].group, before[-2].group
    assert previous.members[0].subscribedTopicNames == frozenset({"t0"})
    assert ("t1", 0) in before[-1].shareGroupStatePartitionMetadata.initializedTopics
    assert last.groupEpoch == previous.groupEpoch + 1 and last.targetAssignment == previous.targetAssignment
    # the fix answers the same heartbeat without a rebalance
    assert fixed[-1].group.groupEpoch == fixed[-2].group.groupEpoch
    assert fixed[-1].group.targetAssignment == last.targetAssignment


def test_kafka_19233_a_rejoin_at_epoch_0_is_fenced_until_the_fix_accepts_it() -> None:
    done = replay(read_trace(TRACES / "pre-kafka-19233-EveryMemberJoins.itf.json"))
    assert done.trace.loop is not None
    loop = done.trace.states[done.trace.loop :]
    assert all(s.consumers[0].phase == JOINING for s in loop)
    fenced = [a for a in done.trace.actions[done.trace.loop :] if a is not None and a.name == "HandleHeartbeat"]
    assert {a.args["error"] for a in fenced if a.args["consumer"] == 0} == {FENCED_MEMBER_EPOCH}
    # from the state where consumer 0 rejoins with epoch 0, Kafka 4.2 accepts it
    model = ShareGroupMembershipModel(ShareGroupMembershipModel.make_config("lost-responses"))
    state = next(s for s in loop if s.consumers[0].request is not None and s.consumers[0].request.memberEpoch == 0)
    [(action, after)] = [
        (a, t) for a, t in model.successors(state) if a.name == "HandleHeartbeat" and a.args["consumer"] == 0
    ]
    assert action.args["error"] == NONE
    member = next(m for m in after.group.members if m.memberId == "m0")
    assert member.memberEpoch == after.group.assignmentEpoch


def test_the_explorer_opens_kafka_19468s_trace_and_draws_both_coordinators() -> None:
    """The explorer opens the checked-in trace, names the violated step property at its last step, shows
    the model's tables, and the chart has the share coordinator's and the group coordinator's lanes."""
    import json
    import urllib.request

    from kmc.checker.explorer.server import make_server, serve_in_thread

    doc = json.loads((TRACES / "pre-kafka-19468-NoRebalanceWithoutCause.itf.json").read_text())
    server = make_server("share-group-membership", "pre-kafka-19468", port=0)
    thread = serve_in_thread(server)

    def call(route: str, body: object) -> dict:
        request = urllib.request.Request(
            server.url.rstrip("/") + route, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    try:
        path = call("/api/open", {"name": "trace.itf.json", "doc": doc})["path"]
        assert len(path) == len(doc["states"]) == 12
        view = call("/api/view", {"path": path, "at": len(path) - 1})
        assert "NoRebalanceWithoutCause" in view["steps"][11]["violated"]
        assert not any(step["violated"] for step in view["steps"][:11])
        assert {t["title"] for t in view["state"]["tables"]} >= {"share group", "members", "share-group state"}
        svg = call("/api/chart", {"path": path})["svg"]
        assert "share coordinator" in svg and "group coordinator" in svg and "consumer 1" in svg
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_kafka_20291_asks_for_waiting_partitions_only_while_the_target_is_as_new_as_the_group() -> None:
    """Before KAFKA-20291 (4.1, 4.2) every heartbeat asks ``initializedAssignmentPending``; since (4.3), a
    group whose target is behind its epoch (a member left, or the target is delayed) is not asked."""
    from kmc.models.share_group_membership.state import ShareGroup, ShareGroupMember

    member = ShareGroupMember("m0", 2, 1, frozenset({"t0"}), frozenset())
    behind = ShareGroup(3, 2, (("m0", frozenset()),), (member,), (("t0", 1),), True)
    initialized = frozenset({("t0", 0)})
    for preset, asked in (("kafka-4.2", True), ("kafka-4.3", False)):
        model = ShareGroupMembershipModel(ShareGroupMembershipModel.make_config(preset))
        assert model.asks_initialized_assignment_pending(behind) is asked
        assert model.initialized_assignment_pending(behind, initialized)  # t0-0 waits either way
    assert ShareGroupMembershipModel(
        ShareGroupMembershipModel.make_config("kafka-4.3")
    ).asks_initialized_assignment_pending(behind._replace(assignmentEpoch=3))
