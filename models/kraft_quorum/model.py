"""The KRaft metadata quorum (KIP-595): elections, pre-vote, fetch replication, check-quorum.

A fixed set of voters (the controllers) runs Kafka's pull-based Raft over one log, the
``__cluster_metadata`` partition. Every voter is in one of the states of ``QuorumState``:
Unattached (with or without a durable vote), Prospective (KIP-996 pre-vote), Candidate, Leader,
Follower or Resigned. A voter whose election timer fires asks the others for pre-votes and only
bumps the epoch once a majority granted them; a Candidate that gets a majority of votes becomes
Leader, appends a ``LeaderChangeMessage`` at its epoch start offset and tells the others with
BeginQuorumEpoch. Followers fetch; the leader answers with records or a diverging epoch
(``ReplicatedLog.validateOffsetAndEpoch``) and moves the high watermark to what a majority has,
but only once a record of its own epoch is among it.

Requests and their responses are one step each (a voter handles the request and the sender the
response at once); a network partition cuts a voter off from every other, so no request crosses
it. Faults are bounded (``max_partitions``, ``max_restarts``); protocol actions are not, so the
epoch bound is a ``within_bounds`` cut and a search of this model is always reported as bounded.

Each guard that fixed a real bug is a config flag, so the behaviour before it can be checked:

* ``pre_vote`` (KIP-996, Kafka 4.0): a voter whose timer fires first asks for pre-votes, which
  change nobody's state, and bumps its epoch only with a majority of them.
* ``check_quorum`` (KAFKA-15489, Kafka 3.7): a leader that has not been fetched from by a majority
  within the check-quorum timeout resigns. Without it, a leader cut off from the others stays
  leader forever and keeps serving its stale metadata.
* ``single_voter_exemption`` (KAFKA-16144): a quorum of one voter never expires its
  check-quorum timer (nobody else will ever fetch). Without it the lone leader resigns over and
  over (KAFKA-16163).
* ``prevote_from_unfetched_follower`` (KAFKA-17641): a follower that has not fetched successfully
  from its leader since it became follower grants pre-votes. Without it, two followers of a dead
  leader refuse each other's pre-votes forever.
* ``hw_needs_current_epoch`` (Raft's commitment rule, §5.4.2 of the Raft paper;
  ``LeaderState.maybeUpdateHighWatermark``): the leader exposes a new high watermark only once it
  covers a record of the leader's own epoch. Without it, a record of an older epoch counted as
  committed can be truncated by a later leader (the paper's Figure 8).

Dynamic voters (KIP-853, Kafka 3.9; ``kraft_quorum_voters``): with ``max_voter_changes`` the
leader appends AddVoter/RemoveVoter ``VotersRecord``s, in effect on each replica from the append;
``observers`` are replicas outside the bootstrap voter set that fetch and can be added; a replica
may lose its disk (``max_disk_losses``) and come back empty.

* ``one_voter_change_at_a_time`` (KIP-853's own rule, in ``AddVoterHandler`` and
  ``RemoveVoterHandler`` from their first commit, KAFKA-16535 and KAFKA-16537): no voter change
  while the last VotersRecord is uncommitted. Never off in a Kafka release: turning it off is a
  "what if" that shows why it is there.
* ``directory_ids`` (KIP-853): a voter is a ``ReplicaKey`` (id, directory id); a replica whose disk
  was formatted anew has a new directory id, is not the old voter and cannot vote as it. Without
  them (kraft.version 0, the static ``controller.quorum.voters`` of Kafka 3.x) it votes as the old
  voter with an empty log, and a committed record can be lost.
"""

from __future__ import annotations

import itertools
from typing import Any

from kmc.checker import Action, Model
from kmc.checker.extension import SuccessorsInC
from kmc.checker.search.liveness import WF
from kmc.models.common.tuples import least_renaming, put
from kmc.models.kraft_quorum.bugs import BUGS
from kmc.models.kraft_quorum.config import ACTION_ARGS, PRESETS, KraftQuorumConfig
from kmc.models.kraft_quorum.drawing import KraftQuorumDrawing
from kmc.models.kraft_quorum.state import (
    CANDIDATE,
    DATA,
    FOLLOWER,
    LEADER,
    LEADER_CHANGE,
    NONE,
    PROSPECTIVE,
    RESIGNED,
    ROLES,
    UNATTACHED,
    VOTERS,
    Committed,
    QuorumState,
    Record,
    ReplicaKey,
    Voter,
    VotersRecord,
    last_voters,
)
from kmc.models.kraft_quorum.voters import DynamicVoters

__all__ = [
    "CANDIDATE",
    "DATA",
    "FOLLOWER",
    "LEADER",
    "LEADER_CHANGE",
    "NONE",
    "PROSPECTIVE",
    "RESIGNED",
    "ROLES",
    "UNATTACHED",
    "VOTERS",
    "Committed",
    "KraftQuorumConfig",
    "KraftQuorumModel",
    "QuorumState",
    "Record",
    "ReplicaKey",
    "Voter",
    "VotersRecord",
    "end_offset_for_epoch",
]

_NOBODY: frozenset[int] = frozenset()
_new = tuple.__new__
"""Builds a NamedTuple from a tuple of its fields without NamedTuple's keyword machinery (hot path)."""


class KraftQuorumModel(SuccessorsInC, DynamicVoters, Model):
    name = "kraft-quorum"
    actions = tuple(ACTION_ARGS)
    description = (
        "the KRaft metadata quorum (KIP-595, KIP-996, KIP-853): elections, fetch replication, check-quorum, "
        "dynamic voters"
    )
    Config = KraftQuorumConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "kip-996"
    spec_modules = ("kmc.specs.kraft_quorum",)

    config: KraftQuorumConfig

    fairness = (
        WF("ElectionTimeout", each=True),
        WF("FetchTimeout", each=True),
        WF("RequestVote", each=True),
        WF("BeginQuorumEpoch", each=True),
        WF("Fetch", each=True),
        WF("CheckQuorumResign", each=True),
        WF("ResignRemoved", each=True),
    )
    """The protocol's own steps happen once they stay possible; client writes, voter changes,
    partitions, their healing, restarts and lost disks need not happen at all."""

    def __init__(self, config: KraftQuorumConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        n = cfg.voters
        self.voter_ids = tuple(range(n))
        """The bootstrap voters (every replica but the observers)."""
        self.replica_ids = tuple(range(n + cfg.observers))
        self.majority = n // 2 + 1
        self.bootstrap = frozenset((v, 0) for v in self.voter_ids)
        self.bootstrap_ids = self.voter_ids
        self.static_voters = cfg.max_voter_changes == 0
        self.static = self.static_voters and cfg.observers == 0 and cfg.max_disk_losses == 0
        """Every replica a voter of the bootstrap set for ever: the KIP-853 checks are constants."""
        self._actions: dict[tuple, Action] = {
            (name, *values): Action.of(name, zip(names, values, strict=True))
            for name, names in ACTION_ARGS.items()
            for values in itertools.product(*[(False, True) if n == "preVote" else self.replica_ids for n in names])
        }
        """Every action the model can take, built once: successors look them up by (name, *values)."""
        # What one voter's step does depends on that voter (and the one it talks to) alone, and far
        # fewer voters than states are reachable: each step is computed once per distinct voter.
        self._timeouts: dict[tuple[int, Voter], Voter] = {}
        """(voter, its state) -> its state once its election or fetch timer fired."""
        self._vote_rounds: dict[tuple[int, int, Voter, Voter], tuple[Voter, Voter] | None] = {}
        """(candidate, voter, their states) -> ``_vote_round``'s answer, for two replicas connected."""
        self._fetches: dict[tuple[int, Voter, Voter], tuple[tuple[int, Voter], ...] | None] = {}
        """(follower, its state, its leader's state) -> the changes a Fetch makes, for two connected."""
        if self.config.kafka_16530:  # the C twin counts the high watermark over the latest voter set only
            self.use_c_twin("kmc.models.kraft_quorum._successors", KraftQuorumModel, self._twin_context)

    def _twin_context(self) -> tuple:
        """What the C successor function reads: the state types, the strings, the action tables, the config."""
        cfg, ids, act = self.config, self.replica_ids, self._actions

        def by_voter(name: str) -> list[Action]:
            return [act[name, v] for v in ids]

        def by_pair(name: str) -> list[list[Action]]:
            return [[act[name, a, b] for b in ids] for a in ids]

        votes = [[[act["RequestVote", c, v, p] for p in (False, True)] for v in ids] for c in ids]
        tables = (
            by_voter("ElectionTimeout"),
            by_voter("FetchTimeout"),
            votes,
            by_pair("BeginQuorumEpoch"),
            by_pair("Fetch"),
            *map(by_voter, ("ClientWrite", "CheckQuorumResign", "Isolate", "Heal", "Restart")),
            by_pair("AddVoter"),
            by_pair("RemoveVoter"),
            by_voter("ResignRemoved"),
            by_voter("LoseDisk"),
        )
        sizes = (
            len(ids),
            cfg.voters,
            self.majority,
            cfg.max_records,
            cfg.max_partitions,
            cfg.max_restarts,
            cfg.fetch_max_records,
            cfg.max_voter_changes,
            cfg.max_disk_losses,
        )
        flags = (
            cfg.pre_vote,
            cfg.check_quorum,
            cfg.single_voter_exemption,
            cfg.prevote_from_unfetched_follower,
            cfg.hw_needs_current_epoch,
            cfg.directory_ids,
            cfg.one_voter_change_at_a_time,
        )
        return (
            QuorumState,
            Voter,
            Record,
            Committed,
            VotersRecord,
            ROLES,
            LEADER_CHANGE,
            DATA,
            VOTERS,
            _NOBODY,
            *tables,
            *sizes,
            *[int(f) for f in flags],
        )

    def _act(self, name: str, *values: Any) -> Action:
        return self._actions[(name, *values)]

    def init_states(self) -> list[QuorumState]:
        """Every voter Unattached in epoch 0 with an empty log: a freshly formatted quorum."""
        fresh = Voter(UNATTACHED, 0, NONE, NONE, (), 0, frozenset(), (), False, False)
        return [QuorumState((fresh,) * len(self.replica_ids), frozenset(), (), 0, 0, 0)]

    def inactive_actions(self) -> tuple[str, ...]:
        """KIP-853's actions where the config has no voter changes or lost disks, the faults and
        writes whose bound is 0, a check-quorum resignation without check-quorum (KIP-996) or for a
        lone voter (KAFKA-16144), and everything between nodes in a quorum of one."""
        cfg = self.config
        off = ["AddVoter", "RemoveVoter", "ResignRemoved"] if self.static_voters else []
        if not cfg.check_quorum:
            off.append("CheckQuorumResign")
        if not cfg.max_disk_losses:
            off.append("LoseDisk")
        if not cfg.max_partitions:
            off += ["Isolate", "Heal"]
        if not cfg.max_restarts:
            off.append("Restart")
        if not cfg.max_records:
            off.append("ClientWrite")
        if cfg.voters == 1 and self.static_voters and not cfg.observers:
            # A quorum of one node: nobody to fetch from, vote for, or cut off.
            off += ["FetchTimeout", "RequestVote", "BeginQuorumEpoch", "Fetch", "Isolate", "Heal"]
            if cfg.single_voter_exemption:
                off.append("CheckQuorumResign")
        return tuple(dict.fromkeys(off))

    def within_bounds(self, s: QuorumState) -> bool:
        """Elections are unbounded (a split vote starts another), so the epoch bound cuts the search."""
        return max([v.epoch for v in s.voters]) <= self.config.max_epoch

    # -- helpers -------------------------------------------------------------------------------
    def connected(self, s: QuorumState, a: int, b: int) -> bool:
        isolated = s.isolated
        return not isolated or a == b or (a not in isolated and b not in isolated)

    def reachable(self, s: QuorumState, v: int) -> frozenset[int]:
        return frozenset(w for w in self.replica_ids if self.connected(s, v, w))

    def _set(self, s: QuorumState, *changes: tuple[int, Voter]) -> QuorumState:
        """The state with these voters replaced; a leader's HW that moved past the committed history
        extends it (the records it newly covers are committed in the leader's epoch)."""
        replaced, committed = list(s.voters), s.committed
        stood = None
        for i, voter in changes:
            replaced[i] = voter
            role = voter.role
            if role == LEADER and voter.highWatermark > len(committed):
                newly = voter.log[len(committed) : voter.highWatermark]
                committed += tuple([Committed(r.epoch, voter.epoch) for r in newly])
            elif role == CANDIDATE and (s.voters[i].role != CANDIDATE or s.voters[i].epoch != voter.epoch):
                stood = i
        voters = tuple(replaced)
        hopeless = s.hopeless
        if not hopeless and stood is None:
            return _new(QuorumState, (voters, s.isolated, committed, *s[3:]))
        t = _new(QuorumState, (voters, s.isolated, committed, *s[3:8], _NOBODY))
        if hopeless:  # a Candidate that moved on (elected, or to another epoch) is no longer one
            hopeless = frozenset(
                i for i in hopeless if voters[i].role == CANDIDATE and voters[i].epoch == s.voters[i].epoch
            )
        if stood is not None and not self.could_win(t, stood):
            hopeless |= {stood}
        return t if not hopeless else _new(QuorumState, (*t[:8], hopeless))

    def _unattached(self, me: Voter, epoch: int) -> Voter:
        """QuorumState.transitionToUnattached: a new epoch, no vote, no leader known yet."""
        return _new(
            Voter, (UNATTACHED, epoch, NONE, NONE, me.log, me.highWatermark, _NOBODY, (), False, False, me.directoryId)
        )

    def _follower(self, me: Voter, leader: int, epoch: int) -> Voter:
        """QuorumState.transitionToFollower. Kafka keeps a vote cast in this epoch, but once the
        epoch's leader is known the vote can never matter again (every vote request of the epoch is
        refused), so the model forgets it: states that differ only there behave alike."""
        return _new(
            Voter, (FOLLOWER, epoch, NONE, leader, me.log, me.highWatermark, _NOBODY, (), False, False, me.directoryId)
        )

    def _learn(self, v: int, me: Voter, epoch: int, leader: int) -> Voter:
        """maybeHandleCommonResponse: a response from a higher epoch, or naming this epoch's leader
        when ``v`` knows none, moves voter ``v`` there (Follower if a leader is named, else Unattached)."""
        if leader == v:
            leader = NONE
        if epoch > me.epoch:
            return self._follower(me, leader, epoch) if leader != NONE else self._unattached(me, epoch)
        if epoch == me.epoch and leader != NONE and me.leaderId == NONE:
            return self._follower(me, leader, epoch)
        return me

    def _start_election(self, v: int, me: Voter) -> Voter:
        """The election timer fired: with pre-vote become Prospective in the same epoch, else Candidate
        in the next. A quorum of one wins at once."""
        if self.config.pre_vote:
            own = frozenset((v,))
            leader = NONE if me.leaderId == v else me.leaderId  # a resigned leader knows no other
            prospective = me._replace(role=PROSPECTIVE, leaderId=leader, votes=own, hasFetched=False)
            return self._tally(v, prospective)
        return self._candidate(v, me)

    def _candidate(self, v: int, me: Voter) -> Voter:
        """QuorumState.transitionToCandidate: bump the epoch and vote for itself, durably."""
        own = frozenset((v,))
        candidate = Voter(
            CANDIDATE, me.epoch + 1, v, NONE, me.log, me.highWatermark, own, (), False, False, me.directoryId
        )
        return self._tally(v, candidate)

    def _tally(self, v: int, me: Voter) -> Voter:
        """A Prospective with a majority of pre-votes becomes Candidate; a Candidate with a majority
        of votes becomes Leader (``maybeTransitionToCandidate``, ``maybeTransitionToLeader``)."""
        if len(me.votes) < self.majority_of(me):
            return me
        if me.role == PROSPECTIVE:
            return self._candidate(v, me)
        if me.role == CANDIDATE:
            return self._leader(v, me)
        return me

    def _leader(self, v: int, me: Voter) -> Voter:
        """transitionToLeader: append the LeaderChangeMessage at the epoch start offset."""
        log = (*me.log, Record(me.epoch, LEADER_CHANGE))
        offsets = tuple(len(log) if w == v else 0 for w in self.replica_ids)
        leader = Voter(
            LEADER, me.epoch, me.votedId, v, log, me.highWatermark, _NOBODY, offsets, False, False, me.directoryId
        )
        return self._advance_hw(leader)

    def _advance_hw(self, leader: Voter) -> Voter:
        """LeaderState.maybeUpdateHighWatermark: the offset a majority of voters has reached, taken
        only if it covers a record of the leader's own epoch and only if it moves forward. With
        dynamic voters, over the leader's last voter set (the leader counts only if in it)."""
        if self.static_voters:
            offset = sorted(leader.endOffsets, reverse=True)[self.majority - 1]
        else:
            ids = self.voter_ids_of(leader) if self.config.kafka_16530 else self.elected_voter_ids(leader)
            offset = sorted((leader.endOffsets[i] for i in ids), reverse=True)[len(ids) // 2]
        if offset <= leader.highWatermark:
            return leader
        if self.config.hw_needs_current_epoch and leader.log[offset - 1].epoch != leader.epoch:
            return leader
        return leader._replace(highWatermark=offset, hwKnown=True)

    def elected_voter_ids(self, leader: Voter) -> tuple[int, ...]:
        """Before KAFKA-16530 LeaderState kept the voter states it was created with: the voter set in
        the leader's log before its LeaderChangeMessage, whatever VotersRecord it appends later."""
        start = next(i for i, r in enumerate(leader.log) if r.epoch == leader.epoch)
        return tuple(sorted(i for i, _ in last_voters(leader.log[:start], self.bootstrap)))

    # -- next ----------------------------------------------------------------------------------
    def _successors(self, s: QuorumState) -> list[tuple[Action, QuorumState]]:
        """The definition of the model's steps (the C extension's successors return the same list)."""
        out: list[tuple[Action, QuorumState]] = []
        cfg = self.config
        faults = (
            bool(s.isolated)
            or s.partitions < cfg.max_partitions
            or s.restarts < cfg.max_restarts
            or (s.diskLosses < cfg.max_disk_losses)
        )
        for v in self.replica_ids:
            me = s.voters[v]
            role = me.role
            if role == LEADER:
                self._client_write(s, v, me, out)
                self._check_quorum(s, v, me, out)
                self._begin_quorum_epoch(s, v, me, out)
                if not self.static_voters:
                    self._voter_changes(s, v, me, out)
                    self._resign_removed(s, v, me, out)
            elif not (self.static or self.is_voter(v, me)):
                # An observer (never a voter, removed, or with a new directory) only fetches.
                if role == FOLLOWER:
                    self._fetch(s, v, me, out)
                if role == RESIGNED:
                    leaving = self._leave_resigned(me)
                    out.append((self._act("ElectionTimeout", v), self._set(s, (v, leaving))))
                else:
                    self._discover(s, v, me, out)
            elif role == FOLLOWER:
                self._fetch(s, v, me, out)
                self._fetch_timeout(s, v, me, out)
            elif role in (PROSPECTIVE, CANDIDATE):
                # The round ends once no vote request it can still send would change anything (the
                # responses arrive well within the election timeout): only then its timer fires.
                if not self._request_votes(s, v, me, out):
                    self._election_timeout(s, v, me, out)
            else:
                self._election_timeout(s, v, me, out)
            if faults:
                self._faults(s, v, out)
        return out

    def _election_timeout(self, s: QuorumState, v: int, me: Voter, out: list) -> None:
        out.append((self._actions["ElectionTimeout", v], self._set(s, (v, self._timed_out(v, me)))))

    def _fetch_timeout(self, s: QuorumState, v: int, me: Voter, out: list) -> None:
        """A follower hears nothing from its leader for quorum.fetch.timeout.ms: only when the leader
        is unreachable or no longer leads this epoch (otherwise its fetches keep succeeding)."""
        leader = s.voters[me.leaderId]
        if leader.role == LEADER and leader.epoch == me.epoch and self.connected(s, v, me.leaderId):
            return
        out.append((self._actions["FetchTimeout", v], self._set(s, (v, self._timed_out(v, me)))))

    def _timed_out(self, v: int, me: Voter) -> Voter:
        """Voter ``v`` once its election (or, as a follower, fetch) timer fired."""
        nxt = self._timeouts.get((v, me))
        if nxt is None:
            if me.role != PROSPECTIVE:
                nxt = self._start_election(v, me)
            elif me.leaderId != NONE:  # ProspectiveState's election timeout: back to the leader it knew
                nxt = self._follower(me, me.leaderId, me.epoch)
            else:  # else Unattached
                nxt = me._replace(role=UNATTACHED, votes=_NOBODY)
            self._timeouts[v, me] = nxt
        return nxt

    def vote_response(self, s: QuorumState, c: int, v: int, pre_vote: bool) -> tuple[Voter, bool]:
        """KafkaRaftClient.handleVoteRequest on voter ``v`` for candidate ``c``: the voter's new state
        and whether it grants."""
        cand, me = s.voters[c], s.voters[v]
        if cand.epoch < me.epoch:
            return me, False  # FENCED_LEADER_EPOCH
        cand_last = (cand.log[-1].epoch, len(cand.log)) if cand.log else (0, 0)
        own_last = (me.log[-1].epoch, len(me.log)) if me.log else (0, 0)
        log_ok = cand_last >= own_last
        if cand.epoch > me.epoch:
            # Any request of a newer epoch, a pre-vote too (a Prospective sends its own current
            # epoch), first moves the voter to Unattached in that epoch.
            me = self._unattached(me, cand.epoch)
        if self.invalid_voter_key(cand, v, me):
            return me, False  # INVALID_VOTER_KEY: the candidate's voter set holds another directory
        if pre_vote:
            # Otherwise a pre-vote changes no state. A leader refuses, and so does a follower that
            # still hears from its leader -- since KAFKA-17641 only one that has fetched from it
            # since it became follower; before, every follower.
            if me.role == LEADER:
                return me, False
            if me.role == FOLLOWER and (me.hasFetched or not self.config.prevote_from_unfetched_follower):
                return me, False
            return me, log_ok
        if me.role not in (UNATTACHED, PROSPECTIVE) or me.leaderId != NONE:
            return me, False
        if me.votedId != NONE:
            return me, me.votedId == c
        if not log_ok:
            return me, False
        return me._replace(votedId=c), True

    def _vote_round(self, s: QuorumState, c: int, v: int) -> tuple[Voter, Voter] | None:
        """A Vote request (a pre-vote from a Prospective) from ``c`` to ``v`` and its response: both
        voters afterwards, or None if it would change nothing (a refusal that teaches nothing)."""
        cand = s.voters[c]
        if v == c or v in cand.votes or (s.isolated and not self.connected(s, c, v)):
            return None
        key = (c, v, cand, s.voters[v])
        result = self._vote_rounds.get(key, key)
        if result is key:
            result = self._vote_rounds[key] = self._vote_exchange(s, c, v, cand)
        return result

    def _vote_exchange(self, s: QuorumState, c: int, v: int, cand: Voter) -> tuple[Voter, Voter] | None:
        voter, granted = self.vote_response(s, c, v, cand.role == PROSPECTIVE)
        # handleVoteResponse: the response carries the voter's epoch and known leader.
        after = self._learn(c, cand, voter.epoch, voter.leaderId)
        if after is cand:
            if not granted:
                return None if voter == s.voters[v] else (voter, cand)
            after = self._tally(c, cand._replace(votes=cand.votes | {v}))
        return voter, after

    def _request_votes(self, s: QuorumState, c: int, cand: Voter, out: list) -> bool:
        """Vote requests (pre-votes for a Prospective), each handled and answered in one step. A
        request that changes nothing is left out: the candidate's round simply ends without it.
        Whether any was sent."""
        pre_vote = cand.role == PROSPECTIVE
        sent = False
        for v in self.voter_ids_of(cand):
            if v in cand.votes or v == c:
                continue
            result = self._vote_round(s, c, v)
            if result is not None:
                voter, after = result
                out.append((self._actions["RequestVote", c, v, pre_vote], self._set(s, (v, voter), (c, after))))
                sent = True
        return sent

    def _begin_quorum_epoch(self, s: QuorumState, c: int, leader: Voter, out: list) -> None:
        """BeginQuorumEpoch from a new leader to each voter of its set: a replica of an epoch no later
        becomes its follower (before KIP-853's voter-key check, so a re-formatted one too)."""
        isolated = s.isolated
        for v in self.voter_ids_of(leader):
            me = s.voters[v]
            if v == c or me.epoch > leader.epoch or (isolated and not self.connected(s, c, v)):
                continue
            if me.role == FOLLOWER and me.leaderId == c and me.epoch == leader.epoch:
                continue
            out.append(
                (self._actions["BeginQuorumEpoch", c, v], self._set(s, (v, self._follower(me, c, leader.epoch))))
            )

    def _fetch(self, s: QuorumState, f: int, me: Voter, out: list) -> None:
        """A Fetch from follower ``f`` and its response (KafkaRaftClient.handleFetchRequest and
        handleFetchResponse)."""
        c = me.leaderId
        if s.isolated and not self.connected(s, f, c):
            return
        key = (f, me, s.voters[c])
        changes = self._fetches.get(key, key)
        if changes is key:
            changes = self._fetches[key] = self._fetch_exchange(f, me, s.voters[c])
        if changes is not None:
            out.append((self._actions["Fetch", f, c], self._set(s, *changes)))

    def _fetch_exchange(self, f: int, me: Voter, leader: Voter) -> tuple[tuple[int, Voter], ...] | None:
        """The voters a Fetch from ``f`` changes and how, or None if it changes nothing."""
        c = me.leaderId
        if leader.role != LEADER or leader.epoch != me.epoch:
            # NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH: the response names the epoch and leader.
            after = self._learn(f, me, leader.epoch, leader.leaderId)
            return None if after is me else ((f, after),)
        log, llog = me.log, leader.log
        fetch_offset = len(log)
        last_epoch = log[-1].epoch if log else 0
        epoch, end = end_offset_for_epoch(llog, last_epoch)
        if epoch != last_epoch or end < fetch_offset:
            # A diverging epoch: ReplicatedLog.truncateToEndOffset, then fetch again.
            local_epoch, local_end = end_offset_for_epoch(log, epoch)
            truncate_to = min(end, local_end) if local_epoch == epoch else local_end
            follower = me._replace(
                log=log[:truncate_to], highWatermark=min(me.highWatermark, truncate_to), hasFetched=True
            )
            return ((f, follower),)
        new_leader = leader
        if self.counts_fetch(leader, f, me):
            new_leader = self._advance_hw(leader._replace(endOffsets=put(leader.endOffsets, f, fetch_offset)))
        limit = self.config.fetch_max_records
        new_log = log + (llog[fetch_offset : fetch_offset + limit] if limit else llog[fetch_offset:])
        hw = me.highWatermark
        if new_leader.hwKnown:  # updateFollowerHighWatermark: the leader's HW, up to the local log end
            hw = min(new_leader.highWatermark, len(new_log))
        follower = me._replace(log=new_log, highWatermark=hw, hasFetched=True)
        if follower == me and new_leader == leader:
            return None  # nothing new on either side: the fetch waits in purgatory
        return (f, follower), (c, new_leader)

    def _client_write(self, s: QuorumState, c: int, leader: Voter, out: list) -> None:
        if s.writes >= self.config.max_records:
            return
        log = (*leader.log, Record(leader.epoch, DATA))
        written = self._advance_hw(leader._replace(log=log, endOffsets=put(leader.endOffsets, c, len(log))))
        out.append((self._act("ClientWrite", c), self._set(s, (c, written))._replace(writes=s.writes + 1)))

    def quorum_lost(self, s: QuorumState, c: int) -> bool:
        """Fewer than a majority of voters (the leader included if it is one) can still fetch from the
        leader: the others are cut off, have moved to a later epoch, or (KIP-853) are a replica of
        the voter's id with another directory."""
        leader = s.voters[c]
        if self.static:
            epoch, isolated = leader.epoch, s.isolated
            fetching = [
                v
                for v in self.voter_ids
                if v != c and s.voters[v].epoch <= epoch and (not isolated or self.connected(s, c, v))
            ]
            return len(fetching) + 1 < self.majority
        voters = self.voters_of(leader)
        fetching = sum(
            1
            for v, d in voters
            if v != c and s.voters[v].directoryId == d and self.connected(s, c, v) and s.voters[v].epoch <= leader.epoch
        )
        own = 1 if (c, leader.directoryId) in voters else 0
        return fetching + own < len(voters) // 2 + 1

    def _check_quorum(self, s: QuorumState, c: int, leader: Voter, out: list) -> None:
        """LeaderState.timeUntilCheckQuorumExpires ran out: the leader resigns (``transitionToResigned``)."""
        if not self.config.check_quorum:
            return
        lone = len(self.voters_of(leader)) == 1  # timeUntilCheckQuorumExpires: voterStates.size() == 1
        if lone and self.config.single_voter_exemption:
            return
        if not lone and not self.quorum_lost(s, c):
            return
        resigned = leader._replace(role=RESIGNED, endOffsets=(), hwKnown=False)
        out.append((self._act("CheckQuorumResign", c), self._set(s, (c, resigned))))

    def _faults(self, s: QuorumState, v: int, out: list) -> None:
        cfg = self.config
        if v in s.isolated:
            out.append((self._act("Heal", v), _new(QuorumState, (s.voters, s.isolated - {v}, *s[2:]))))
        elif s.partitions < cfg.max_partitions and len(self.replica_ids) > 1:
            out.append((self._act("Isolate", v), s._replace(isolated=s.isolated | {v}, partitions=s.partitions + 1)))
        if s.restarts < cfg.max_restarts:
            out.append(
                (
                    self._act("Restart", v),
                    self._set(s, (v, self._restarted(v, s.voters[v])))._replace(restarts=s.restarts + 1),
                )
            )
        self._lose_disk(s, v, out)

    def _restarted(self, v: int, me: Voter) -> Voter:
        """QuorumState.initialize from the durable quorum-state: a leader comes back Resigned, a voter
        that knew the leader as its follower, the rest Unattached (keeping a vote); the HW is relearned."""
        if me.role in (LEADER, RESIGNED) and me.leaderId == v:
            role = RESIGNED
        elif me.leaderId != NONE:
            role = FOLLOWER
        else:
            role = UNATTACHED
        return Voter(role, me.epoch, me.votedId, me.leaderId, me.log, 0, _NOBODY, (), False, False, me.directoryId)

    # -- symmetry and drawing ------------------------------------------------------------------
    def symmetry(self, s: QuorumState) -> QuorumState:
        """Voters are interchangeable: the least state over every renaming of voter ids. Observers are
        not (the bootstrap voter set names the voters): with them, no reduction."""
        if self.config.observers:
            return s
        return least_renaming(s, self.voter_ids, _permute, _sort_key)

    def drawing(self) -> KraftQuorumDrawing:
        return KraftQuorumDrawing(self.config.voters, self.config.observers, not self.static)


def end_offset_for_epoch(log: tuple[Record, ...], epoch: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor: the largest epoch at most ``epoch`` in the log and the
    offset just past its last record, or (0, 0) if there is none."""
    best = (0, 0)
    for offset, record in enumerate(log):
        if record.epoch > epoch:
            break
        best = (record.epoch, offset + 1)
    return best


def _permute(s: QuorumState, perm: tuple[int, ...]) -> QuorumState:
    """Rename voter i to perm[i]."""

    def vid(x: int) -> int:
        return x if x == NONE else perm[x]

    n = len(perm)
    voters: list[Any] = [None] * n
    for i, v in enumerate(s.voters):
        offsets: tuple[int, ...] = ()
        if v.endOffsets:
            moved = [0] * n
            for j, o in enumerate(v.endOffsets):
                moved[perm[j]] = o
            offsets = tuple(moved)
        log = v.log
        if any(r.kind == VOTERS for r in log):
            log = tuple(
                VotersRecord(r.epoch, VOTERS, frozenset((perm[i], d) for i, d in r.voters))  # type: ignore[union-attr]
                if r.kind == VOTERS
                else r
                for r in log
            )
        voters[perm[i]] = Voter(
            v.role,
            v.epoch,
            vid(v.votedId),
            vid(v.leaderId),
            log,
            v.highWatermark,
            frozenset(perm[x] for x in v.votes),
            offsets,
            v.hasFetched,
            v.hwKnown,
            v.directoryId,
        )
    return s._replace(
        voters=tuple(voters),
        isolated=frozenset(perm[x] for x in s.isolated),
        hopeless=frozenset(perm[x] for x in s.hopeless),
    )


def _sort_key(s: QuorumState) -> tuple:
    return (
        tuple(
            (
                v.role,
                v.epoch,
                v.votedId,
                v.leaderId,
                v.log,
                v.highWatermark,
                tuple(sorted(v.votes)),
                v.endOffsets,
                v.hasFetched,
                v.hwKnown,
                v.directoryId,
            )
            for v in s.voters
        ),
        tuple(sorted(s.isolated)),
        tuple(sorted(s.hopeless)),
    )
