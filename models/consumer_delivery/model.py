"""Consumer delivery semantics: offset commits, rebalances, and the consume-transform-produce loop.

One input partition with ``records`` records (offsets 0..records-1), ``consumers`` consumer processes
in one group, and an output partition. Each consumer runs the poll loop with ``max.poll.records=1``:
``Poll`` returns the record at its position, ``Process`` handles it and writes its output record,
and the offset is committed where the ``commit`` strategy says (auto-commit inside a later poll,
``commitSync`` before or after processing, only in the revocation callback, or in the same
transaction as the output with ``sendOffsetsToTransaction``). Consumers crash and restart; the
group moves the partition; a consumer that is expelled while it is still running (a long pause,
``max.poll.interval.ms`` exceeded, with ``timeouts=any``) is a zombie that keeps going until it
learns.

The group -- states, the abstract classic and KIP-848 rebalances, and the commit-fencing
decisions compared with Kafka's classes by the ``offset-commit`` oracle -- is in
:mod:`kmc.models.consumer_delivery.membership`; this module is the consumers' poll loop, the
transactions, the configuration and the drawing.

Transactions are modelled at the level the guarantees need: a transactional id's producer epoch at
the transaction coordinator (``InitProducerId`` bumps it and aborts that id's open transaction), the
transaction's output records and its pending offsets (``TxnOffsetCommit``), committed or aborted
together (``EndTxn``; markers and the LSO are the ``transactions`` model's subject). A read_committed
consumer of the output sees exactly the committed output. Ghost counters record, per input offset,
how often it was processed and how often its output is visible (both capped at 2: the properties
only tell 0, 1 and more apart).

Generations, member epochs and producer epochs are only compared with each other (equal, older,
newer), so each is renumbered by rank after every step; member ids are the smallest unused ones
(:func:`kmc.models.group.model.fresh_member_id`).
"""

from __future__ import annotations

from kmc.checker import Action, Model
from kmc.checker.search.liveness import WF
from kmc.models.consumer_delivery.bugs import BUGS
from kmc.models.consumer_delivery.config import ACTION_ARGS, PRESETS, DeliveryConfig
from kmc.models.consumer_delivery.drawing import DeliveryDrawing
from kmc.models.consumer_delivery.membership import (
    EMPTY,
    ILLEGAL_GENERATION,
    NO_GENERATION,
    NO_MEMBER,
    NONE,
    PREPARING_REBALANCE,
    REBALANCE_IN_PROGRESS,
    STABLE,
    STALE_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
    GroupMembership,
    dropped_consumer,
    validate_classic_offset_commit,
    validate_consumer_offset_commit,
    with_consumer,
)
from kmc.models.consumer_delivery.state import (
    COMPLETING_REBALANCE,
    JOINING,
    NO_EPOCH,
    NO_OFFSET,
    PRODUCER_FENCED,
    RUNNING,
    STOPPED,
    UNJOINED,
    UNSTABLE_OFFSET_COMMIT,
    Consumer,
    Coordinator,
    DeliveryState,
    Member,
    Step,
)

__all__ = [
    "COMPLETING_REBALANCE",
    "EMPTY",
    "ILLEGAL_GENERATION",
    "JOINING",
    "NONE",
    "NO_OFFSET",
    "PREPARING_REBALANCE",
    "PRODUCER_FENCED",
    "REBALANCE_IN_PROGRESS",
    "RUNNING",
    "STABLE",
    "STALE_MEMBER_EPOCH",
    "STOPPED",
    "UNJOINED",
    "UNKNOWN_MEMBER_ID",
    "UNSTABLE_OFFSET_COMMIT",
    "ConsumerDeliveryModel",
    "Coordinator",
    "DeliveryState",
    "Member",
    "validate_classic_offset_commit",
    "validate_consumer_offset_commit",
]


class ConsumerDeliveryModel(GroupMembership, Model):
    name = "consumer-delivery"
    actions = tuple(ACTION_ARGS)
    description = "offset commits and at-most / at-least / exactly-once delivery, with rebalances and transactions"
    Config = DeliveryConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "commit-after-processing"
    spec_modules = ("kmc.specs.consumer_delivery",)
    fairness = (
        WF("ConsumerStart", each=True),
        WF("JoinGroup", each=True),
        WF("SyncGroup", each=True),
        WF("CompleteRebalance"),
        WF("Heartbeat", each=True),
        WF("ReceiveHeartbeat", each=True),
        WF("InitProducerId", each=True),
        WF("OffsetFetch", each=True),
        WF("Poll", each=True),
        WF("Process", each=True),
        WF("OffsetCommit", each=True),
        WF("SendOffsetsToTransaction", each=True),
        WF("CommitTransaction", each=True),
        WF("SessionTimeout", each=True, processAlive=False),
        WF("TransactionTimeout", each=True, producerAlive=False),
        WF("CompleteTxnOffsetCommit", each=True),
    )
    """Every step but the faults (a crash, the expulsion of a running consumer, the timeout of a
    running producer's transaction) happens if it stays enabled; timers of dead processes expire."""

    config: DeliveryConfig

    def __init__(self, config: DeliveryConfig | None = None) -> None:
        super().__init__(config)
        self.classic = self.config.group_protocol == "classic"
        self.txn = self.config.commit == "transactional"
        self.deferred_txn_offsets = self.txn and self.classic and not self.config.kafka_17507
        """Before KAFKA-17507: the classic coordinator materialises a transaction's offsets after the
        markers are acknowledged (the KIP-848 groups' coordinator never did)."""

    def _act(self, name: str, *values: object) -> Action:
        return Action.of(name, zip(ACTION_ARGS[name], values, strict=True))

    def inactive_actions(self) -> tuple[str, ...]:
        off = ("ReceiveHeartbeat",) if self.classic else ("JoinGroup", "SyncGroup", "CompleteRebalance")
        if self.classic and self.config.timeouts == "crashed":
            off += ("Heartbeat",)  # classic heartbeats only matter to a zombie (UNKNOWN_MEMBER_ID)
        if not self.txn:
            off += ("InitProducerId", "SendOffsetsToTransaction", "CommitTransaction", "TransactionTimeout")
        elif self.config.transactional_id == "per-consumer":
            off += ("InitProducerId",)  # part of ConsumerStart
        if self.config.commit not in ("before-processing", "after-processing"):
            off += ("OffsetCommit",)  # auto-commits are in Poll, revocation commits in the rebalance steps
        if self.config.max_faults == 0:
            off += ("ConsumerCrash", "ConsumerStart", "SessionTimeout", "TransactionTimeout")
        if self.config.kafka_14196 or self.config.commit != "auto" or not self.classic:
            off += ("AutoCommitBeforeRevocation",)  # the commit before revocation is part of JoinGroup
        if self.config.kafka_18641 or self.config.commit != "auto" or self.classic:
            off += ("BackgroundAutoCommit",)
        if self.config.kafka_20332 or self.classic:
            off += ("PollDuringRevocation",)
        if not self.deferred_txn_offsets:
            off += ("CompleteTxnOffsetCommit",)
        return tuple(dict.fromkeys(off))

    def transactional_id(self, c: int) -> str:
        """Streams' exactly_once: one per task (input partition); exactly_once_v2: one per thread."""
        return "p0" if self.config.transactional_id == "per-partition" else f"c{c}"

    # -- init ----------------------------------------------------------------------------------
    def init_states(self) -> list[DeliveryState]:
        coordinator = Coordinator(EMPTY if self.classic else STABLE, 0, (), NO_MEMBER, NO_MEMBER, 0, NO_OFFSET, ())
        idle = Consumer(
            STOPPED, NO_MEMBER, NO_GENERATION, False, NO_OFFSET, NO_OFFSET, False, NO_EPOCH, False, False, None
        )
        consumers = tuple(self._started(idle, c) for c in range(self.config.consumers))
        ids = sorted({self.transactional_id(c) for c in range(self.config.consumers)}) if self.txn else []
        epochs = tuple((t, 1) for t in ids)
        zeros = (0,) * self.config.records
        return [DeliveryState(coordinator, consumers, epochs, (), zeros, zeros, 0)]

    def _started(self, me: Consumer, c: int) -> Consumer:
        epoch = 1 if self.txn and self.config.transactional_id == "per-consumer" else NO_EPOCH
        return me._replace(phase=UNJOINED, producerEpoch=epoch)

    # -- next ----------------------------------------------------------------------------------
    def successors(self, s: DeliveryState) -> list[Step]:
        out: list[Step] = []
        for c, me in enumerate(s.consumers):
            self._consumer_steps(s, c, me, out)
        if self.classic:
            self._complete_rebalance(s, out)
        for m in s.coordinator.members:
            if self._may_expire(s, m):
                alive = not self._gone(s, m)
                nxt = self._remove_member(s._replace(faults=s.faults + alive), m.memberId)
                out.append((self._act("SessionTimeout", m.memberId, alive), nxt))
        for txn_id, _ in s.ongoing:
            holders = [c for c, me in enumerate(s.consumers) if self.transactional_id(c) == txn_id]
            alive = any(s.consumers[c].phase != STOPPED and s.consumers[c].inTxn for c in holders)
            if not alive or (self.config.timeouts == "any" and s.faults < self.config.max_faults):
                nxt = self._fence(s._replace(faults=s.faults + alive), txn_id)
                out.append((self._act("TransactionTimeout", txn_id, alive), nxt))
        waiting: set[str] = set()
        for txn_id, commit in s.coordinator.txnCompletions:
            if txn_id not in waiting:  # one producer's completions in order; producers' in any order
                waiting.add(txn_id)
                nxt = self._complete_txn_offset_commit(s, txn_id, commit)
                out.append((self._act("CompleteTxnOffsetCommit", txn_id, commit), nxt))
        return [(a, _normalise(n)) for a, n in out]

    def _gone(self, s: DeliveryState, m: Member) -> bool:
        me = s.consumers[m.consumer]
        return me.phase == STOPPED or me.memberId != m.memberId

    def _may_expire(self, s: DeliveryState, m: Member) -> bool:
        if self._gone(s, m):
            return True
        return self.config.timeouts == "any" and s.faults < self.config.max_faults

    def _consumer_steps(self, s: DeliveryState, c: int, me: Consumer, out: list[Step]) -> None:
        if me.phase == STOPPED:
            out.append((self._act("ConsumerStart", c), self._start(s, c)))
            return
        if s.faults < self.config.max_faults:
            out.append((self._act("ConsumerCrash", c), self._crash(s, c)))
        if self.classic:
            self._classic_membership(s, c, me, out)
        else:
            self._kip848_membership(s, c, me, out)
        if me.phase == RUNNING and not me.owned and me.fetched != NO_OFFSET:
            out.append(self._process(s, c, me))  # what poll() returned for a partition revoked meanwhile
            return
        if me.phase != RUNNING or not me.owned:
            return
        if self.txn and me.producerEpoch == NO_EPOCH:
            txn_id = self.transactional_id(c)
            out.append((self._act("InitProducerId", c, txn_id), self._init_producer_id(s, c, txn_id)))
            return
        if me.position == NO_OFFSET:
            pending = self.config.require_stable and s.coordinator.pendingOffsets
            if not pending:  # else UNSTABLE_OFFSET_COMMIT: the consumer backs off and retries
                offset = max(s.coordinator.committedOffset, 0)
                nxt = with_consumer(s, c, me._replace(position=offset, dirty=False))
                out.append((self._act("OffsetFetch", c, offset), nxt))
            return
        self._poll_loop(s, c, me, out)

    # -- the application's poll loop -------------------------------------------------------------
    def _poll_loop(self, s: DeliveryState, c: int, me: Consumer, out: list[Step]) -> None:
        strategy = self.config.commit
        if me.fetched == NO_OFFSET and me.position < self.config.records:
            may_poll = not (strategy == "after-processing" and me.dirty) and not me.offsetsSent
            if may_poll:
                polled = me._replace(fetched=me.position, position=me.position + 1, dirty=True)
                if strategy == "auto" and me.dirty and not me.revocationCommitSent:
                    # maybeAutoCommitOffsetsAsync: the interval may have passed
                    error, nxt = self._commit(s, c, me, txn=False)
                    if error == NONE:
                        nxt = with_consumer(nxt, c, polled)
                    out.append((self._act("Poll", c, me.position, True, error), nxt))
                out.append((self._act("Poll", c, me.position, False, NONE), with_consumer(s, c, polled)))
        done = me.fetched == NO_OFFSET and me.position == self.config.records
        if strategy == "auto" and me.dirty and done and not me.revocationCommitSent:
            error, nxt = self._commit(s, c, me, txn=False)  # a poll that returns nothing still auto-commits
            out.append((self._act("Poll", c, me.position, True, error), nxt))
        if me.fetched != NO_OFFSET and not (strategy == "before-processing" and me.dirty):
            out.append(self._process(s, c, me))
        if strategy == "auto" and me.dirty and not self.classic and not self.config.kafka_18641:
            # AsyncKafkaConsumer before KAFKA-18641: the background thread's auto-commit timer fires at
            # any moment and commits subscriptions.allConsumed(), which poll() already advanced past
            # the record it returned.
            error, nxt = self._commit(s, c, me, txn=False)
            out.append((self._act("BackgroundAutoCommit", c, me.position, error), nxt))
        committable = me.dirty and (
            me.fetched != NO_OFFSET if strategy == "before-processing" else me.fetched == NO_OFFSET
        )
        if strategy in ("before-processing", "after-processing") and committable:
            error, nxt = self._commit(s, c, me, txn=False)
            out.append((self._act("OffsetCommit", c, me.memberId, me.generationId, me.position, error), nxt))
        if self.txn and me.inTxn and me.fetched == NO_OFFSET:
            if not me.offsetsSent:
                out.append(self._send_offsets(s, c, me))
            else:
                out.append(self._commit_transaction(s, c, me))

    def _process(self, s: DeliveryState, c: int, me: Consumer) -> Step:
        offset = me.fetched
        processed = _bump(s.processed, offset)
        if not self.txn:
            nxt = s._replace(processed=processed, output=_bump(s.output, offset))
            return self._act("Process", c, offset, NONE), with_consumer(nxt, c, me._replace(fetched=NO_OFFSET))
        txn_id = self.transactional_id(c)
        if _lookup(s.producerEpochs, txn_id) != me.producerEpoch:  # the send fails: the producer is fenced
            return self._act("Process", c, offset, PRODUCER_FENCED), self._lost(s._replace(processed=processed), c)
        written = (*_lookup(s.ongoing, txn_id, ()), offset)
        nxt = s._replace(processed=processed, ongoing=_put(s.ongoing, txn_id, written))
        return self._act("Process", c, offset, NONE), with_consumer(nxt, c, me._replace(fetched=NO_OFFSET, inTxn=True))

    def _validate(self, s: DeliveryState, member_id: str, generation_id: int, txn: bool) -> str:
        coord = s.coordinator
        if self.classic:
            members = frozenset(m.memberId for m in coord.members)
            return validate_classic_offset_commit(
                coord.state, coord.generationId, members, member_id, generation_id, txn
            )
        epochs = tuple((m.memberId, m.memberEpoch) for m in coord.members)
        return validate_consumer_offset_commit(
            epochs, coord.holder, coord.assignmentEpoch, member_id, generation_id, txn, self.config.kip_1251
        )

    def _commit(self, s: DeliveryState, c: int, me: Consumer, txn: bool) -> tuple[str, DeliveryState]:
        """commitSync of the position: on success it is the committed offset; a CommitFailedException
        makes the application drop what it polled and seek back to the committed offset."""
        error = self._validate(s, me.memberId, me.generationId, txn)
        if error == NONE:
            coord = s.coordinator._replace(committedOffset=me.position)
            return error, with_consumer(s._replace(coordinator=coord), c, me._replace(dirty=False))
        return error, self._on_commit_error(s, c, me, error)

    def _on_commit_error(self, s: DeliveryState, c: int, me: Consumer, error: str) -> DeliveryState:
        if error == STALE_MEMBER_EPOCH:  # the partitions are kept; the next heartbeat brings the epoch
            return with_consumer(s, c, me._replace(position=NO_OFFSET, fetched=NO_OFFSET, dirty=False))
        return self._lost(s, c)

    def _send_offsets(self, s: DeliveryState, c: int, me: Consumer) -> Step:
        """``sendOffsetsToTransaction``: AddOffsetsToTxn to the transaction coordinator, then
        TxnOffsetCommit to the group coordinator -- with the group metadata since KIP-447."""
        txn_id = self.transactional_id(c)
        if self.config.txn_group_metadata:
            member_id, generation = me.memberId, me.generationId
        else:
            member_id, generation = NO_MEMBER, NO_GENERATION
        if _lookup(s.producerEpochs, txn_id) != me.producerEpoch:
            error = PRODUCER_FENCED
        else:
            error = self._validate(s, member_id, generation, txn=True)
        action = self._act("SendOffsetsToTransaction", c, member_id, generation, me.position, error)
        if error != NONE:
            return action, self._lost(s, c)
        coord = s.coordinator
        coord = coord._replace(
            pendingOffsets=_put(coord.pendingOffsets, txn_id, me.position),
            endedTxnOffsets=tuple(t for t in coord.endedTxnOffsets if t != txn_id),
        )
        return action, with_consumer(s._replace(coordinator=coord), c, me._replace(offsetsSent=True))

    def _commit_transaction(self, s: DeliveryState, c: int, me: Consumer) -> Step:
        """EndTxn(COMMIT): the output and the offsets become visible together."""
        txn_id = self.transactional_id(c)
        if _lookup(s.producerEpochs, txn_id) != me.producerEpoch:
            return self._act("CommitTransaction", c, PRODUCER_FENCED), self._lost(s, c)
        output = s.output
        for offset in _lookup(s.ongoing, txn_id, ()):
            output = _bump(output, offset)
        coord = self._write_txn_marker(s, txn_id, commit=True)
        nxt = s._replace(coordinator=coord, ongoing=_drop(s.ongoing, txn_id), output=output)
        return self._act("CommitTransaction", c, NONE), with_consumer(
            nxt, c, me._replace(inTxn=False, offsetsSent=False)
        )

    def _abort(self, s: DeliveryState, txn_id: str) -> DeliveryState:
        """EndTxn(ABORT): the transaction's output and pending offsets are discarded."""
        coord = self._write_txn_marker(s, txn_id, commit=False)
        return s._replace(coordinator=coord, ongoing=_drop(s.ongoing, txn_id))

    def _write_txn_marker(self, s: DeliveryState, txn_id: str, commit: bool) -> Coordinator:
        """The marker on the offsets partition: the producer's pending offsets committed or discarded,
        at once, or (before KAFKA-17507) by a task the classic coordinator schedules after answering --
        for an open transaction that sent offsets (one already ended writes no second marker)."""
        coord = s.coordinator
        if not self.deferred_txn_offsets:
            return _materialise(coord, txn_id, commit)
        if txn_id not in dict(coord.pendingOffsets) or txn_id in coord.endedTxnOffsets:
            return coord
        return coord._replace(
            txnCompletions=(*coord.txnCompletions, (txn_id, commit)),
            endedTxnOffsets=tuple(sorted({*coord.endedTxnOffsets, txn_id})),
        )

    def _complete_txn_offset_commit(self, s: DeliveryState, txn_id: str, commit: bool) -> DeliveryState:
        """``GroupMetadataManager.handleTxnCompletion``'s task: whatever offsets the producer has pending
        now -- its next transaction's, if it sent them meanwhile -- are committed or discarded."""
        completions = list(s.coordinator.txnCompletions)
        completions.remove((txn_id, commit))
        ended = tuple(t for t in s.coordinator.endedTxnOffsets if t != txn_id)  # nothing pending is left
        coord = s.coordinator._replace(txnCompletions=tuple(completions), endedTxnOffsets=ended)
        return s._replace(coordinator=_materialise(coord, txn_id, commit))

    def _fence(self, s: DeliveryState, txn_id: str) -> DeliveryState:
        """InitProducerId or a transaction timeout: bump the epoch and abort the open transaction."""
        s = self._abort(s, txn_id)
        return s._replace(producerEpochs=_put(s.producerEpochs, txn_id, _lookup(s.producerEpochs, txn_id) + 1))

    def _init_producer_id(self, s: DeliveryState, c: int, txn_id: str) -> DeliveryState:
        s = self._fence(s, txn_id)
        return with_consumer(s, c, s.consumers[c]._replace(producerEpoch=_lookup(s.producerEpochs, txn_id)))

    def _lost(self, s: DeliveryState, c: int) -> DeliveryState:
        """onPartitionsLost (a fenced commit, producer or member): no commit; an open transaction is
        aborted (if the producer is still current); the consumer rejoins."""
        me = s.consumers[c]
        if self.txn and me.inTxn:
            txn_id = self.transactional_id(c)
            if _lookup(s.producerEpochs, txn_id) == me.producerEpoch:
                s = self._abort(s, txn_id)
            else:
                me = me._replace(producerEpoch=NO_EPOCH)  # re-initialised before it is used again
        if self.txn and self.config.transactional_id == "per-partition":
            me = me._replace(producerEpoch=NO_EPOCH)
        me = dropped_consumer(me)
        if self.classic:
            me = me._replace(phase=UNJOINED)  # rejoin, keeping the member id (it may be unknown by now)
        else:
            me = me._replace(phase=UNJOINED, memberId=NO_MEMBER, generationId=0, response=None)
        if self.txn and me.producerEpoch == NO_EPOCH and self.config.transactional_id == "per-consumer":
            s = self._fence(s, self.transactional_id(c))
            me = me._replace(producerEpoch=_lookup(s.producerEpochs, self.transactional_id(c)))
        return with_consumer(s, c, me)

    def _revoke(self, s: DeliveryState, c: int, me: Consumer) -> tuple[str, DeliveryState]:
        """onPartitionsRevoked: the auto-commit and the listener's commitSync of the position, then
        the partition is given up (a transactional consumer has committed its transaction first)."""
        error = NONE
        if me.revocationCommitSent:  # the asynchronous commit sent before it has completed
            me = me._replace(dirty=False)
        if me.owned and me.dirty and (self.config.commit == "auto" or self.config.commit_on_revoke):
            error, s = self._commit(s, c, me, txn=False)
            if error != NONE:
                return error, s
        me = dropped_consumer(s.consumers[c])
        if self.txn and self.config.transactional_id == "per-partition":
            me = me._replace(producerEpoch=NO_EPOCH)  # the task's producer is closed
        return NONE, with_consumer(s, c, me)

    def _commit_before_revocation(self, s: DeliveryState, c: int, me: Consumer) -> Step | None:
        """Before KAFKA-14196 (KAFKA-13310, 3.2.0 to 3.2.2): onJoinPrepare sends the auto-commit of the
        position asynchronously and returns; poll() goes on fetching the partition until the commit
        completes, and the revocation that follows commits nothing more."""
        if self.config.kafka_14196 or self.config.commit != "auto":
            return None
        if not (me.owned and me.dirty) or me.revocationCommitSent:  # nothing to commit, or it was sent
            return None
        error, nxt = self._commit(s, c, me, txn=False)
        if error == NONE:
            nxt = with_consumer(nxt, c, nxt.consumers[c]._replace(revocationCommitSent=True))
        return self._act("AutoCommitBeforeRevocation", c, me.position, error), nxt

    def _poll_during_revocation(self, s: DeliveryState, c: int, me: Consumer) -> Step | None:
        """Before KAFKA-20332 (4.2.0): poll() no longer waits for the reconciliation, and the background
        thread revokes the partition on its own while the application thread, which found it
        fetchable, returns its buffered record; the application processes a record of a partition
        that already belongs to another member."""
        if self.config.kafka_20332 or self.classic or me.position == NO_OFFSET or me.position >= self.config.records:
            return None
        heard, nxt = self._receive_heartbeat(s, c, me)  # the revocation, as the background applies it
        if heard.args["error"] != NONE:
            return None
        revoked = nxt.consumers[c]._replace(fetched=me.position)
        return self._act("PollDuringRevocation", c, me.position), with_consumer(nxt, c, revoked)

    def _can_revoke(self, me: Consumer) -> bool:
        """Rebalance callbacks run inside poll(): after the records returned are processed, after the
        commit that follows processing, and (Streams) after the open transaction is committed."""
        committed = not (self.config.commit == "after-processing" and me.dirty)
        return me.fetched == NO_OFFSET and not me.inTxn and committed

    def _crash(self, s: DeliveryState, c: int) -> DeliveryState:
        """The process dies: everything in memory is gone; its open transaction stays open."""
        idle = Consumer(
            STOPPED, NO_MEMBER, NO_GENERATION, False, NO_OFFSET, NO_OFFSET, False, NO_EPOCH, False, False, None
        )
        return with_consumer(s, c, idle)._replace(faults=s.faults + 1)

    def _start(self, s: DeliveryState, c: int) -> DeliveryState:
        """A new process; with a transactional.id per consumer, InitProducerId fences the old one."""
        me = self._started(s.consumers[c], c)
        if not self.classic:
            me = me._replace(generationId=0)
        if self.txn and self.config.transactional_id == "per-consumer":
            s = self._fence(s, self.transactional_id(c))
            me = me._replace(producerEpoch=_lookup(s.producerEpochs, self.transactional_id(c)))
        return with_consumer(s, c, me)

    def drawing(self) -> DeliveryDrawing:
        return DeliveryDrawing(self.config.consumers)


# -- pure helpers ----------------------------------------------------------------------------------
def _bump(counts: tuple[int, ...], offset: int) -> tuple[int, ...]:
    return (*counts[:offset], min(counts[offset] + 1, 2), *counts[offset + 1 :])


def _lookup(table: tuple, key: str, default: object = None):  # type: ignore[no-untyped-def]
    for k, v in table:
        if k == key:
            return v
    return default


def _put(table: tuple, key: str, value: object) -> tuple:
    return tuple(sorted([*((k, v) for k, v in table if k != key), (key, value)], key=lambda kv: kv[0]))


def _drop(table: tuple, key: str) -> tuple:
    return tuple((k, v) for k, v in table if k != key)


def _materialise(coord: Coordinator, txn_id: str, commit: bool) -> Coordinator:
    committed = _lookup(coord.pendingOffsets, txn_id, coord.committedOffset) if commit else coord.committedOffset
    return coord._replace(committedOffset=committed, pendingOffsets=_drop(coord.pendingOffsets, txn_id))


def _rank(values: set[int]) -> dict[int, int]:
    """Positive values renumbered 1, 2, ... in order; 0 and the negative markers kept."""
    return {v: i + 1 for i, v in enumerate(sorted(v for v in values if v > 0))}


def _normalise(s: DeliveryState) -> DeliveryState:
    """Renumber generations (member epochs) and producer epochs by rank: only their order matters."""
    coord = s.coordinator
    gens = {coord.generationId, coord.assignmentEpoch} | {m.memberEpoch for m in coord.members}
    for me in s.consumers:
        gens.add(me.generationId)
        if me.response is not None:
            gens.add(me.response[1])
    rank = _rank(gens)

    def g(x: int) -> int:
        return rank.get(x, x)

    members = tuple(m._replace(memberEpoch=g(m.memberEpoch)) for m in coord.members)
    coord = coord._replace(
        generationId=g(coord.generationId), assignmentEpoch=g(coord.assignmentEpoch), members=members
    )
    consumers = []
    for me in s.consumers:
        response = None if me.response is None else (me.response[0], g(me.response[1]), me.response[2])
        consumers.append(me._replace(generationId=g(me.generationId), response=response))
    # producer epochs: per transactional id, the current one is 1 and any older one a client holds is 0
    epochs = dict(s.producerEpochs)
    if epochs:
        for c, me in enumerate(consumers):
            if me.producerEpoch != NO_EPOCH:
                current = epochs["p0" if "p0" in epochs else f"c{c}"]
                consumers[c] = me._replace(producerEpoch=1 if me.producerEpoch == current else 0)
        s = s._replace(producerEpochs=tuple((t, 1) for t, _ in s.producerEpochs))
    return s._replace(coordinator=coord, consumers=tuple(consumers))
