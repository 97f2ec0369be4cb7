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
  end offsets the model's leader holds, then ``highWatermark()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kmc.checker.conformance import Comparison, Oracle
from kmc.checker.model import Action
from kmc.models.kraft_quorum import (
    CANDIDATE,
    FOLLOWER,
    LEADER,
    NONE,
    PROSPECTIVE,
    RESIGNED,
    UNATTACHED,
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
        uuid = j("org.apache.kafka.common.Uuid")
        self.directories = {v: uuid(0, v + 1) for v in model.voter_ids}
        """Each voter's log directory id (KIP-853 voter keys): LeaderState needs its own."""
        nodes = j("java.util.HashMap")()
        for v in model.voter_ids:
            where = j("java.util.HashMap")()
            where.put(listener, j("java.net.InetSocketAddress").createUnresolved("localhost", 9990 + v))
            node = j(RAFT + "VoterSet$VoterNode").of(
                self.key(v), j(RAFT + "Endpoints").fromInetSocketAddresses(where),
                j("org.apache.kafka.common.feature.SupportedVersionRange")(0, 1),
            )  # fmt: skip
            nodes.put(j("java.lang.Integer")(v), node)
        self.voter_set = j(RAFT + "VoterSet").fromMap(nodes)
        self.voter_ids = j("java.util.HashSet")()
        for v in model.voter_ids:
            self.voter_ids.add(j("java.lang.Integer")(v))
        self.voter_keys = self.voter_set.voterKeys()
        self.nodes = {int(n.voterKey().id()): n for n in self.voter_set.voterNodes()}
        self.kraft_version = j("org.apache.kafka.server.common.KRaftVersion").KRAFT_VERSION_1
        self.metrics = j(RAFT + "internals.KafkaRaftMetrics")(j("org.apache.kafka.common.metrics.Metrics")(), "raft")
        self._candidate_ctor = self._accessible(RAFT + "CandidateState")
        self._leader_ctor = self._accessible(RAFT + "LeaderState")

    def unsupported(self) -> str | None:
        """Flags that turn off a fix Kafka 4.x has: its classes answer with the fix."""
        cfg = self.model.config
        if not cfg.prevote_from_unfetched_follower:
            return (
                "prevote_from_unfetched_follower=false is the behaviour before KAFKA-17641; FollowerState has the fix"
            )
        if not cfg.hw_needs_current_epoch:
            return "hw_needs_current_epoch=false is not Kafka's rule; LeaderState always requires the leader's epoch"
        return None

    @staticmethod
    def _accessible(name: str) -> Any:
        """The one (protected) constructor of a class, made callable (the raft package builds these
        through QuorumState; the oracle builds them directly)."""
        [ctor] = jvm.jclass(name).class_.getDeclaredConstructors()
        ctor.setAccessible(True)
        return ctor

    # -- building Kafka's epoch state from a voter of the model --------------------------------
    def key(self, v: int) -> Any:
        return self.ReplicaKey.of(v, self.directories[v])

    def _hw(self, me: Voter) -> Any:
        return self.Optional.of(self.LogOffsetMetadata(me.highWatermark)) if me.highWatermark else self.Optional.empty()

    def epoch_state(self, v: int, me: Voter) -> Any:
        """The EpochState QuorumState would hold for this voter. A Follower's vote is not kept by
        the model (it can never matter once the leader is known); Kafka's is passed empty."""
        voted = self.Optional.of(self.key(me.votedId)) if me.votedId != NONE else self.Optional.empty()
        leader = self.OptionalInt.of(me.leaderId) if me.leaderId != NONE else self.OptionalInt.empty()
        j = jvm.jclass
        if me.role == UNATTACHED:
            return j(RAFT + "UnattachedState")(self.time, me.epoch, leader, voted, self.voter_ids, self._hw(me),
                                               ELECTION_TIMEOUT_MS, self.log_context)  # fmt: skip
        if me.role == FOLLOWER:
            state = j(RAFT + "FollowerState")(
                self.time, me.epoch, me.leaderId, self.endpoints, self.Optional.empty(), self.voter_ids, self._hw(me),
                FETCH_TIMEOUT_MS, self.log_context,
            )  # fmt: skip
            if me.hasFetched:
                state.resetFetchTimeoutForSuccessfulFetch(self.time.milliseconds())
            return state
        if me.role == PROSPECTIVE:
            state = j(RAFT + "ProspectiveState")(self.time, v, me.epoch, leader, self.endpoints, voted, self.voter_set,
                                                 self._hw(me), ELECTION_TIMEOUT_MS, self.log_context)  # fmt: skip
            return state
        if me.role == CANDIDATE:
            return self._candidate_ctor.newInstance(
                self.time, _int(v), self.directories[v], _int(me.epoch), self.voter_set, self._hw(me),
                _int(ELECTION_TIMEOUT_MS), self.log_context,
            )  # fmt: skip
        if me.role == LEADER:
            raise AssertionError("a leader's vote is asked of a LeaderState through self.leader()")
        if me.role == RESIGNED:
            successors = jvm.jclass("java.util.ArrayList")()
            return j(RAFT + "ResignedState")(self.time, v, me.epoch, self.voter_ids, ELECTION_TIMEOUT_MS, successors,
                                             self.endpoints, self.log_context)  # fmt: skip
        raise AssertionError(me.role)

    @contextmanager
    def leader(self, c: int, leader: Voter) -> Iterator[Any]:
        """A LeaderState for the duration of a question, closed after it (closing unregisters its
        leader metrics and frees its accumulator)."""
        state = self.leader_state(c, leader)
        try:
            yield state
        finally:
            state.close()

    def leader_state(self, c: int, leader: Voter) -> Any:
        """A LeaderState of the leader's epoch, starting at its LeaderChangeMessage, with every end
        offset the model's leader holds applied (its own first, then each voter that has fetched)."""
        start = next(o for o, r in enumerate(leader.log) if r.epoch == leader.epoch)
        granting = jvm.jclass("java.util.HashSet")()
        state = self._leader_ctor.newInstance(
            self.time, self.nodes[c], _int(leader.epoch), _long(start), self.voter_set, self.OptionalLong.empty(),
            self.kraft_version, granting, self._accumulator(leader.epoch, len(leader.log)), _int(FETCH_TIMEOUT_MS),
            self.log_context, self.metrics,
        )  # fmt: skip
        state.updateLocalState(self.LogOffsetMetadata(leader.endOffsets[c]), self.voter_set)
        for f, offset in enumerate(leader.endOffsets):
            if f != c and offset > 0:
                state.updateReplicaState(self.key(f), 0, self.LogOffsetMetadata(offset))
        return state

    def _accumulator(self, epoch: int, end: int) -> Any:
        """The leader's record batcher (never drained here: the oracle appends nothing through it)."""
        j = jvm.jclass
        pool = j("org.apache.kafka.common.memory.MemoryPool").NONE
        compression = j("org.apache.kafka.common.compress.Compression").NONE
        serde = j("org.apache.kafka.metadata.MetadataRecordSerde")()
        return j(RAFT + "internals.BatchAccumulator")(epoch, end, 0, 8192, 10, pool, self.time, compression, serde)

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
                with self.leader(c, leader) as kafka:
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
            with self.leader(c, before) as kafka:
                kafka.updateLocalState(self.LogOffsetMetadata(len(after.log)), self.voter_set)
                theirs = self._hw_of(kafka)
            ours = after.highWatermark if after.hwKnown else None
            yield Comparison("updateLocalState → highWatermark", ours, theirs, {"leader": before})

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
                me = Voter(UNATTACHED, cand.epoch, NONE, NONE, me.log, me.highWatermark, frozenset(), (), False, False)
            up_to_date = int(self._last(cand).compareTo(self._last(me))) >= 0
            try:
                if me.role == LEADER:
                    with self.leader(v, me) as kafka:
                        ok = bool(kafka.canGrantVote(self.key(c), up_to_date, pre_vote))
                else:
                    ok = bool(self.epoch_state(v, me).canGrantVote(self.key(c), up_to_date, pre_vote))
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
        election = self.EpochElection(self.voter_keys)
        for w in sorted(votes):
            election.recordVote(w, True)
        won = after.role != nominee.role or after.epoch != nominee.epoch
        return Comparison("EpochElection.isVoteGranted", won, bool(election.isVoteGranted()),
                          {"nominee": c, "role": nominee.role, "votes": votes})  # fmt: skip

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
        with self.leader(c, before) as kafka:
            kafka.updateReplicaState(self.key(f), 0, self.LogOffsetMetadata(fetch_offset))
            theirs = self._hw_of(kafka)
        ours = after.highWatermark if after.hwKnown else None
        yield Comparison("updateReplicaState → highWatermark", ours, theirs,
                         {"leader": before, "follower": f, "fetchOffset": fetch_offset})  # fmt: skip
