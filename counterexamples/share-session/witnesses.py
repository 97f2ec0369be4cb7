"""Witnesses of the share-session model, for driving on a real broker.

Each is written as a property that a path breaks, so that a search finds the shortest such path and
`kmc drive` plays it on brokers. They are reachability targets, not properties of Kafka: their
"violation" is the behaviour the drive compares with the brokers'. KAFKA-19485's own trace ends when
the consumer sends its request; these go on to the brokers' answer.
"""

from __future__ import annotations

from kmc.checker import Action, invariant, step
from kmc.models.share_session.state import INVALID_REQUEST, ShareSessionState


@step
def NoRequestRefused(s: ShareSessionState, action: Action, t: ShareSessionState) -> bool:
    """Witness (Kafka 4.1.0, KAFKA-19485): a ShareFetch that opens a session with acknowledgements on it,
    refused whole by the broker with INVALID_REQUEST."""
    return not (action.name == "ShareFetchResponse" and action.args["error"] == INVALID_REQUEST)


@invariant
def NoSessionForgetsThePartition(s: ShareSessionState) -> bool:
    """Witness (Kafka 4.4.0, KAFKA-20736 fixed): the old leader answers NOT_LEADER_OR_FOLLOWER with the
    new leader, and the consumer's next ShareFetch to it forgets the partition."""
    return not any(
        session is not None and not session.holdsPartition and b != s.leader for b, session in enumerate(s.sessions)
    )
