"""The consumer-membership model (the KIP-848 consumer's MembershipManagerImpl): exact state counts,
KAFKA-16198's two outcomes as shortest counterexamples, the fix taking the same steps and deciding
differently where it matters, and the coordinator's resend rule that the lasso depends on."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import Action, Check
from kmc.checker.testing import retake
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.consumer_membership.model import ConsumerMembershipModel
from kmc.models.consumer_membership.state import (
    ACKNOWLEDGING,
    RECONCILING,
    STABLE,
    HeartbeatRequest,
    MembershipState,
    Reconciliation,
)

TRACES = Path(__file__).resolve().parent.parent / "counterexamples" / "consumer-membership"
T1_0, T2_0 = (0, 0), (1, 0)


@pytest.mark.parametrize(
    ("preset", "settings", "states", "violated"),
    [
        ("kafka-15832", {}, 104, set()),
        ("kafka-15832", {"topics": 3}, 454, set()),
        ("kafka-15832", {"topics": 1}, 22, set()),
        ("kafka-16198", {}, 99, set()),
        ("kafka-16198", {"topics": 3}, 453, set()),
        ("pre-kafka-16198", {}, 321, {"RevokesOnlyWhatTheTargetDrops", "EventuallyOwnsTheTarget"}),
        ("pre-kafka-16198", {"topics": 1}, 44, set()),
        ("pre-kafka-16198-newer-coordinator", {}, 217, {"RevokesOnlyWhatTheTargetDrops", "EventuallyOwnsTheTarget"}),
    ],
)
def test_verdicts_and_state_counts(preset: str, settings: dict[str, int], states: int, violated: set[str]) -> None:
    result = Check("consumer-membership", preset=preset, overrides=settings, settings={"keep_going": True}).run()
    assert result.complete and result.stats.distinct_states == states
    assert {v.property for v in result.violations} == violated
    taken = {name for name, (_distinct, generated) in result.coverage["actions"].items() if generated}
    assert taken == set(ConsumerMembershipModel.actions) - set(result.coverage["inactive"])
    assert ("Poll" in result.coverage["inactive"]) == (preset != "kafka-15832")
    assert ("PartitionsRevoked" in result.coverage["inactive"]) == (settings.get("topics") == 1)


def test_preset_expectations_match_the_checked_verdicts() -> None:
    presets = ConsumerMembershipModel.presets
    assert set(presets["kafka-15832"].expected.values()) == set(presets["kafka-16198"].expected.values()) == {"holds"}
    assert set(presets["pre-kafka-16198"].expected.values()) == {"violated"}
    assert set(presets["pre-kafka-16198-newer-coordinator"].expected.values()) == {"violated"}


def test_a_member_that_owns_nothing_applies_its_assignment_at_once_and_waits_only_for_the_callback() -> None:
    states = retake(TRACES / "pre-kafka-16198-RevokesOnlyWhatTheTargetDrops.itf.json")
    # nothing consumed to commit, nothing to revoke: the assignment is in the subscription before onPartitionsAssigned
    assert states[3].currentAssignment == {T1_0}
    assert states[3].reconciliation == Reconciliation(frozenset({T1_0}), frozenset(), applied=True)


def test_kafka_16198_a_late_topic_becomes_the_whole_assignment_and_the_owned_partition_is_revoked() -> None:
    trace = TRACES / "pre-kafka-16198-RevokesOnlyWhatTheTargetDrops.itf.json"
    before = retake(trace)
    fixed = retake(trace, kafka_16198=True)
    # the member reconciled T1-0 and acknowledges; T2's name was not yet known
    assert before[4].currentAssignment == fixed[4].currentAssignment == {T1_0}
    assert before[4].state == fixed[4].state == ACKNOWLEDGING
    assert before[4].assignmentUnresolved == {T2_0} and before[4].assignmentReadyToReconcile == frozenset()
    # T2's name arrives: before the fix T2-0 alone is reconciled, revoking T1-0
    assert before[-1].reconciliation == Reconciliation(frozenset({T2_0}), frozenset({T1_0}))
    # the fix reconciles only a RECONCILING member, and then the whole resolvable target
    assert fixed[-1].state == ACKNOWLEDGING and fixed[-1].reconciliation is None
    after_ack = _take(fixed[-1], "Heartbeat", "HeartbeatResponse")
    assert after_ack.reconciliation == Reconciliation(frozenset({T1_0, T2_0}), frozenset())


def test_kafka_16198_metadata_during_the_reconciliation_empties_the_ready_set_and_a_partition_is_never_taken() -> None:
    done = replay(read_trace(TRACES / "pre-kafka-16198-EventuallyOwnsTheTarget.itf.json"))
    states = done.trace.states
    assert done.trace.loop == 9
    # the coordinator resends the target for the reported T1-0; both resolutions find a reconciliation running
    assert states[5].assignmentReadyToReconcile == {T1_0} and states[5].reconciliation is not None
    assert states[6].assignmentReadyToReconcile == {T2_0} and states[6].assignmentUnresolved == frozenset()
    # a refresh rebuilds the ready set from the unresolved partitions, which are none: T2-0 is forgotten
    assert states[7].assignmentReadyToReconcile == frozenset()
    # the callback completes, the acknowledgement finds nothing pending: STABLE owning T1-0 alone, for good
    for s in states[9:]:
        assert s.state == STABLE and s.currentAssignment == {T1_0} and s.sentTopicPartitions == {T1_0}
    assert states[9].heartbeat == HeartbeatRequest(1, None)  # owned unchanged: not reported, nothing resent
    fixed = _replay_prefix(states[0], done.trace.actions[1:11], kafka_16198=True)
    assert fixed[9].state == RECONCILING and fixed[10].state == RECONCILING  # the target is not yet owned
    refreshed = _take(fixed[10], "MetadataUpdate", kafka_16198=True, kafka_16367=False)
    assert refreshed.reconciliation == Reconciliation(frozenset({T1_0, T2_0}), frozenset())


@pytest.mark.parametrize(("kafka_16367", "resent"), [(False, True), (True, False)])
def test_kafka_16367_the_acknowledging_heartbeat_gets_the_assignment_only_from_the_3_7_coordinator(
    kafka_16367: bool, resent: bool
) -> None:
    acknowledging = retake(TRACES / "pre-kafka-16198-RevokesOnlyWhatTheTargetDrops.itf.json")[4]
    sent = _take(acknowledging, "Heartbeat", kafka_16198=False, kafka_16367=kafka_16367)
    assert sent.heartbeat == HeartbeatRequest(1, frozenset({T1_0}))
    model = ConsumerMembershipModel(
        ConsumerMembershipModel.make_config("pre-kafka-16198", {"kafka_16367": kafka_16367})
    )
    ((action, _t),) = [(a, t) for a, t in model.successors(sent) if a.name == "HeartbeatResponse"]
    assert (action.args["assignment"] is not None) == resent


class _ClientReportsOwnedPartitionsOnEveryHeartbeat(ConsumerMembershipModel):
    """A client that reports its owned partitions on every heartbeat, which the coordinator answers with
    the assignment (Kafka reports them only when they changed)."""

    def _heartbeat(self, s: MembershipState) -> tuple[Action, MembershipState]:
        action, t = super()._heartbeat(s)
        return action, t._replace(heartbeat=t.heartbeat._replace(topicPartitions=s.currentAssignment))


def test_the_lasso_depends_on_the_coordinator_sending_the_assignment_only_when_owned_partitions_are_reported() -> None:
    mutant = f"{Path(__file__).resolve()}:_ClientReportsOwnedPartitionsOnEveryHeartbeat"
    result = Check(mutant, preset="pre-kafka-16198", settings={"keep_going": True}).run()
    assert result.complete
    assert {v.property for v in result.violations} == {"RevokesOnlyWhatTheTargetDrops"}


def _take(s: MembershipState, *names: str, **flags: bool) -> MembershipState:
    model = ConsumerMembershipModel(ConsumerMembershipModel.make_config("kafka-16198", flags))
    for name in names:
        (s,) = [t for a, t in model.successors(s) if a.name == name]
    return s


def _replay_prefix(init: MembershipState, actions: list[Action], **flags: bool) -> list[MembershipState]:
    model = ConsumerMembershipModel(ConsumerMembershipModel.make_config("pre-kafka-16198", flags))
    states = [init]
    for action in actions:
        (t,) = [t for a, t in model.successors(states[-1]) if a == action]
        states.append(t)
    return states


def test_kafka_16198_against_a_newer_coordinator_the_member_turns_stable_while_its_callback_runs() -> None:
    """The 3.7 client on a 3.8 or later broker: its acknowledgement of T1-0 gets no assignment back
    (KAFKA-16367), and the answer finds nothing unresolved or ready, so the member is STABLE before
    onPartitionsAssigned completes; the callback's completion then acknowledges nothing."""
    done = replay(read_trace(TRACES / "pre-kafka-16198-newer-coordinator-EventuallyOwnsTheTarget.itf.json"))
    states, actions = done.trace.states, done.trace.actions
    assert done.trace.loop == 8
    assert actions[7].args["assignment"] is None and states[6].heartbeat == HeartbeatRequest(1, frozenset({T1_0}))
    assert states[7].state == STABLE and states[7].reconciliation is not None
    assert states[8].state == STABLE and states[8].reconciliation is None
    assert all(s.currentAssignment == {T1_0} for s in states[8:])
