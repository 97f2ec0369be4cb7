"""The `kraft-quorum` model against kafka-raft's epoch states (``EpochState`` and its subclasses).

``QuorumState`` itself needs a ``KRaftControlRecordStateMachine`` over a ``RaftLog`` (the voter set
is read from the log and snapshots), so it is not built here; its per-role states are plain
classes and are: ``UnattachedState``, ``FollowerState``, ``ProspectiveState``, ``CandidateState``,
``LeaderState`` and ``ResignedState`` are constructed from a voter of the model, and asked what
the model's step decides:

* a Vote or pre-vote request: ``canGrantVote(ReplicaKey, isLogUpToDate, isPreVote)`` on the
  voter's state, after the move to Unattached that a request of a higher epoch causes
  (``KafkaRaftClient.handleVoteRequest``); whether the log is up to date is Kafka's
  ``OffsetAndEpoch.compareTo`` of the two logs' last (offset, epoch);
* the tally: ``EpochElection.recordVote`` / ``isVoteGranted`` for the votes the nominee holds;
* the leader's high watermark: ``LeaderState.updateLocalState`` / ``updateReplicaState`` with the
  end offsets the model's leader holds, then ``highWatermark()``;
* KIP-853: every replica's voter set is a ``VoterSet`` of ``ReplicaKey``s (id, directory id) read
  from its log; a Vote request naming another directory is refused (``isValidVoterKey``); an
  AddVoter or RemoveVoter step is taken only when the leader's ``LeaderState`` has a high
  watermark past the last VotersRecord, and appends what ``VoterSet.addVoter``/``removeVoter``
  make of the old set; a removed leader resigns only when that HW has passed its removal and the
  set no longer holds its key (``RemoveVoterHandler.highWatermarkUpdated``, ``VoterSet.isVoter``).
  The handlers themselves need a ``KRaftControlRecordStateMachine`` over a ``RaftLog`` and are not
  built: their checks are asked of the classes they call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.checker.model import Action
from kmc.models.kraft_quorum.model import (
    CANDIDATE,
    FOLLOWER,
    LEADER,
    NONE,
    PROSPECTIVE,
    RESIGNED,
    UNATTACHED,
    VOTERS,
    KraftQuorumModel,
    QuorumState,
    Voter,
)

from . import jvm

RAFT = "org.apache.kafka.raft."
ELECTION_TIMEOUT_MS = 1000
FETCH_TIMEOUT_MS = 2000


def _int(value: int) -> Any:
    """A boxed int, as reflection's newInstance wants its arguments."""
    return jvm.jclass("java.lang.Integer")(value)


def _long(value: int) -> Any:
    return jvm.jclass("java.lang.Long")(value)


class QuorumStateOracle(Oracle):
    name = "quorum-state"
    model_name = "kraft-quorum"
    reference = (
        RAFT + "UnattachedState",
        RAFT + "FollowerState",
        RAFT + "ProspectiveState",
        RAFT + "CandidateState",
        RAFT + "LeaderState",
        RAFT + "ResignedState",
        RAFT + "internals.EpochElection",
        RAFT + "VoterSet",
        "org.apache.kafka.server.common.OffsetAndEpoch",
    )
    description = "kafka-raft's epoch states grant the votes, count the elections and move the HW as the model does"

    def __init__(self, model: KraftQuorumModel, release: str | None = None) -> None:  # type: ignore[override]
        super().__init__(model, release)
        self.release = jvm.start(self.release)
        j = jvm.jclass
        self.Optional = j("java.util.Optional")
        self.OptionalInt = j("java.util.OptionalInt")
        self.OptionalLong = j("java.util.OptionalLong")
        self.time = j("org.apache.kafka.common.utils.Time").SYSTEM
        self.log_context = j("org.apache.kafka.common.utils.LogContext")()
        self.ReplicaKey = j(RAFT + "ReplicaKey")
        self.LogOffsetMetadata = j(RAFT + "LogOffsetMetadata")
        self.OffsetAndEpoch = j("org.apache.kafka.server.common.OffsetAndEpoch")
        self.EpochElection = j(RAFT + "internals.EpochElection")
        self.endpoints = j(RAFT + "Endpoints").empty()
        listener = j("org.apache.kafka.common.network.ListenerName").normalised("CONTROLLER")
        self.Uuid = j("org.apache.kafka.common.Uuid")
        self.listener = listener
        self._sets: dict[frozenset, Any] = {}
        self._id_sets: dict[frozenset, Any] = {}
        self.voter_set = self.voter_set_of(model.bootstrap)
        self.kraft_version = j("org.apache.kafka.server.common.KRaftVersion").KRAFT_VERSION_1
        self.metrics = j(RAFT + "internals.KafkaRaftMetrics")(j("org.apache.kafka.common.metrics.Metrics")(), "raft")
        self._candidate_ctor = self._accessible(RAFT + "CandidateState")
        self._leader_ctor = self._accessible(RAFT + "LeaderState")

    def unsupported(self) -> str | None:
        """A release whose classes this adapter cannot build, or flags that turn off a fix Kafka 4.x has."""
        leader_key = self._leader_ctor.getParameterTypes()[1].getSimpleName()
        if self._candidate_ctor.getParameterCount() != 8 or leader_key != "VoterNode":
            return (
                f"Kafka {self.release}'s CandidateState and LeaderState constructors take other arguments "
                "(before 4.1) than this adapter passes"
            )
        cfg = self.model.config
        if not cfg.prevote_from_unfetched_follower:
            return (
                "prevote_from_unfetched_follower=false is the behaviour before KAFKA-17641; FollowerState has the fix"
            )
        if not cfg.hw_needs_current_epoch:
            return "hw_needs_current_epoch=false is not Kafka's rule; LeaderState always requires the leader's epoch"
        if not cfg.kafka_16530:
            return "kafka_16530=false is the behaviour before KAFKA-16530 (3.8); LeaderState has the fix"
        if not cfg.one_voter_change_at_a_time:
            return (
                "one_voter_change_at_a_time=false is not Kafka's rule; AddVoterHandler and RemoveVoterHandler have it"
            )
        if not cfg.directory_ids and cfg.max_disk_losses:
            return "directory_ids=false with a lost disk is kraft.version 0; the oracle's voters have KIP-853 keys"
        return None

    @staticmethod
    def _accessible(name: str) -> Any:
        """The one (protected) constructor of a class, made callable (the raft package builds these
        through QuorumState; the oracle builds them directly)."""
        [ctor] = jvm.jclass(name).class_.getDeclaredConstructors()
        ctor.setAccessible(True)
        return ctor

    # -- building Kafka's epoch state from a voter of the model --------------------------------
    def directory(self, v: int, d: int = 0) -> Any:
        """The log directory id of replica ``v``'s ``d``-th formatting (the model numbers them)."""
        return self.Uuid(d, v + 1)

    def key(self, v: int, d: int = 0) -> Any:
        """KIP-853's ReplicaKey: the replica id and its directory id."""
        return self.ReplicaKey.of(v, self.directory(v, d))

    def node(self, v: int, d: int = 0) -> Any:
        j = jvm.jclass
        where = j("java.util.HashMap")()
        where.put(self.listener, j("java.net.InetSocketAddress").createUnresolved("localhost", 9990 + v))
        return j(RAFT + "VoterSet$VoterNode").of(
            self.key(v, d),
            j(RAFT + "Endpoints").fromInetSocketAddresses(where),
            j("org.apache.kafka.common.feature.SupportedVersionRange")(0, 1),
        )

    def voter_set_of(self, keys: frozenset[tuple[int, int]]) -> Any:
        """Kafka's VoterSet of the model's (id, directory) keys (cached)."""
        voters = self._sets.get(keys)
        if voters is None:
            j = jvm.jclass
            nodes = j("java.util.HashMap")()
            for v, d in sorted(keys):
                nodes.put(j("java.lang.Integer")(v), self.node(v, d))
            voters = self._sets[keys] = j(RAFT + "VoterSet").fromMap(nodes)
        return voters

    def voter_ids_of(self, keys: frozenset[tuple[int, int]]) -> Any:
        """The voter ids as the epoch states take them (a Set<Integer>)."""
        ids = self._id_sets.get(keys)
        if ids is None:
            ids = self._id_sets[keys] = jvm.jclass("java.util.HashSet")()
            for v, _ in sorted(keys):
                ids.add(jvm.jclass("java.lang.Integer")(v))
        return ids

    def _keys(self, me: Voter) -> frozenset[tuple[int, int]]:
        return self.model.voters_of(me)

    def _hw(self, me: Voter) -> Any:
        return self.Optional.of(self.LogOffsetMetadata(me.highWatermark)) if me.highWatermark else self.Optional.empty()

    def epoch_state(self, v: int, me: Voter) -> Any:
        """The EpochState QuorumState would hold for this voter. A Follower's vote is not kept by
        the model (it can never matter once the leader is known); Kafka's is passed empty."""
        voted = (
            self.Optional.of(self.key(me.votedId, self._voted_directory(me)))
            if me.votedId != NONE
            else self.Optional.empty()
        )
        leader = self.OptionalInt.of(me.leaderId) if me.leaderId != NONE else self.OptionalInt.empty()
        j = jvm.jclass
        keys = self._keys(me)
        voter_ids, voter_set = self.voter_ids_of(keys), self.voter_set_of(keys)
        if me.role == UNATTACHED:
            return j(RAFT + "UnattachedState")(
                self.time, me.epoch, leader, voted, voter_ids, self._hw(me), ELECTION_TIMEOUT_MS, self.log_context
            )
        if me.role == FOLLOWER:
            state = j(RAFT + "FollowerState")(
                self.time,
                me.epoch,
                me.leaderId,
                self.endpoints,
                self.Optional.empty(),
                voter_ids,
                self._hw(me),
                FETCH_TIMEOUT_MS,
                self.log_context,
            )
            if me.hasFetched:
                state.resetFetchTimeoutForSuccessfulFetch(self.time.milliseconds())
            return state
        if me.role == PROSPECTIVE:
            state = j(RAFT + "ProspectiveState")(
                self.time,
                v,
                me.epoch,
                leader,
                self.endpoints,
                voted,
                voter_set,
                self._hw(me),
                ELECTION_TIMEOUT_MS,
                self.log_context,
            )
            return state
        if me.role == CANDIDATE:
            return self._candidate_ctor.newInstance(
                self.time,
                _int(v),
                self.directory(v, me.directoryId),
                _int(me.epoch),
                voter_set,
                self._hw(me),
                _int(ELECTION_TIMEOUT_MS),
                self.log_context,
            )
        if me.role == LEADER:
            raise AssertionError("a leader's vote is asked of a LeaderState through self.leader()")
        if me.role == RESIGNED:
            successors = jvm.jclass("java.util.ArrayList")()
            return j(RAFT + "ResignedState")(
                self.time, v, me.epoch, voter_ids, ELECTION_TIMEOUT_MS, successors, self.endpoints, self.log_context
            )
        raise AssertionError(me.role)

    def _voted_directory(self, me: Voter) -> int:
        """The directory of the candidate a vote went to: the one its voter set holds (0 when static)."""
        return next((d for i, d in self._keys(me) if i == me.votedId), 0)

    @contextmanager
    def leader(self, c: int, leader: Voter, s: QuorumState | None = None) -> Iterator[Any]:
        """A LeaderState for the duration of a question, closed after it (closing unregisters its
        leader metrics and frees its accumulator)."""
        state = self.leader_state(c, leader, s)
        try:
            yield state
        finally:
            state.close()

    def leader_state(self, c: int, leader: Voter, s: QuorumState | None = None) -> Any:
        """A LeaderState of the leader's epoch, starting at its LeaderChangeMessage with the voter set
        it was elected by, then with every end offset the model's leader holds applied under its
        last voter set (KIP-853: ``updateLocalState(endOffset, lastVoterSet)``): its own first, then
        each replica that has fetched -- a voter by the key its set holds, an observer by its own."""
        start = next(o for o, r in enumerate(leader.log) if r.epoch == leader.epoch)
        elected = self.model.voters_of(leader._replace(log=leader.log[:start]))
        current = self._keys(leader)
        granting = jvm.jclass("java.util.HashSet")()
        state = self._leader_ctor.newInstance(
            self.time,
            self.node(c, leader.directoryId),
            _int(leader.epoch),
            _long(start),
            self.voter_set_of(elected),
            self.OptionalLong.empty(),
            self.kraft_version,
            granting,
            self._accumulator(leader.epoch, len(leader.log)),
            _int(FETCH_TIMEOUT_MS),
            self.log_context,
            self.metrics,
        )
        state.updateLocalState(self.LogOffsetMetadata(leader.endOffsets[c]), self.voter_set_of(current))
        for f, offset in enumerate(leader.endOffsets):
            if f != c and offset > 0:
                state.updateReplicaState(self.replica_key(f, current, s), 0, self.LogOffsetMetadata(offset))
        return state

    def replica_key(self, f: int, voters: frozenset[tuple[int, int]], s: QuorumState | None) -> Any:
        """The key a fetch from replica ``f`` carries, as the leader recorded it: a voter's as its set
        holds it, an observer's with its own directory."""
        d = next((d for i, d in voters if i == f), None)
        if d is None:
            d = s.voters[f].directoryId if s is not None else 0
        return self.key(f, d)

    def _accumulator(self, epoch: int, end: int) -> Any:
        """The leader's record batcher (never drained here: the oracle appends nothing through it)."""
        j = jvm.jclass
        pool = j("org.apache.kafka.common.memory.MemoryPool").NONE
        compression = j("org.apache.kafka.common.compress.Compression").NONE
        serde = j("org.apache.kafka.metadata.MetadataRecordSerde")()
        return j(RAFT + "internals.BatchAccumulator")(epoch, end, 0, 8192, 10, pool, self.time, compression, serde)

    def _kept(self, leader: Voter, fresh: int | None) -> int | None:
        """The HW a LeaderState that lived through the epoch would report. Built afresh it knows
        only today's end offsets; when a voter change in this epoch has moved the majority, an HW
        reached under the old set survives (``maybeUpdateHighWatermark`` never lowers it), so the
        fresh answer is taken together with the HW the leader had before the step."""
        start = next(o for o, r in enumerate(leader.log) if r.epoch == leader.epoch)
        if not leader.hwKnown or self._keys(leader) == self.model.voters_of(leader._replace(log=leader.log[:start])):
            return fresh
        return max(leader.highWatermark, fresh or 0)

    @staticmethod
    def _hw_of(state: Any) -> int | None:
        hw = state.highWatermark()
        return int(hw.get().offset()) if hw.isPresent() else None

    def _last(self, me: Voter) -> Any:
        """The log's end as Kafka compares it: OffsetAndEpoch(endOffset, lastFetchedEpoch)."""
        return self.OffsetAndEpoch(len(me.log), me.log[-1].epoch if me.log else 0)

    # -- the comparisons -------------------------------------------------------------------------
    def _new_leaders(self, state: QuorumState, next_state: QuorumState) -> Iterator[Comparison]:
        """A voter that became leader in this step: its first high watermark (a quorum of one has
        one at once) is what a new LeaderState computes from its own end offset."""
        for c, leader in enumerate(next_state.voters):
            if leader.role == LEADER and state.voters[c].role != LEADER:
                ours = leader.highWatermark if leader.hwKnown else None
                with self.leader(c, leader, next_state) as kafka:
                    theirs = self._hw_of(kafka)
                yield Comparison("LeaderState.highWatermark (new leader)", ours, theirs, {"leader": leader})

    def compare_step(self, state: QuorumState, action: Action, next_state: QuorumState) -> Iterator[Comparison]:
        name = action.name
        args = action.args
        if name == "RequestVote":
            yield from self._vote(state, args["candidate"], args["voter"], args["preVote"], next_state)
            yield from self._new_leaders(state, next_state)
        elif name in ("ElectionTimeout", "FetchTimeout"):
            yield from self._start(state, args["voter"], next_state)
            yield from self._new_leaders(state, next_state)
        elif name == "Fetch":
            leader = next_state.voters[args["leader"]]
            if leader.role == LEADER and leader.endOffsets != state.voters[args["leader"]].endOffsets:
                yield from self._fetch(state, args["follower"], args["leader"], next_state)
        elif name == "ClientWrite":
            c = args["leader"]
            before, after = state.voters[c], next_state.voters[c]
            with self.leader(c, before, state) as kafka:
                kafka.updateLocalState(self.LogOffsetMetadata(len(after.log)), self.voter_set_of(self._keys(after)))
                theirs = self._kept(before, self._hw_of(kafka))
            ours = after.highWatermark if after.hwKnown else None
            yield Comparison("updateLocalState → highWatermark", ours, theirs, {"leader": before})
        elif name in ("AddVoter", "RemoveVoter"):
            yield from self._voter_change(state, name, args["leader"], args["voter"], next_state)
        elif name == "ResignRemoved":
            yield self._resign(state, args["leader"])

    def _voter_change(self, s: QuorumState, name: str, c: int, o: int, nxt: QuorumState) -> Iterator[Comparison]:
        """AddVoterHandler / RemoveVoterHandler: the leader's LeaderState has a high watermark past
        the last VotersRecord (no uncommitted change), the new set is what Kafka's ``VoterSet``
        makes of the old one, and the leader's HW over the new set is ``updateLocalState``'s."""
        before, after = s.voters[c], nxt.voters[c]
        last = max((o for o, r in enumerate(before.log) if r.kind == VOTERS), default=-1)
        with self.leader(c, before, s) as kafka:
            hw = self._hw_of(kafka)
        inputs = {"leader": before, "voter": o}
        yield Comparison(
            "AddVoter/RemoveVoter: no uncommitted VotersRecord", True, hw is not None and hw > last, inputs
        )
        old = self.voter_set_of(self._keys(before))
        if name == "AddVoter":
            changed = old.addVoter(self.node(o, s.voters[o].directoryId))
        else:
            changed = old.removeVoter(self.key(o, next(d for i, d in self._keys(before) if i == o)))
        theirs = (
            frozenset((int(k.id()), self._directory_number(k)) for k in changed.get().voterKeys())
            if changed.isPresent()
            else None
        )
        yield Comparison(
            f"VoterSet.{'addVoter' if name == 'AddVoter' else 'removeVoter'}", self._keys(after), theirs, inputs
        )
        with self.leader(c, before, s) as kafka:
            kafka.updateLocalState(self.LogOffsetMetadata(len(after.log)), self.voter_set_of(self._keys(after)))
            theirs_hw = self._kept(before, self._hw_of(kafka))
        yield Comparison(
            "updateLocalState → highWatermark", after.highWatermark if after.hwKnown else None, theirs_hw, inputs
        )

    def _resign(self, s: QuorumState, c: int) -> Comparison:
        """RemoveVoterHandler.highWatermarkUpdated: the HW has passed the VotersRecord and the
        committed voter set no longer holds the leader's key -- it resigns."""
        leader = s.voters[c]
        last = max((o for o, r in enumerate(leader.log) if r.kind == VOTERS), default=-1)
        with self.leader(c, leader, s) as kafka:
            hw = self._hw_of(kafka)
        removed = not bool(self.voter_set_of(self._keys(leader)).isVoter(self.key(c, leader.directoryId)))
        return Comparison(
            "RemoveVoterHandler → resign", True, hw is not None and hw > last and removed, {"leader": leader}
        )

    @staticmethod
    def _directory_number(key: Any) -> int:
        """The model's directory number back from a Kafka ReplicaKey built by ``key``."""
        return int(key.directoryId().get().getMostSignificantBits())

    def _vote(self, s: QuorumState, c: int, v: int, pre_vote: bool, nxt: QuorumState) -> Iterator[Comparison]:
        cand, me = s.voters[c], s.voters[v]
        voter_after, granted = self.model.vote_response(s, c, v, pre_vote)
        ours = (voter_after.role, voter_after.epoch, voter_after.votedId, granted)
        inputs = {"candidate": cand, "voter": me, "preVote": pre_vote}
        # KafkaRaftClient.handleVoteRequest: a request of an older epoch is refused
        # (FENCED_LEADER_EPOCH); one of a newer epoch moves the voter to Unattached in it first.
        if cand.epoch < me.epoch:
            theirs: tuple = (me.role, me.epoch, me.votedId, False)
        else:
            if cand.epoch > me.epoch:
                me = Voter(
                    UNATTACHED,
                    cand.epoch,
                    NONE,
                    NONE,
                    me.log,
                    me.highWatermark,
                    frozenset(),
                    (),
                    False,
                    False,
                    me.directoryId,
                )
            up_to_date = int(self._last(cand).compareTo(self._last(me))) >= 0
            # isValidVoterKey (KIP-853): the request names the voter's key as the candidate's
            # VoterSet holds it; another directory id answers INVALID_VOTER_KEY, no vote.
            sent = self.voter_set_of(self._keys(cand)).voterKeys()
            named = next((k for k in sent if int(k.id()) == v), None)
            own = self.key(v, me.directoryId)
            key_ok = named is None or not named.directoryId().isPresent() or bool(named.equals(own))
            candidate_key = self.key(c, cand.directoryId)
            try:
                if not key_ok:
                    ok = False
                elif me.role == LEADER:
                    with self.leader(v, me, s) as kafka:
                        ok = bool(kafka.canGrantVote(candidate_key, up_to_date, pre_vote))
                else:
                    ok = bool(self.epoch_state(v, me).canGrantVote(candidate_key, up_to_date, pre_vote))
            except Exception as exc:
                if not jvm.is_java_exception(exc):
                    raise
                ok = jvm.java_exception_text(exc)  # type: ignore[assignment]
            voted = me.votedId
            if ok is True and not pre_vote and me.role in (UNATTACHED, PROSPECTIVE) and voted == NONE:
                voted = c  # unattachedAddVotedState / prospectiveAddVotedState
            theirs = (me.role, me.epoch, voted, ok)
            inputs["isLogUpToDate"] = up_to_date
        yield Comparison("canGrantVote", ours, theirs, inputs)
        after = nxt.voters[c]
        if granted and after.epoch == cand.epoch and after.role in (PROSPECTIVE, CANDIDATE, LEADER):
            yield self._tally(c, cand, cand.votes | {v}, after)

    def _tally(self, c: int, nominee: Voter, votes: frozenset[int], after: Voter) -> Comparison:
        """EpochElection over the voter set: a majority of granted votes wins the (pre-)election."""
        election = self.EpochElection(self.voter_set_of(self._keys(nominee)).voterKeys())
        for w in sorted(votes):
            election.recordVote(w, True)
        won = after.role != nominee.role or after.epoch != nominee.epoch
        return Comparison(
            "EpochElection.isVoteGranted",
            won,
            bool(election.isVoteGranted()),
            {"nominee": c, "role": nominee.role, "votes": votes},
        )

    def _start(self, s: QuorumState, v: int, nxt: QuorumState) -> Iterator[Comparison]:
        """An election timer fired: a nominee with its own vote only; a one-voter quorum wins at once."""
        before, after = s.voters[v], nxt.voters[v]
        if after.role not in (PROSPECTIVE, CANDIDATE, LEADER) or before.role == PROSPECTIVE:
            return  # a Prospective's timer takes it back to Unattached or Follower: no election
        if self.model.config.pre_vote:
            nominee = before._replace(role=PROSPECTIVE)
        else:
            nominee = before._replace(role=CANDIDATE, epoch=before.epoch + 1)
        yield self._tally(v, nominee, frozenset({v}), after)

    def _fetch(self, s: QuorumState, f: int, c: int, nxt: QuorumState) -> Iterator[Comparison]:
        before, after = s.voters[c], nxt.voters[c]
        fetch_offset = after.endOffsets[f]
        with self.leader(c, before, s) as kafka:
            kafka.updateReplicaState(
                self.replica_key(f, self._keys(before), s), 0, self.LogOffsetMetadata(fetch_offset)
            )
            theirs = self._kept(before, self._hw_of(kafka))
        ours = after.highWatermark if after.hwKnown else None
        yield Comparison(
            "updateReplicaState → highWatermark",
            ours,
            theirs,
            {"leader": before, "follower": f, "fetchOffset": fetch_offset},
        )
