"""Kafka partition replication (ZooKeeper era), as in the published TLA+ specification.

The transition system of hachikuji/kafka-specification (KafkaReplication and its variants),
expressed in Python with Kafka's names: one partition, a fixed set of replicas, a controller
that only updates the quorum state (ZooKeeper) and sends LeaderAndIsr requests, leaders that
take writes and advance the high watermark, and followers that fetch and truncate.

The five presets are the five specifications; each is a combination of four flags named after
what changed in Kafka, so the rule that a KIP fixed can be switched on and off on its own:

* ``truncation`` -- what a replica does to its log when it becomes a follower:
  ``hw`` (truncate to the local high watermark, before KIP-101), ``leader_epoch`` (KIP-101:
  OffsetsForLeaderEpoch), ``matching_offset`` (KIP-279: the last offset whose record matches the
  leader's), ``on_fetch`` (the first KIP-320 draft: no truncation on the epoch change, truncate
  when a fetch shows divergence), ``fenced`` (KIP-320: truncate only against a leader already in
  the same epoch).
* ``fetch_fencing`` -- what a fetch checks: ``none``, ``last_fetched_epoch`` (the follower's last
  record's epoch must match the leader's at that offset), ``current_leader_epoch`` (KIP-320).
* ``hw_advance`` -- when the leader advances the HW: ``isr_offsets`` (every ISR member that
  follows it has the offset), ``epoch_match`` (and the epochs at the HW match), ``current_epoch``
  (every ISR member follows the leader's current epoch, KIP-320).
* ``isr_rules`` -- when the leader shrinks or expands the ISR: ``offsets``, ``epoch_match``,
  ``current_epoch`` (KIP-320, with the KAFKA-7128 rule that a new ISR member must have reached
  the start of the leader's epoch).
"""

from __future__ import annotations

from typing import Any

from kmc.checker import Action, Model
from kmc.checker.extension import SuccessorsInC
from kmc.models.common.tuples import least_renaming, put
from kmc.models.replication.bugs import BUGS
from kmc.models.replication.config import PRESETS, ReplicationConfig
from kmc.models.replication.drawing import ReplicationDrawing
from kmc.models.replication.state import (
    ACTION_ARGS,
    NO_EPOCH,
    NO_LEADER,
    LeaderAndIsr,
    Record,
    ReplicaState,
    ReplicationState,
)

Step = tuple[Action, ReplicationState]
Change = tuple[Action, tuple[tuple[Record, ...], ...], tuple[ReplicaState, ...]]
"""A step that changes only the replicas' logs and states: the action, the new logs and states."""


class ReplicationModel(SuccessorsInC, Model):
    name = "replication"
    actions = tuple(ACTION_ARGS)
    description = "partition replication as in the TLA+ spec hachikuji/kafka-specification"
    Config = ReplicationConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "kip-320"
    spec_modules = ("kmc.specs.replication",)

    config: ReplicationConfig

    def __init__(self, config: ReplicationConfig | None = None) -> None:
        super().__init__(config)
        self.replica_ids = tuple(range(self.config.replicas))
        # Every action is made once, in tables indexed by its arguments: the same few actions label
        # most steps, and a list lookup is the cheapest way to find one on the hot path.
        n, epochs, records = self.config.replicas, self.config.max_leader_epoch + 1, max(self.config.max_records, 1)
        self._elect = _action_table("ControllerElectLeader", n)
        self._shrink_by_controller = _action_table("ControllerShrinkIsr", n)
        self._become_leader_act = _action_table("BecomeLeader", n, epochs)
        self._become_follower_act = _action_table("BecomeFollower", n, n, epochs)
        self._write = _action_table("LeaderWrite", n, records)
        self._inc_hw = _action_table("LeaderIncHighWatermark", n)
        self._shrink_isr = _action_table("LeaderShrinkIsr", n, n)
        self._expand_isr = _action_table("LeaderExpandIsr", n, n)
        self._fetch = _action_table("FollowerFetch", n, n)
        self._truncate = _action_table("FollowerTruncate", n, n)
        self._accepted: dict[tuple, Any] = {}
        self._changes: dict[tuple, tuple[list[Change], list[Change]]] = {}
        self.use_c_twin("kmc.models.replication._successors", ReplicationModel, self._twin_context)

    # -- init ----------------------------------------------------------------------------------
    def init_states(self) -> list[ReplicationState]:
        n = self.config.replicas
        return [
            ReplicationState(
                replicaLog=((),) * n,
                replicaState=(ReplicaState(0, NO_EPOCH, NO_LEADER, frozenset()),) * n,
                nextRecordId=0,
                nextLeaderEpoch=0,
                leaderAndIsrRequests=frozenset(),
                quorumState=LeaderAndIsr(NO_EPOCH, NO_LEADER, frozenset(self.replica_ids)),
            )
        ]

    def _twin_context(self) -> tuple:
        """What the C successor function reads: the state types, the action tables, the config."""
        c = self.config
        modes = (
            _TRUNCATIONS.index(c.truncation),
            _FETCH_FENCINGS.index(c.fetch_fencing),
            _HW_ADVANCES.index(c.hw_advance),
            _ISR_RULES.index(c.isr_rules),
        )
        tables = (
            self._elect,
            self._shrink_by_controller,
            self._become_leader_act,
            self._become_follower_act,
            self._write,
            self._inc_hw,
            self._shrink_isr,
            self._expand_isr,
            self._fetch,
            self._truncate,
        )
        return (
            ReplicationState,
            ReplicaState,
            Record,
            LeaderAndIsr,
            *tables,
            c.log_size,
            c.max_records,
            c.max_leader_epoch,
            *modes,
        )

    # -- next ----------------------------------------------------------------------------------
    def _successors(self, s: ReplicationState) -> list[Step]:
        """The definition of the model's steps (the C extension's successors return the same list)."""
        out: list[Step] = []
        self._controller_actions(s, out)
        self._become_leader(s, out)
        self._become_follower(s, out)
        self._leader_write(s, out)
        advances, fetches = self._replica_changes(s)
        rest = s[2:]
        for action, logs, states in advances:
            out.append((action, _new(ReplicationState, (logs, states, *rest))))
        self._leader_isr_changes(s, out)
        for action, logs, states in fetches:
            out.append((action, _new(ReplicationState, (logs, states, *rest))))
        return out

    def _replica_changes(self, s: ReplicationState) -> tuple[list[Change], list[Change]]:
        """LeaderIncHighWatermark, and FollowerFetch and FollowerTruncate: what they do depends on the
        replicas' logs and states only, which many states share, so it is computed once per pair (a
        cache that starts over when it grows past a million pairs)."""
        key = (s.replicaLog, s.replicaState)
        known = self._changes.get(key)
        if known is None:
            advances: list[Change] = []
            fetches: list[Change] = []
            self._leader_inc_high_watermark(s, advances)
            self._follower_fetch(s, fetches)
            if self.config.truncation == "on_fetch":
                self._follower_truncate(s, fetches)
            if len(self._changes) >= 1_000_000:
                self._changes.clear()
            known = self._changes[key] = (advances, fetches)
        return known

    def _controller_update(self, s: ReplicationState, leader: int, isr: frozenset[int]) -> ReplicationState:
        """The controller writes a new leader and ISR (bumping the epoch) and sends LeaderAndIsr."""
        request = LeaderAndIsr(s.nextLeaderEpoch, leader, isr)
        return ReplicationState(
            s.replicaLog,
            s.replicaState,
            s.nextRecordId,
            s.nextLeaderEpoch + 1,
            s.leaderAndIsrRequests | {request},
            request,
        )

    def _controller_actions(self, s: ReplicationState, out: list[Step]) -> None:
        if s.nextLeaderEpoch > self.config.max_leader_epoch:
            return
        quorum = s.quorumState
        # ControllerElectLeader: clean election of any other ISR member.
        for candidate in sorted(quorum.isr):
            if candidate != quorum.leader:
                out.append(
                    (
                        self._elect[candidate],
                        self._controller_update(s, candidate, quorum.isr),
                    )
                )
        # ControllerShrinkIsr: a broker fails or shuts down; a failed leader loses leadership.
        for replica in self.replica_ids:
            if quorum.leader == replica:
                if quorum.isr == {replica}:
                    nxt = self._controller_update(s, NO_LEADER, quorum.isr)
                else:
                    nxt = self._controller_update(s, NO_LEADER, quorum.isr - {replica})
            elif replica in quorum.isr:
                nxt = self._controller_update(s, quorum.leader, quorum.isr - {replica})
            else:
                continue
            out.append((self._shrink_by_controller[replica], nxt))

    def _accepted_requests(
        self, s: ReplicationState
    ) -> tuple[list[tuple[Action, int, ReplicaState]], list[tuple[Action, int, int, ReplicaState]]]:
        """The LeaderAndIsr requests replicas would act on, as BecomeLeader (action, leader, its new
        state) and BecomeFollower (action, replica, leader, its new state but for the HW) candidates.
        They depend on the requests and the replica states only, which many states share, so they
        are computed once per distinct pair."""
        key = (s.leaderAndIsrRequests, s.replicaState)
        known = self._accepted.get(key)
        if known is not None:
            return known
        states = s.replicaState
        leaders: list[tuple[Action, int, ReplicaState]] = []
        followers: list[tuple[Action, int, int, ReplicaState]] = []
        fenced = self.config.truncation == "fenced"
        for request in sorted(s.leaderAndIsrRequests):
            leader, epoch = request.leader, request.leaderEpoch
            if leader == NO_LEADER:  # nobody leads; the spec's followers only follow a named leader
                continue
            current = states[leader]
            if epoch > current.leaderEpoch:
                state = ReplicaState(current.hw, epoch, leader, request.isr)
                leaders.append((self._become_leader_act[leader][epoch], leader, state))
            # KIP-320: a follower truncates only against a leader that is already in this epoch.
            if fenced and (current.leader != leader or current.leaderEpoch != epoch):
                continue
            for replica in self.replica_ids:
                if replica != leader and epoch > states[replica].leaderEpoch:
                    state = _new(ReplicaState, (states[replica].hw, epoch, leader, request.isr))
                    followers.append((self._become_follower_act[replica][leader][epoch], replica, leader, state))
        if len(self._accepted) >= 1_000_000:
            self._accepted.clear()
        known = self._accepted[key] = (leaders, followers)
        return known

    def _become_leader(self, s: ReplicationState, out: list[Step]) -> None:
        for action, leader, state in self._accepted_requests(s)[0]:
            out.append((action, _with(s, s.replicaLog, put(s.replicaState, leader, state))))

    def _truncation_offset(self, s: ReplicationState, leader: int, replica: int) -> int | None:
        """Where a replica becoming follower of ``leader`` truncates its log; None: cannot yet."""
        log = s.replicaLog[replica]
        mode = self.config.truncation
        if mode == "hw":
            return s.replicaState[replica].hw
        if mode == "leader_epoch":
            if not log:
                return 0
            return _offset_for_leader_epoch(s, leader, replica, log[-1].epoch)
        if mode == "matching_offset":
            return _first_non_matching_offset_from_tail(s.replicaLog[leader], log)
        raise AssertionError(mode)

    def _become_follower(self, s: ReplicationState, out: list[Step]) -> None:
        mode = self.config.truncation
        logs, states = s.replicaLog, s.replicaState
        for action, replica, leader, state in self._accepted_requests(s)[1]:
            log = logs[replica]
            if mode == "on_fetch":
                out.append((action, _with(s, logs, put(states, replica, state))))
                continue
            if mode == "fenced":
                offset = _first_non_matching_offset_from_tail(logs[leader], log)
            else:
                offset = self._truncation_offset(s, leader, replica)
            if offset is None or offset > len(log):
                continue  # a truncation cannot extend the log
            if offset < state.hw:
                state = _new(ReplicaState, (offset, *state[1:]))
            new_logs = logs if offset == len(log) else put(logs, replica, log[:offset])
            out.append((action, _with(s, new_logs, put(states, replica, state))))

    def _leader_write(self, s: ReplicationState, out: list[Step]) -> None:
        if s.nextRecordId > self.config.max_records - 1:
            return
        for leader in self.replica_ids:
            state = s.replicaState[leader]
            log = s.replicaLog[leader]
            if state.leader == leader and len(log) < self.config.log_size:
                record = Record(s.nextRecordId, state.leaderEpoch)
                out.append(
                    (
                        self._write[leader][record.id],
                        _new(
                            ReplicationState,
                            (put(s.replicaLog, leader, (*log, record)), s[1], s[2] + 1, s[3], s[4], s[5]),
                        ),
                    )
                )

    def _leader_inc_high_watermark(self, s: ReplicationState, out: list[Change]) -> None:
        mode = self.config.hw_advance
        logs, states = s.replicaLog, s.replicaState
        for leader in self.replica_ids:
            state = states[leader]
            hw = state.hw
            presumes = state.leader == leader
            # Every rule needs the replica to presume leadership, except that the KIP-320 rule
            # checks it only through its ISR members: with an empty ISR it asks nothing of them.
            if not presumes and (state.isr or mode != "current_epoch" or len(logs[leader]) <= hw):
                continue
            if mode == "isr_offsets":
                ok = (
                    presumes
                    and hw < self.config.log_size
                    and all(states[f].leader == leader and len(logs[f]) > hw for f in state.isr)
                )
            elif mode == "epoch_match":
                ok = (
                    presumes
                    and len(logs[leader]) > hw
                    and all(_caught_up_to_leader_epoch(s, leader, f, hw + 1) for f in state.isr)
                )
            else:
                ok = len(logs[leader]) > hw and all(
                    _follows_leader_epoch(s, leader, f) and len(logs[f]) > hw for f in state.isr
                )
            if ok:
                out.append((self._inc_hw[leader], logs, put(states, leader, _new(ReplicaState, (hw + 1, *state[1:])))))

    def _leader_isr_changes(self, s: ReplicationState, out: list[Step]) -> None:
        """LeaderShrinkIsr and LeaderExpandIsr: only the true leader may write the ISR to ZooKeeper."""
        quorum = s.quorumState
        leader = quorum.leader
        if leader == NO_LEADER:
            return
        state = s.replicaState[leader]
        if state.leader != leader or state.leaderEpoch != quorum.leaderEpoch:
            return
        mode = self.config.isr_rules
        logs = s.replicaLog
        leader_log = logs[leader]
        isr = state.isr
        for replica in self.replica_ids:
            if replica == leader or replica not in isr:
                continue
            if mode == "offsets":
                lagging = not _caught_up(s, leader, replica, len(leader_log))
            elif mode == "epoch_match":
                lagging = not _caught_up_to_leader_epoch(s, leader, replica, len(leader_log))
            else:
                lagging = not _follows_leader_epoch(s, leader, replica) or len(logs[replica]) < len(leader_log)
            if lagging:
                out.append(
                    (
                        self._shrink_isr[leader][replica],
                        _quorum_update(s, leader, isr - {replica}),
                    )
                )
        hw = state.hw
        for replica in self.replica_ids:
            if replica in isr:
                continue
            if mode == "offsets":
                eligible = _caught_up(s, leader, replica, hw)
            elif mode == "epoch_match":
                eligible = _caught_up_to_leader_epoch(s, leader, replica, hw) and _hw_reached_current_epoch(s, leader)
            else:
                eligible = (
                    _follows_leader_epoch(s, leader, replica)
                    and (hw == 0 or len(logs[replica]) >= hw)
                    and _hw_reached_current_epoch(s, leader)
                )
            if eligible:
                out.append(
                    (
                        self._expand_isr[leader][replica],
                        _quorum_update(s, leader, isr | {replica}),
                    )
                )

    def _follower_fetch(self, s: ReplicationState, out: list[Change]) -> None:
        mode = self.config.fetch_fencing
        logs, states = s.replicaLog, s.replicaState
        for follower in self.replica_ids:
            fstate = states[follower]
            leader = fstate.leader
            if leader in (NO_LEADER, follower):
                continue
            lstate = states[leader]
            if lstate.leader != leader:
                continue
            flog, llog = logs[follower], logs[leader]
            end = len(flog)
            if end >= len(llog):
                continue
            if mode == "last_fetched_epoch":
                if end > 0 and flog[end - 1].epoch != llog[end - 1].epoch:
                    continue
            elif mode == "current_leader_epoch" and fstate.leaderEpoch != lstate.leaderEpoch:
                continue
            hw = min(lstate.hw, end + 1)
            out.append(
                (
                    self._fetch[follower][leader],
                    put(logs, follower, (*flog, llog[end])),
                    put(states, follower, _new(ReplicaState, (hw, *fstate[1:]))),
                )
            )

    def _follower_truncate(self, s: ReplicationState, out: list[Change]) -> None:
        """The first KIP-320 draft: truncate when a fetch finds the follower's log diverged."""
        logs, states = s.replicaLog, s.replicaState
        for follower in self.replica_ids:
            fstate = states[follower]
            leader = fstate.leader
            if leader in (NO_LEADER, follower) or states[leader].leader != leader:
                continue
            flog, llog = logs[follower], logs[leader]
            diverged = len(flog) > len(llog) or (
                bool(flog) and len(llog) >= len(flog) and llog[len(flog) - 1].epoch != flog[-1].epoch
            )
            if not diverged:
                continue
            offset = _first_non_matching_offset_from_tail(llog, flog)
            out.append(
                (
                    self._truncate[follower][leader],
                    put(logs, follower, flog[:offset]),
                    put(states, follower, _new(ReplicaState, (min(offset, fstate.hw), *fstate[1:]))),
                )
            )

    def inactive_actions(self) -> tuple[str, ...]:
        """FollowerTruncate is the first KIP-320 draft's (truncation = on_fetch) only."""
        return () if self.config.truncation == "on_fetch" else ("FollowerTruncate",)

    def symbolic(self) -> Any:
        from kmc.models.replication.symbolic import ReplicationEncoding

        return ReplicationEncoding(self)

    def drawing(self) -> ReplicationDrawing:
        return ReplicationDrawing(self.config.replicas)

    # -- symmetry ------------------------------------------------------------------------------
    def symmetry(self, s: ReplicationState) -> ReplicationState:
        """Replicas are interchangeable: the least state over all permutations of replica ids."""
        return least_renaming(s, self.replica_ids, permute_replicas, _sort_key)


# -- the C successor function --------------------------------------------------------------------
_TRUNCATIONS = ("hw", "leader_epoch", "matching_offset", "on_fetch", "fenced")
_FETCH_FENCINGS = ("none", "last_fetched_epoch", "current_leader_epoch")
_HW_ADVANCES = ("isr_offsets", "epoch_match", "current_epoch")
_ISR_RULES = ("offsets", "epoch_match", "current_epoch")
"""The flags' values in the order of models/replication/_c/successors.c's enums."""


# -- helpers: the spec's operators ----------------------------------------------------------------
def _action_table(name: str, *sizes: int, prefix: tuple[int, ...] = ()) -> Any:
    """Nested lists of ``name``'s actions, indexed by their arguments (each in range(size))."""
    if not sizes:
        return Action.of(name, zip(ACTION_ARGS[name], prefix, strict=True))
    return [_action_table(name, *sizes[1:], prefix=(*prefix, i)) for i in range(sizes[0])]


_new = tuple.__new__
"""Builds a NamedTuple from a tuple of its fields without NamedTuple's keyword machinery (hot path)."""


def _with(s: ReplicationState, logs: tuple, states: tuple) -> ReplicationState:
    """The state with new replica logs and replica states, everything else shared."""
    return _new(ReplicationState, (logs, states, s[2], s[3], s[4], s[5]))


def _quorum_update(s: ReplicationState, leader: int, isr: frozenset[int]) -> ReplicationState:
    """The leader's conditional ISR write to ZooKeeper (epoch unchanged, no LeaderAndIsr sent)."""
    quorum = s.quorumState
    st = s.replicaState[leader]
    return _new(
        ReplicationState,
        (
            s.replicaLog,
            put(s.replicaState, leader, _new(ReplicaState, (st.hw, st.leaderEpoch, st.leader, isr))),
            s.nextRecordId,
            s.nextLeaderEpoch,
            s.leaderAndIsrRequests,
            _new(LeaderAndIsr, (quorum.leaderEpoch, quorum.leader, isr)),
        ),
    )


def _caught_up(s: ReplicationState, leader: int, follower: int, end_offset: int) -> bool:
    """The follower follows the leader and has the offset before end_offset (no epoch check)."""
    if s.replicaState[follower].leader != leader:
        return False
    if end_offset == 0:
        return True
    return len(s.replicaLog[leader]) >= end_offset and len(s.replicaLog[follower]) >= end_offset


def _caught_up_to_leader_epoch(s: ReplicationState, leader: int, follower: int, end_offset: int) -> bool:
    """As _caught_up, and the record before end_offset has the same epoch on both replicas."""
    if s.replicaState[leader].leader != leader or s.replicaState[follower].leader != leader:
        return False
    if end_offset == 0:
        return True
    llog, flog = s.replicaLog[leader], s.replicaLog[follower]
    return (
        len(llog) >= end_offset and len(flog) >= end_offset and flog[end_offset - 1].epoch == llog[end_offset - 1].epoch
    )


def _follows_leader_epoch(s: ReplicationState, leader: int, follower: int) -> bool:
    lstate, fstate = s.replicaState[leader], s.replicaState[follower]
    return lstate.leader == leader and fstate.leader == leader and fstate.leaderEpoch == lstate.leaderEpoch


def _hw_reached_current_epoch(s: ReplicationState, leader: int) -> bool:
    """The leader's HW is at its log end or at a record of its own epoch (KAFKA-7128)."""
    state, log = s.replicaState[leader], s.replicaLog[leader]
    return state.hw == len(log) or (state.hw < len(log) and log[state.hw].epoch == state.leaderEpoch)


def _offset_for_leader_epoch(s: ReplicationState, leader: int, follower: int, epoch: int) -> int:
    """KIP-101's OffsetsForLeaderEpoch answer, falling back to the follower's HW."""
    llog = s.replicaLog[leader]
    if not llog:
        return s.replicaState[follower].hw
    if llog[-1].epoch == epoch:
        return len(llog)
    larger = [offset for offset, record in enumerate(llog) if record.epoch > epoch]
    return larger[0] if larger else s.replicaState[follower].hw


def _first_non_matching_offset_from_tail(leader_log: tuple[Record, ...], log: tuple[Record, ...]) -> int:
    """One past the largest offset at which both logs hold the same record (KIP-279)."""
    if not leader_log:
        return 0
    for offset in range(min(len(log), len(leader_log)) - 1, -1, -1):
        if log[offset] == leader_log[offset]:
            return offset + 1
    return 0


def permute_replicas(s: ReplicationState, perm: tuple[int, ...]) -> ReplicationState:
    """Rename replica i to perm[i]."""

    def rid(r: int) -> int:
        return r if r == NO_LEADER else perm[r]

    def rset(rs: frozenset[int]) -> frozenset[int]:
        return frozenset(perm[r] for r in rs)

    n = len(perm)
    logs: list = [None] * n
    states: list = [None] * n
    for r in range(n):
        logs[perm[r]] = s.replicaLog[r]
        st = s.replicaState[r]
        states[perm[r]] = ReplicaState(st.hw, st.leaderEpoch, rid(st.leader), rset(st.isr))
    quorum = s.quorumState
    return ReplicationState(
        tuple(logs),
        tuple(states),
        s.nextRecordId,
        s.nextLeaderEpoch,
        frozenset(LeaderAndIsr(q.leaderEpoch, rid(q.leader), rset(q.isr)) for q in s.leaderAndIsrRequests),
        LeaderAndIsr(quorum.leaderEpoch, rid(quorum.leader), rset(quorum.isr)),
    )


def _sort_key(s: ReplicationState) -> tuple:
    def isr_key(isr: frozenset[int]) -> tuple[int, ...]:
        return tuple(sorted(isr))

    return (
        s.replicaLog,
        tuple((st.hw, st.leaderEpoch, st.leader, isr_key(st.isr)) for st in s.replicaState),
        tuple(sorted((q.leaderEpoch, q.leader, isr_key(q.isr)) for q in s.leaderAndIsrRequests)),
        (s.quorumState.leaderEpoch, s.quorumState.leader, isr_key(s.quorumState.isr)),
    )
