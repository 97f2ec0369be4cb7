"""The transactions driver: the model's transactional producer played against a real transaction
coordinator and partition leader, read back with DescribeTransactions, Fetch and DescribeProducers.

The client's requests (InitProducerId, AddPartitionsToTxn, Produce, EndTxn) travel when the trace
says the broker handles them; the transaction version is the one the model runs (version 2: EndTxn
v5 and Produce v12; version 1: EndTxn v4, AddPartitionsToTxn v3, Produce v11). The broker's own
steps are not requests: the leader's verification of a produce (KIP-890), the coordinator's markers
and its completion. The broker takes them at once, so the driver holds back what it can and lets the
rest happen as one step with the trace's next ones:

- the markers wait while the data partitions' leader is paused (SIGSTOP): it is paused when the
  coordinator decides unless the trace writes the markers next, and resumed at the trace's first
  ``HandleWriteTxnMarkers``; the leader is never the coordinator nor the active controller;
- a verification (``HandleProduce``, ``HandleVerifyPartition``, ``HandleVerifyResponse``) and a
  completion (the markers, their answers, ``WriteTxnCompletion``) must be contiguous in the trace;
  the broker's state is compared after the last step of each (a trace that splits one is refused).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model
from kmc.cluster.drive.base import EpochNames, Performed
from kmc.cluster.drive.records import active_producers, batch, produce_answer, produce_request, read_log
from kmc.cluster.drive.session import RETRIABLE, Session
from kmc.cluster.drive.wire import error_name, java, java_list, message
from kmc.cluster.release import FIRST_4X, Release
from kmc.models.transactions.coordinator import PREPARE_ABORT, PREPARE_COMMIT
from kmc.models.transactions.state import request_in_flight

VERIFICATION = ("HandleVerifyPartition", "HandleVerifyResponse")
COMPLETION = ("HandleWriteTxnMarkers", "HandleWriteTxnMarkersResponse", "WriteTxnCompletion")
CLIENT_ONLY = (
    "InitProducerId",
    "BeginTransaction",
    "BeginCommit",
    "AddPartitionsToTxn",
    "Produce",
    "EndTxn",
    "AbortLocally",
    "RequestTimeout",
    "HandleInitProducerIdResponse",
    "HandleAddPartitionsToTxnResponse",
    "HandleProduceResponse",
    "HandleEndTxnResponse",
)
TXN_TIMEOUT_MS = 120_000
RAISE_EPOCH_TIMEOUT_S = 900.0
"""How long the InitProducerIds that bring a transactional id to a trace's starting epoch may take
(32,766 of them for the epoch 32,765, Short.MaxValue - 2)."""


def _named(action: Action | None, name: str) -> bool:
    return action is not None and action.name == name


class TransactionsDriver:
    model_name = "transactions"
    # the transaction log on the coordinator alone: pausing the data partitions' leader must not hold
    # back the coordinator's own writes (acks=all waits for every in-sync replica)
    settings: ClassVar[dict[str, str]] = {
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
    }
    not_driven: ClassVar[dict[str, str]] = {
        "TxnTimeout": "the coordinator's timeout of one transaction at a chosen moment: not driven yet",
        "AbortTimedOutTransaction": "as TxnTimeout",
        "CoordinatorFailover": "a new __transaction_state leader while markers are held: not driven yet",
        "AddOffsetsToTxn": "sendOffsetsToTransaction: not driven yet",
        "TxnOffsetCommit": "sendOffsetsToTransaction: not driven yet",
        "ConsumerFetch": "the read_committed consumer's position: not driven yet (the log is compared instead)",
        "DelayFetch": "the consumer's fetch waiting in the purgatory: not driven yet",
        "CompleteDelayedFetch": "as DelayFetch",
    }
    unseen = (
        "coordinator.coordinatorEpoch, pendingMarkers, decision, transactionLog: inside the coordinator "
        "(DescribeTransactions shows the state, epoch and partitions)",
        "partitions[].coordinatorEpoch, verificationGuard, verifying: inside the leader",
        "network: the messages in flight (the driver sends the clients' at their turn)",
        "clients, consumerPositions, decisions, aborted, nextTxn and the fault counters: the driver's or the model's",
    )
    unseen_properties: ClassVar[dict[str, str]] = {
        "LegalCoordinatorTransition": "it reads the coordinator's transitions, of which DescribeTransactions shows "
        "only the states a step ends in",
    }
    max_drive_s = 120.0
    settle_s = 1.0

    def __init__(self, session: Session, model: Model, initial: Any) -> None:
        self.session = session
        self.model = model
        self.config = model.config
        self.tv2 = model.config.transaction_version >= 2
        self.transactional_id = f"kmc-txn-{uuid.uuid4().hex[:12]}"
        self.topic = f"kmc-drive-txn-{uuid.uuid4().hex[:8]}"
        self.epochs = EpochNames()
        self.coordinator = self.leader = -1
        self.producer_id = -1
        self.sequences: dict[tuple[int, int], int] = {}
        """(partition, producer epoch) -> the next sequence"""
        self.batches: dict[tuple[int, int], int] = {}
        """(partition, txn) -> the sequence its batch was sent with"""
        self.actions: list[Action] = []
        self.index = 0
        self.paused = False
        self.completion_left_out = False
        self.last_partitions: list[dict[str, Any]] = []
        self.held_answer: dict[str, Any] = {}
        """A verified produce's answer, compared when the trace's verification ends"""

    @classmethod
    def check_release(cls, release: Release, model: Model) -> None:
        if model.config.transaction_version >= 2:
            release.require(FIRST_4X, "transaction version 2 (KIP-890 part 2: EndTxn v5, Produce v12) needs")

    @classmethod
    def glued(cls, actions: Sequence[Action | None]) -> int | None:
        """The step the last of ``actions`` must directly follow on a real broker: a verification
        its produce, a verification's answer its request, the markers' answers and the completion the
        markers, the markers the coordinator's decision when a produce reaches the leader between them
        (the markers are held by pausing that leader). reorder.py moves commuting steps to bring them
        together."""
        last = actions[-1]
        if last is None:
            return None
        if last.name == COMPLETION[0]:
            decided = next((i for i in range(len(actions) - 2, 0, -1) if _named(actions[i], "HandleEndTxn")), None)
            between = actions[decided + 1 : -1] if decided is not None else []
            held = any(_named(a, "HandleProduce") for a in between) and not any(
                _named(a, COMPLETION[0]) for a in between
            )
            return decided if held else None
        if last.name in VERIFICATION:
            before = "HandleProduce" if last.name == VERIFICATION[0] else VERIFICATION[0]
            wanted = lambda a: a.name == before and a.args.get("partition") == last.args["partition"]  # noqa: E731
        elif last.name in COMPLETION[1:]:
            wanted = lambda a: a.name in COMPLETION  # noqa: E731
        else:
            return None
        return next((i for i in range(len(actions) - 2, 0, -1) if actions[i] is not None and wanted(actions[i])), None)

    @classmethod
    def check_trace(cls, actions: list[Action]) -> None:
        """Refuse a trace that splits a step the broker takes at once."""
        names = ["" if a is None else a.name for a in actions]
        held = False
        for i, name in enumerate(names):
            if name == "HandleEndTxn":
                held = i + 1 < len(names) and names[i + 1] != "HandleWriteTxnMarkers"
            elif name == "HandleWriteTxnMarkers":
                held = False
            elif name == "HandleProduce" and held:
                raise UserError(
                    f"step {i}: a produce reaches the leader while the coordinator's markers are held back, "
                    "which the driver does by pausing that leader"
                )
            if name == "HandleVerifyPartition" and not (i >= 1 and names[i - 1] == "HandleProduce"):
                raise UserError(
                    f"step {i}: the leader's verification cannot be held apart from its produce on a real broker"
                )
            if name == "HandleVerifyResponse" and not (i >= 1 and names[i - 1] == "HandleVerifyPartition"):
                raise UserError(f"step {i}: a verification's answer cannot be held back on a real broker")
            if name in COMPLETION[1:] and not (i >= 1 and names[i - 1] in COMPLETION):
                raise UserError(
                    f"step {i}: {name} apart from the markers: the coordinator completes at once on a real broker"
                )

    # -- setup -------------------------------------------------------------------------------------
    def setup(self) -> None:
        self.coordinator = self.session.find_coordinator(self.transactional_id, 1)
        # its transaction log loaded (a node back from an earlier drive's pause loads it again)
        self.session.until("load the transaction coordinator", lambda: "error" not in self._transaction() or None)
        if self.config.initial_producer_epoch != -1:
            self._raise_epoch(self.config.initial_producer_epoch)
        controller = self.session.active_controller()
        candidates = sorted(set(self.session.brokers) - self.session.down - {self.coordinator, controller})
        if not candidates:
            raise UserError("the data partitions need a node that is neither the coordinator nor the controller")
        self.leader = candidates[0]
        partitions = self.config.partitions
        self.session.create_topic(self.topic, partitions, 1, {"min.insync.replicas": "1"}, replicas=[self.leader])
        leaders = self.session.leaders(self.topic, partitions)
        if leaders is None or set(leaders.values()) != {self.leader}:
            raise UserError(f"the data partitions' leaders are {leaders}, not node {self.leader}")
        self.last_partitions = [self._partition_view(p) for p in range(partitions)]

    def _raise_epoch(self, epoch: int) -> None:
        """The transactional id at the epoch the trace starts from, as the earlier producers of a
        long-lived one left it: from a new transactional id (epoch 0), one new producer's
        InitProducerId per epoch, each bumping it by one (bounded in count and time)."""
        request = message("InitProducerIdRequestData").setTransactionalId(self.transactional_id)
        request.setTransactionTimeoutMs(TXN_TIMEOUT_MS).setProducerId(-1).setProducerEpoch(-1)
        connection = self.session.connection("earlier-producers", self.coordinator)
        deadline = time.monotonic() + RAISE_EPOCH_TIMEOUT_S
        reached = -1
        for _ in range(epoch + 1):
            answer = connection.call("INIT_PRODUCER_ID", request)
            while error_name(answer.errorCode()) in RETRIABLE and time.monotonic() < deadline:
                time.sleep(0.1)
                answer = connection.call("INIT_PRODUCER_ID", request)
            if error_name(answer.errorCode()) != "NONE" or time.monotonic() > deadline:
                break
            reached = int(answer.producerEpoch())
        self.session.close_connection("earlier-producers")
        if reached != epoch:
            raise UserError(
                f"the transactional id reached producer epoch {reached}, not {epoch}, within "
                f"{RAISE_EPOCH_TIMEOUT_S:.0f} s of InitProducerIds (one per epoch)"
            )

    def plan(self, actions: list[Action]) -> None:
        self.actions = actions

    # -- steps -------------------------------------------------------------------------------------
    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        self.index += 1
        name, args = action.name, action.args
        if name == "Produce":
            self._assign_sequence(args["partition"], after.clients[args["client"]])
            return Performed()
        if name in CLIENT_ONLY:
            return Performed()
        if name == "HandleInitProducerId":
            return self._init_producer_id(args["client"], before, after)
        if name == "HandleAddPartitionsToTxn":
            return self._add_partitions(args["client"], args["partition"], before, after)
        if name == "HandleProduce":
            return self._produce(args, before, after)
        if name == "HandleEndTxn":
            return self._end_txn(args, before, after)
        if name == "HandleVerifyPartition":
            return Performed(deferred=True)
        if name == "HandleVerifyResponse":
            partition = args["partition"]
            answered = next(
                ({"error": m.error} for m in after.network if m.api == "ProduceResponse" and m.partition == partition),
                {},
            )
            return Performed(answered=self.held_answer if answered else {}, expected=answered)
        if name in COMPLETION:
            return self._completion(name, args)
        raise UserError(f"the transactions driver has no mapping for {name}")

    def _next_name(self) -> str:
        following = self.actions[self.index + 1] if self.index + 1 < len(self.actions) else None
        return following.name if following is not None else ""

    def _init_producer_id(self, client: int, before: Any, after: Any) -> Performed:
        # a new producer sends no epoch; one bumping its own after an abort (KIP-360) sends its id and epoch
        expected = self._message(before, "InitProducerId", client).producerEpoch
        producer_id = self.producer_id if expected != -1 else -1
        request = message("InitProducerIdRequestData").setTransactionalId(self.transactional_id)
        request.setTransactionTimeoutMs(TXN_TIMEOUT_MS).setProducerId(producer_id)
        request.setProducerEpoch(self.epochs.broker(expected))

        def attempt() -> Any:
            answer = self.session.connection(f"client-{client}", self.coordinator).call("INIT_PRODUCER_ID", request)
            return None if error_name(answer.errorCode()) in RETRIABLE else answer

        answer = self.session.until("answer InitProducerId", attempt)
        error = error_name(answer.errorCode())
        if error == "NONE":
            self.producer_id = int(answer.producerId())
        shown = {"error": error, "producerEpoch": int(answer.producerEpoch()) if error == "NONE" else -1}
        sent = "InitProducerId()" if expected == -1 else f"InitProducerId(producerEpoch={expected})"
        return Performed([sent], shown, self._response(after, before, client, "InitProducerIdResponse"))

    def _add_partitions(self, client: int, partition: int, before: Any, after: Any) -> Performed:
        epoch = self._message(before, "AddPartitionsToTxn", client).producerEpoch
        request = message("AddPartitionsToTxnRequestData").setV3AndBelowTransactionalId(self.transactional_id)
        request.setV3AndBelowProducerId(self.producer_id).setV3AndBelowProducerEpoch(self.epochs.broker(epoch))
        topic = message("AddPartitionsToTxnRequestData$AddPartitionsToTxnTopic").setName(self.topic)
        topic.setPartitions(java_list([java("java.lang.Integer")(partition)]))
        request.v3AndBelowTopics().add(topic)
        conn = self.session.connection(f"client-{client}", self.coordinator)
        answer = conn.call("ADD_PARTITIONS_TO_TXN", request, version=min(3, conn.version("ADD_PARTITIONS_TO_TXN")))
        errors = {
            error_name(p.partitionErrorCode())
            for t in answer.resultsByTopicV3AndBelow()
            for p in t.resultsByPartition()
        }
        shown = {"error": errors.pop() if len(errors) == 1 else sorted(errors)}
        expected = self._response(after, before, client, "AddPartitionsToTxnResponse")
        expected.pop("producerEpoch", None)
        return Performed([f"AddPartitionsToTxn(partition={partition}, producerEpoch={epoch})"], shown, expected)

    def _assign_sequence(self, partition: int, client: Any) -> None:
        key = (partition, client.producerEpoch)
        self.batches[(partition, client.txn)] = self.sequences.get(key, 0)
        self.sequences[key] = self.sequences.get(key, 0) + 1

    def _produce(self, args: dict[str, Any], before: Any, after: Any) -> Performed:
        partition, epoch, txn = args["partition"], args["producerEpoch"], args["txn"]
        sequence = self.batches.get((partition, txn), 0)
        records = batch(txn, self.producer_id, self.epochs.broker(epoch), sequence, transactional=True)
        data = produce_request(self.topic, partition, records, -1, self.transactional_id)
        conn = self.session.connection(f"producer-{args['client']}", self.leader)
        version = min(12 if self.tv2 else 11, conn.version("PRODUCE"))
        error, _offset = produce_answer(conn.call("PRODUCE", data, version))
        sent = f"Produce(partition={partition}, txn={txn}, producerEpoch={epoch}, baseSequence={sequence})"
        verifying = self._next_name() == "HandleVerifyPartition"
        if verifying:
            # the broker verifies and answers at once: compared when the trace's verification ends
            self.held_answer = {"error": error}
            return Performed([sent], deferred=True)
        expected = self._produce_response(after, args["client"], partition, txn)
        return Performed([sent], {"error": error}, expected)

    def _produce_response(self, state: Any, client: int, partition: int, txn: int) -> dict[str, Any]:
        for m in state.network:
            if m.api == "ProduceResponse" and (m.client, m.partition, m.txn) == (client, partition, txn):
                return {"error": m.error}
        return {}

    def _end_txn(self, args: dict[str, Any], before: Any, after: Any) -> Performed:
        client, commit, epoch = args["client"], args["commit"], args["producerEpoch"]
        decided = after.coordinator.pendingMarkers and not before.coordinator.pendingMarkers
        if decided and self._next_name() != "HandleWriteTxnMarkers":
            self._pause_leader()
        request = message("EndTxnRequestData").setTransactionalId(self.transactional_id)
        request.setProducerId(self.producer_id).setProducerEpoch(self.epochs.broker(epoch)).setCommitted(commit)
        conn = self.session.connection(f"client-{client}", self.coordinator)
        answer = conn.call("END_TXN", request, version=min(5 if self.tv2 else 4, conn.version("END_TXN")))
        error = error_name(answer.errorCode())
        shown: dict[str, Any] = {"error": error}
        expected = self._response(after, before, client, "EndTxnResponse")
        if self.tv2 and error == "NONE":
            shown["producerEpoch"] = int(answer.producerEpoch())
        else:
            expected.pop("producerEpoch", None)
        sent = f"EndTxn(committed={str(commit).lower()}, producerEpoch={epoch})"
        return Performed([sent], shown, expected, deferred=bool(decided) and not self.paused)

    def _completion(self, name: str, args: dict[str, Any]) -> Performed:
        if name == "HandleWriteTxnMarkers" and self.paused:
            self._resume_leader()
        last = self._next_name() not in COMPLETION
        if last:
            # the markers and the completion happen together on a real broker: wait for the end state
            self.session.until("complete the transaction", self._completed)
            later = [a.name for a in self.actions[self.index + 1 :] if a is not None]
            self.completion_left_out = name != "WriteTxnCompletion" and "WriteTxnCompletion" not in later
        return Performed(deferred=not last)

    def _completed_by_model(self, state: Any) -> Any:
        """The state the model's own completion steps reach from ``state``: the coordinator completes a
        transaction as soon as its markers are answered, so a trace that leaves out the completion (it
        stops before it) is compared, from its markers on, with the completion taken."""
        for _ in range(2 * self.config.partitions + 1):
            meta = state.coordinator.metadata
            if meta is None or meta.state not in (PREPARE_COMMIT, PREPARE_ABORT):
                break
            steps = [(COMPLETION.index(a.name), t) for a, t in self.model.successors(state) if a.name in COMPLETION]
            if not steps:
                break
            state = min(steps, key=lambda step: step[0])[1]
        return state

    def _completed(self) -> bool | None:
        state = self._transaction().get("state")
        return True if state in ("CompleteCommit", "CompleteAbort", "Empty") else None

    # -- the leader paused ---------------------------------------------------------------------------
    def _pause_leader(self) -> None:
        cluster = self.session.cluster
        if cluster is None:
            raise UserError("holding back the markers needs a cluster the drive starts itself (not --cluster)")
        self.last_partitions = [self._partition_view(p) for p in range(self.config.partitions)]
        cluster.node(self.leader).pause()
        self.paused = True
        self.session.down.add(self.leader)

    def _resume_leader(self) -> None:
        if self.paused:
            self.session.cluster.node(self.leader).resume()
            self.paused = False
            self.session.down.discard(self.leader)
            self.session.until(
                f"see node {self.leader} back", lambda: self.leader in self.session.live_brokers() or None
            )

    # -- projections -------------------------------------------------------------------------------
    def expected(self, state: Any) -> dict[str, Any]:
        if self.completion_left_out:
            state = self._completed_by_model(state)
        meta = state.coordinator.metadata
        coordinator = (
            {"state": "(none)"}
            if meta is None
            else {
                "state": meta.state,
                "producerEpoch": meta.producerEpoch,
                "topicPartitions": sorted(meta.topicPartitions),
            }
        )
        partitions = []
        for p in state.partitions:
            log = [
                ["marker", b.producerEpoch, "commit" if b.commit else "abort"]
                if b.control
                else ["data", b.producerEpoch, b.txn]
                for b in p.log
            ]
            partitions.append(
                {"log": log, "producerEpoch": p.producerEpoch, "currentTxnFirstOffset": p.currentTxnFirstOffset}
            )
        return {"coordinator": coordinator, **{f"partition {i}": v for i, v in enumerate(partitions)}}

    def observed(self) -> dict[str, Any]:
        partitions = (
            self.last_partitions if self.paused else [self._partition_view(p) for p in range(self.config.partitions)]
        )
        return {"coordinator": self._transaction(), **{f"partition {i}": v for i, v in enumerate(partitions)}}

    def _transaction(self) -> dict[str, Any]:
        request = message("DescribeTransactionsRequestData").setTransactionalIds(java_list([self.transactional_id]))
        answer = self.session.connection("describe", self.coordinator).call("DESCRIBE_TRANSACTIONS", request)
        shown = answer.transactionStates().get(0)
        error = error_name(shown.errorCode())
        if error == "TRANSACTIONAL_ID_NOT_FOUND":
            return {"state": "(none)"}
        if error != "NONE":
            return {"error": error}
        partitions = sorted(int(p) for t in shown.topics() for p in t.partitions())
        return {
            "state": str(shown.transactionState()),
            "producerEpoch": int(shown.producerEpoch()),
            "topicPartitions": partitions,
        }

    def _partition_view(self, partition: int) -> dict[str, Any]:
        log = []
        for b in read_log(self.session, self.leader, self.topic, partition):
            if b.isControl:
                log.append(["marker", b.producerEpoch, b.marker])
            else:
                log.append(["data", b.producerEpoch, b.record])
        producer = active_producers(self.session, self.leader, self.topic, partition).get(self.producer_id, {})
        return {
            "log": log,
            "producerEpoch": producer.get("producerEpoch", -1),
            "currentTxnFirstOffset": producer.get("currentTxnStartOffset", -1),
        }

    # -- the model's messages ------------------------------------------------------------------------
    @staticmethod
    def _message(state: Any, api: str, client: int) -> Any:
        found = request_in_flight(state, api, client)
        if found is None:
            raise UserError(f"the trace's state has no {api} of client {client} to send")
        return found

    @staticmethod
    def _response(after: Any, before: Any, client: int, api: str) -> dict[str, Any]:
        new = [m for m in after.network if m.api == api and m.client == client and m not in before.network]
        if not new:
            return {}
        return {"error": new[0].error, "producerEpoch": new[0].producerEpoch}

    def close(self) -> None:
        self._resume_leader()
        self.session.close()
