"""The consumer-delivery model's state: the group coordinator's members and committed offsets, the
consumers with their positions, producers and transactions, and the output partition."""

from __future__ import annotations

from typing import Literal, NamedTuple

from kmc.checker import Action

COMPLETING_REBALANCE = "CompletingRebalance"
PRODUCER_FENCED = "PRODUCER_FENCED"
UNSTABLE_OFFSET_COMMIT = "UNSTABLE_OFFSET_COMMIT"

NO_OFFSET = -1
"""No committed offset (the consumer then starts at 0: auto.offset.reset=earliest), no position."""
NO_EPOCH = -1
"""No producer initialised."""

# consumer phases
STOPPED = "stopped"
UNJOINED = "unjoined"
JOINING = "joining"
"""Classic: JoinGroup sent, waiting for the new generation (SyncGroup)."""
RUNNING = "running"

Strategy = Literal["auto", "before-processing", "after-processing", "none", "transactional"]


class Member(NamedTuple):
    """A group member as the coordinator holds it."""

    memberId: str
    consumer: int
    memberEpoch: int
    """KIP-848: the member's epoch. Classic: unused (the group's generation applies to all)."""
    joined: bool
    """Classic: rejoined in the current PreparingRebalance."""


class Coordinator(NamedTuple):
    """The group coordinator: the group (classic or KIP-848) and the committed offset."""

    state: str
    """Classic: Empty, PreparingRebalance or Stable. KIP-848: unused (Stable)."""
    generationId: int
    """Classic: the generation. KIP-848: the group epoch."""
    members: tuple[Member, ...]
    owner: str
    """Classic: the member the partition is assigned to. KIP-848: the target assignment's owner."""
    holder: str
    """KIP-848: the member that holds the partition (assigned or pending revocation), or NO_MEMBER."""
    assignmentEpoch: int
    """KIP-848 (KIP-1251): the epoch at which the holder was given the partition."""
    committedOffset: int
    pendingOffsets: tuple[tuple[str, int], ...]
    """KIP-98/447: transactional offset commits not yet committed, by transactional id."""
    txnCompletions: tuple[tuple[str, bool], ...] = ()
    """Before KAFKA-17507: transaction markers written to the offsets partition whose offsets the
    classic coordinator has not yet materialised (``handleTxnCompletion``), by transactional id, in
    order: (transactional id, commit)."""
    endedTxnOffsets: tuple[str, ...] = ()
    """Before KAFKA-17507: transactional ids whose pending offsets belong to a transaction already
    ended (its marker is in ``txnCompletions``); a new TxnOffsetCommit makes them the open one's."""


class Consumer(NamedTuple):
    phase: str
    memberId: str
    generationId: int
    """Classic: the generation it joined. KIP-848: its member epoch."""
    owned: bool
    position: int
    """The next offset to poll, or NO_OFFSET until it has fetched the committed offset."""
    fetched: int
    """The offset the last poll returned and the application has not processed yet, or NO_OFFSET."""
    dirty: bool
    """Its position is past what it last committed."""
    producerEpoch: int
    """The epoch of its transactional producer, or NO_EPOCH."""
    inTxn: bool
    offsetsSent: bool
    response: tuple[str, int, bool] | None
    """KIP-848: a heartbeat response in flight: (error, memberEpoch, assigned)."""
    revocationCommitSent: bool = False
    """Classic, auto-commit before KAFKA-14196: onJoinPrepare's asynchronous commit was sent, and the
    rebalance waits for it while poll() goes on."""


class DeliveryState(NamedTuple):
    coordinator: Coordinator
    consumers: tuple[Consumer, ...]
    producerEpochs: tuple[tuple[str, int], ...]
    """The transaction coordinator: each transactional id's current producer epoch."""
    ongoing: tuple[tuple[str, tuple[int, ...]], ...]
    """Open transactions: the input offsets whose output each transactional id has written."""
    processed: tuple[int, ...]
    """Ghost: per input offset, how often the application processed it (capped at 2)."""
    output: tuple[int, ...]
    """Ghost: per input offset, how often its output is visible to a read_committed consumer (capped at 2)."""
    faults: int


Step = tuple[Action, DeliveryState]
