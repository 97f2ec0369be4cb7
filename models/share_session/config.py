"""The share-session model's config: the bounds, the two fixes named after their JIRAs, the presets
named after the releases, and the names of every action's arguments."""

from __future__ import annotations

from dataclasses import dataclass

from kmc.checker import Preset, param

ACTION_ARGS = {
    "ShareFetch": ("nodes",),
    "ShareFetchResponse": ("node", "error", "partitionError"),
    "Poll": ("acknowledged",),
    "BrokerRestart": ("node",),
    "LeaderChange": ("leader", "leaderEpoch"),
    "MetadataUpdate": ("leader", "leaderEpoch"),
}


@dataclass(frozen=True)
class ShareSessionConfig:
    brokers: int = param(2, "brokers, each a possible leader of the consumer's one partition", min=2, max=3)
    max_restarts: int = param(
        1,
        "broker restarts: the new process has no share sessions, and a ShareFetch in flight to it fails",
        min=0,
        max=2,
    )
    max_leader_changes: int = param(
        1,
        "the partition's leadership moves to another broker, which stays up (the old leader is a follower)",
        min=0,
        max=2,
    )
    kafka_19485: bool = param(
        True,
        "KAFKA-19485 (#20135, 4.1.1 and 4.2.0): acknowledgements are never attached to a ShareFetch on the "
        "initial epoch (they fail in the consumer); before, they rode on it and the broker refused the request",
    )
    kafka_20736: bool = param(
        False,
        "KAFKA-20736 (#22766, 4.4.0): the consumer routes by the leader its session was built against, learns a "
        "new one from NOT_LEADER_OR_FOLLOWER, and sends every other session a ShareFetch that forgets what moved "
        "(then closes an empty one); before, a broker that lost leadership kept the partition in its session",
    )


PROPERTIES = ("NoAcknowledgementsOnTheInitialEpoch", "SessionsFollowTheLeader")

PRESETS = {
    "kafka-4.3": Preset.of(
        "Kafka 4.2 and 4.3 (4.3.1 is the pinned release): a broker restart and a leader change; the old leader "
        "keeps the partition in the consumer's share session while their connection lasts (KAFKA-20736)",
        {"NoAcknowledgementsOnTheInitialEpoch": "holds", "SessionsFollowTheLeader": "violated"},
    ),
    "kafka-4.4": Preset.of(
        "Kafka 4.4.0: the same faults; the old leader's session forgets the partition and is closed",
        {name: "holds" for name in PROPERTIES},
        kafka_20736=True,
    ),
    "kafka-4.4-leader-returns": Preset.of(
        "Kafka 4.4.0 with leadership moving away and back and no restart: a session closed when it emptied is "
        "opened again",
        {name: "holds" for name in PROPERTIES},
        kafka_20736=True,
        max_restarts=0,
        max_leader_changes=2,
    ),
    "kafka-4.1.0": Preset.of(
        "Kafka 4.1.0 (share groups in preview): after a restart the consumer opens a new session with the "
        "acknowledgements of records it fetched before riding on the ShareFetch, and the broker refuses the "
        "request as INVALID_REQUEST (KAFKA-19485)",
        {"NoAcknowledgementsOnTheInitialEpoch": "violated", "SessionsFollowTheLeader": "violated"},
        kafka_19485=False,
    ),
}
