"""Kafka transactions (KIP-98) with KIP-890's defences against hanging and torn transactions.

One transactional id, one or two producer incarnations using it, the transaction coordinator
(``TransactionCoordinator`` over ``TransactionMetadata``, see ``transaction_coordinator``) with its
``__transaction_state`` record and coordinator epoch, and two data partitions, each with one leader
(replication is the ``kraft-replication`` model's concern: the high watermark is the log end). The
producer's TransactionManager sends InitProducerId, AddPartitionsToTxn, Produce (and, with
``offsets``, AddOffsetsToTxn and TxnOffsetCommit to the consumer-offsets partition) and EndTxn; the
coordinator writes PrepareCommit/PrepareAbort, sends WriteTxnMarkers to every partition of the
transaction and, once all are written, CompleteCommit/CompleteAbort. The leaders keep the
producer state (``ProducerStateManager``: producer epoch, coordinator epoch, the open
transaction's first offset, the verification guard) and from it the last stable offset (LSO) and
the aborted-transaction index that ``read_committed`` consumers use.

Messages travel in a network; ``delivery`` says whether each connection is FIFO or any message
may overtake any other. A producer may give up on a request (``max_request_timeouts``): a batch
expires (``delivery_timeouts``) with its produce in flight or before it was sent, an EndTxn is
sent again. The producer keeps the Java client's rules: the EndTxn waits until every batch is
complete, a commit needs a batch for every partition added, and a failed batch asks for an epoch
bump once the abort is done (``kip_360``) unless the transaction was already completing. The coordinator may
time a transaction out and fail over (the new coordinator reloads ``__transaction_state`` with a
higher coordinator epoch and resends the markers of a prepared transaction).

Flags, each a fix in Kafka's history:

* ``verification`` -- KIP-890 part 1 (KAFKA-14402 protocol, KAFKA-14561 broker, 3.6): before the
  first transactional append of a producer to a partition the leader asks the coordinator whether
  the partition is in the producer's open transaction (AddPartitionsToTxn with verifyOnly).
* ``verification_guard`` -- KAFKA-14884 (3.6): the verification is tied to a guard the leader
  clears when a marker or the first append is written, so an answer that raced with an abort
  marker cannot open a transaction after it.
* ``transaction_version`` -- 2 is KIP-890 part 2 (KAFKA-14562, 4.0): the epoch is bumped by every
  EndTxn, markers carry the bumped epoch, and the leader adds the partition itself (no client
  AddPartitionsToTxn); 0 and 1 behave alike here. Version 2 also fences the late EndTxn of
  KAFKA-17754.
* ``kip_360`` -- KAFKA-8805 (2.5): under version 0/1 the client bumps its own epoch after a failed
  batch (InitProducerId with its producer id and epoch, once the abort is done).
* ``kafka_6119`` -- 0.11.0.2: the coordinator fences the producer's epoch before it aborts a
  timed-out transaction.
* ``kafka_9144``, ``kafka_9666``, ``kafka_9777``, ``kafka_18575``, ``kafka_19367`` -- the leader's
  producer-state expiry, the fence whose append failed, the completion after the last marker, the
  guard a marker keeps, the fence's one bump;
  ``kafka_18660``, ``kafka_20090`` -- the producer-id rotation on epoch exhaustion, which
  ``initial_producer_epoch`` brings within reach: see :mod:`kmc.models.transactions.config` and
  the model's page.
"""

from __future__ import annotations

from kmc.checker import WF, Action, Model
from kmc.checker.drawing import Drawing
from kmc.models.transactions import coordinator as tc
from kmc.models.transactions.bugs import BUGS
from kmc.models.transactions.config import ACTION_ARGS, FAULTS, PRESETS, TransactionsConfig
from kmc.models.transactions.coordinator import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    CONCURRENT_TRANSACTIONS,
    INVALID_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NONE,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    PRODUCER_FENCED,
    TxnMeta,
)
from kmc.models.transactions.leader import PartitionLeaders
from kmc.models.transactions.log import Partition, fetch, last_stable_offset
from kmc.models.transactions.state import (
    ABORTABLE_ERROR,
    ABORTING_TRANSACTION,
    COMMITTING_TRANSACTION,
    COORDINATOR,
    FATAL_ERROR,
    IN_TRANSACTION,
    INITIALIZING,
    READY,
    UNINITIALIZED,
    Client,
    Coordinator,
    Decision,
    Message,
    TransactionsState,
    client_lane,
    leader_lane,
)

Step = tuple[Action, TransactionsState]


def producers_stopped(s: TransactionsState, max_transactions: int) -> bool:
    """No producer will send anything again: each is fenced or between transactions with none left."""
    done = s.nextTxn >= max_transactions
    return all(c.state == FATAL_ERROR or (c.state == READY and done) for c in s.clients)


class TransactionsModel(PartitionLeaders, Model):
    name = "transactions"
    description = "KIP-98 transactions: coordinator, markers, LSO, read_committed; KIP-890 parts 1 and 2"
    Config = TransactionsConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "kip-890-part-2"
    spec_modules = ("kmc.specs.transactions",)
    actions = tuple(ACTION_ARGS)
    fairness = tuple(WF(name, each=True) for name in ACTION_ARGS if name not in FAULTS)

    config: TransactionsConfig

    def __init__(self, config: TransactionsConfig | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        self.tv2 = cfg.transaction_version >= 2
        self.n_partitions = cfg.partitions + (1 if cfg.offsets else 0)
        self.offsets_partition = cfg.partitions if cfg.offsets else -1

    def recovery_actions(self) -> tuple[str, ...]:
        """The coordinator's timeout abort ends a transaction its producer left open: where no
        transaction hangs, it is never needed."""
        return ("AbortTimedOutTransaction",)

    def inactive_actions(self) -> tuple[str, ...]:
        off = []
        if not self.config.verification:
            off += ["HandleVerifyPartition", "HandleVerifyResponse"]
        if self.tv2:
            off += ["AddPartitionsToTxn", "HandleAddPartitionsToTxn", "HandleAddPartitionsToTxnResponse"]
        if not self.config.consumer:
            off += ["ConsumerFetch", "DelayFetch", "CompleteDelayedFetch"]
        if not self.config.offsets:
            off += ["AddOffsetsToTxn", "TxnOffsetCommit"]
        elif self.tv2:
            off.append("AddOffsetsToTxn")
        if self.config.max_request_timeouts == 0:
            off.append("RequestTimeout")
        if self.config.max_txn_timeouts == 0:
            off.append("TxnTimeout")
        if self.config.max_failovers == 0:
            off.append("CoordinatorFailover")
        if self.config.max_expirations == 0:
            off.append("ExpireProducer")
        if self.config.max_state_loads == 0:
            off.append("LoadTxnStatePartition")
        if self.config.max_fence_append_failures == 0:
            off.append("FenceAppendFails")
        return tuple(off)

    # -- the initial state ---------------------------------------------------------------------
    def init_states(self) -> list[TransactionsState]:
        client = Client(UNINITIALIZED, -1, NO_PRODUCER_EPOCH, -1, frozenset(), frozenset(), frozenset(), "", False)
        partition = Partition((), (), ())
        n = self.n_partitions
        metadata = None
        if self.config.initial_producer_epoch != NO_PRODUCER_EPOCH:
            # An earlier producer of the transactional id bumped its epoch this far and went away;
            # the leaders have long expired its state.
            epoch = self.config.initial_producer_epoch
            metadata = TxnMeta(tc.PRODUCER_ID, epoch, NO_PRODUCER_EPOCH, tc.EMPTY, frozenset(), tc.PRODUCER_ID)
        return [
            TransactionsState(
                (client,) * self.config.producers,
                Coordinator(0, metadata, frozenset(), -1, False),
                metadata,
                (partition,) * n,
                (),
                (0,) * n,
                ((),) * n,
                frozenset(),
                (),
                frozenset(),
                0,
                0,
                0,
                0,
                0,
                0,
            )
        ]

    # -- helpers -------------------------------------------------------------------------------
    def _send(self, s: TransactionsState, *msgs: Message, drop: Message | None = None) -> tuple[Message, ...]:
        net = list(s.network)
        if drop is not None:
            net.remove(drop)
        net.extend(msgs)
        if self.config.delivery == "fifo":
            return tuple(sorted(net, key=lambda m: (m.src, m.dst)))
        return tuple(sorted(net))

    def _deliverable(self, s: TransactionsState) -> list[Message]:
        """The messages that may be delivered next: under FIFO, the head of each connection."""
        if self.config.delivery == "any":
            return list(dict.fromkeys(s.network))
        seen: set[tuple[str, str]] = set()
        out = []
        for m in s.network:
            if (m.src, m.dst) not in seen:
                seen.add((m.src, m.dst))
                out.append(m)
        return out

    @staticmethod
    def _set_client(s: TransactionsState, c: int, client: Client) -> tuple[Client, ...]:
        return (*s.clients[:c], client, *s.clients[c + 1 :])

    def within_bounds(self, s: TransactionsState) -> bool:
        return True

    # -- successors ----------------------------------------------------------------------------
    def successors(self, s: TransactionsState) -> list[Step]:
        out: list[Step] = []
        for c in range(len(s.clients)):
            self._client_steps(s, c, out)
        for m in self._deliverable(s):
            self._deliver(s, m, out)
        self._coordinator_steps(s, out)
        if s.expirations < self.config.max_expirations:
            for p in range(self.n_partitions):
                self._expire_producer(s, p, out)
        if self.config.consumer:
            for p in range(self.n_partitions):
                self._consumer_steps(s, p, out)
        return out

    # -- the read_committed consumer -----------------------------------------------------------
    def _consumer_steps(self, s: TransactionsState, p: int, out: list[Step]) -> None:
        """A fetch is answered at once when there is something below the LSO; otherwise it waits in
        the purgatory (DelayedFetch) until data arrives or fetch.max.wait.ms passes, and is then
        read again by DelayedFetch.onComplete."""
        partition, position = s.partitions[p], s.consumerPositions[p]
        if p in s.delayedFetches:
            committed = self.config.kafka_5355
            end, records = fetch(partition, position, committed, committed and self.config.kafka_5376)
            nxt = self._fetched(s, p, end, records)._replace(delayedFetches=s.delayedFetches - {p})
            out.append((Action("CompleteDelayedFetch", partition=p), nxt))
        elif position < last_stable_offset(partition):
            end, records = fetch(partition, position, True, True)
            out.append((Action("ConsumerFetch", partition=p), self._fetched(s, p, end, records)))
        else:
            out.append((Action("DelayFetch", partition=p), s._replace(delayedFetches=s.delayedFetches | {p})))

    @staticmethod
    def _fetched(s: TransactionsState, p: int, end: int, records: tuple[int, ...]) -> TransactionsState:
        positions = (*s.consumerPositions[:p], end, *s.consumerPositions[p + 1 :])
        consumed = (*s.consumed[:p], s.consumed[p] + records, *s.consumed[p + 1 :])
        return s._replace(consumerPositions=positions, consumed=consumed)

    # -- the producer --------------------------------------------------------------------------
    def _client_steps(self, s: TransactionsState, c: int, out: list[Step]) -> None:
        cl = s.clients[c]
        me = client_lane(c)
        if cl.state == UNINITIALIZED and (c == 0 or s.clients[c - 1].state != UNINITIALIZED):
            msg = Message("InitProducerId", me, COORDINATOR, client=c)
            new = cl._replace(state=INITIALIZING, awaiting="InitProducerId")
            out.append(
                (
                    Action("InitProducerId", client=c),
                    s._replace(clients=self._set_client(s, c, new), network=self._send(s, msg)),
                )
            )
        if cl.state == READY and s.nextTxn < self.config.max_transactions:
            new = cl._replace(
                state=IN_TRANSACTION, txn=s.nextTxn, added=frozenset(), produced=frozenset(), completed=frozenset()
            )
            out.append(
                (
                    Action("BeginTransaction", client=c),
                    s._replace(clients=self._set_client(s, c, new), nextTxn=s.nextTxn + 1),
                )
            )
        if cl.state == IN_TRANSACTION and not cl.awaiting:
            for p in range(self.n_partitions):
                if p in cl.produced:
                    continue
                if not self.tv2 and p not in cl.added:
                    msg = Message(
                        "AddPartitionsToTxn",
                        me,
                        COORDINATOR,
                        client=c,
                        partition=p,
                        producerEpoch=cl.producerEpoch,
                        txn=cl.txn,
                        producerId=cl.producerId,
                    )
                    new = cl._replace(awaiting="AddPartitionsToTxn")
                    api = "AddOffsetsToTxn" if p == self.offsets_partition else "AddPartitionsToTxn"
                    out.append(
                        (
                            Action(api, client=c, partition=p),
                            s._replace(clients=self._set_client(s, c, new), network=self._send(s, msg)),
                        )
                    )
                elif self.tv2 or p in cl.added:
                    msg = Message(
                        "Produce",
                        me,
                        leader_lane(p),
                        client=c,
                        partition=p,
                        producerEpoch=cl.producerEpoch,
                        txn=cl.txn,
                        producerId=cl.producerId,
                    )
                    new = cl._replace(produced=cl.produced | {p})
                    api = "TxnOffsetCommit" if p == self.offsets_partition else "Produce"
                    out.append(
                        (
                            Action(api, client=c, partition=p),
                            s._replace(clients=self._set_client(s, c, new), network=self._send(s, msg)),
                        )
                    )
            # commitTransaction(): every partition added has its batch; the EndTxn waits for them all
            if cl.produced and cl.added <= cl.produced:
                if cl.completed == cl.produced:
                    self._end_txn(s, c, True, out)
                else:
                    new = cl._replace(state=COMMITTING_TRANSACTION)
                    out.append((Action("BeginCommit", client=c), s._replace(clients=self._set_client(s, c, new))))
        if cl.state == COMMITTING_TRANSACTION and not cl.awaiting and cl.completed == cl.produced:
            self._end_txn(s, c, True, out)
        if cl.state in (IN_TRANSACTION, ABORTABLE_ERROR) and not cl.awaiting and not (cl.added or cl.produced):
            # abortTransaction() before a record was sent: transactionStarted is false, so
            # TransactionManager completes the EndTxn locally and sends nothing.
            new = cl._replace(state=READY, txn=-1)
            out.append(
                (
                    Action("AbortLocally", client=c),
                    s._replace(clients=self._set_client(s, c, new), aborted=s.aborted | {cl.txn}),
                )
            )
        elif cl.state == ABORTABLE_ERROR and not cl.awaiting and cl.completed == cl.produced:
            self._end_txn(s, c, False, out)
        if s.requestTimeouts < self.config.max_request_timeouts:
            self._request_timeouts(s, c, out)

    @staticmethod
    def _end_txn_request(cl: Client, c: int, commit: bool) -> Message:
        return Message(
            "EndTxn",
            client_lane(c),
            COORDINATOR,
            client=c,
            producerEpoch=cl.producerEpoch,
            commit=commit,
            txn=cl.txn,
            producerId=cl.producerId,
        )

    def _end_txn(self, s: TransactionsState, c: int, commit: bool, out: list[Step]) -> None:
        cl = s.clients[c]
        msg = self._end_txn_request(cl, c, commit)
        new = cl._replace(state=COMMITTING_TRANSACTION if commit else ABORTING_TRANSACTION, awaiting="EndTxn")
        aborted = s.aborted if commit else s.aborted | {cl.txn}
        out.append(
            (
                Action("EndTxn", client=c, commit=commit),
                s._replace(clients=self._set_client(s, c, new), network=self._send(s, msg), aborted=aborted),
            )
        )

    def _request_timeouts(self, s: TransactionsState, c: int, out: list[Step]) -> None:
        """The client gives up on a request. A batch expires (delivery.timeout.ms) with its produce in
        flight (the request may still arrive) or before it was sent: the transaction becomes
        abortable. An unanswered EndTxn is sent again (request.timeout.ms)."""
        cl = s.clients[c]
        count = s.requestTimeouts + 1
        if self.config.delivery_timeouts and cl.state in (IN_TRANSACTION, COMMITTING_TRANSACTION, ABORTABLE_ERROR):
            failed = cl._replace(state=ABORTABLE_ERROR, epochBumpRequired=self._epoch_bump_required(cl))
            expired = [(p, failed._replace(completed=cl.completed | {p})) for p in sorted(cl.produced - cl.completed)]
            if cl.state == IN_TRANSACTION:  # added, its batch still in the accumulator
                expired += [(p, failed) for p in sorted(cl.added - cl.produced)]
            for p, new in expired:
                out.append(
                    (
                        Action("RequestTimeout", client=c, api="Produce", partition=p),
                        s._replace(clients=self._set_client(s, c, new), requestTimeouts=count),
                    )
                )
        if cl.awaiting == "EndTxn":
            msg = self._end_txn_request(cl, c, cl.state == COMMITTING_TRANSACTION)
            out.append(
                (
                    Action("RequestTimeout", client=c, api="EndTxn", partition=-1),
                    s._replace(network=self._send(s, msg), requestTimeouts=count),
                )
            )

    # -- deliveries ----------------------------------------------------------------------------
    def _deliver(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        handler = getattr(self, "_on_" + m.api, None)
        if handler is not None:
            handler(s, m, out)

    def _client_response(
        self, s: TransactionsState, m: Message, name: str, out: list[Step], new: Client | None, **extra: object
    ) -> None:
        """Deliver a response to a client; ``new`` None means it is stale and ignored."""
        clients = s.clients if new is None else self._set_client(s, m.client, new)
        args = {"client": m.client, **({"partition": m.partition} if "partition" in ACTION_ARGS[name] else {})}
        out.append((Action(name, **args), s._replace(clients=clients, network=self._send(s, drop=m), **extra)))

    def _on_InitProducerIdResponse(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        cl = s.clients[m.client]
        if m.error == NONE:
            new = cl._replace(state=READY, producerId=m.producerId, producerEpoch=m.producerEpoch, awaiting="")
            self._client_response(s, m, "HandleInitProducerIdResponse", out, new)
        elif m.error in (CONCURRENT_TRANSACTIONS, tc.COORDINATOR_NOT_AVAILABLE):  # retry, the same expected epoch
            retry = Message(
                "InitProducerId",
                client_lane(m.client),
                COORDINATOR,
                client=m.client,
                producerEpoch=cl.producerEpoch,
                producerId=cl.producerId,
            )
            self._retry(s, m, "HandleInitProducerIdResponse", retry, out)
        else:  # PRODUCER_FENCED: another incarnation bumped the epoch first
            self._client_response(s, m, "HandleInitProducerIdResponse", out, self._fail(cl, m.error))

    def _retry(self, s: TransactionsState, m: Message, name: str, retry: Message, out: list[Step]) -> None:
        args = {"client": m.client, **({"partition": m.partition} if "partition" in ACTION_ARGS[name] else {})}
        out.append((Action(name, **args), s._replace(network=self._send(s, retry, drop=m))))

    def _fail(self, cl: Client, error: str) -> Client:
        """TransactionManager: a fenced producer, an unknown producer id and an error it has no rule
        for (UNKNOWN_SERVER_ERROR) are fatal; other errors make the transaction abortable."""
        if error in (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, tc.INVALID_PRODUCER_ID_MAPPING, tc.UNKNOWN_SERVER_ERROR):
            return cl._replace(state=FATAL_ERROR, awaiting="")
        return cl._replace(state=ABORTABLE_ERROR, awaiting="")

    def _epoch_bump_required(self, cl: Client) -> bool:
        """maybeTransitionToErrorState on a failed batch: under transaction version 0/1 with KIP-360,
        the epoch is bumped after the abort unless the transaction was already completing."""
        completing = cl.state in (COMMITTING_TRANSACTION, ABORTING_TRANSACTION)
        return cl.epochBumpRequired or (self.config.kip_360 and not self.tv2 and not completing)

    @staticmethod
    def _resent(m: Message, api: str, cl: Client, **changes: object) -> Message:
        """The request ``m`` answers, sent again with the client's current producer id and epoch."""
        return m._replace(
            api=api, src=m.dst, dst=m.src, producerEpoch=cl.producerEpoch, producerId=cl.producerId, **changes
        )

    def _on_AddPartitionsToTxnResponse(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        cl = s.clients[m.client]
        if cl.txn != m.txn or cl.state != IN_TRANSACTION:
            return self._client_response(s, m, "HandleAddPartitionsToTxnResponse", out, cl._replace(awaiting=""))
        if m.error == CONCURRENT_TRANSACTIONS:
            retry = self._resent(m, "AddPartitionsToTxn", cl)
            return self._retry(s, m, "HandleAddPartitionsToTxnResponse", retry, out)
        new = cl._replace(added=cl.added | {m.partition}, awaiting="") if m.error == NONE else self._fail(cl, m.error)
        self._client_response(s, m, "HandleAddPartitionsToTxnResponse", out, new)

    def _on_ProduceResponse(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        cl = s.clients[m.client]
        waiting = cl.state in (IN_TRANSACTION, COMMITTING_TRANSACTION, ABORTABLE_ERROR)
        if cl.txn != m.txn or not waiting or m.partition in cl.completed:
            return self._client_response(s, m, "HandleProduceResponse", out, None)
        if m.error == CONCURRENT_TRANSACTIONS:  # the leader could not verify yet: send the record again
            retry = self._resent(m, "Produce", cl, error=NONE)
            return self._retry(s, m, "HandleProduceResponse", retry, out)
        completed = cl.completed | {m.partition}
        if m.error == NONE:
            new = cl._replace(completed=completed, added=cl.added | {m.partition})
        else:
            new = self._fail(cl, m.error)._replace(completed=completed)
            if new.state == ABORTABLE_ERROR:
                new = new._replace(epochBumpRequired=self._epoch_bump_required(cl), awaiting=cl.awaiting)
        self._client_response(s, m, "HandleProduceResponse", out, new)

    def _on_EndTxnResponse(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        cl = s.clients[m.client]
        if cl.awaiting != "EndTxn" or cl.txn != m.txn:
            return self._client_response(s, m, "HandleEndTxnResponse", out, None)
        if m.error == CONCURRENT_TRANSACTIONS:
            retry = self._end_txn_request(cl, m.client, cl.state == COMMITTING_TRANSACTION)
            return self._retry(s, m, "HandleEndTxnResponse", retry, out)
        if m.error == NONE:
            epoch = m.producerEpoch if self.tv2 else cl.producerEpoch
            producer_id = m.producerId if self.tv2 else cl.producerId
            new = cl._replace(
                state=READY,
                producerId=producer_id,
                producerEpoch=epoch,
                txn=-1,
                added=frozenset(),
                produced=frozenset(),
                completed=frozenset(),
                awaiting="",
            )
            if cl.epochBumpRequired:  # KIP-360: the abort is done, now InitProducerId with the current epoch
                new = new._replace(state=INITIALIZING, awaiting="InitProducerId", epochBumpRequired=False)
                bump = Message(
                    "InitProducerId", m.dst, COORDINATOR, client=m.client, producerEpoch=epoch, producerId=producer_id
                )
                nxt = s._replace(clients=self._set_client(s, m.client, new), network=self._send(s, bump, drop=m))
                out.append((Action("HandleEndTxnResponse", client=m.client), nxt))
                return
        else:
            # Every EndTxn error here is fatal (the producer is fenced or the state is invalid). An
            # abort was counted as aborted when it was sent; a failed commit's outcome is unknown to
            # the application (an earlier copy of the same EndTxn may have committed it), so it is
            # not counted as aborted.
            new = self._fail(cl, m.error)
            if m.error == tc.INVALID_TXN_STATE:
                new = new._replace(state=FATAL_ERROR)
        self._client_response(s, m, "HandleEndTxnResponse", out, new)

    # -- the coordinator -----------------------------------------------------------------------
    def _markers(self, meta: TxnMeta, epoch: int, decision: int) -> list[Message]:
        commit = meta.state == PREPARE_COMMIT
        return [
            Message(
                "WriteTxnMarkers",
                COORDINATOR,
                leader_lane(p),
                partition=p,
                producerEpoch=meta.producerEpoch,
                producerId=meta.producerId,
                commit=commit,
                coordinatorEpoch=epoch,
                txn=decision,
            )
            for p in sorted(meta.topicPartitions)
        ]

    def _apply(
        self, s: TransactionsState, meta: TxnMeta, responses: list[Message], drop: Message | None
    ) -> TransactionsState:
        """Write a transition to __transaction_state and complete it; a prepared decision sends its markers."""
        co = s.coordinator
        decisions, decision, pending, markers = s.decisions, co.decision, co.pendingMarkers, []
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT) and (co.metadata is None or co.metadata.state != meta.state):
            decision = len(s.decisions)
            decisions = (*s.decisions, Decision(meta.state == PREPARE_COMMIT, meta.topicPartitions))
            pending = meta.topicPartitions
            markers = self._markers(meta, co.coordinatorEpoch, decision)
        failed_fence = co.hasFailedEpochFence
        if meta.state in (COMPLETE_COMMIT, COMPLETE_ABORT):
            decision, failed_fence = -1, False  # prepareComplete clears hasFailedEpochFence
        coordinator = co._replace(
            metadata=meta, pendingMarkers=pending, decision=decision, hasFailedEpochFence=failed_fence
        )
        network = self._send(s, *responses, *markers, drop=drop)
        return s._replace(coordinator=coordinator, transactionLog=meta, decisions=decisions, network=network)

    def _on_InitProducerId(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        cfg, co = self.config, s.coordinator
        r = tc.handle_init_producer_id(
            co.metadata,
            self.tv2,
            m.producerEpoch,
            cfg.kafka_19367,
            m.producerId,
            cfg.kafka_20090,
            co.hasFailedEpochFence,
        )
        if r.method == "prepareFenceProducerEpoch" and s.fenceAppendFailures < cfg.max_fence_append_failures:
            self._fence_append_fails(s, m, out)
        resp = Message(
            "InitProducerIdResponse",
            COORDINATOR,
            m.src,
            client=m.client,
            producerEpoch=r.producerEpoch,
            error=r.error,
            producerId=r.producerId,
        )
        if r.installed is not None:  # refused after the fenced epoch was set: it stays, unwritten
            nxt = self._kept_in_memory(s, r.installed, network=self._send(s, resp, drop=m))
        elif r.meta is not None:
            nxt = self._apply(s, r.meta, [resp], m)
        else:
            nxt = s._replace(network=self._send(s, resp, drop=m))
        out.append((Action("HandleInitProducerId", client=m.client), nxt))

    def _fence_append_fails(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        """The fence of an open transaction and its abort are not written (NOT_ENOUGH_REPLICAS on
        __transaction_state): the client is told COORDINATOR_NOT_AVAILABLE and retries, and under
        transaction version 1 the fenced epoch stays in memory, marked (KAFKA-9666) so that the next
        fence does not bump it again."""
        cfg, co = self.config, s.coordinator
        assert co.metadata is not None
        fenced = tc.install_fence(co.metadata, self.tv2, cfg.kafka_19367, cfg.kafka_20090, co.hasFailedEpochFence)
        marked = cfg.kafka_9666 and fenced != co.metadata
        resp = Message(
            "InitProducerIdResponse", COORDINATOR, m.src, client=m.client, error=tc.COORDINATOR_NOT_AVAILABLE
        )
        nxt = self._kept_in_memory(
            s,
            fenced,
            hasFailedEpochFence=co.hasFailedEpochFence or marked,
            network=self._send(s, resp, drop=m),
            fenceAppendFailures=s.fenceAppendFailures + 1,
        )
        out.append((Action("FenceAppendFails", client=m.client), nxt))

    @staticmethod
    def _kept_in_memory(
        s: TransactionsState,
        metadata: tc.TxnMeta,
        hasFailedEpochFence: bool | None = None,
        **changes: object,
    ) -> TransactionsState:
        """The coordinator's transaction metadata changed in memory only: nothing was appended to
        __transaction_state and no marker is sent (a refusal after the epoch was set, a failed append)."""
        co = s.coordinator
        marked = co.hasFailedEpochFence if hasFailedEpochFence is None else hasFailedEpochFence
        return s._replace(coordinator=co._replace(metadata=metadata, hasFailedEpochFence=marked), **changes)

    def _on_AddPartitionsToTxn(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        r = tc.handle_add_partitions(s.coordinator.metadata, m.producerId, m.producerEpoch, frozenset({m.partition}))
        resp = m._replace(api="AddPartitionsToTxnResponse", src=COORDINATOR, dst=m.src, error=r.error)
        nxt = self._apply(s, r.meta, [resp], m) if r.meta else s._replace(network=self._send(s, resp, drop=m))
        out.append((Action("HandleAddPartitionsToTxn", client=m.client, partition=m.partition), nxt))

    def _on_EndTxn(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        cfg = self.config
        r = tc.handle_end_txn(
            s.coordinator.metadata,
            m.producerId,
            m.producerEpoch,
            m.commit,
            self.tv2,
            cfg.kafka_18464,
            cfg.kafka_18660,
            cfg.kafka_20090,
        )
        resp = m._replace(
            api="EndTxnResponse",
            src=COORDINATOR,
            dst=m.src,
            error=r.error,
            producerEpoch=r.producerEpoch,
            producerId=r.producerId,
        )
        nxt = self._apply(s, r.meta, [resp], m) if r.meta else s._replace(network=self._send(s, resp, drop=m))
        out.append((Action("HandleEndTxn", client=m.client, commit=m.commit, producerEpoch=m.producerEpoch), nxt))

    def _on_VerifyPartition(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        """AddPartitionsToTxn from a leader: verifyOnly under TV 0/1, the implicit add under TV 2."""
        meta = s.coordinator.metadata
        if self.tv2:
            r = tc.handle_add_partitions(
                meta, m.producerId, m.producerEpoch, frozenset({m.partition}), self.config.kafka_18660
            )
            resp = m._replace(api="VerifyResponse", src=COORDINATOR, dst=m.src, error=r.error)
            nxt = self._apply(s, r.meta, [resp], m) if r.meta else s._replace(network=self._send(s, resp, drop=m))
        else:
            error = tc.handle_verify(meta, m.producerId, m.producerEpoch, m.partition)
            resp = m._replace(api="VerifyResponse", src=COORDINATOR, dst=m.src, error=error)
            nxt = s._replace(network=self._send(s, resp, drop=m))
        out.append((Action("HandleVerifyPartition", partition=m.partition), nxt))

    def _on_WriteTxnMarkersResponse(self, s: TransactionsState, m: Message, out: list[Step]) -> None:
        co = s.coordinator
        nxt = s._replace(network=self._send(s, drop=m))
        current = m.coordinatorEpoch == co.coordinatorEpoch and m.txn == co.decision
        if current and m.error != NONE:
            nxt = nxt._replace(coordinator=co._replace(completionLost=True))
        elif current:
            nxt = nxt._replace(coordinator=co._replace(pendingMarkers=co.pendingMarkers - {m.partition}))
        out.append((Action("HandleWriteTxnMarkersResponse", partition=m.partition), nxt))
        if current and co.pendingMarkers == {m.partition} and s.stateLoads < self.config.max_state_loads:
            # The last marker is acknowledged while the broker loads or unloads another
            # __transaction_state partition under the state write lock. Before KAFKA-9777 the
            # DelayedTxnMarker's tryLock fails and nobody tries the completion again.
            lost = nxt.coordinator._replace(completionLost=not self.config.kafka_9777)
            nxt = nxt._replace(coordinator=lost, stateLoads=s.stateLoads + 1)
            out.append((Action("LoadTxnStatePartition", partition=m.partition), nxt))

    def _abort_timed_out(self, s: TransactionsState) -> TransactionsState | None:
        """abortTimedOutTransactions' fence and abort of the open transaction, appended; when the abort
        overflows after the fenced epoch was set (transaction version 2 before KAFKA-19367), that epoch
        alone, in memory; None when the fence itself throws (at Short.MaxValue before KAFKA-20090)
        and nothing changes."""
        cfg, co = self.config, s.coordinator
        assert co.metadata is not None
        try:
            aborted = tc.abort_timed_out(
                co.metadata, self.tv2, cfg.kafka_6119, cfg.kafka_19367, cfg.kafka_20090, co.hasFailedEpochFence
            )
        except tc.EpochOverflowError as overflow:
            if overflow.installed is None:
                return None
            return self._kept_in_memory(s, overflow.installed)
        return self._apply(s, aborted, [], None)

    def _coordinator_steps(self, s: TransactionsState, out: list[Step]) -> None:
        cfg, co = self.config, s.coordinator
        meta = co.metadata
        prepared = meta is not None and meta.state in (PREPARE_COMMIT, PREPARE_ABORT)
        if prepared and not co.pendingMarkers and not co.completionLost:
            out.append((Action("WriteTxnCompletion"), self._apply(s, tc.prepare_complete(meta, self.tv2), [], None)))
        if meta is not None and meta.state == ONGOING:
            fault = s.txnTimeouts < cfg.max_txn_timeouts
            stopped = producers_stopped(s, cfg.max_transactions)
            aborted = self._abort_timed_out(s) if fault or stopped else None
            if aborted is not None and fault:
                out.append((Action("TxnTimeout"), aborted._replace(txnTimeouts=s.txnTimeouts + 1)))
            if aborted is not None and stopped:
                # Nobody will end it: transaction.timeout.ms passes and abortTimedOutTransactions,
                # which runs every few seconds, fences and aborts it. A fair step, not a fault.
                out.append((Action("AbortTimedOutTransaction"), aborted))
        if s.failovers < self.config.max_failovers:
            epoch = co.coordinatorEpoch + 1
            log = s.transactionLog
            network = tuple(
                m
                for m in s.network
                if m.dst != COORDINATOR
                or m.api in ("InitProducerId", "EndTxn", "AddPartitionsToTxn", "VerifyPartition")
            )
            pending, markers, decision = frozenset(), [], -1
            if log is not None and log.state in (PREPARE_COMMIT, PREPARE_ABORT):
                pending, decision = log.topicPartitions, co.decision
                markers = self._markers(log, epoch, decision)
            coordinator = Coordinator(epoch, log, pending, decision, False)
            nxt = s._replace(
                coordinator=coordinator,
                network=self._send(s._replace(network=network), *markers),
                failovers=s.failovers + 1,
            )
            out.append((Action("CoordinatorFailover"), nxt))

    def drawing(self) -> Drawing:
        from kmc.models.transactions.drawing import TransactionsDrawing

        return TransactionsDrawing(self.config.producers, self.n_partitions)
