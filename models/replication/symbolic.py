"""The `replication` model as z3 formulas, for every preset: bmc and prove on the same semantics.

Logs are fixed arrays of LogSize slots with a length; slots past the end hold -1. The controller
sends exactly one LeaderAndIsr request per leader epoch (it bumps the epoch each time), so the set
of requests is an array indexed by epoch, filled below ``nextLeaderEpoch``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import z3
from kmc.checker import Action, Model
from kmc.checker.engines.symbolic.encoding import ActionLabels, Frame, SymbolicEncoding, Var, becomes, select
from kmc.models.replication.state import ACTION_ARGS, NO_LEADER, LeaderAndIsr, Record, ReplicaState, ReplicationState

LABELS = ActionLabels(ACTION_ARGS)
EMPTY = -1
"""The record id and epoch of a slot past the end of a log."""
OUT_OF_RANGE = z3.IntVal(-2)


class ReplicationEncoding(SymbolicEncoding):
    action_schema: ClassVar[dict[str, Var]] = LABELS.schema

    def __init__(self, model: Model) -> None:
        super().__init__(model)
        c = model.config
        self.n, self.size, self.epochs = c.replicas, c.log_size, c.max_leader_epoch + 1
        n, size, e = self.n, self.size, self.epochs
        self.state_schema = {
            "logId": Var("int", (n, size)),
            "logEpoch": Var("int", (n, size)),
            "logEnd": Var("int", (n,)),
            "hw": Var("int", (n,)),
            "leaderEpoch": Var("int", (n,)),
            "leader": Var("int", (n,)),
            "isr": Var("bool", (n, n)),
            "nextRecordId": Var("int"),
            "nextLeaderEpoch": Var("int"),
            "requestLeader": Var("int", (e,)),
            "requestIsr": Var("bool", (e, n)),
            "quorumEpoch": Var("int"),
            "quorumLeader": Var("int"),
            "quorumIsr": Var("bool", (n,)),
        }

    # -- explicit <-> symbolic -----------------------------------------------------------------
    def values(self, s: ReplicationState) -> dict[str, Any]:
        n, size, e = self.n, self.size, self.epochs

        def padded(log: tuple[Record, ...], field: int) -> list[int]:
            return [rec[field] for rec in log] + [EMPTY] * (size - len(log))

        request_leader, request_isr = [NO_LEADER] * e, [[False] * n for _ in range(e)]
        for request in s.leaderAndIsrRequests:
            request_leader[request.leaderEpoch] = request.leader
            request_isr[request.leaderEpoch] = [r in request.isr for r in range(n)]
        if len(s.leaderAndIsrRequests) != s.nextLeaderEpoch:
            raise ValueError("not one LeaderAndIsr request per leader epoch")
        q = s.quorumState
        return {
            "logId": [padded(log, 0) for log in s.replicaLog],
            "logEpoch": [padded(log, 1) for log in s.replicaLog],
            "logEnd": [len(log) for log in s.replicaLog],
            "hw": [st.hw for st in s.replicaState],
            "leaderEpoch": [st.leaderEpoch for st in s.replicaState],
            "leader": [st.leader for st in s.replicaState],
            "isr": [[r in st.isr for r in range(n)] for st in s.replicaState],
            "nextRecordId": s.nextRecordId,
            "nextLeaderEpoch": s.nextLeaderEpoch,
            "requestLeader": request_leader,
            "requestIsr": request_isr,
            "quorumEpoch": q.leaderEpoch,
            "quorumLeader": q.leader,
            "quorumIsr": [r in q.isr for r in range(n)],
        }

    def state(self, v: dict[str, Any]) -> ReplicationState:
        n = self.n

        def members(flags: list[bool]) -> frozenset[int]:
            return frozenset(r for r in range(n) if flags[r])

        logs = tuple(
            tuple(Record(v["logId"][r][i], v["logEpoch"][r][i]) for i in range(v["logEnd"][r])) for r in range(n)
        )
        states = tuple(
            ReplicaState(v["hw"][r], v["leaderEpoch"][r], v["leader"][r], members(v["isr"][r])) for r in range(n)
        )
        requests = frozenset(
            LeaderAndIsr(e, v["requestLeader"][e], members(v["requestIsr"][e])) for e in range(v["nextLeaderEpoch"])
        )
        quorum = LeaderAndIsr(v["quorumEpoch"], v["quorumLeader"], members(v["quorumIsr"]))
        return ReplicationState(logs, states, v["nextRecordId"], v["nextLeaderEpoch"], requests, quorum)

    def action(self, a: dict[str, Any]) -> Action:
        return LABELS.decode(a)

    # -- the transition system -----------------------------------------------------------------
    def well_formed(self, v: Frame) -> z3.BoolRef:
        n, size, e = self.n, self.size, self.epochs
        ids = lambda x: z3.And(x >= NO_LEADER, x < n)  # noqa: E731
        parts = [ids(v.quorumLeader), v.nextRecordId >= 0]
        parts += [v.nextLeaderEpoch >= 0, v.nextLeaderEpoch <= e]
        for r in range(n):
            parts += [v.logEnd[r] >= 0, v.logEnd[r] <= size, v.hw[r] >= 0, v.hw[r] <= size, ids(v.leader[r])]
            for i in range(size):
                past = i >= v.logEnd[r]
                parts.append(z3.Implies(past, z3.And(v.logId[r][i] == EMPTY, v.logEpoch[r][i] == EMPTY)))
        for epoch in range(e):
            unsent = epoch >= v.nextLeaderEpoch
            parts.append(ids(v.requestLeader[epoch]))
            parts.append(
                z3.Implies(
                    unsent, z3.And(v.requestLeader[epoch] == NO_LEADER, *(z3.Not(x) for x in v.requestIsr[epoch]))
                )
            )
        return z3.And(parts)

    def init(self, v: Frame) -> z3.BoolRef:
        return v.equals(self.values(self.model.init_states()[0]))

    def next(self, v: Frame, a: Frame, w: Frame) -> z3.BoolRef:
        n, steps = self.n, []
        for r in range(n):
            steps.append(self._controller_elect_leader(v, w, r))
            steps.append(self._controller_shrink_isr(v, w, r))
            steps.append(self._leader_write(v, w, r))
            steps.append(self._leader_inc_high_watermark(v, w, r))
            for epoch in range(self.epochs):
                steps.append(self._become_leader(v, w, r, epoch))
            for other in range(n):
                steps.append(self._leader_shrink_isr(v, w, r, other))
                steps.append(self._leader_expand_isr(v, w, r, other))
                if other == r:
                    continue
                steps.append(self._follower_fetch(v, w, r, other))
                if self.config.truncation == "on_fetch":
                    steps.append(self._follower_truncate(v, w, r, other))
                for epoch in range(self.epochs):
                    steps.append(self._become_follower(v, w, r, other, epoch))
        return z3.Or([z3.And(LABELS.label(a, name, args), formula) for name, args, formula in steps])

    # -- operators -----------------------------------------------------------------------------
    def epoch_at(self, v: Frame, r: int, offset: Any) -> Any:
        return select(v.logEpoch[r], offset, OUT_OF_RANGE)

    def same_record(self, v: Frame, a: int, b: int, i: int) -> z3.BoolRef:
        return z3.And(v.logId[a][i] == v.logId[b][i], v.logEpoch[a][i] == v.logEpoch[b][i])

    def first_non_matching_offset(self, v: Frame, leader: int, r: int) -> Any:
        """One past the largest offset at which both logs hold the same record; 0 if none."""
        result: Any = z3.IntVal(0)
        for i in range(self.size):
            matches = z3.And(i < v.logEnd[r], i < v.logEnd[leader], self.same_record(v, leader, r, i))
            result = z3.If(matches, i + 1, result)
        return z3.If(v.logEnd[leader] == 0, 0, result)

    def offset_for_leader_epoch(self, v: Frame, leader: int, r: int, epoch: Any) -> Any:
        """KIP-101's OffsetsForLeaderEpoch answer, falling back to the follower's HW."""
        first_larger: Any = v.hw[r]
        for i in range(self.size - 1, -1, -1):
            first_larger = z3.If(z3.And(i < v.logEnd[leader], v.logEpoch[leader][i] > epoch), i, first_larger)
        end = v.logEnd[leader]
        return z3.If(end == 0, v.hw[r], z3.If(self.epoch_at(v, leader, end - 1) == epoch, end, first_larger))

    def caught_up(self, v: Frame, leader: int, f: int, end: Any) -> z3.BoolRef:
        return z3.And(v.leader[f] == leader, z3.Or(end == 0, z3.And(v.logEnd[leader] >= end, v.logEnd[f] >= end)))

    def caught_up_to_leader_epoch(self, v: Frame, leader: int, f: int, end: Any) -> z3.BoolRef:
        same_epoch = self.epoch_at(v, f, end - 1) == self.epoch_at(v, leader, end - 1)
        return z3.And(
            v.leader[leader] == leader,
            v.leader[f] == leader,
            z3.Or(end == 0, z3.And(v.logEnd[leader] >= end, v.logEnd[f] >= end, same_epoch)),
        )

    def follows_leader_epoch(self, v: Frame, leader: int, f: int) -> z3.BoolRef:
        return z3.And(v.leader[leader] == leader, v.leader[f] == leader, v.leaderEpoch[f] == v.leaderEpoch[leader])

    def hw_reached_current_epoch(self, v: Frame, leader: int) -> z3.BoolRef:
        hw, end = v.hw[leader], v.logEnd[leader]
        return z3.Or(hw == end, z3.And(hw < end, self.epoch_at(v, leader, hw) == v.leaderEpoch[leader]))

    def _log_updates(self, v: Frame, r: int, new_end: Any, slot: Any = None) -> dict[tuple, Any]:
        """Replica r's log truncated (or kept) to new_end; ``slot(i)`` gives an appended record."""
        updates: dict[tuple, Any] = {("logEnd", r): new_end}
        for i in range(self.size):
            keep = i < new_end
            rec_id, rec_epoch = slot(i) if slot is not None else (v.logId[r][i], v.logEpoch[r][i])
            updates[("logId", r, i)] = z3.If(keep, rec_id, EMPTY)
            updates[("logEpoch", r, i)] = z3.If(keep, rec_epoch, EMPTY)
        return updates

    # -- actions -------------------------------------------------------------------------------
    def _controller_update(self, v: Frame, leader: Any, isr: list[Any]) -> dict[tuple, Any]:
        epoch = v.nextLeaderEpoch
        updates: dict[tuple, Any] = {
            ("nextLeaderEpoch",): epoch + 1,
            ("quorumEpoch",): epoch,
            ("quorumLeader",): leader,
        }
        for j in range(self.n):
            updates[("quorumIsr", j)] = isr[j]
        for e in range(self.epochs):
            updates[("requestLeader", e)] = z3.If(epoch == e, leader, v.requestLeader[e])
            for j in range(self.n):
                updates[("requestIsr", e, j)] = z3.If(epoch == e, isr[j], v.requestIsr[e][j])
        return updates

    def _controller_elect_leader(self, v: Frame, w: Frame, c: int) -> tuple:
        guard = z3.And(v.nextLeaderEpoch <= self.config.max_leader_epoch, v.quorumIsr[c], v.quorumLeader != c)
        return "ControllerElectLeader", (c,), z3.And(guard, becomes(v, w, self._controller_update(v, c, v.quorumIsr)))

    def _controller_shrink_isr(self, v: Frame, w: Frame, r: int) -> tuple:
        was_leader = v.quorumLeader == r
        guard = z3.And(v.nextLeaderEpoch <= self.config.max_leader_epoch, z3.Or(was_leader, v.quorumIsr[r]))
        only_r = z3.And(v.quorumIsr[r], *(z3.Not(v.quorumIsr[j]) for j in range(self.n) if j != r))
        keep = z3.And(was_leader, only_r)
        isr = [z3.If(keep, v.quorumIsr[j], z3.And(v.quorumIsr[j], j != r)) for j in range(self.n)]
        leader = z3.If(was_leader, NO_LEADER, v.quorumLeader)
        return "ControllerShrinkIsr", (r,), z3.And(guard, becomes(v, w, self._controller_update(v, leader, isr)))

    def _become_leader(self, v: Frame, w: Frame, r: int, epoch: int) -> tuple:
        guard = z3.And(epoch < v.nextLeaderEpoch, v.requestLeader[epoch] == r, epoch > v.leaderEpoch[r])
        updates: dict[tuple, Any] = {("leaderEpoch", r): epoch, ("leader", r): r}
        for j in range(self.n):
            updates[("isr", r, j)] = v.requestIsr[epoch][j]
        return "BecomeLeader", (r, epoch), z3.And(guard, becomes(v, w, updates))

    def _become_follower(self, v: Frame, w: Frame, r: int, leader: int, epoch: int) -> tuple:
        mode = self.config.truncation
        guard = [epoch < v.nextLeaderEpoch, v.requestLeader[epoch] == leader, epoch > v.leaderEpoch[r]]
        if mode == "fenced":
            guard += [v.leader[leader] == leader, v.leaderEpoch[leader] == epoch]
        updates: dict[tuple, Any] = {("leaderEpoch", r): epoch, ("leader", r): leader}
        for j in range(self.n):
            updates[("isr", r, j)] = v.requestIsr[epoch][j]
        if mode != "on_fetch":
            if mode == "hw":
                offset = v.hw[r]
            elif mode == "leader_epoch":
                last_epoch = self.epoch_at(v, r, v.logEnd[r] - 1)
                offset = z3.If(v.logEnd[r] == 0, 0, self.offset_for_leader_epoch(v, leader, r, last_epoch))
            else:
                offset = self.first_non_matching_offset(v, leader, r)
            guard.append(offset <= v.logEnd[r])
            updates.update(self._log_updates(v, r, offset))
            updates[("hw", r)] = z3.If(offset < v.hw[r], offset, v.hw[r])
        return "BecomeFollower", (r, leader, epoch), z3.And(*guard, becomes(v, w, updates))

    def _leader_write(self, v: Frame, w: Frame, r: int) -> tuple:
        end = v.logEnd[r]
        guard = z3.And(v.nextRecordId <= self.config.max_records - 1, v.leader[r] == r, end < self.size)
        updates = self._log_updates(
            v,
            r,
            end + 1,
            lambda i: (
                z3.If(i == end, v.nextRecordId, v.logId[r][i]),
                z3.If(i == end, v.leaderEpoch[r], v.logEpoch[r][i]),
            ),
        )
        updates[("nextRecordId",)] = v.nextRecordId + 1
        return "LeaderWrite", (r, v.nextRecordId), z3.And(guard, becomes(v, w, updates))

    def _leader_inc_high_watermark(self, v: Frame, w: Frame, r: int) -> tuple:
        mode, hw, n = self.config.hw_advance, v.hw[r], self.n
        presumes = v.leader[r] == r
        members = [(f, v.isr[r][f]) for f in range(n)]
        if mode == "isr_offsets":
            ok = z3.And(
                presumes,
                hw < self.size,
                *(z3.Implies(m, z3.And(v.leader[f] == r, v.logEnd[f] > hw)) for f, m in members),
            )
        elif mode == "epoch_match":
            caught_up = [z3.Implies(m, self.caught_up_to_leader_epoch(v, r, f, hw + 1)) for f, m in members]
            ok = z3.And(presumes, v.logEnd[r] > hw, *caught_up)
        else:
            isr_empty = z3.Not(z3.Or([m for _, m in members]))
            ok = z3.And(
                z3.Or(presumes, isr_empty),
                v.logEnd[r] > hw,
                *(z3.Implies(m, z3.And(self.follows_leader_epoch(v, r, f), v.logEnd[f] > hw)) for f, m in members),
            )
        return "LeaderIncHighWatermark", (r,), z3.And(ok, becomes(v, w, {("hw", r): hw + 1}))

    def _isr_write_guard(self, v: Frame, leader: int) -> z3.BoolRef:
        return z3.And(v.quorumLeader == leader, v.leader[leader] == leader, v.leaderEpoch[leader] == v.quorumEpoch)

    def _isr_write(self, v: Frame, w: Frame, leader: int, replica: int, member: bool) -> z3.BoolRef:
        updates: dict[tuple, Any] = {}
        for j in range(self.n):
            flag = member if j == replica else v.isr[leader][j]
            updates[("isr", leader, j)] = flag
            updates[("quorumIsr", j)] = flag
        return becomes(v, w, updates)

    def _leader_shrink_isr(self, v: Frame, w: Frame, leader: int, r: int) -> tuple:
        if r == leader:
            return "LeaderShrinkIsr", (leader, r), z3.BoolVal(False)
        mode, end = self.config.isr_rules, v.logEnd[leader]
        if mode == "offsets":
            lagging = z3.Not(self.caught_up(v, leader, r, end))
        elif mode == "epoch_match":
            lagging = z3.Not(self.caught_up_to_leader_epoch(v, leader, r, end))
        else:
            lagging = z3.Or(z3.Not(self.follows_leader_epoch(v, leader, r)), v.logEnd[r] < end)
        guard = z3.And(self._isr_write_guard(v, leader), v.isr[leader][r], lagging)
        return "LeaderShrinkIsr", (leader, r), z3.And(guard, self._isr_write(v, w, leader, r, False))

    def _leader_expand_isr(self, v: Frame, w: Frame, leader: int, r: int) -> tuple:
        mode, hw = self.config.isr_rules, v.hw[leader]
        if mode == "offsets":
            eligible = self.caught_up(v, leader, r, hw)
        elif mode == "epoch_match":
            reached = self.hw_reached_current_epoch(v, leader)
            eligible = z3.And(self.caught_up_to_leader_epoch(v, leader, r, hw), reached)
        else:
            eligible = z3.And(
                self.follows_leader_epoch(v, leader, r),
                z3.Or(hw == 0, v.logEnd[r] >= hw),
                self.hw_reached_current_epoch(v, leader),
            )
        guard = z3.And(self._isr_write_guard(v, leader), z3.Not(v.isr[leader][r]), eligible)
        return "LeaderExpandIsr", (leader, r), z3.And(guard, self._isr_write(v, w, leader, r, True))

    def _follower_fetch(self, v: Frame, w: Frame, f: int, leader: int) -> tuple:
        mode, end = self.config.fetch_fencing, v.logEnd[f]
        guard = [v.leader[f] == leader, v.leader[leader] == leader, end < v.logEnd[leader]]
        if mode == "last_fetched_epoch":
            guard.append(z3.Or(end == 0, self.epoch_at(v, f, end - 1) == self.epoch_at(v, leader, end - 1)))
        elif mode == "current_leader_epoch":
            guard.append(v.leaderEpoch[f] == v.leaderEpoch[leader])
        updates = self._log_updates(
            v,
            f,
            end + 1,
            lambda i: (
                z3.If(i == end, v.logId[leader][i], v.logId[f][i]),
                z3.If(i == end, v.logEpoch[leader][i], v.logEpoch[f][i]),
            ),
        )
        updates[("hw", f)] = z3.If(v.hw[leader] < end + 1, v.hw[leader], end + 1)
        return "FollowerFetch", (f, leader), z3.And(*guard, becomes(v, w, updates))

    def _follower_truncate(self, v: Frame, w: Frame, f: int, leader: int) -> tuple:
        end, lend = v.logEnd[f], v.logEnd[leader]
        diverged = z3.Or(
            end > lend,
            z3.And(end > 0, lend >= end, self.epoch_at(v, leader, end - 1) != self.epoch_at(v, f, end - 1)),
        )
        guard = z3.And(v.leader[f] == leader, v.leader[leader] == leader, diverged)
        offset = self.first_non_matching_offset(v, leader, f)
        updates = self._log_updates(v, f, offset)
        updates[("hw", f)] = z3.If(offset < v.hw[f], offset, v.hw[f])
        return "FollowerTruncate", (f, leader), z3.And(guard, becomes(v, w, updates))


# -- the properties of specs/replication.py, symbolically ------------------------------------------
def prefix_equal(enc: ReplicationEncoding, v: Frame, a: int, b: int, length: Any) -> z3.BoolRef:
    """Replicas a and b hold the same records at every offset below ``length``."""
    return z3.And(
        v.logEnd[a] >= length,
        v.logEnd[b] >= length,
        *(z3.Implies(i < length, enc.same_record(v, a, b, i)) for i in range(enc.size)),
    )


def replicated_below_hw(enc: ReplicationEncoding, v: Frame, leader: int, members: list[Any]) -> z3.BoolRef:
    hw = v.hw[leader]
    return z3.Or(
        hw == 0,
        z3.And(
            v.logEnd[leader] >= hw, *(z3.Implies(members[m], prefix_equal(enc, v, leader, m, hw)) for m in range(enc.n))
        ),
    )


def weak_isr(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    return z3.And([z3.Implies(v.leader[r] == r, replicated_below_hw(enc, v, r, v.isr[r])) for r in range(enc.n)])


def strong_isr(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    return z3.And([z3.Implies(v.leader[r] == r, replicated_below_hw(enc, v, r, v.quorumIsr)) for r in range(enc.n)])


def leader_in_isr(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    return z3.Or(v.quorumLeader == NO_LEADER, select(v.quorumIsr, v.quorumLeader, z3.BoolVal(False)))


def log_matching(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    parts = []
    for a in range(enc.n):
        for b in range(a + 1, enc.n):
            common = z3.If(v.hw[a] < v.hw[b], v.hw[a], v.hw[b])
            parts.append(z3.Or(common == 0, prefix_equal(enc, v, a, b, common)))
    return z3.And(parts)


ReplicationEncoding.invariants = {
    "WeakIsr": weak_isr,
    "StrongIsr": strong_isr,
    "LeaderInIsr": leader_in_isr,
    "LogMatching": log_matching,
}


# -- lemmas: with these, StrongIsr is inductive for kip-320 with 2 replicas (`kmc prove`) -----------
# Each is a claim of its own, proven along with StrongIsr; none is assumed.
def _rng(enc: ReplicationEncoding) -> range:
    return range(enc.n)


def Epochs(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """Bookkeeping: epochs below nextLeaderEpoch, a replica that applied epoch e follows its leader,
    a fresh replica is empty, a leader is in its own ISR, the HW is within the log."""
    parts = [v.quorumEpoch == v.nextLeaderEpoch - 1, v.nextRecordId <= enc.config.max_records]
    for r in _rng(enc):
        parts += [v.leaderEpoch[r] >= -1, v.leaderEpoch[r] < v.nextLeaderEpoch]
        fresh = v.leaderEpoch[r] == -1
        parts.append(
            z3.Implies(fresh, z3.And(v.leader[r] == -1, v.logEnd[r] == 0, v.hw[r] == 0, *(z3.Not(x) for x in v.isr[r])))
        )
        parts.append(z3.Implies(z3.Not(fresh), v.leader[r] == select(v.requestLeader, v.leaderEpoch[r])))
        parts.append(z3.Implies(v.leader[r] == r, v.isr[r][r]))
        parts.append(v.hw[r] <= v.logEnd[r])
    parts.append(z3.Implies(v.nextLeaderEpoch == 0, z3.And(v.quorumLeader == -1, *v.quorumIsr)))
    parts.append(z3.Implies(v.nextLeaderEpoch > 0, v.quorumLeader == select(v.requestLeader, v.quorumEpoch)))
    for e in range(enc.epochs):
        parts.append(
            z3.Implies(
                z3.And(e < v.nextLeaderEpoch, v.requestLeader[e] >= 0), select(v.requestIsr[e], v.requestLeader[e])
            )
        )
    parts.append(z3.Implies(v.quorumLeader >= 0, select(v.quorumIsr, v.quorumLeader)))
    return z3.And(parts)


def Records(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """Every record has an epoch no newer than its replica's and an id already handed out; epochs
    never decrease along a log."""
    parts = []
    for r in _rng(enc):
        for i in range(enc.size):
            inside = i < v.logEnd[r]
            parts.append(
                z3.Implies(
                    inside,
                    z3.And(
                        v.logEpoch[r][i] >= 0,
                        v.logEpoch[r][i] <= v.leaderEpoch[r],
                        v.logId[r][i] >= 0,
                        v.logId[r][i] < v.nextRecordId,
                    ),
                )
            )
            if i + 1 < enc.size:
                parts.append(z3.Implies(i + 1 < v.logEnd[r], v.logEpoch[r][i] <= v.logEpoch[r][i + 1]))
    return z3.And(parts)


def UniqueIds(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """A record id is written once: it sits at one offset, with one epoch, in every log that holds it."""
    parts = []
    for a in _rng(enc):
        for b in _rng(enc):
            for i in range(enc.size):
                for j in range(enc.size):
                    both = z3.And(i < v.logEnd[a], j < v.logEnd[b], v.logId[a][i] == v.logId[b][j])
                    if i != j:
                        parts.append(z3.Not(both))
                    elif a < b:
                        parts.append(z3.Implies(both, v.logEpoch[a][i] == v.logEpoch[b][j]))
    return z3.And(parts)


def PrefixMatching(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """Two logs that hold the same record at an offset agree on every offset up to it."""
    parts = []
    for a in _rng(enc):
        for b in _rng(enc):
            if a >= b:
                continue
            for i in range(enc.size):
                same = z3.And(i < v.logEnd[a], i < v.logEnd[b], enc.same_record(v, a, b, i))
                parts.append(z3.Implies(same, prefix_equal(enc, v, a, b, i + 1)))
    return z3.And(parts)


def FollowerIsPrefix(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """A replica following a leader in the leader's epoch holds a prefix of the leader's log."""
    parts = []
    for ld in _rng(enc):
        for f in _rng(enc):
            if f != ld:
                parts.append(z3.Implies(enc.follows_leader_epoch(v, ld, f), prefix_equal(enc, v, f, ld, v.logEnd[f])))
    return z3.And(parts)


def QuorumGrowth(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """A member of the quorum ISR that a presuming leader's ISR (or a pending request's) lacks was
    added after some member of that ISR moved to a newer epoch."""
    n = _rng(enc)
    parts = []

    def covered(isr, epoch):
        moved_on = z3.Or([z3.And(isr[f], v.leaderEpoch[f] > epoch) for f in n])
        return z3.And([z3.Implies(z3.And(v.quorumIsr[m], z3.Not(isr[m])), moved_on) for m in n])

    for r in n:
        parts.append(z3.Implies(v.leader[r] == r, covered(v.isr[r], v.leaderEpoch[r])))
    for e in range(enc.epochs):
        ld = v.requestLeader[e]
        pending = z3.And(e < v.nextLeaderEpoch, ld >= 0, select([v.leaderEpoch[x] for x in n], ld) < e)
        parts.append(z3.Implies(pending, covered(v.requestIsr[e], e)))
    return z3.And(parts)


def EpochRecordsOnLeader(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """A record of a presuming leader's own epoch is at the same offset in the leader's log."""
    parts = []
    for a in _rng(enc):
        for b in _rng(enc):
            if a == b:
                continue
            for i in range(enc.size):
                cond = z3.And(v.leader[a] == a, i < v.logEnd[b], v.logEpoch[b][i] == v.leaderEpoch[a])
                parts.append(z3.Implies(cond, z3.And(i < v.logEnd[a], enc.same_record(v, a, b, i))))
    return z3.And(parts)


def HwCommittedEverywhere(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """Everything below any replica's HW is on every member of the ISR in ZooKeeper."""
    parts = []
    for r in _rng(enc):
        for m in _rng(enc):
            if m != r:
                parts.append(z3.Implies(v.quorumIsr[m], prefix_equal(enc, v, m, r, v.hw[r])))
    return z3.And(parts)


def QuorumIsrMatches(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """The ISR in ZooKeeper is the current leader's ISR, or the last request's while its leader has not taken it."""
    parts = []
    for ld in _rng(enc):
        current = z3.And(v.quorumLeader == ld, v.leader[ld] == ld, v.leaderEpoch[ld] == v.quorumEpoch)
        parts.append(z3.Implies(current, z3.And([v.isr[ld][j] == v.quorumIsr[j] for j in _rng(enc)])))
    for e in range(enc.epochs):
        pending = z3.And(
            v.quorumEpoch == e,
            z3.And(
                [z3.Not(z3.And(v.leader[ld] == ld, v.leaderEpoch[ld] == e, v.quorumLeader == ld)) for ld in _rng(enc)]
            ),
        )
        parts.append(z3.Implies(pending, z3.And([v.requestIsr[e][j] == v.quorumIsr[j] for j in _rng(enc)])))
    return z3.And(parts)


def FollowerAfterLeader(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """KIP-320: a replica follows a leader in epoch e only once the leader is in e."""
    return z3.And(
        [
            z3.Implies(v.leader[f] == ld, v.leaderEpoch[ld] >= v.leaderEpoch[f])
            for ld in _rng(enc)
            for f in _rng(enc)
            if f != ld
        ]
    )


def RecordsNeedTheirLeader(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """A record of epoch e exists only once the leader of e has become leader in e."""
    parts = []
    n = list(_rng(enc))
    for e in range(enc.epochs):
        ld = v.requestLeader[e]
        reached = z3.And(e < v.nextLeaderEpoch, ld >= 0, select([v.leaderEpoch[x] for x in n], ld) >= e)
        for r in n:
            for i in range(enc.size):
                parts.append(z3.Implies(z3.And(i < v.logEnd[r], v.logEpoch[r][i] == e), reached))
    return z3.And(parts)


def FollowerIsrFromRequest(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """A replica that is not leader holds the ISR of the request it applied."""
    parts = []
    n = list(_rng(enc))
    for r in n:
        applied = z3.And(v.leader[r] != r, v.leaderEpoch[r] >= 0)
        for j in n:
            parts.append(
                z3.Implies(
                    applied, v.isr[r][j] == select([v.requestIsr[e][j] for e in range(enc.epochs)], v.leaderEpoch[r])
                )
            )
    return z3.And(parts)


def EmptyIsrIsFinal(enc: ReplicationEncoding, v: Frame) -> z3.BoolRef:
    """Once the controller sends an empty ISR, it can neither elect nor shrink again."""
    n = list(_rng(enc))
    parts = []
    for e in range(enc.epochs):
        empty = z3.And(e < v.nextLeaderEpoch, *(z3.Not(v.requestIsr[e][j]) for j in n))
        parts.append(z3.Implies(empty, z3.And(v.quorumLeader == -1, *(z3.Not(v.quorumIsr[j]) for j in n))))
    return z3.And(parts)


ReplicationEncoding.lemmas = {
    "Epochs": Epochs,
    "Records": Records,
    "UniqueIds": UniqueIds,
    "PrefixMatching": PrefixMatching,
    "FollowerIsPrefix": FollowerIsPrefix,
    "QuorumGrowth": QuorumGrowth,
    "EpochRecordsOnLeader": EpochRecordsOnLeader,
    "HwCommittedEverywhere": HwCommittedEverywhere,
    "QuorumIsrMatches": QuorumIsrMatches,
    "FollowerAfterLeader": FollowerAfterLeader,
    "RecordsNeedTheirLeader": RecordsNeedTheirLeader,
    "FollowerIsrFromRequest": FollowerIsrFromRequest,
    "EmptyIsrIsFinal": EmptyIsrIsFinal,
}
