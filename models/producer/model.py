"""The idempotent producer (KIP-98, KIP-360): a producer client, a partition leader's producer state, failover.

One producer client sends ``max_records`` records to one partition replicated on two brokers. Each
record is its own batch. The client is Kafka's ``Sender``/``RecordAccumulator``/``TransactionManager``:
it drains batches into Produce requests, at most ``max_in_flight`` (``max.in.flight.requests.per.connection``)
awaiting an answer, retries the retriable errors, and -- with ``enable.idempotence`` -- stamps each
batch with its ``producerId``, ``producerEpoch`` and ``baseSequence``. The leader decides every
request with its producer state (``ProducerStateManager``: per producer id an epoch and the metadata
of the last ``num_batches_to_retain`` batches, ``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``) as
``UnifiedLog.analyzeAndValidateProducerState`` and ``ProducerAppendInfo`` do: a cached batch is a
duplicate (answered with its original offset), an older epoch is ``INVALID_PRODUCER_EPOCH``, a gap in
the sequence is ``OUT_OF_ORDER_SEQUENCE_NUMBER`` (the broker's side lives in ``producer_broker``).

Faults: the connection drops (every response in flight is lost, requests already sent may still be
handled later: a request timeout is a disconnect in ``NetworkClient``), the leader answers a
request with a retriable error without writing it (``NOT_ENOUGH_REPLICAS``), the follower is
elected (it may lack the last batches; the old leader truncates to it and rebuilds its producer
state from its log), retention deletes the head of the leader's log, a broker expires an idle
producer's state (``producer.id.expiration.ms``: an idle producer only, since it is far longer than
``delivery.timeout.ms``), a batch reaches ``delivery.timeout.ms``.

Before them, ``kafka_5793`` (Kafka 1.0): a leader with no state for the producer answers
``UNKNOWN_PRODUCER_ID`` with its log start offset, and the client restarts its sequences at 0 when
retention removed what it had acknowledged; before, the leader answered
``OUT_OF_ORDER_SEQUENCE_NUMBER`` and the 0.11 client failed the batch and reset its producer id.

Flags for the fixes of KIP-360 (KAFKA-7190 in Kafka 2.4.0, the other two in 2.5.0):

* ``kafka_7190`` -- the broker keeps a producer's state when retention deletes its batches (before:
  ``removeBatchesOlderThan(logStartOffset)`` dropped them, and the producer with them).
* ``kafka_8710`` -- the broker accepts any sequence from a producer it has no state for (before:
  ``UNKNOWN_PRODUCER_ID`` unless the sequence is 0).
* ``kafka_8805`` -- the client part of KIP-360: an idempotent producer recovers from
  ``OUT_OF_ORDER_SEQUENCE_NUMBER`` and ``UNKNOWN_PRODUCER_ID`` by bumping its epoch locally and
  retrying; before, on ``UNKNOWN_PRODUCER_ID`` it restarted its sequences at 0 under the same epoch
  when its last acknowledged offset was below the log start offset (KAFKA-5793), and otherwise
  failed the batch and asked for a new producer id.

And one fix after the 4.3.1 jars: ``kafka_15591`` (Kafka 4.5) -- a partition whose log never held a
record takes only sequence 0 from a producer without state, which closes the 4.x findings
``leader-change``, ``not-enough-replicas`` and ``kip-360``'s retry loop (KAFKA-14359) at their bounds.
"""

from __future__ import annotations

from kmc.checker import Action, Model
from kmc.checker.search.liveness import WF
from kmc.models.common.tuples import put
from kmc.models.producer.broker import (
    DUPLICATE,
    INVALID_PRODUCER_EPOCH,
    NETWORK_EXCEPTION,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NONE,
    NOT_ENOUGH_REPLICAS,
    NOT_LEADER_OR_FOLLOWER,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    PENDING,
    RETRIABLE,
    UNKNOWN_PRODUCER_ID,
    Batch,
    BatchMetadata,
    ProducerStateEntry,
    Replica,
    add_batch,
    check_produce,
    entry_of,
    increment_log_start_offset,
    rebuild,
    with_entry,
)
from kmc.models.producer.bugs import BUGS
from kmc.models.producer.config import ACTION_ARGS, PRESETS, ProducerConfig
from kmc.models.producer.drawing import ProducerDrawing
from kmc.models.producer.state import (
    Client,
    ClientBatch,
    ProduceRequest,
    ProduceResponse,
    ProducerState,
    high_watermark,
)

__all__ = [
    "DUPLICATE",
    "INVALID_PRODUCER_EPOCH",
    "NETWORK_EXCEPTION",
    "NONE",
    "NOT_ENOUGH_REPLICAS",
    "NOT_LEADER_OR_FOLLOWER",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "OUT_OF_ORDER_SEQUENCE_NUMBER",
    "PENDING",
    "RETRIABLE",
    "UNKNOWN_PRODUCER_ID",
    "Batch",
    "BatchMetadata",
    "ProducerDrawing",
    "ProducerModel",
    "ProducerState",
    "ProducerStateEntry",
    "Replica",
    "entry_of",
]


Step = tuple[Action, ProducerState]


class ProducerModel(Model):
    name = "producer"
    description = "the idempotent producer (KIP-98, KIP-360): sequences, the duplicate cache, retries, failover"
    Config = ProducerConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "idempotent"
    spec_modules = ("kmc.specs.producer",)
    actions = tuple(ACTION_ARGS)
    fairness = (
        WF("SendProduce", each=True),
        WF("HandleProduce", each=True),
        WF("HandleProduceResponse", each=True),
        WF("Replicate", each=True),
        WF("ResolveSequences", each=True),
        WF("BumpEpoch", each=True),
    )
    """The client's and the brokers' own steps happen once they stay possible; faults, elections,
    retention and expiry need not happen at all."""

    def recovery_actions(self) -> tuple[str, ...]:
        """The client's epoch bump (KIP-360) recovers from a sequence error or an expired batch: at
        bounds where no fault leads to one, it is never needed."""
        return ("BumpEpoch",)

    def inactive_actions(self) -> tuple[str, ...]:
        c = self.config
        off = []
        if not c.enable_idempotence:
            off.append("BumpEpoch")
        if c.max_failovers == 0:
            off.append("ElectLeader")
        if c.max_deletions == 0:
            off.append("DeleteRecords")
        if c.max_expirations == 0 or not c.enable_idempotence:
            off.append("ExpireProducer")
        if c.max_disconnects == 0:
            off.append("Disconnect")
        if c.max_delivery_timeouts == 0:
            off += ["DeliveryTimeout", "ResolveSequences"]
        return tuple(off)

    def init_states(self) -> list[ProducerState]:
        idem = self.config.enable_idempotence
        pid, epoch = (0, 0) if idem else (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        batches = tuple(ClientBatch(r, pid, epoch, NO_SEQUENCE, False) for r in range(self.config.max_records))
        client = Client(pid, epoch, 0, NO_SEQUENCE, -1, batches, False, 0)
        empty = Replica((), 0, ())
        return [ProducerState(client, (), (), (empty, empty), 0, 0, frozenset(), frozenset(), 0, 0, 0, 0, 0, 0)]

    def successors(self, s: ProducerState) -> list[Step]:
        out: list[Step] = []
        self._send(s, out)
        for connection, broker in sorted({(r.connection, r.broker) for r in s.requests}):
            self._handle_produce(s, connection, broker, out)
        for connection, broker in sorted({(r.connection, r.broker) for r in s.responses}):
            self._handle_response(s, connection, broker, out)
        self._disconnect(s, out)
        self._delivery_timeout(s, out)
        self._resolve_sequences(s, out)
        self._bump_epoch(s, out)
        self._replicate(s, out)
        self._elect(s, out)
        self._delete_records(s, out)
        self._expire(s, out)
        return out

    # -- the client ------------------------------------------------------------------------------
    def _send(self, s: ProducerState, out: list[Step]) -> None:
        """Sender.sendProducerData / RecordAccumulator.drain: the first queued batch goes out if fewer
        than max.in.flight requests await an answer. With idempotence a retried batch goes out only
        when it is the lowest sequence not yet completed (firstInFlightSequence), and nothing is
        drained while an epoch bump is pending."""
        c = s.client
        if sum(b.inFlight for b in c.batches) >= self.config.max_in_flight:
            return
        queued = [i for i, b in enumerate(c.batches) if not b.inFlight]
        if not queued:
            return
        i = queued[0]
        batch = c.batches[i]
        client = c
        if self.config.enable_idempotence:
            if c.epochBumpRequired:
                return
            if batch.baseSequence == NO_SEQUENCE and c.unresolvedSequence != NO_SEQUENCE:
                return
            if batch.baseSequence != NO_SEQUENCE:
                lowest = min(b.baseSequence for b in c.batches if b.baseSequence != NO_SEQUENCE)
                if batch.baseSequence != lowest:
                    return
                batch = batch._replace(inFlight=True, sequenceHasBeenReset=False)
            else:
                batch = batch._replace(
                    producerId=c.producerId, producerEpoch=c.producerEpoch, baseSequence=c.nextSequence, inFlight=True
                )
                client = c._replace(nextSequence=c.nextSequence + 1)
        else:
            batch = batch._replace(inFlight=True)
        wire = Batch(batch.record, batch.producerId, batch.producerEpoch, batch.baseSequence)
        request = ProduceRequest(c.connection, s.leader, wire)
        if self.config.acks == "0":
            # acks=0: the send completes once the request is written to the socket; no answer comes.
            client = client._replace(batches=c.batches[:i] + c.batches[i + 1 :])
            nxt = s._replace(client=client, requests=(*s.requests, request))
        else:
            client = client._replace(batches=put(c.batches, i, batch))
            nxt = s._replace(client=client, requests=(*s.requests, request))
        out.append((Action("SendProduce", record=batch.record), nxt))

    def _handle_response(self, s: ProducerState, connection: int, broker: int, out: list[Step]) -> None:
        """Sender.handleProduceResponse -> completeBatch: the first answer on a connection. A
        PENDING acks=all answer completes once the follower has the batch, or fails with
        NOT_LEADER_OR_FOLLOWER once its leader lost leadership without it."""
        k = next(i for i, r in enumerate(s.responses) if (r.connection, r.broker) == (connection, broker))
        response = s.responses[k]
        if response.error == PENDING:
            return
        rest = s.responses[:k] + s.responses[k + 1 :]
        c = s.client
        mine = [j for j, b in enumerate(c.batches) if b.record == response.record and b.inFlight]
        if mine:
            nxt = self.complete_batch(s._replace(responses=rest), mine[0], response)
        else:
            nxt = s._replace(responses=rest)  # the batch expired meanwhile: the answer is ignored
        out.append(
            (
                Action(
                    "HandleProduceResponse",
                    connection=connection,
                    broker=broker,
                    record=response.record,
                    error=response.error,
                ),
                nxt,
            )
        )

    @staticmethod
    def complete_delayed(s: ProducerState) -> ProducerState:
        """The produce purgatory (DelayedProduce): a PENDING answer completes successfully as soon as
        the HW passes its offset on the leader that wrote it, and with NOT_LEADER_OR_FOLLOWER as soon
        as that broker stops being the leader."""
        hw = high_watermark(s)
        done = []
        for r in s.responses:
            if r.error == PENDING:
                if s.leader != r.broker or s.leaderEpoch != r.leaderEpoch:
                    r = r._replace(error=NOT_LEADER_OR_FOLLOWER, baseOffset=-1)
                elif r.baseOffset < hw:
                    r = r._replace(error=NONE)
            done.append(r)
        return s._replace(responses=tuple(done))

    def complete_batch(self, s: ProducerState, i: int, r: ProduceResponse) -> ProducerState:
        c = s.client
        batch = c.batches[i]
        remove = c.batches[:i] + c.batches[i + 1 :]
        if r.error in (NONE, DUPLICATE):
            client = c._replace(batches=remove)
            current = (batch.producerId, batch.producerEpoch) == (c.producerId, c.producerEpoch)
            if self.config.enable_idempotence and current:
                client = client._replace(
                    lastAckedSequence=max(c.lastAckedSequence, batch.baseSequence),
                    lastAckedOffset=max(c.lastAckedOffset, r.baseOffset),
                )
            return s._replace(client=client, acked=s.acked | {batch.record})
        if not self.config.enable_idempotence:
            if r.error in RETRIABLE and self.config.retries:
                return s._replace(client=c._replace(batches=(batch._replace(inFlight=False, inRetry=True), *remove)))
            return s._replace(client=c._replace(batches=remove), failed=s.failed | {batch.record})
        retry, bump, reset_sequences = self.can_retry(c, batch, r)
        if reset_sequences:
            c = self.start_sequences_at_beginning(c)
            batch = c.batches[i]
            remove = c.batches[:i] + c.batches[i + 1 :]
        if bump:
            c = c._replace(epochBumpRequired=True)
        if retry:
            return s._replace(client=c._replace(batches=self.insert_in_sequence_order(remove, batch)))
        sequence_error = r.error in (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID)
        if self.config.transactional and sequence_error and not self.config.kafka_8805:
            # Before KIP-360 a transactional producer cannot reset its sequences: the error leaves it
            # defunct (KafkaProducer's javadoc: "the only option left is to call close()"), and every
            # batch it holds fails with it.
            failed = s.failed | {b.record for b in c.batches}
            defunct = c._replace(batches=(), epochBumpRequired=False, fatalError=True)
            return s._replace(client=defunct, failed=failed)
        return s._replace(client=c._replace(batches=remove), failed=s.failed | {batch.record})

    def can_retry(self, c: Client, batch: ClientBatch, r: ProduceResponse) -> tuple[bool, bool, bool]:
        """TransactionManager.canRetry and handleFailedBatch for an idempotent producer: (retry the
        batch, request an epoch bump (or, before KAFKA-8805, a new producer id), restart the
        sequences at 0 under the same epoch)."""
        next_in_line = batch.baseSequence - c.lastAckedSequence == 1
        unresolved = c.unresolvedSequence != NO_SEQUENCE
        if r.error == OUT_OF_ORDER_SEQUENCE_NUMBER:
            if not unresolved and (batch.sequenceHasBeenReset or not next_in_line):
                return True, False, False
            if not self.config.kafka_8805:
                return False, True, False
            # A real gap (no unresolved sequence, or right after one): bump; otherwise wait and see.
            return True, not unresolved or batch.baseSequence == c.unresolvedSequence, False
        if r.error == UNKNOWN_PRODUCER_ID:
            if batch.sequenceHasBeenReset:
                return True, False, False
            if c.lastAckedOffset < r.logStartOffset:
                return (True, True, False) if self.config.kafka_8805 else (True, False, True)
            return (True, True, False) if self.config.kafka_8805 else (False, True, False)
        if r.error in RETRIABLE:
            return True, False, False
        return False, self.config.kafka_8805, False

    @staticmethod
    def start_sequences_at_beginning(c: Client) -> Client:
        """Renumber the sequences of every batch not yet completed from 0, in sequence order."""
        seqs = sorted(b.baseSequence for b in c.batches if b.baseSequence != NO_SEQUENCE)
        renumber = {old: new for new, old in enumerate(seqs)}
        batches = tuple(
            b._replace(
                producerId=c.producerId,
                producerEpoch=c.producerEpoch,
                baseSequence=renumber[b.baseSequence],
                sequenceHasBeenReset=True,
            )
            if b.baseSequence != NO_SEQUENCE
            else b
            for b in c.batches
        )
        return c._replace(batches=batches, nextSequence=len(seqs), lastAckedSequence=NO_SEQUENCE)

    @staticmethod
    def insert_in_sequence_order(batches: tuple[ClientBatch, ...], batch: ClientBatch) -> tuple[ClientBatch, ...]:
        """RecordAccumulator.insertInSequenceOrder: a retried batch goes back among the queued batches
        that have sequences, in sequence order, ahead of the ones not yet drained."""
        batch = batch._replace(inFlight=False, inRetry=True)
        for j, other in enumerate(batches):
            if not other.inFlight and (other.baseSequence == NO_SEQUENCE or other.baseSequence > batch.baseSequence):
                return (*batches[:j], batch, *batches[j:])
        return (*batches, batch)

    def _disconnect(self, s: ProducerState, out: list[Step]) -> None:
        """The connection drops (or a request times out, which NetworkClient turns into a
        disconnect): every answer in flight is lost and every in-flight batch fails with a network
        error, which is retriable. Requests already sent may still be handled."""
        c = s.client
        if s.faults >= self.config.max_disconnects or not any(b.inFlight for b in c.batches):
            return
        nxt = s._replace(responses=(), faults=s.faults + 1, client=c._replace(connection=c.connection + 1))
        for record in [b.record for b in c.batches if b.inFlight]:
            i = next(j for j, b in enumerate(nxt.client.batches) if b.record == record)
            lost = ProduceResponse(c.connection, record, NETWORK_EXCEPTION, -1, -1, -1, -1)
            nxt = self.complete_batch(nxt, i, lost)
        out.append((Action("Disconnect", connection=c.connection), nxt))

    def _delivery_timeout(self, s: ProducerState, out: list[Step]) -> None:
        """Sender.sendProducerData expires a batch, queued or in flight, once delivery.timeout.ms has
        passed since it was created: it fails with a TimeoutException, and an answer to it that still
        comes is ignored. A batch that was being retried may or may not be in the log: its partition
        gets an unresolved sequence (TransactionManager.markSequenceUnresolved)."""
        if s.timeouts >= self.config.max_delivery_timeouts or self.config.acks == "0" or not s.client.batches:
            return
        c = s.client
        # Every batch has the same delivery.timeout.ms from its creation, and Sender.getExpiredInflightBatches
        # and RecordAccumulator.expiredBatches expire in creation order: the oldest unfinished batch goes first.
        i = min(range(len(c.batches)), key=lambda j: c.batches[j].record)
        batch = c.batches[i]
        client = c._replace(batches=c.batches[:i] + c.batches[i + 1 :])
        if self.config.enable_idempotence and batch.inRetry:
            client = client._replace(unresolvedSequence=max(c.unresolvedSequence, batch.baseSequence + 1))
        nxt = s._replace(client=client, failed=s.failed | {batch.record}, timeouts=s.timeouts + 1)
        out.append((Action("DeliveryTimeout", record=batch.record), nxt))

    def _resolve_sequences(self, s: ProducerState, out: list[Step]) -> None:
        """TransactionManager.maybeResolveSequences once the partition has no batch in flight in the
        transaction manager's sense (every batch that got a sequence has completed): if every sequence
        up to the next one was acknowledged, the expired batch was written after all; otherwise the
        producer bumps its epoch."""
        c = s.client
        if c.unresolvedSequence == NO_SEQUENCE or any(b.baseSequence != NO_SEQUENCE for b in c.batches):
            return
        bump = c.nextSequence - c.lastAckedSequence != 1
        client = c._replace(unresolvedSequence=NO_SEQUENCE, epochBumpRequired=c.epochBumpRequired or bump)
        out.append((Action("ResolveSequences", bump=bump), s._replace(client=client)))

    def _bump_epoch(self, s: ProducerState, out: list[Step]) -> None:
        """Sender.runOnce -> TransactionManager.bumpIdempotentEpochAndResetIdIfNeeded at the top of the
        Sender's next loop, before anything is drained, whether or not batches are in flight:
        bumpIdempotentProducerEpoch makes the epoch + 1 and startSequencesAtBeginning renumbers every
        unfinished batch from 0 -- those on the wire too, whose requests still carry the old epoch and
        sequence. A renumbered batch keeps ProducerBatch.sequenceHasBeenReset until it is drained again
        (ProducerBatch.close). Before KAFKA-8805 the producer id is reset instead and InitProducerId
        returns a new one (epoch 0); that path is kept to a moment with no batch in flight."""
        c = s.client
        if not c.epochBumpRequired:
            return
        if self.config.kafka_8805:
            pid, epoch = c.producerId, c.producerEpoch + 1
            if epoch > self.config.max_producer_epoch:
                return
        else:
            pid, epoch = c.producerId + 1, 0
            if pid > self.config.max_producer_epoch or any(b.inFlight for b in c.batches):
                return
        bumped = self.start_sequences_at_beginning(c._replace(producerId=pid, producerEpoch=epoch))
        if not self.config.kafka_8805:
            bumped = bumped._replace(batches=tuple(b._replace(sequenceHasBeenReset=False) for b in bumped.batches))
        bumped = bumped._replace(epochBumpRequired=False, unresolvedSequence=NO_SEQUENCE)
        out.append((Action("BumpEpoch", producerId=pid, producerEpoch=epoch), s._replace(client=bumped)))

    # -- the leader ------------------------------------------------------------------------------
    def _handle_produce(self, s: ProducerState, connection: int, broker: int, out: list[Step]) -> None:
        """KafkaApis.handleProduceRequest -> ReplicaManager.appendRecords on the broker the first
        request of a connection went to. The channel is muted until the previous answer was sent, so
        a PENDING acks=all answer holds back the next request of its connection."""
        k = next(i for i, r in enumerate(s.requests) if (r.connection, r.broker) == (connection, broker))
        request = s.requests[k]
        if any((r.connection, r.broker) == (connection, broker) and r.error == PENDING for r in s.responses):
            return
        rest = s.requests[:k] + s.requests[k + 1 :]
        live = connection == s.client.connection and self.config.acks != "0"
        b = request.broker
        replica = s.replicas[b]
        base = s._replace(requests=rest)
        record = request.batch.record

        def answer(nxt: ProducerState, error: str, offset: int = -1) -> ProducerState:
            if not live:
                return nxt
            response = ProduceResponse(
                connection, record, error, offset, nxt.replicas[b].logStartOffset, b, nxt.leaderEpoch
            )
            return nxt._replace(responses=(*nxt.responses, response))

        if b != s.leader:
            nxt = answer(base, NOT_LEADER_OR_FOLLOWER)
            out.append(
                (
                    Action(
                        "HandleProduce", connection=connection, broker=b, record=record, outcome=NOT_LEADER_OR_FOLLOWER
                    ),
                    nxt,
                )
            )
            return
        outcome, offset = self.check_produce(replica, request.batch)
        if outcome == NONE:
            offset = len(replica.log)
            appended = replica._replace(log=(*replica.log, request.batch))
            if request.batch.producerId != NO_PRODUCER_ID:
                entry = add_batch(
                    entry_of(replica, request.batch.producerId),
                    request.batch,
                    offset,
                    self.config.num_batches_to_retain,
                )
                appended = appended._replace(producers=with_entry(replica.producers, entry))
            nxt = base._replace(replicas=put(s.replicas, b, appended))
            nxt = answer(nxt, PENDING if self.config.acks == "all" else NONE, offset)
        elif outcome == DUPLICATE:
            # The original offsets are the answer; with acks=all it, too, waits for the HW to pass them.
            nxt = answer(base, PENDING if self.config.acks == "all" else DUPLICATE, offset)
        else:
            nxt = answer(base, outcome)
        out.append(
            (
                Action("HandleProduce", connection=connection, broker=b, record=record, outcome=outcome),
                self.complete_delayed(nxt),
            )
        )
        if s.rejections < self.config.max_rejections:
            failed = answer(base, NOT_ENOUGH_REPLICAS)._replace(rejections=s.rejections + 1)
            out.append(
                (
                    Action(
                        "HandleProduce", connection=connection, broker=b, record=record, outcome=NOT_ENOUGH_REPLICAS
                    ),
                    failed,
                )
            )

    def check_produce(self, replica: Replica, batch: Batch) -> tuple[str, int]:
        """The leader's decision for a client batch (kmc.models.producer.broker.check_produce)."""
        return check_produce(replica, batch, self.config.kafka_8710, self.config.kafka_15591, self.config.kafka_5793)

    def _replicate(self, s: ProducerState, out: list[Step]) -> None:
        """The follower fetches the next batch (ReplicaFetcherThread), appends it with REPLICATION
        origin (its producer state is updated, not validated), and takes the leader's log start offset."""
        f = 1 - s.leader
        leader, follower = s.replicas[s.leader], s.replicas[f]
        offset = len(follower.log)
        if offset >= len(leader.log):
            return
        batch = leader.log[offset]
        producers = follower.producers
        if batch.producerId != NO_PRODUCER_ID:
            entry = add_batch(entry_of(follower, batch.producerId), batch, offset, self.config.num_batches_to_retain)
            producers = with_entry(producers, entry)
        updated = Replica((*follower.log, batch), follower.logStartOffset, producers)
        if leader.logStartOffset > updated.logStartOffset:
            updated = increment_log_start_offset(updated, leader.logStartOffset, self.config.kafka_7190)
        nxt = self.complete_delayed(s._replace(replicas=put(s.replicas, f, updated)))
        out.append((Action("Replicate", follower=f, offset=offset), nxt))

    def _elect(self, s: ProducerState, out: list[Step]) -> None:
        """The controller elects the follower (always in the ISR here); the old leader becomes its
        follower, truncates to its log (the follower's log is always a prefix of the leader's) and
        rebuilds its producer state from what is left (ProducerStateManager.truncateAndReload)."""
        if s.failovers >= self.config.max_failovers:
            return
        new = 1 - s.leader
        old = s.replicas[s.leader]
        truncated = old.log[: len(s.replicas[new].log)]
        rebuilt = rebuild(
            Replica(truncated, min(old.logStartOffset, len(truncated)), ()), self.config.num_batches_to_retain
        )
        nxt = s._replace(
            leader=new,
            leaderEpoch=s.leaderEpoch + 1,
            replicas=put(s.replicas, s.leader, rebuilt),
            failovers=s.failovers + 1,
        )
        out.append((Action("ElectLeader", broker=new, leaderEpoch=s.leaderEpoch + 1), self.complete_delayed(nxt)))

    def _delete_records(self, s: ProducerState, out: list[Step]) -> None:
        """Retention (or DeleteRecords) removes the leader's oldest batch below the high watermark; the
        follower learns the new log start offset from its next fetch."""
        if s.deletions >= self.config.max_deletions:
            return
        leader = s.replicas[s.leader]
        if leader.logStartOffset >= high_watermark(s):
            return
        updated = increment_log_start_offset(leader, leader.logStartOffset + 1, self.config.kafka_7190)
        nxt = s._replace(replicas=put(s.replicas, s.leader, updated), deletions=s.deletions + 1)
        out.append((Action("DeleteRecords", broker=s.leader, logStartOffset=updated.logStartOffset), nxt))

    def _expire(self, s: ProducerState, out: list[Step]) -> None:
        """ProducerStateManager.removeExpiredProducers: producer.id.expiration.ms (a day) has passed
        since the producer's last write -- far longer than delivery.timeout.ms, so only while no batch
        the producer ever sent is unfinished (in flight or waiting to be retried) or on the wire."""
        if s.expirations >= self.config.max_expirations or s.requests or s.responses:
            return
        if any(b.inFlight or b.baseSequence != NO_SEQUENCE for b in s.client.batches):
            return
        for b, replica in enumerate(s.replicas):
            for entry in replica.producers:
                kept = tuple(e for e in replica.producers if e.producerId != entry.producerId)
                nxt = s._replace(
                    replicas=put(s.replicas, b, replica._replace(producers=kept)), expirations=s.expirations + 1
                )
                out.append((Action("ExpireProducer", broker=b, producerId=entry.producerId), nxt))

    def drawing(self) -> ProducerDrawing:
        return ProducerDrawing()
