"""The streams-group model's config: the bounds, every fix named after its JIRA, the guards of the
reconciliation, the presets named after the releases and the bugs, and every action's arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kmc.checker import Preset, param

ACTION_ARGS = {
    "Subscribe": ("consumer",),
    "SendHeartbeat": ("consumer",),
    "HandleHeartbeat": ("consumer", "error"),
    "ReceiveHeartbeat": ("consumer", "error"),
    "HeartbeatResponseLost": ("consumer",),
    "StartReconciliation": ("consumer",),
    "RevokeTasks": ("consumer",),
    "AssignTasks": ("consumer",),
    "ConsumerCrash": ("consumer",),
    "Unsubscribe": ("consumer",),
    "RestartConsumer": ("consumer",),
    "SessionTimeout": ("memberId",),
    "RebalanceTimeout": ("memberId",),
}


@dataclass(frozen=True)
class StreamsGroupConfig:
    consumers: int = param(2, "stream threads, each with its own consumer and member id", min=1, max=3)
    processes: int = param(
        2, "Kafka Streams processes (processId); thread c runs in process c mod processes", min=1, max=3
    )
    subtopologies: int = param(1, "subtopologies of the topology, all stateful", min=1, max=2)
    partitions: int = param(2, "input partitions of each subtopology: one task each", min=1, max=3)
    num_standby_replicas: int = param(0, "num.standby.replicas: standby copies of each task", min=0, max=1)
    kafka_19233: bool = param(
        True,
        "KAFKA-19233 (4.2.0): a member that rejoins with epoch 0 is accepted whatever its previous epoch; "
        "before, it was fenced unless its previous epoch was 0",
    )
    kafka_20442: bool = param(
        False,
        "KAFKA-20442 (4.4.0): when the last member leaves, the assignment epoch is moved to the group epoch",
    )
    kafka_20665: bool = param(
        False,
        "KAFKA-20665 (4.4.0): a member's own task changes role in place: an active task it gives up for a "
        "standby is granted as standby at once (the active still pending revocation), and its standby is "
        "promoted to active without a revocation once the active is released",
    )
    wait_for_release: bool = param(
        True, "give a task only once no process holds it as active, nor this process in another role"
    )
    wait_for_revocation: bool = param(
        True, "a member that must revoke tasks it still owns stays at its epoch until it reports them revoked"
    )
    heartbeat_while_reconciling: bool = param(
        True,
        "a thread heartbeats at its interval even while it reconciles, reporting its previous reconciliation's "
        "tasks (Kafka's client); False: it heartbeats only once the reconciliation in hand completes",
    )
    full_assignment_on_full_request: bool = param(
        False,
        "answer a heartbeat that lists its owned tasks with the member's whole assignment, as the consumer "
        "coordinator answers a full ConsumerGroupHeartbeat; Kafka's streams coordinator sends the tasks only "
        "on a join or when they changed",
    )
    static_members: bool = param(
        False,
        "each thread's consumer has a group.instance.id (static membership, KAFKA-20169, Kafka 4.4): a close leaves "
        "with epoch -2 keeping the member and its tasks, and a restarted consumer (a new member id) takes its place",
    )
    static_rejoin_in_place: bool = param(
        False,
        "apache/kafka#23542 (open, in no release): a static member that joins with its own member id is handled in "
        "place; before (Kafka 4.4), any join of an instance id still held by a member at another epoch than -2 is "
        "UNRELEASED_INSTANCE_ID, fatal for the thread, even the holder's own rejoin after a lost answer",
    )
    max_restarts: int = param(
        1, "times each thread's consumer is made anew after it stopped (static members)", min=0, max=2
    )
    max_faults: int = param(1, "stream threads that crash or close (leave the group) in all", min=0, max=3)
    crashes: bool = param(
        True, "a fault may be a crash (its member left to a timeout); False: faults are closes, which leave"
    )
    max_lost_responses: int = param(
        0, "StreamsGroupHeartbeat responses lost after the coordinator handled the request", min=0, max=3
    )
    timeouts: Literal["crashed", "any"] = param(
        "crashed", "session and rebalance timeouts: only for crashed threads, or at any moment"
    )
    max_group_epoch: int = param(6, "bound on the group epoch (within_bounds)", min=2, max=12)


PROPERTIES = (
    "NoTaskActiveOnTwoMembers",
    "NoTaskTwiceOnOneProcess",
    "SingleActiveOwner",
    "MemberEpochBounded",
    "LegalTargetAssignment",
    "EmptyGroupAtAssignmentEpoch",
    "NoRevocationSkipped",
    "EveryRebalanceCompletes",
    "EveryMemberJoins",
    "ClientsReachTheirAssignment",
    "NoMemberFencedByItsOwnInstanceId",
)


def _expect(**verdicts: str) -> dict[str, str]:
    """Every property holds but those named."""
    return {name: verdicts.get(name, "holds") for name in PROPERTIES}


_KAFKA_4_4 = {"kafka_20442": True, "kafka_20665": True}
"""Kafka 4.4's fixes and changes: the assignment epoch moved with the last leave, roles changed in place."""

_BOTH_RACES_CLOSED = {"heartbeat_while_reconciling": False, "full_assignment_on_full_request": True}
"""The two findings' races closed: no heartbeat during a reconciliation, and the whole assignment in the
answer to a heartbeat that lists its tasks (the presets that isolate one bug)."""

_STALE_REPORT = {"NoTaskActiveOnTwoMembers": "violated", "NoRevocationSkipped": "violated"}
"""What the race of a heartbeat reporting the previous reconciliation breaks, in every release."""

PRESETS = {
    "kafka-4.3": Preset.of(
        "Kafka 4.2 and 4.3 (4.3.1 is the pinned release): when the last member leaves, the group epoch moves "
        "past the assignment epoch (KAFKA-20442); a heartbeat sent while the thread takes new tasks reports "
        "its previous reconciliation, and the coordinator gives away a task it does not list",
        _expect(EmptyGroupAtAssignmentEpoch="violated", **_STALE_REPORT),
    ),
    "kafka-4.4": Preset.of(
        "Kafka 4.4: KAFKA-20442 fixed, tasks change role in place (KAFKA-20665); the stale report's race remains",
        _expect(**_STALE_REPORT),
        **_KAFKA_4_4,
    ),
    "kafka-4.1": Preset.of(
        "Kafka 4.1 (early access), with two lost heartbeat responses: before KAFKA-19233 and KAFKA-20442",
        _expect(
            EmptyGroupAtAssignmentEpoch="violated",
            EveryMemberJoins="violated",
            EveryRebalanceCompletes="violated",
            ClientsReachTheirAssignment="violated",
            **_STALE_REPORT,
        ),
        kafka_19233=False,
        max_lost_responses=2,
    ),
    "heartbeat-after-reconciliation": Preset.of(
        "Kafka 4.4 with a client that heartbeats only once its reconciliation completes: no task runs twice",
        _expect(),
        **_KAFKA_4_4,
        heartbeat_while_reconciling=False,
    ),
    "standby-replicas": Preset.of(
        "one standby replica, three threads in two processes, heartbeats after reconciliations: a task's standby is "
        "never on the process of its active, and a standby is revoked before its process takes it as active",
        _expect(),
        **_KAFKA_4_4,
        heartbeat_while_reconciling=False,
        consumers=3,
        num_standby_replicas=1,
        max_faults=0,
        max_group_epoch=5,
    ),
    "pre-kafka-19233": Preset.of(
        "before KAFKA-19233, with the two findings' races closed: a thread whose join responses were lost "
        "rejoins with epoch 0 and is fenced again and again until its session times out",
        _expect(EveryMemberJoins="violated", EveryRebalanceCompletes="violated"),
        kafka_19233=False,
        **_KAFKA_4_4,
        max_faults=0,
        max_lost_responses=2,
        **_BOTH_RACES_CLOSED,
    ),
    "lost-response": Preset.of(
        "Kafka 4.4 with heartbeats after reconciliations and one lost heartbeat response: the retried heartbeat is "
        "accepted and answered without tasks (the member's did not change), so the thread never learns its "
        "new assignment",
        _expect(EveryRebalanceCompletes="violated", ClientsReachTheirAssignment="violated"),
        **_KAFKA_4_4,
        heartbeat_while_reconciling=False,
        max_faults=0,
        max_lost_responses=1,
    ),
    "no-release-wait": Preset.of(
        "the coordinator gives a task before its previous owner has released it",
        {"NoTaskActiveOnTwoMembers": "violated", "SingleActiveOwner": "violated"},
        **_KAFKA_4_4,
        heartbeat_while_reconciling=False,
        wait_for_release=False,
    ),
    "no-revocation-wait": Preset.of(
        "the coordinator moves a member to its new target without waiting for it to revoke what it owns",
        {"NoRevocationSkipped": "violated", "NoTaskActiveOnTwoMembers": "violated"},
        **_KAFKA_4_4,
        heartbeat_while_reconciling=False,
        wait_for_revocation=False,
    ),
    "kafka-4.4-static": Preset.of(
        "Kafka 4.4 with static members (KAFKA-20169), the two findings' races closed, one lost heartbeat response and "
        "a close and restart: a thread whose join answer was lost rejoins and is refused UNRELEASED_INSTANCE_ID by "
        "its own instance id, a fatal error (apache/kafka#23542, unfixed in 4.4.0)",
        _expect(NoMemberFencedByItsOwnInstanceId="violated"),
        **_KAFKA_4_4,
        **_BOTH_RACES_CLOSED,
        static_members=True,
        max_lost_responses=1,
        max_group_epoch=8,
    ),
    "static-rejoin-in-place": Preset.of(
        "kafka-4.4-static's bounds with apache/kafka#23542: the static member's own rejoin is handled in place",
        _expect(),
        **_KAFKA_4_4,
        **_BOTH_RACES_CLOSED,
        static_members=True,
        static_rejoin_in_place=True,
        max_lost_responses=1,
        max_group_epoch=8,
    ),
    "slow-member": Preset.of(
        "heartbeats after reconciliations, timeouts at any moment: a thread removed for being slow runs its tasks "
        "until it learns",
        {"NoTaskActiveOnTwoMembers": "violated"},
        **_KAFKA_4_4,
        heartbeat_while_reconciling=False,
        timeouts="any",
        max_faults=0,
    ),
}
