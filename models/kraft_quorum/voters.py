"""KIP-853's dynamic voter set in the `kraft-quorum` model: the voter set each replica reads from
its own log, AddVoter and RemoveVoter, a leader that removed itself, observers finding the
leader, and a replica that comes back with an empty log directory.

A ``VotersRecord`` takes effect on every replica as soon as it is in its log, committed or not
(``KRaftControlRecordStateMachine`` reads uncommitted records; ``VoterSetHistory`` undoes them on
truncation), so the leader counts the new set's majority from the append on. What keeps two
voter sets from electing two leaders is that they differ by one voter and that a change starts
only once the previous one is committed (``AddVoterHandler``, ``RemoveVoterHandler``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kmc.models.common.tuples import put
from kmc.models.kraft_quorum.state import (
    FOLLOWER,
    LEADER,
    NONE,
    RESIGNED,
    UNATTACHED,
    VOTERS,
    QuorumState,
    ReplicaKey,
    Voter,
    VotersRecord,
    last_voters,
    last_voters_offset,
)

_NOBODY: frozenset[int] = frozenset()


class DynamicVoters:
    """Mixed into ``KraftQuorumModel``. With ``static`` set (no voter changes, no observers, no disk
    lost) every replica is a voter of the bootstrap set and these answers are constants."""

    config: Any
    replica_ids: tuple[int, ...]
    bootstrap: frozenset[ReplicaKey]
    bootstrap_ids: tuple[int, ...]
    majority: int
    static: bool
    static_voters: bool

    if TYPE_CHECKING:  # the model's own helpers, used here

        def _act(self, name: str, *values: Any) -> Any: ...
        def _set(self, s: QuorumState, *changes: tuple[int, Voter]) -> QuorumState: ...
        def _advance_hw(self, leader: Voter) -> Voter: ...
        def _learn(self, v: int, me: Voter, epoch: int, leader: int) -> Voter: ...
        def connected(self, s: QuorumState, a: int, b: int) -> bool: ...

    # -- the voter set ---------------------------------------------------------------------------
    def voters_of(self, me: Voter) -> frozenset[ReplicaKey]:
        """The replica's voter set: the last VotersRecord in its log, else the bootstrap set."""
        return self.bootstrap if self.static_voters else last_voters(me.log, self.bootstrap)

    def voter_ids_of(self, me: Voter) -> tuple[int, ...]:
        """The ids of the replica's voter set: where it sends Vote and BeginQuorumEpoch requests."""
        return self.bootstrap_ids if self.static_voters else tuple(sorted(i for i, _ in self.voters_of(me)))

    def is_voter(self, v: int, me: Voter) -> bool:
        """``QuorumState.isVoter``: the replica's own key (id and directory id) is in its voter set.
        Without directory ids every key has directory 0, so the id alone decides."""
        return self.static or (v, me.directoryId) in self.voters_of(me)

    def majority_of(self, me: Voter) -> int:
        return self.majority if self.static_voters else len(self.voters_of(me)) // 2 + 1

    def counts_fetch(self, leader: Voter, f: int, follower: Voter) -> bool:
        """``LeaderState.updateReplicaState``: the leader records a fetch as a voter's if the key
        matches the voter set's, as an observer's if the id is no voter; a replica of a voter's id
        with another directory is an observer the model does not track."""
        if self.static:
            return True
        voters = self.voters_of(leader)
        return (f, follower.directoryId) in voters or all(i != f for i, _ in voters)

    def functioning(self, s: QuorumState, c: int) -> bool:
        """Replica ``c`` leads, and a majority of its voter set (itself included if it is a voter)
        follows it in its epoch and can reach it."""
        leader = s.voters[c]
        if leader.role != LEADER:
            return False
        voters = self.voters_of(leader)
        followers = 0
        for v, d in voters:
            me = s.voters[v]
            if v != c and me.role == FOLLOWER and me.leaderId == c and me.epoch == leader.epoch:
                followers += me.directoryId == d and self.connected(s, c, v)
        own = 1 if (c, leader.directoryId) in voters else 0
        return followers + own >= len(voters) // 2 + 1

    def could_win(self, s: QuorumState, c: int) -> bool:
        """Replica ``c`` could be elected: a majority of its voter set (itself included) can reach it
        and holds a log no newer (last epoch, end offset) than its own -- the votes a log check and
        the network let it have."""
        cand = s.voters[c]
        last = (cand.log[-1].epoch, len(cand.log)) if cand.log else (0, 0)
        voters = self.voters_of(cand)
        electors = 0
        for v, d in voters:
            log = s.voters[v].log
            if s.voters[v].directoryId == d and self.connected(s, c, v):
                electors += ((log[-1].epoch, len(log)) if log else (0, 0)) <= last
        return electors >= len(voters) // 2 + 1

    # -- the leader's side -----------------------------------------------------------------------
    def _voter_changes(self, s: QuorumState, c: int, leader: Voter, out: list) -> None:
        """AddVoter and RemoveVoter, handled by the leader: refused until it has a high watermark in
        its epoch (previous leaders' changes fenced), and -- ``one_voter_change_at_a_time`` -- while
        the last VotersRecord is uncommitted; otherwise the new set is appended and in effect."""
        cfg = self.config
        if s.voterChanges >= cfg.max_voter_changes or not leader.hwKnown:
            return
        if cfg.one_voter_change_at_a_time and last_voters_offset(leader.log) >= leader.highWatermark:
            return  # REQUEST_TIMED_OUT: "waiting for voters to commit the latest voter change"
        voters = self.voters_of(leader)
        ids = {i for i, _ in voters}
        for o in self.replica_ids:
            # isReplicaCaughtUp: an observer that has fetched up to the leader's end, and answers
            # the leader's ApiVersions request
            if o not in ids and self.connected(s, c, o) and leader.endOffsets[o] == len(leader.log):
                self._append_voters(s, c, leader, voters | {(o, s.voters[o].directoryId)}, "AddVoter", o, out)
        if len(voters) > 1:  # VoterSet.removeVoter never leaves an empty set
            for key in sorted(voters):
                self._append_voters(s, c, leader, voters - {key}, "RemoveVoter", key[0], out)

    def _append_voters(
        self, s: QuorumState, c: int, leader: Voter, voters: frozenset[ReplicaKey], name: str, o: int, out: list
    ) -> None:
        """``LeaderState.appendVotersRecord``; the leader's next ``updateLocalState`` counts its high
        watermark over the new set. A removed voter's fetch state is dropped."""
        log = (*leader.log, VotersRecord(leader.epoch, VOTERS, voters))
        offsets = put(leader.endOffsets, c, len(log))
        if name == "RemoveVoter" and o != c:
            offsets = put(offsets, o, 0)
        appended = self._advance_hw(leader._replace(log=log, endOffsets=offsets))
        out.append((self._act(name, c, o), self._set(s, (c, appended))._replace(voterChanges=s.voterChanges + 1)))

    def _resign_removed(self, s: QuorumState, c: int, leader: Voter, out: list) -> None:
        """``RemoveVoterHandler.highWatermarkUpdated``: once the VotersRecord that removed the leader
        is committed (the HW passed it) the leader requests to resign; until then it keeps leading,
        its own log no longer counted (it replicates as an observer)."""
        if self.static_voters or self.is_voter(c, leader) or not leader.hwKnown:
            return
        if leader.highWatermark > last_voters_offset(leader.log):
            resigned = leader._replace(role=RESIGNED, endOffsets=(), hwKnown=False)
            out.append((self._act("ResignRemoved", c), self._set(s, (c, resigned))))

    # -- observers -------------------------------------------------------------------------------
    def _discover(self, s: QuorumState, o: int, me: Voter, out: list) -> None:
        """An observer with no leader to fetch from (``maybeSendAnyVoterFetch``) fetches from any
        voter it knows; the response names that voter's epoch and leader."""
        if me.role == FOLLOWER:
            leader = s.voters[me.leaderId]
            if self.connected(s, o, me.leaderId) and leader.role == LEADER and leader.epoch == me.epoch:
                return
        for w in self.voter_ids_of(me):
            if w == o or not self.connected(s, o, w):
                continue
            other = s.voters[w]
            after = self._learn(o, me, other.epoch, other.leaderId)
            if after is not me:
                out.append((self._act("Fetch", o, w), self._set(s, (o, after))))

    def _leave_resigned(self, me: Voter) -> Voter:
        """``pollResigned`` for a leader no longer in the voter set: Unattached in the next epoch
        (so that no Fetch response names it leader again)."""
        return Voter(
            UNATTACHED, me.epoch + 1, NONE, NONE, me.log, me.highWatermark, _NOBODY, (), False, False, me.directoryId
        )

    # -- a lost disk -----------------------------------------------------------------------------
    def _lose_disk(self, s: QuorumState, v: int, out: list) -> None:
        """The replica restarts with an empty log directory, formatted anew: no log, no
        ``quorum-state`` (epoch 0, no vote), and with ``directory_ids`` a new directory id -- so it is
        not the voter whose key the voter set holds, and cannot vote as it (KIP-853)."""
        cfg = self.config
        if s.diskLosses >= cfg.max_disk_losses:
            return
        me = s.voters[v]
        directory = me.directoryId + 1 if cfg.directory_ids else me.directoryId
        fresh = Voter(UNATTACHED, 0, NONE, NONE, (), 0, _NOBODY, (), False, False, directory)
        out.append((self._act("LoseDisk", v), self._set(s, (v, fresh))._replace(diskLosses=s.diskLosses + 1)))

    def invalid_voter_key(self, cand: Voter, v: int, me: Voter) -> bool:
        """``isValidVoterKey``: a Vote request names the voter's key as the candidate's voter set
        holds it; a replica with another directory id answers INVALID_VOTER_KEY."""
        if self.static or not self.config.directory_ids:
            return False
        return any(i == v and d != me.directoryId for i, d in self.voters_of(cand))
