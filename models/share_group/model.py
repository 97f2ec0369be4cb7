"""Share groups (KIP-932, "queues for Kafka"): one share partition as its leader's ``SharePartition``
holds it, raced by the leader's own threads.

Several consumers read the same partition. A ``ShareFetch`` acquires the next available records for
one consumer under an acquisition lock (an ``AcquisitionLockTimerTask``) and counts a delivery; the
consumer acknowledges each record: ACCEPT (done), RELEASE (deliver it again) or REJECT (archive it).
A record delivered ``group.share.delivery.count.limit`` times is archived instead of made available.
Every change is written to the share coordinator (``writeShareGroupState``): an acknowledgement first
moves the record to its new state with the old one kept for a rollback (``startStateTransition``),
and the write's answer commits or rolls it back (``completeStateTransition``). The share-partition
start offset (SPSO) moves past finished records; retention moving the log start offset archives the
available records before it.

Three of the leader's threads race, each an actor here: the request handler (fetch, acknowledge, the
log-start move a fetch notices), the acquisition-lock timer (``run()`` marks the task expired, then
its handler waits for the partition's lock: two steps) and the persister's callback (the write's
answer). The races of KAFKA-18084 and KAFKA-19476 are between them; each fix is a flag.

Left out: batches (every record is its own in-flight state; an acquisition is a range under one
lock), the fetch lock and purgatory, the group coordinator (membership and assignment: every consumer
is assigned the partition), share sessions, the leader change that reloads the persisted state,
lock renewal (KIP-1222) and the dead-letter queue.
"""

from __future__ import annotations

from kmc.checker import Action, Model
from kmc.checker.search.liveness import WF
from kmc.models.share_group.bugs import BUGS
from kmc.models.share_group.config import ACTION_ARGS, PRESETS, ShareGroupConfig
from kmc.models.share_group.state import (
    ACCEPT,
    ACKNOWLEDGE_TYPES,
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    COORDINATOR_NOT_AVAILABLE,
    EMPTY_MEMBER_ID,
    INVALID_RECORD_STATE,
    NO_TIMER,
    NONE,
    REJECT,
    RELEASE,
    TERMINAL,
    Consumer,
    InFlightState,
    LockTimer,
    PendingWrite,
    Rollback,
    ShareGroupState,
)

Step = tuple[Action, ShareGroupState]

ACKNOWLEDGE_WRITE = "acknowledge"
TIMEOUT_WRITE = "timeout"


def member_id(consumer: int) -> str:
    return f"m{consumer}"


class ShareGroupModel(Model):
    name = "share-group"
    description = "share groups (KIP-932): acquisition locks, acknowledgements and the share-partition leader's races"
    Config = ShareGroupConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "kafka-4.2"
    spec_modules = ("kmc.specs.share_group",)
    actions = tuple(ACTION_ARGS)
    fairness = (
        WF("ShareFetch", each=True),
        WF("ShareAcknowledge", each=True),
        WF("WriteShareGroupStateResponse", each=True, error=NONE),
        WF("AcquisitionLockExpire", each=True),
        WF("AcquisitionLockTimeout", each=True),
    )
    """Consumers fetch and acknowledge what they hold, locks expire and their handlers run, and the
    share coordinator answers; failed writes and retention need not happen at all."""

    config: ShareGroupConfig

    def inactive_actions(self) -> tuple[str, ...]:
        c = self.config
        off = ("LogStartOffsetMove",) if c.max_log_start_moves == 0 else ()
        off += ("LeaderChange",) if c.max_leader_changes == 0 else ()
        return off + (("ShareSessionRelease",) if c.max_session_releases == 0 else ())

    # -- init ------------------------------------------------------------------------------------
    def init_states(self) -> list[ShareGroupState]:
        c = self.config
        fresh = InFlightState(AVAILABLE, 0, EMPTY_MEMBER_ID, NO_TIMER, None, False)
        return [
            ShareGroupState(
                records=(fresh,) * c.records,
                startOffset=0,
                cacheStart=0,
                logStartOffset=0,
                timers=(),
                writes=(),
                persistedStartOffset=0,
                persisted=((AVAILABLE, 0),) * c.records,
                consumers=(Consumer(frozenset()),) * c.consumers,
                accepted=frozenset(),
                archivedByLogStart=frozenset(),
                writeFailures=0,
                logStartMoves=0,
                deliveries=(0,) * c.records,
            )
        ]

    # -- next ------------------------------------------------------------------------------------
    def successors(self, s: ShareGroupState) -> list[Step]:
        out: list[Step] = []
        for c, consumer in enumerate(s.consumers):
            self._share_fetch(s, c, out)
            for offset, _timer in sorted(consumer.held):
                for ack_type in ACKNOWLEDGE_TYPES:
                    out.append(self._acknowledge(s, c, offset, ack_type))
        if s.writes:
            out.append(self._write_answered(s, NONE))
            if s.writeFailures < self.config.max_write_failures:
                out.append(self._write_answered(s, COORDINATOR_NOT_AVAILABLE))
        for index, timer in enumerate(s.timers):
            if not timer.expired and not timer.cancelled:
                out.append(self._lock_expire(s, index))
            if timer.expired and not timer.handled:
                out.append(self._lock_timeout(s, index))
        self._log_start_move(s, out)
        if s.sessionReleases < self.config.max_session_releases:
            for c, consumer in enumerate(s.consumers):
                if consumer.held:
                    out.append(self._session_release(s, c))
        if s.leaderChanges < self.config.max_leader_changes:
            out.append(self._leader_change(s, writes_landed=True))
            if s.writes:
                out.append(self._leader_change(s, writes_landed=False))
        return [(action, _compact_timers(t)) for action, t in out]

    # -- the request handler: ShareFetch ---------------------------------------------------------
    def _takeable(self, record: InFlightState) -> bool:
        """Available, and (since KAFKA-18084) with no transition in flight."""
        return record.state == AVAILABLE and (record.rollback is None or not self.config.kafka_18084)

    def _acquirable(self, s: ShareGroupState, offset: int) -> bool:
        return offset >= s.logStartOffset and self._takeable(s.records[offset])

    def next_fetch_offset(self, s: ShareGroupState) -> int:
        """``nextFetchOffset``: the first available record of the leader's cache (none whose
        transition is in flight), wherever it is; past the cache when it has none."""
        cached = _cached(s)
        if not cached or s.startOffset > cached[-1]:
            return s.startOffset
        return next((o for o in cached if self._takeable(s.records[o])), cached[-1] + 1)

    def _share_fetch(self, s: ShareGroupState, c: int, out: list[Step]) -> None:
        """``SharePartition.acquire`` from the next fetch offset: available records, up to
        maxFetchRecords in a row, each ACQUIRED with one more delivery, under one new acquisition
        lock. A fetch offset the log no longer holds reads nothing (the log-start move it would
        report is not past the SPSO)."""
        fetch_offset = self.next_fetch_offset(s)
        if fetch_offset >= len(s.records):
            return
        if fetch_offset < s.logStartOffset:
            # the read is out of range: the leader learns the log start (updateCacheAndOffsets), which
            # changes something only when it is past the SPSO
            if s.logStartOffset > s.startOffset:
                out.append((_act("ShareFetch", c, -1, -1), self._apply_log_start(s, s.logStartOffset)))
            return
        offsets = [o for o in range(fetch_offset, len(s.records)) if self._acquirable(s, o)]
        if not offsets:
            return
        first = last = offsets[0]
        while (
            last + 1 < len(s.records)
            and last + 1 - first < self.config.max_fetch_records
            and self._acquirable(s, last + 1)
        ):
            last += 1
        member = member_id(c)
        timer = len(s.timers)
        records = list(s.records)
        for o in range(first, last + 1):
            r = records[o]
            # before KAFKA-18084 a record whose release is being written is taken as it stands: its
            # rollback stays, and the new lock replaces the old one's reference (which stays scheduled)
            records[o] = r._replace(state=ACQUIRED, deliveryCount=r.deliveryCount + 1, memberId=member, timer=timer)
        # a record delivered again to the same consumer replaces its earlier delivery there
        kept = {(o, t) for o, t in s.consumers[c].held if not first <= o <= last}
        held = frozenset(kept | {(o, timer) for o in range(first, last + 1)})
        deliveries = tuple(n + 1 if first <= o <= last else n for o, n in enumerate(s.deliveries))
        nxt = s._replace(
            records=tuple(records),
            timers=(*s.timers, LockTimer(member, first, last, False, False, False)),
            consumers=_with(s.consumers, c, Consumer(held)),
            deliveries=deliveries,
        )
        out.append((_act("ShareFetch", c, first, last), nxt))

    # -- the request handler: ShareAcknowledge -----------------------------------------------------
    def _acknowledge(self, s: ShareGroupState, c: int, offset: int, ack_type: str) -> Step:
        """``SharePartition.acknowledge`` of one record: validated, moved to its new state with the old
        one kept (``startStateTransition``), and written; the consumer learns the outcome from the
        write's answer."""
        member = member_id(c)
        record = s.records[offset]
        consumers = _with(s.consumers, c, Consumer(frozenset(h for h in s.consumers[c].held if h[0] != offset)))
        s = s._replace(consumers=consumers)
        if offset < s.startOffset:  # batches below the SPSO are skipped: nothing to do
            return self._ack_action(c, offset, ack_type, NONE), s
        in_transition = record.rollback is not None and self.config.kafka_19476_expired_lock
        if record.state != ACQUIRED or record.memberId != member or in_transition:
            return self._ack_action(c, offset, ack_type, INVALID_RECORD_STATE), s
        target = {ACCEPT: ACKNOWLEDGED, REJECT: ARCHIVED, RELEASE: AVAILABLE}[ack_type]
        if target == AVAILABLE and record.deliveryCount >= self.config.delivery_count_limit:
            target = ARCHIVED
        rollback = Rollback(record.state, record.deliveryCount, record.memberId, record.timer)
        moved = record._replace(state=target, memberId=EMPTY_MEMBER_ID, rollback=rollback)
        write = PendingWrite(
            ACKNOWLEDGE_WRITE, member, ack_type, (offset,), ((offset, target, record.deliveryCount),), s.startOffset
        )
        nxt = s._replace(records=_with(s.records, offset, moved), writes=(*s.writes, write))
        return self._ack_action(c, offset, ack_type, NONE), nxt

    @staticmethod
    def _ack_action(c: int, offset: int, ack_type: str, error: str) -> Action:
        return _act("ShareAcknowledge", c, offset, ack_type, error)

    # -- the request handler: a share session released ----------------------------------------------
    def _session_release(self, s: ShareGroupState, c: int) -> Step:
        """``SharePartition.releaseAcquiredRecords``: the records the consumer holds go back to AVAILABLE
        (ARCHIVED below the SPSO) in one write; since KAFKA-19972 their delivery counts stay and one at
        the limit is archived, before the count was decreased and the limit not looked at."""
        member = member_id(c)
        records = list(s.records)
        offsets: list[int] = []
        batches: list[tuple[int, str, int]] = []
        for offset, _timer in sorted(s.consumers[c].held):
            record = records[offset]
            if record.state != ACQUIRED or record.memberId != member or record.rollback is not None:
                continue
            count, target = record.deliveryCount, ARCHIVED if offset < s.startOffset else AVAILABLE
            if not self.config.kafka_19972:
                count -= 1
            elif target == AVAILABLE and count >= self.config.delivery_count_limit:
                target = ARCHIVED
            rollback = Rollback(record.state, record.deliveryCount, record.memberId, record.timer)
            records[offset] = record._replace(
                state=target, deliveryCount=count, memberId=EMPTY_MEMBER_ID, rollback=rollback
            )
            offsets.append(offset)
            batches.append((offset, target, count))
        nxt = s._replace(
            records=tuple(records),
            consumers=_with(s.consumers, c, Consumer(frozenset())),
            sessionReleases=s.sessionReleases + 1,
        )
        if offsets:
            write = PendingWrite(ACKNOWLEDGE_WRITE, member, RELEASE, tuple(offsets), tuple(batches), s.startOffset)
            nxt = nxt._replace(writes=(*s.writes, write))
        return _act("ShareSessionRelease", c), nxt

    # -- a new share-partition leader ------------------------------------------------------------
    def _leader_change(self, s: ShareGroupState, writes_landed: bool) -> Step:
        """The partition's leadership moves and the new leader's ``SharePartition.maybeInitialize`` reads
        what the share coordinator holds: the start offset, and each record's state and delivery count
        as last written (an acquisition is never written). The old leader's locks die with it, and its
        writes in flight either land before the read or are fenced by the new leader epoch; the
        consumers still hold what they were handed (their acknowledgements now meet the new leader)."""
        persisted, start = list(s.persisted), s.persistedStartOffset
        if writes_landed:
            for write in s.writes:
                for offset, state, count in write.batches:
                    persisted[offset] = (state, count)
                start = write.startOffset
        records = tuple(
            InFlightState(state, count, EMPTY_MEMBER_ID, NO_TIMER, None, False)
            if offset >= start
            else s.records[offset]._replace(memberId=EMPTY_MEMBER_ID, timer=NO_TIMER, rollback=None)
            for offset, (state, count) in enumerate(persisted)
        )
        nxt = s._replace(
            records=records,
            startOffset=start,
            cacheStart=start,
            timers=(),
            writes=(),
            persisted=tuple(persisted),
            persistedStartOffset=start,
            consumers=tuple(Consumer(frozenset((o, NO_TIMER) for o, _t in c.held)) for c in s.consumers),
            leaderChanges=s.leaderChanges + 1,
        )
        return _act("LeaderChange", writes_landed), _move_start_offset(nxt)

    # -- the persister's callback ----------------------------------------------------------------
    def _write_answered(self, s: ShareGroupState, error: str) -> Step:
        """The answer to the oldest write in flight: on success the share coordinator has it; an
        acknowledgement's transitions are committed or rolled back (``completeStateTransition``)."""
        write, rest = s.writes[0], s.writes[1:]
        ok = error == NONE
        nxt = s._replace(writes=rest, writeFailures=s.writeFailures + (0 if ok else 1))
        if ok:
            persisted = list(s.persisted)
            for offset, state, count in write.batches:
                persisted[offset] = (state, count)
            nxt = nxt._replace(persisted=tuple(persisted), persistedStartOffset=write.startOffset)
        if write.kind == ACKNOWLEDGE_WRITE:
            for offset in write.offsets:
                nxt = self._complete_transition(nxt, offset, ok, write)
            if ok:
                nxt = _move_start_offset(nxt)
        else:  # a timeout's write: nothing to roll back, the offsets move whatever the answer
            nxt = _move_start_offset(nxt)
        return _act("WriteShareGroupStateResponse", write.kind, error), nxt

    def _complete_transition(self, s: ShareGroupState, offset: int, ok: bool, write: PendingWrite) -> ShareGroupState:
        c = self.config
        record = s.records[offset]
        rollback = record.rollback
        if rollback is None:
            return s
        if ok or (record.terminal and c.kafka_19476_terminal):
            # committed: the record keeps its new state (ARCHIVED if a log-start move archived it)
            s = _cancel(s, record.timer)
            record = record._replace(timer=NO_TIMER, rollback=None)
            if ok and write.ackType == ACCEPT:
                s = s._replace(accepted=s.accepted | {offset})
        elif c.kafka_19476_expired_lock and record.timer != NO_TIMER and s.timers[record.timer].expired:
            # the lock ran out while the write was in flight: the record is released, not given back
            s = _cancel(s, record.timer)
            state = ARCHIVED if rollback.deliveryCount >= c.delivery_count_limit else AVAILABLE
            record = record._replace(state=state, memberId=EMPTY_MEMBER_ID, timer=NO_TIMER, rollback=None)
        else:
            # rolled back to its owner; before #20310 the delivery count is restored too
            count = record.deliveryCount if c.kafka_19476_expired_lock else rollback.deliveryCount
            record = record._replace(
                state=rollback.state, deliveryCount=count, memberId=rollback.memberId, rollback=None
            )
        return s._replace(records=_with(s.records, offset, record))

    # -- the acquisition-lock timer --------------------------------------------------------------
    def _lock_expire(self, s: ShareGroupState, index: int) -> Step:
        """``AcquisitionLockTimerTask.run``: the lock's duration has passed (``hasExpired``); its
        handler now waits for the partition's lock."""
        timers = _with(s.timers, index, s.timers[index]._replace(expired=True))
        return Action("AcquisitionLockExpire", timer=index), s._replace(timers=timers)

    def _lock_timeout(self, s: ShareGroupState, index: int) -> Step:
        """``releaseAcquisitionLockOnTimeout``: the records of the lock's range still ACQUIRED (by
        anyone) are made available again (archived at the delivery limit, or below the SPSO), their
        locks cancelled, and the change written."""
        c = self.config
        timer = s.timers[index]
        s = s._replace(timers=_with(s.timers, index, timer._replace(handled=True)))
        action = Action("AcquisitionLockTimeout", timer=index)
        if timer.cancelled and c.kafka_19476_cancelled_lock:
            return action, s
        records = list(s.records)
        batches = []
        for offset in range(timer.first, timer.last + 1):
            record = records[offset]
            if record.state != ACQUIRED or (record.rollback is not None and c.kafka_19476_expired_lock):
                continue
            at_limit = record.deliveryCount >= c.delivery_count_limit
            state = ARCHIVED if offset < s.startOffset or at_limit else AVAILABLE
            s = _cancel(s, record.timer)
            records[offset] = record._replace(state=state, memberId=EMPTY_MEMBER_ID, timer=NO_TIMER)
            batches.append((offset, state, record.deliveryCount))
        s = s._replace(records=tuple(records))
        if batches:
            write = PendingWrite(TIMEOUT_WRITE, EMPTY_MEMBER_ID, "", (), tuple(batches), s.startOffset)
            s = s._replace(writes=(*s.writes, write))
        return action, s

    # -- retention -------------------------------------------------------------------------------
    def _log_start_move(self, s: ShareGroupState, out: list[Step]) -> None:
        """Retention deletes the log's first record, and the next fetch finds it gone (taken as one
        step with ``updateCacheAndOffsets`` when the new log start is past the SPSO)."""
        c = self.config
        if s.logStartMoves >= c.max_log_start_moves or s.logStartOffset >= len(s.records):
            return
        log_start = s.logStartOffset + 1
        nxt = s._replace(logStartOffset=log_start, logStartMoves=s.logStartMoves + 1)
        if log_start > s.startOffset:
            nxt = self._apply_log_start(nxt, log_start)
        out.append((Action("LogStartOffsetMove", logStartOffset=log_start), nxt))

    def _apply_log_start(self, s: ShareGroupState, log_start: int) -> ShareGroupState:
        """``updateCacheAndOffsets``: the cached available records before the log start are archived
        (those whose release is being written too) and the SPSO moves to it. Nothing is written."""
        records = list(s.records)
        archived = set()
        cached = _cached(s)
        for offset in range(s.startOffset, log_start):
            record = records[offset]
            if record.state != AVAILABLE or offset not in cached:
                continue
            if self.config.kafka_19476_terminal:
                s = _cancel(s, record.timer)
                record = record._replace(terminal=True, timer=NO_TIMER)
            records[offset] = record._replace(state=ARCHIVED, memberId=EMPTY_MEMBER_ID)
            archived.add(offset)
        return s._replace(
            records=tuple(records), startOffset=log_start, archivedByLogStart=s.archivedByLogStart | archived
        )

    def drawing(self):  # type: ignore[no-untyped-def]
        from kmc.models.share_group.drawing import ShareGroupDrawing

        return ShareGroupDrawing(self)


def _act(name: str, *values: object) -> Action:
    return Action.of(name, zip(ACTION_ARGS[name], values, strict=True))


def _with(items: tuple, index: int, value: object) -> tuple:  # type: ignore[type-arg]
    return (*items[:index], value, *items[index + 1 :])


def _cancel(s: ShareGroupState, timer: int) -> ShareGroupState:
    """``cancelAndClearAcquisitionLockTimeoutTask``'s cancel: a task that has not run never will."""
    if timer == NO_TIMER:
        return s
    return s._replace(timers=_with(s.timers, timer, s.timers[timer]._replace(cancelled=True)))


def _cached(s: ShareGroupState) -> list[int]:
    """The records in the leader's cache (``cachedState``): fetched at least once, from the first it
    still holds (records before the SPSO leave it only when ``maybeUpdateCachedStateAndOffsets``
    walks past them)."""
    return [
        o for o in range(s.cacheStart, len(s.records)) if s.records[o].deliveryCount or s.records[o].state != AVAILABLE
    ]


def _finished(s: ShareGroupState, offset: int) -> bool:
    record = s.records[offset]
    return record.rollback is None and record.state in TERMINAL


def _move_start_offset(s: ShareGroupState) -> ShareGroupState:
    """``maybeUpdateCachedStateAndOffsets``: when the cache's record at or before the SPSO is finished,
    the records finished from the head of the cache on leave it, and the SPSO moves after them (to
    the next cached record, or past the last one when all are finished)."""
    cached = _cached(s)
    floor = max((o for o in cached if o <= s.startOffset), default=None)
    if floor is None or not _finished(s, floor):
        return s
    last = -1
    for offset in cached:
        if not _finished(s, offset):
            break
        last = offset
    if last == -1:
        return s
    if last == cached[-1]:  # every cached record finished: the cache is cleared
        return s._replace(startOffset=last + 1, cacheStart=last + 1)
    following = cached[cached.index(last) + 1]
    return s._replace(startOffset=max(s.startOffset, following), cacheStart=following)


def _compact_timers(s: ShareGroupState) -> ShareGroupState:
    """Forget the timer tasks that can no longer act and nothing refers to, and number the rest in
    the order they were made: states that differ only in dead timers are one state."""
    referenced = {r.timer for r in s.records} | {r.rollback.timer for r in s.records if r.rollback is not None}
    referenced |= {timer for consumer in s.consumers for _offset, timer in consumer.held}
    keep = [
        i
        for i, t in enumerate(s.timers)
        if i in referenced or (not t.cancelled and not t.expired) or (t.expired and not t.handled)
    ]
    if len(keep) == len(s.timers):
        return s
    renumber = {old: new for new, old in enumerate(keep)}
    renumber[NO_TIMER] = NO_TIMER

    def record(r: InFlightState) -> InFlightState:
        rollback = r.rollback._replace(timer=renumber[r.rollback.timer]) if r.rollback is not None else None
        return r._replace(timer=renumber[r.timer], rollback=rollback)

    return s._replace(
        records=tuple(record(r) for r in s.records),
        timers=tuple(s.timers[i] for i in keep),
        consumers=tuple(Consumer(frozenset((o, renumber[t]) for o, t in c.held)) for c in s.consumers),
    )
