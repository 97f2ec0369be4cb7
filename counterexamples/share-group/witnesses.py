"""Witnesses of the share-group model's fixed behaviour, for driving on a real broker.

Each is written as an invariant that a path of the fixed protocol breaks, so that a search finds the
shortest such path and `kmc drive` plays it on a broker: a record accepted, a record released until
the delivery limit archives it. They are reachability targets, not properties of Kafka: their
"violation" is the behaviour the drive compares with the broker's. The races the model's bugs need
happen inside one broker (the lock timer, the share coordinator's answer) and cannot be ordered by
requests; these paths can.
"""

from __future__ import annotations

from kmc.checker import invariant
from kmc.models.share_group.state import ACKNOWLEDGED, ARCHIVED, ShareGroupState


@invariant
def NoRecordAccepted(s: ShareGroupState) -> bool:
    """Witness: a record ACCEPTed and its write answered, the start offset past it."""
    return s.writes != () or not any(r.state == ACKNOWLEDGED for r in s.records[: s.startOffset])


@invariant
def NoRecordArchivedAtTheDeliveryLimit(s: ShareGroupState) -> bool:
    """Witness: a record released at each of its deliveries until the limit archives it, its last
    write answered and the start offset past it."""
    archived = [r for r in s.records[: s.startOffset] if r.state == ARCHIVED and r.deliveryCount >= 2]
    return s.writes != () or not archived


@invariant
def NoRecordArchivedBySessionRelease(s: ShareGroupState) -> bool:
    """Witness: a consumer's share session released while it holds a record at the delivery limit, the
    release's write answered: the record archived, its delivery count kept (KAFKA-19972)."""
    return s.sessionReleases == 0 or s.writes != () or all(r.state != ARCHIVED for r in s.records)
