"""The share-group model's state: one share partition's in-flight records as its leader holds them
(``SharePartition``), the acquisition-lock timer tasks, the writes to the share coordinator in
flight, what the share coordinator has persisted, and each consumer's view of what it holds."""

from __future__ import annotations

from typing import NamedTuple

# RecordState (org.apache.kafka.server.share.fetch.RecordState)
AVAILABLE = "AVAILABLE"
ACQUIRED = "ACQUIRED"
ACKNOWLEDGED = "ACKNOWLEDGED"
ARCHIVED = "ARCHIVED"
TERMINAL = (ACKNOWLEDGED, ARCHIVED)

# AcknowledgeType
ACCEPT = "ACCEPT"
RELEASE = "RELEASE"
REJECT = "REJECT"
ACKNOWLEDGE_TYPES = (ACCEPT, RELEASE, REJECT)

NONE = "NONE"
INVALID_RECORD_STATE = "INVALID_RECORD_STATE"
COORDINATOR_NOT_AVAILABLE = "COORDINATOR_NOT_AVAILABLE"

EMPTY_MEMBER_ID = ""
NO_TIMER = -1


class Rollback(NamedTuple):
    """``InFlightState.rollbackState``: what a transition in flight started from."""

    state: str
    deliveryCount: int
    memberId: str
    timer: int


class InFlightState(NamedTuple):
    """One record of the share partition (``InFlightState``): a record never fetched is AVAILABLE
    with delivery count 0."""

    state: str
    deliveryCount: int
    memberId: str
    timer: int
    """The acquisition-lock timer task the record holds (``acquisitionLockTimeoutTask``), or NO_TIMER."""
    rollback: Rollback | None
    """Set while a write of the record's new state is in flight (``hasOngoingStateTransition``)."""
    terminal: bool
    """``isTerminalState``: archived by a log-start move while a transition was in flight (KAFKA-19476)."""


class LockTimer(NamedTuple):
    """An ``AcquisitionLockTimerTask`` for the records ``first..last`` acquired by ``memberId``."""

    memberId: str
    first: int
    last: int
    expired: bool
    """``run()`` began: the lock duration has passed (``hasExpired``); the handler waits for the lock."""
    cancelled: bool
    handled: bool
    """The timeout handler ran (or returned at once)."""


class PendingWrite(NamedTuple):
    """A ``writeShareGroupState`` to the share coordinator whose answer has not come back."""

    kind: str
    """``acknowledge`` (the records' transitions wait for it) or ``timeout`` (nothing waits)."""
    memberId: str
    ackType: str
    offsets: tuple[int, ...]
    batches: tuple[tuple[int, str, int], ...]
    """What it writes: (offset, state, delivery count) of each record it changed."""
    startOffset: int


class Consumer(NamedTuple):
    """A share consumer: the records it was handed, each with the lock it was handed under."""

    held: frozenset[tuple[int, int]]
    """(offset, timer) of records it fetched and has not acknowledged yet: one delivery per record
    (a record delivered again replaces the earlier delivery)."""


class ShareGroupState(NamedTuple):
    records: tuple[InFlightState, ...]
    startOffset: int
    """The share-partition start offset (SPSO): the first record not yet in a terminal state."""
    cacheStart: int
    """The first record the leader's cache still holds (``cachedState.firstKey()``)."""
    logStartOffset: int
    timers: tuple[LockTimer, ...]
    writes: tuple[PendingWrite, ...]
    """Writes in flight, answered in the order they were sent."""
    persistedStartOffset: int
    persisted: tuple[tuple[str, int], ...]
    """The share coordinator's (state, delivery count) of every record (AVAILABLE 0 when never written)."""
    consumers: tuple[Consumer, ...]
    accepted: frozenset[int]
    """Records whose ACCEPT the consumer was told succeeded."""
    archivedByLogStart: frozenset[int]
    """Records a log-start move archived (a ghost: what the properties ask of them)."""
    writeFailures: int
    logStartMoves: int
    deliveries: tuple[int, ...] = ()
    """A ghost: how many times each record was handed to a consumer, whatever its delivery count says."""
    leaderChanges: int = 0
    sessionReleases: int = 0
