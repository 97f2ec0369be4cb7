"""Properties of the `kraft-quorum` model (KIP-595): Raft's safety invariants as
Kafka states them, and the liveness of elections."""

from __future__ import annotations

from functools import cache

from kmc.checker import Action, invariant, leads_to, step
from kmc.models.kraft_quorum.model import LEADER, PROSPECTIVE, QuorumState, Record, VotersRecord

Log = tuple[Record | VotersRecord, ...]


@invariant
def ElectionSafety(s: QuorumState) -> bool:
    """At most one leader per epoch."""
    epochs = [v.epoch for v in s.voters if v.role == LEADER]
    return len(epochs) < 2 or len(epochs) == len(set(epochs))


# The log invariants depend on the logs (and the committed history, the high watermarks) alone,
# which far fewer states differ in than in the rest: each is computed once per distinct value.


@invariant
def LogMatching(s: QuorumState) -> bool:
    """Two logs with a record of the same epoch at the same offset are identical up to it."""
    return _logs_match(tuple([v.log for v in s.voters]))


@cache
def _logs_match(logs: tuple[Log, ...]) -> bool:
    for i, a in enumerate(logs):
        for b in logs[i + 1 :]:
            for offset in range(min(len(a), len(b)) - 1, -1, -1):
                if a[offset].epoch == b[offset].epoch:
                    if a[: offset + 1] != b[: offset + 1]:
                        return False
                    break
    return True


@invariant
def LeaderCompleteness(s: QuorumState) -> bool:
    """A leader holds every record committed in an earlier epoch."""
    for v in s.voters:
        if v.role != LEADER:
            continue
        for offset, record in enumerate(s.committed):
            if record.commitEpoch < v.epoch and (offset >= len(v.log) or v.log[offset].epoch != record.epoch):
                return False
    return True


@invariant
def Durability(s: QuorumState) -> bool:
    """Every committed record is still on at least one voter."""
    return not s.committed or _still_on_a_voter(s.committed, tuple([v.log for v in s.voters]))


@cache
def _still_on_a_voter(committed: tuple, logs: tuple[Log, ...]) -> bool:
    epochs = [c.epoch for c in committed]
    return any([r.epoch for r in log[: len(epochs)]] == epochs for log in logs)


@invariant
def ReadCommitted(s: QuorumState) -> bool:
    """What a voter exposes to its readers -- its log below its high watermark -- is committed: the
    active controller and every standby replay only records no leader will ever truncate."""
    committed = s.committed
    return all([not v.highWatermark or _reads_committed(committed, v.log, v.highWatermark) for v in s.voters])


@cache
def _reads_committed(committed: tuple, log: Log, hw: int) -> bool:
    return hw <= len(committed) and [r.epoch for r in log[:hw]] == [c.epoch for c in committed[:hw]]


@step
def HighWatermarkMonotonic(s: QuorumState, action: Action, t: QuorumState) -> bool:
    """No voter's high watermark ever decreases (a restart forgets it and the voter relearns it; a
    lost disk loses it)."""
    voters = s.voters
    if voters is t.voters:
        return True
    i = 0
    for after in t.voters:  # checked on every step: a counter costs less than enumerate's tuples
        before = voters[i]
        # a voter the step did not touch is the same object; a restart or a lost disk forgets the HW
        if (
            after is not before
            and after.highWatermark < before.highWatermark
            and (action[0] not in ("Restart", "LoseDisk") or action.args["voter"] != i)
        ):
            return False
        i += 1  # noqa: SIM113
    return True


@step
def ResignOnlyWithoutQuorum(s: QuorumState, action: Action, t: QuorumState, model) -> bool:  # type: ignore[no-untyped-def]
    """Check-quorum makes a leader resign only when a majority can no longer fetch from it."""
    if action[0] != "CheckQuorumResign":  # the action's name (checked on every step: no property call)
        return True
    return model.quorum_lost(s, action.args["leader"])


def has_functioning_leader(s: QuorumState, model) -> bool:  # type: ignore[no-untyped-def]
    """A leader that a majority of voters (itself included) follows in its epoch and can reach."""
    return any(model.functioning(s, c) for c in range(len(s.voters)))


@step
def NoDisruptiveCandidate(s: QuorumState, action: Action, t: QuorumState, model) -> bool:  # type: ignore[no-untyped-def]
    """Pre-vote's purpose (KIP-996): a voter that could not win when it stood for election (cut off
    from a majority of its voter set, or with a log behind a majority's) never forces a
    functioning leader to step down -- its (pre-)vote request never takes the leader, or enough of
    its followers, into a newer epoch."""
    if action.name != "RequestVote" or action.args["candidate"] not in s.hopeless:
        return True
    return not any(model.functioning(s, v) and not model.functioning(t, v) for v in range(len(s.voters)))


@leads_to(lambda s, model: not has_functioning_leader(s, model))
def EventuallyLeaderElected(s: QuorumState, model) -> bool:  # type: ignore[no-untyped-def]
    """Whenever the quorum has no functioning leader, it eventually gets one."""
    return has_functioning_leader(s, model)


@leads_to(lambda s: s.voters[0].role == PROSPECTIVE)
def NotStuckInProspective(s: QuorumState) -> bool:
    """A voter that starts a pre-vote leaves Prospective. Stated for voter 0; voters are
    interchangeable (the model is symmetric under renaming them), so it covers every voter."""
    return s.voters[0].role != PROSPECTIVE


def _deposed(s: QuorumState) -> bool:
    epochs = [v.epoch for v in s.voters if v.role == LEADER]
    return len(epochs) > 1 and min(epochs) < max(epochs)


@leads_to(_deposed)
def DeposedLeaderResigns(s: QuorumState) -> bool:
    """A leader whose quorum has elected a newer one stops acting as leader (and stops serving its
    stale metadata)."""
    return not _deposed(s)
