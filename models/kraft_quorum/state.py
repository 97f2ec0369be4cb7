"""The state of the `kraft-quorum` model: each replica's quorum state and log, and the voter set
read from the log (KIP-853's ``VotersRecord``). Re-exported by ``kmc.models.kraft_quorum.model``."""

from __future__ import annotations

from typing import NamedTuple

NONE = -1
"""No voter: no vote cast, no leader known (Kafka's OptionalInt.empty())."""

UNATTACHED = "Unattached"
PROSPECTIVE = "Prospective"
CANDIDATE = "Candidate"
LEADER = "Leader"
FOLLOWER = "Follower"
RESIGNED = "Resigned"
ROLES = (UNATTACHED, PROSPECTIVE, CANDIDATE, LEADER, FOLLOWER, RESIGNED)

LEADER_CHANGE = "LeaderChange"
"""The control record a new leader appends at its epoch start offset."""
DATA = "Data"
"""A metadata record written by the active controller."""
VOTERS = "Voters"
"""KIP-853's control record: the whole voter set, in effect on every replica from its append."""

ReplicaKey = tuple[int, int]
"""KIP-853's ``ReplicaKey``: (replica id, directory id). The model numbers directory ids 0, 1, ...
per replica: a new one each time the replica's log directory is formatted anew."""


class Record(NamedTuple):
    epoch: int
    kind: str


class VotersRecord(NamedTuple):
    """A ``VotersRecord``: the voter set as ``ReplicaKey``s, appended by the leader (AddVoter,
    RemoveVoter). A replica's voter set is the last one in its log, committed or not."""

    epoch: int
    kind: str
    voters: frozenset[ReplicaKey]


class Voter(NamedTuple):
    """One replica: what ``QuorumState`` holds (``quorum-state`` is durable: epoch, vote, leader),
    its log and high watermark, and the volatile state of its current role. Called a voter for
    history: with dynamic voters (KIP-853) it is a voter only while its key is in its voter set."""

    role: str
    epoch: int
    votedId: int
    """The candidate it voted for in this epoch (durable before the vote is answered), or NONE."""
    leaderId: int
    """The leader of this epoch as far as it knows, or NONE."""
    log: tuple[Record | VotersRecord, ...]
    highWatermark: int
    votes: frozenset[int]
    """Prospective: pre-votes granted; Candidate: votes granted (both include itself)."""
    endOffsets: tuple[int, ...]
    """Leader: each replica's end offset as its last valid Fetch showed it (0 before one); else ()."""
    hasFetched: bool
    """Follower: it has fetched successfully from its leader since it became follower (KAFKA-17641)."""
    hwKnown: bool
    """Leader: LeaderState has a high watermark of this epoch; Fetch responses carry none before."""
    directoryId: int = 0
    """The id of its log directory (KIP-853): a new one after the disk is lost and formatted anew."""


class Committed(NamedTuple):
    """A record known committed: its epoch and the epoch of the leader whose HW first covered it."""

    epoch: int
    commitEpoch: int


class QuorumState(NamedTuple):
    voters: tuple[Voter, ...]
    """Every replica, by id: the bootstrap voters first, then the observers."""
    isolated: frozenset[int]
    """Replicas cut off from all others by a network partition."""
    committed: tuple[Committed, ...]
    """History: the longest log prefix any leader's high watermark has covered (for the properties)."""
    writes: int
    partitions: int
    restarts: int
    voterChanges: int = 0
    """AddVoter and RemoveVoter records appended so far (bounded by ``max_voter_changes``)."""
    diskLosses: int = 0
    hopeless: frozenset[int] = frozenset()
    """History, for ``NoDisruptiveCandidate`` only: Candidates that could not win when they bumped
    their epoch (cut off from a majority, or a log behind a majority's)."""


def last_voters(log: tuple[Record | VotersRecord, ...], bootstrap: frozenset[ReplicaKey]) -> frozenset[ReplicaKey]:
    """``KRaftControlRecordStateMachine.lastVoterSet``: the last VotersRecord in the log, else the
    bootstrap voter set (the checkpoint ``kafka-storage format`` writes)."""
    for record in reversed(log):
        if record.kind == VOTERS:
            return record.voters  # type: ignore[union-attr]
    return bootstrap


def last_voters_offset(log: tuple[Record | VotersRecord, ...]) -> int:
    """The offset of the last VotersRecord, or -1 for the bootstrap set (``lastVoterSetEntry``)."""
    for offset in range(len(log) - 1, -1, -1):
        if log[offset].kind == VOTERS:
            return offset
    return -1
