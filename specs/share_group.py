"""Properties of the `share-group` model: what a share group promises about one partition's records.

Share groups deliver at least once: a record may be delivered again after a release, a lock timeout
or a failed write, but never to two consumers under locks both still running, never after its
acceptance was confirmed, and never more than the delivery limit.
"""

from __future__ import annotations

from kmc.checker import Action, eventually, invariant, step
from kmc.models.share_group.model import ShareGroupModel
from kmc.models.share_group.state import (
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    NO_TIMER,
    TERMINAL,
    ShareGroupState,
)


@invariant
def NoRecordUnderTwoLocks(s: ShareGroupState) -> bool:
    """No record is held under two acquisition locks whose duration has not run out (by two
    consumers, or twice by one): while a lock runs, its record is delivered to nobody else."""
    holders: dict[int, int] = {}
    for consumer in s.consumers:
        for offset, timer in consumer.held:
            if timer != NO_TIMER and not s.timers[timer].expired:
                holders[offset] = holders.get(offset, 0) + 1
    return all(n <= 1 for n in holders.values())


@invariant
def AcquiredRecordHasLock(s: ShareGroupState) -> bool:
    """Every acquired record (no write of a new state in flight) has a lock that will release it:
    one not cancelled whose timeout handler has not run. Without one, a consumer that stops leaves
    the record acquired for good."""
    for r in s.records:
        if r.state != ACQUIRED or r.rollback is not None:
            continue
        if r.timer == NO_TIMER or s.timers[r.timer].cancelled or s.timers[r.timer].handled:
            return False
    return True


@invariant
def AcceptedNeverRedelivered(s: ShareGroupState) -> bool:
    """A record whose ACCEPT the consumer was told succeeded is finished: never available or
    acquired again."""
    return all(s.records[o].state in TERMINAL for o in s.accepted)


@invariant
def DeliveryCountBounded(s: ShareGroupState, model: ShareGroupModel) -> bool:
    """No record is delivered more than the delivery limit, and one at the limit is never made
    available again (it is archived)."""
    limit = model.config.delivery_count_limit
    for r in s.records:
        if r.deliveryCount > limit or (r.state == AVAILABLE and r.rollback is None and r.deliveryCount >= limit):
            return False
    return True


@invariant
def DeliveriesWithinTheLimit(s: ShareGroupState, model: ShareGroupModel) -> bool:
    """No record is handed to consumers more times than the delivery limit, counting every delivery,
    also those a delivery count no longer shows."""
    limit = model.config.delivery_count_limit
    return all(n <= limit for n in s.deliveries)


@step
def FinishedStaysFinished(s: ShareGroupState, action: Action, t: ShareGroupState) -> bool:
    """A finished record stays finished: acknowledged or archived with no write of its state in
    flight, or archived by a log-start move (the log no longer holds it)."""
    for offset, (before, after) in enumerate(zip(s.records, t.records, strict=True)):
        gone = before.state == ARCHIVED and offset in s.archivedByLogStart
        finished = (before.state in TERMINAL and before.rollback is None) or gone
        if finished and after.state != before.state:
            return False
    return True


@invariant
def PersistedNotOlderThanAccepted(s: ShareGroupState) -> bool:
    """What the share coordinator holds is never older than an acceptance the consumer was told
    of: a new leader that loads it would deliver the record again."""
    return all(s.persisted[o][0] == ACKNOWLEDGED or o < s.persistedStartOffset for o in s.accepted)


@step
def StartOffsetNeverMovesBack(s: ShareGroupState, action: Action, t: ShareGroupState) -> bool:
    """The share-partition start offset, in the leader and as persisted, never moves back."""
    return t.startOffset >= s.startOffset and t.persistedStartOffset >= s.persistedStartOffset


@eventually
def EveryRecordFinished(s: ShareGroupState) -> bool:
    """Every record the log still holds is eventually acknowledged or archived (consumers
    acknowledge what they hold, locks run out, the share coordinator answers; the faults are
    bounded). A record before the log start offset is gone whatever its state."""
    return all(
        (r.state in TERMINAL and r.rollback is None) or offset < s.logStartOffset for offset, r in enumerate(s.records)
    )
