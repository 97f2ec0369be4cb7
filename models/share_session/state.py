"""The share-session model's state: the partition's leader as the controller has it, each broker's
share session of the consumer (``ShareSession`` in ``ShareSessionCache``), and the consumer's side:
its view of the leader, one ``ShareSessionHandler`` per broker, the ShareFetch in flight to each,
and the records and acknowledgements it holds."""

from __future__ import annotations

from typing import NamedTuple

# ShareRequestMetadata
INITIAL_EPOCH = 0
FINAL_EPOCH = -1

# Errors
NONE = "NONE"
SHARE_SESSION_NOT_FOUND = "SHARE_SESSION_NOT_FOUND"
INVALID_SHARE_SESSION_EPOCH = "INVALID_SHARE_SESSION_EPOCH"
INVALID_REQUEST = "INVALID_REQUEST"
NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
NO_PARTITION_DATA = ""
"""No partition data in the answer: the session does not list the partition, or the request failed."""


def next_epoch(epoch: int) -> int:
    """``ShareRequestMetadata.nextEpoch``: the final epoch stays final (the wrap at MAX_INT is left out)."""
    return FINAL_EPOCH if epoch < 0 else epoch + 1


class ShareFetchRequest(NamedTuple):
    """A ShareFetch in flight to one broker (the node is in ``nodesWithPendingRequests``)."""

    shareSessionEpoch: int
    added: bool
    """The partition is in the request's topics to add to the session."""
    forgotten: bool
    """The partition is in ``ForgottenTopicsData``: the session is to drop it."""
    acknowledgements: bool
    """Acknowledgement batches of the partition ride on the fetch (piggybacked)."""


class ShareSession(NamedTuple):
    """The broker's share session of the consumer (group, memberId), in its ``ShareSessionCache``."""

    epoch: int
    holdsPartition: bool


class ShareSessionHandler(NamedTuple):
    """The consumer's ``ShareSessionHandler`` for one node."""

    nextEpoch: int
    """The epoch of the next request (``nextMetadata``): INITIAL opens a session, FINAL closes it."""
    holdsPartition: bool
    """The partition is in ``sessionPartitions``: what the consumer believes the session lists."""


class ShareSessionState(NamedTuple):
    leader: int
    leaderEpoch: int
    sessions: tuple[ShareSession | None, ...]
    """Per broker, its share session of the consumer (none after a restart or a close)."""
    metadataLeader: int
    metadataLeaderEpoch: int
    """The leader and epoch in the consumer's ``Metadata``."""
    leaderCache: tuple[int, int] | None
    """Kafka 4.4 (KAFKA-20736): the leader and epoch the consumer's share session was built against
    (``shareSessionLeaderMap``), which routes the partition."""
    handlers: tuple[ShareSessionHandler | None, ...]
    requests: tuple[ShareFetchRequest | None, ...]
    fetched: frozenset[int]
    """Brokers whose records wait in the consumer's fetch buffer."""
    processing: frozenset[int]
    """Brokers whose records the application holds: the last ``poll()`` returned them."""
    acknowledgementsToSend: frozenset[int]
    """Brokers with acknowledgements queued to ride on the next ShareFetch (``fetchAcknowledgementsToSend``)."""
    fetchMoreRecords: bool
    restarts: int
    leaderChanges: int
