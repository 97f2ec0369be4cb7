"""The Kafka bugs the share-session presets reproduce: the share consumer's acknowledgements on a
session's initial epoch (KAFKA-19485) and the session a former leader keeps (KAFKA-20736)."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-19485",
        "After a broker restart the share consumer opens a new share session with acknowledgements of records "
        "fetched before riding on the initial-epoch ShareFetch, and the broker refuses it as INVALID_REQUEST.",
        component="consumer client",
        since="4.0.0",
        fixed_in="4.1.1",
        preset="kafka-4.1.0",
        violates="NoAcknowledgementsOnTheInitialEpoch",
        fixed_preset="kafka-4.3",
    ),
    kafka_bug(
        "KAFKA-20736",
        "After a leader change the share consumer sends the former leader nothing more, so its share session "
        "keeps listing the partition for as long as the connection lasts.",
        component="consumer client",
        since="4.0.0",
        fixed_in="4.4.0",
        preset="kafka-4.3",
        violates="SessionsFollowTheLeader",
        fixed_preset="kafka-4.4",
    ),
)
