"""The Kafka bugs the streams-group presets reproduce: a rejoin fenced by its own epochs
(KAFKA-19233), an empty group left behind its assignment epoch (KAFKA-20442), and the model's
findings confirmed on brokers: a stale reconciliation report, a lost heartbeat response, and a static
member refused by its own instance id."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-19233",
        "A stream thread whose heartbeat responses were lost rejoins with memberEpoch 0, which is neither its "
        "epoch nor its previous one, and is fenced at every rejoin until its session times out.",
        component="streams group coordinator",
        since="4.1.0",
        fixed_in="4.2.0",
        preset="kafka-4.1",
        settings={"max_faults": 0},
        violates="EveryMemberJoins",
        fixed_preset="pre-kafka-19233",
        fixed_settings={"kafka_19233": True},
    ),
    kafka_bug(
        "KAFKA-20442",
        "When the last member leaves, the streams group's epoch is bumped but its assignment epoch is not, so the "
        "empty group's target assignment stays behind the group epoch.",
        component="streams group coordinator",
        since="4.1.0",
        fixed_in="4.4.0",
        preset="kafka-4.3",
        settings={"crashes": False},
        violates="EmptyGroupAtAssignmentEpoch",
        fixed_preset="kafka-4.4",
    ),
    kafka_bug(
        "finding",
        "A heartbeat sent while a thread takes new tasks reports its previous reconciliation, so the coordinator "
        "drops a task it still runs without a revocation and grants it to another member.",
        component="streams group coordinator",
        since="4.1.0",
        fixed_in=None,
        preset="kafka-4.4",
        violates=("NoRevocationSkipped", "NoTaskActiveOnTwoMembers"),
        fixed_preset="heartbeat-after-reconciliation",
    ),
    kafka_bug(
        "finding",
        "After a lost heartbeat response the retried heartbeat is accepted at the same memberEpoch and answered "
        "without tasks, so the thread never learns the tasks it was given or must revoke.",
        component="streams group coordinator",
        since="4.1.0",
        fixed_in=None,
        preset="lost-response",
        violates=("ClientsReachTheirAssignment", "EveryRebalanceCompletes"),
        fixed_preset="lost-response",
        fixed_settings={"full_assignment_on_full_request": True},
    ),
    kafka_bug(
        "finding",
        "A static member whose join response was lost joins again with its own member id and is refused "
        "UNRELEASED_INSTANCE_ID by its own instance id, an error fatal to the stream thread.",
        also=("KAFKA-20169",),
        component="streams group coordinator",
        since="4.4.0",
        fixed_in=None,
        preset="kafka-4.4-static",
        violates="NoMemberFencedByItsOwnInstanceId",
        fixed_preset="static-rejoin-in-place",
    ),
)
