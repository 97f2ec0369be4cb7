"""Witnesses of the consumer-membership model, for driving on a real broker.

Each is written as a property that a path breaks, so that a search finds the shortest such path and
`kmc drive` plays it on brokers. They are reachability targets, not properties of Kafka: their
"violation" is the behaviour the drive compares with the brokers'.
"""

from __future__ import annotations

from kmc.checker import Action, step
from kmc.models.consumer_membership.state import JOIN_GROUP_MEMBER_EPOCH, MembershipState


@step
def NoAssignmentResent(s: MembershipState, action: Action, t: MembershipState) -> bool:
    """Witness (Kafka 3.7's coordinator, before KAFKA-16367): a member past its join reports the
    partitions it owns, and the coordinator answers with its assignment again."""
    rejoined = s.heartbeat is None or s.heartbeat.memberEpoch == JOIN_GROUP_MEMBER_EPOCH
    return not (action.name == "HeartbeatResponse" and action.args["assignment"] is not None and not rejoined)
