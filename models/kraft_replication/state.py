"""The `kraft-replication` model's state: the records, the replicas, the controller's image, the
messages in flight, and the rules on logs that every side of the protocol reads (epoch caches,
end offsets). Offsets count from 0; a log's end offset (LEO) is its length."""

from __future__ import annotations

from typing import NamedTuple

NO_LEADER = -1
"""LeaderConstants.NO_LEADER: the partition has no leader."""
UNDEFINED = -1
"""UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET in epoch lookups; an unknown follower offset or epoch."""

AWAITING_METADATA = -1
"""AlterPartition.sentTo of a request that failed: nothing is in flight, the leader waits for metadata."""

ERROR_NONE = "NONE"
NOT_LEADER_OR_FOLLOWER = "NOT_LEADER_OR_FOLLOWER"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
UNKNOWN_LEADER_EPOCH = "UNKNOWN_LEADER_EPOCH"
INVALID_UPDATE_VERSION = "INVALID_UPDATE_VERSION"
INELIGIBLE_REPLICA = "INELIGIBLE_REPLICA"
STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
OFFSET_OUT_OF_RANGE = "OFFSET_OUT_OF_RANGE"
DIVERGING_EPOCH = "DIVERGING_EPOCH"
"""Not an error code in Kafka: a response with the divergingEpoch field set."""
FETCHING = "Fetching"
TRUNCATING = "Truncating"
"""A follower's fetch state (AbstractFetcherThread's PartitionFetchState): with truncation by
OffsetsForLeaderEpoch it is Truncating from becoming a follower until its log matches the leader's."""


class Record(NamedTuple):
    id: int
    """Which produce request wrote it (a value that is never written twice)."""
    epoch: int
    """The leader epoch the batch was stamped with."""


class Replica(NamedTuple):
    """One broker: its process, its copy of the partition, and the partition metadata it applied."""

    running: bool
    brokerEpoch: int
    """The epoch of its current registration with the controller."""
    cleanShutdownEpoch: int
    """KIP-966: the broker epoch it wrote on a clean shutdown, sent as previousBrokerEpoch when it
    registers again; UNDEFINED after an unclean one."""
    log: tuple[Record, ...]
    highWatermark: int
    leader: int
    leaderEpoch: int
    """The partition's leader and leader epoch in the last PartitionChangeRecord it applied."""
    partitionEpoch: int
    isr: frozenset[int]
    """Only a leader keeps these two (followers store UNDEFINED and the empty set)."""
    pendingAlterPartition: AlterPartition | None
    """Its AlterPartition request in flight, if any."""
    followerState: tuple[tuple[int, int], ...]
    """On a leader, per replica: (logEndOffset, brokerEpoch) of its last accepted fetch, or
    (UNDEFINED, UNDEFINED). Partition.remoteReplicasMap."""
    fetchState: str = FETCHING
    """On a follower, TRUNCATING or FETCHING; always FETCHING unless truncation is by OffsetsForLeaderEpoch."""
    hosted: bool = True
    """Whether the broker hosts the partition: it is in the replicas of the registration it applied (a
    broker a reassignment removes deletes its log; one it adds starts with an empty log)."""
    assignment: tuple[int, ...] = ()
    """Only a leader keeps it: the replicas of the registration it applied (Partition.assignmentState),
    the followers whose fetches it accepts and whom it may add to the ISR."""


class AlterPartition(NamedTuple):
    """A leader's request to the controller to change the ISR."""

    isr: frozenset[int]
    brokerEpochs: tuple[tuple[int, int], ...]
    """KIP-903's BrokerState: (brokerId, brokerEpoch) of each member joining the ISR, from the fetch
    that made it eligible -- as it was when the request was sent. Empty before KIP-903."""
    sentTo: int = 0
    """The controller it was sent to (the number of controller failovers when it was sent), or
    AWAITING_METADATA once it failed with a stale epoch and the leader waits for metadata."""


class Controller(NamedTuple):
    """The active controller's image: broker registrations and the PartitionRegistration."""

    brokerEpochs: tuple[int, ...]
    fenced: frozenset[int]
    leader: int
    leaderEpoch: int
    partitionEpoch: int
    isr: frozenset[int]
    elr: frozenset[int]
    nextBrokerEpoch: int
    """Broker epochs are offsets of registration records in the metadata log: always larger."""
    replicas: tuple[int, ...] = ()
    """The partition's replicas, in order of preference; during a reassignment the target replicas
    followed by those being removed (PartitionReassignmentReplicas)."""
    addingReplicas: frozenset[int] = frozenset()
    removingReplicas: frozenset[int] = frozenset()


class FetchRequest(NamedTuple):
    leader: int
    """The broker it is sent to."""
    fetchOffset: int
    lastFetchedEpoch: int
    currentLeaderEpoch: int
    replicaEpoch: int
    """The follower's broker epoch (KIP-903)."""


class FetchResponse(NamedTuple):
    leader: int
    leaderEpoch: int
    """The follower's leader epoch when it sent the request: which fetch state the answer belongs to."""
    fetchOffset: int
    error: str
    records: tuple[Record, ...]
    highWatermark: int
    divergingEpoch: tuple[int, int]
    """(epoch, endOffset) when the error is DIVERGING_EPOCH."""
    logEndOffset: int
    """The leader's LEO, which a follower needs after OFFSET_OUT_OF_RANGE."""


class OffsetsForLeaderEpochRequest(NamedTuple):
    """KIP-279's request (2.0 to 2.6): where does the follower's last epoch end on the leader?"""

    leader: int
    currentLeaderEpoch: int
    """The follower's leader epoch (KIP-320): the leader fences a request of another epoch."""
    leaderEpoch: int
    """The epoch of the follower's last record."""


class OffsetsForLeaderEpochResponse(NamedTuple):
    leader: int
    leaderEpoch: int
    """The follower's leader epoch when it sent the request."""
    error: str
    endOffset: tuple[int, int]
    """(epoch, endOffset): the largest epoch on the leader's log up to the one asked for, and its end."""


Fetch = FetchRequest | FetchResponse | OffsetsForLeaderEpochRequest | OffsetsForLeaderEpochResponse | None


class KraftReplicationState(NamedTuple):
    controller: Controller
    replicas: tuple[Replica, ...]
    fetches: tuple[Fetch, ...]
    """Each follower's one fetch in flight (request or response), or None."""
    nextRecordId: int
    crashes: int
    fences: int
    shutdowns: int
    committed: tuple[Record, ...]
    """Ghost: the longest log prefix any non-stale leader exposed below its HW."""
    consumed: tuple[Record, ...]
    """Ghost: the longest log prefix consumers have read from any broker acting as leader."""
    acked: frozenset[int]
    """Ghost: ids of the records whose produce request was acknowledged as successful."""
    failovers: int = 0
    """Controller failovers so far: which controller of the KRaft quorum is active."""
    reassignments: int = 0
    """AlterPartitionReassignments requests the controller has accepted so far."""
    staleControllers: tuple[Controller | None, ...] = ()
    """Before KAFKA-14154 only: the image each controller that failed over kept (by the failover that
    ended it), which it still answers AlterPartition from, or None once it has answered
    NOT_CONTROLLER (it learned). Empty with the fix: such a controller answers NOT_CONTROLLER to a
    request ahead of its image, as the model's resend to the active one."""
    cachedActiveControllers: tuple[int, ...] = ()
    """Before KAFKA-14154 only, from the first failover: each broker's
    BrokerToControllerRequestThread.activeController (a failover number), where its AlterPartition
    goes until an answer of NOT_CONTROLLER or a restart. Empty before (every broker sends to the
    first controller) and with the fix, where a request goes to the active controller (a resend
    after NOT_CONTROLLER is one step)."""


# -- building states on the hot path ------------------------------------------------------------
# NamedTuple._replace goes through keyword arguments and a map over every field; these build the
# few changes that most transitions make directly from the tuple (the field order is the classes').


def with_log(r: Replica, log: tuple[Record, ...], highWatermark: int) -> Replica:
    """``r._replace(log=log, highWatermark=highWatermark)``: a follower appends or truncates."""
    return tuple.__new__(Replica, (*r[:3], log, highWatermark, *r[5:]))


def with_high_watermark(r: Replica, highWatermark: int) -> Replica:
    """``r._replace(highWatermark=highWatermark)``."""
    return tuple.__new__(Replica, (*r[:4], highWatermark, *r[5:]))


def with_follower_state(r: Replica, followerState: tuple[tuple[int, int], ...]) -> Replica:
    """``r._replace(followerState=followerState)``: a leader records a follower's fetch."""
    return tuple.__new__(Replica, (*r[:10], followerState, *r[11:]))


def with_pending(r: Replica, pendingAlterPartition: AlterPartition | None) -> Replica:
    """``r._replace(pendingAlterPartition=pendingAlterPartition)``."""
    return tuple.__new__(Replica, (*r[:9], pendingAlterPartition, *r[10:]))


def with_partition_epoch(r: Replica, partitionEpoch: int) -> Replica:
    """``r._replace(partitionEpoch=partitionEpoch)``."""
    return tuple.__new__(Replica, (*r[:7], partitionEpoch, *r[8:]))


def with_controller(s: KraftReplicationState, controller: Controller) -> KraftReplicationState:
    """``s._replace(controller=controller)``."""
    return tuple.__new__(KraftReplicationState, (controller, *s[1:]))


def with_fetches(s: KraftReplicationState, fetches: tuple[Fetch, ...]) -> KraftReplicationState:
    """``s._replace(fetches=fetches)``: a message is sent, answered or consumed."""
    return tuple.__new__(KraftReplicationState, (s[0], s[1], fetches, *s[3:]))


def end_offset_for_epoch(log: tuple[Record, ...], requested: int, latest: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor: the largest epoch <= ``requested`` in the log's epoch cache
    and the offset where the next epoch starts (the LEO for the latest epoch). ``latest`` is the
    cache's newest epoch: on a leader, its own epoch even before it has written a record of it."""
    if requested == UNDEFINED:
        return UNDEFINED, UNDEFINED
    if requested == latest:
        return requested, len(log)
    if requested > latest:
        return UNDEFINED, UNDEFINED
    floor = UNDEFINED
    for offset, record in enumerate(log):
        if record.epoch > requested:
            return (floor if floor != UNDEFINED else requested), offset
        floor = record.epoch
    # The next entry is the latest epoch's, which starts at the LEO: a leader that has not yet
    # written in its own epoch (maybeAssignEpochStartOffset put it in the cache when it was elected).
    return (floor if floor != UNDEFINED else requested), len(log)


def last_epoch(log: tuple[Record, ...]) -> int:
    return log[-1].epoch if log else UNDEFINED


def epoch_start_offset(replica: Replica) -> int:
    """The leader epoch start offset (LESO): where the leader's own epoch begins in its log."""
    for offset, record in enumerate(replica.log):
        if record.epoch >= replica.leaderEpoch:
            return offset
    return len(replica.log)


def dense_partition_epochs(s: KraftReplicationState) -> KraftReplicationState:
    """Partition epochs are only ever compared with each other (a leader's view against the
    controller's, which is always the newest, or a stale controller's), so they are kept as ranks
    0..k-1 of the values present, which keeps both equality and order. Without this, every ISR
    shrink and expand would make a new state forever."""
    c = s.controller
    present = {c.partitionEpoch, UNDEFINED}
    for r in s.replicas:
        present.add(r.partitionEpoch)
    for image in s.staleControllers:
        if image is not None:
            present.add(image.partitionEpoch)
    present.discard(UNDEFINED)
    if c.partitionEpoch == len(present) - 1:
        return s
    rank = {epoch: i for i, epoch in enumerate(sorted(present))}
    rank[UNDEFINED] = UNDEFINED
    replicas = tuple(
        r if rank[r.partitionEpoch] == r.partitionEpoch else with_partition_epoch(r, rank[r.partitionEpoch])
        for r in s.replicas
    )
    controller = tuple.__new__(Controller, (*c[:4], rank[c.partitionEpoch], *c[5:]))
    if s.staleControllers:
        stale = tuple(
            i if i is None else tuple.__new__(Controller, (*i[:4], rank[i.partitionEpoch], *i[5:]))
            for i in s.staleControllers
        )
        return s._replace(controller=controller, replicas=replicas, staleControllers=stale)
    return tuple.__new__(KraftReplicationState, (controller, replicas, *s[2:]))
