"""The producer driver: the model's idempotent (or plain) producer played against a real partition
leader with InitProducerId and Produce, the leader's log read back with Fetch and its producer state
with DescribeProducers.

Each batch holds one record whose value names the model's record. A request travels when the trace
says the leader handles it, on the connection the trace names: a connection the client has closed
(``Disconnect``) is stood for by a fresh one whose answer nobody reads. The broker answers at once;
the driver holds the answer until the trace's client reads it. A ``NOT_ENOUGH_REPLICAS`` outcome is
made by raising the topic's ``min.insync.replicas`` above its one replica for that request alone.

The topic has one replica: the model's follower, replication and leader elections are not driven
(traces with ``Replicate``, ``ElectLeader``, ``DeleteRecords`` or ``ExpireProducer`` are refused).
"""

from __future__ import annotations

import time
import uuid
from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model
from kmc.cluster.drive.base import EpochNames, Performed
from kmc.cluster.drive.records import NAMES_UP_TO, active_producers, batch, produce_answer, produce_request, read_log
from kmc.cluster.drive.session import RETRIABLE, Session
from kmc.cluster.drive.wire import error_name, message
from kmc.models.producer.broker import DUPLICATE, NOT_ENOUGH_REPLICAS, PENDING

ACKS = {"0": 0, "1": 1, "all": -1}
CONFIG_TIMEOUT_S = 15.0


class ProducerDriver:
    model_name = "producer"
    settings: ClassVar[dict[str, str]] = {}
    not_driven: ClassVar[dict[str, str]] = {
        "Replicate": "the follower's fetches cannot be held back one record at a time on a real broker",
        "ElectLeader": "a leader election with the follower held at a chosen offset: not driven yet",
        "DeleteRecords": "the model's high watermark counts its follower, which the drive's topic does not have",
        "ExpireProducer": "producer.id.expiration.ms for one producer at a chosen moment: not driven yet",
    }
    unseen = (
        "replicas[1] (the follower), leader, leaderEpoch: the drive's topic has one replica",
        "replicas[0].producers[].batchMetadata: only the last sequence is shown (DescribeProducers)",
        "client, requests, responses, acked, failed: the client's own state, held by the driver",
        "faults, rejections, timeouts, failovers, deletions, expirations: the model's counters",
    )
    max_drive_s = 120.0
    settle_s = 1.0
    unseen_properties: ClassVar[dict[str, str]] = {}

    def __init__(self, session: Session, model: Model, initial: Any) -> None:
        self.session = session
        self.config = model.config
        self.topic = f"kmc-drive-producer-{uuid.uuid4().hex[:8]}"
        self.epochs = EpochNames()
        self.leader = -1
        self.real_pids: dict[int, int] = {}
        self.model_pids: dict[int, int] = {}
        self.initial_pid = initial.client.producerId
        self.follower = -1
        self.paused = False

    def setup(self) -> None:
        # partition 0 is the model's; partition 1, on the same two brokers, probes the topic's config
        # the follower may be paused (NOT_ENOUGH_REPLICAS): never the active controller
        controller = self.session.active_controller()
        others = sorted(set(self.session.brokers) - self.session.down - {controller})
        self.leader, self.follower = (controller, others[0]) if len(others) < 2 else others[:2]
        replicas = [self.leader, self.follower]
        self.session.create_topic(self.topic, 2, 2, {"min.insync.replicas": "1"}, replicas=replicas)
        if self.initial_pid >= 0:
            self._init_producer_id(self.initial_pid)

    def _init_producer_id(self, model_pid: int) -> None:
        def attempt() -> Any:
            request = message("InitProducerIdRequestData").setTransactionalId(None).setTransactionTimeoutMs(60_000)
            answer = self.session.admin().call("INIT_PRODUCER_ID", request)
            error = error_name(answer.errorCode())
            if error in RETRIABLE:
                return None
            if error != "NONE":
                raise UserError(f"InitProducerId failed: {error}")
            return answer

        real = int(self.session.until("give a producer id", attempt).producerId())
        self.real_pids[model_pid], self.model_pids[real] = real, model_pid

    # -- steps -------------------------------------------------------------------------------------
    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        args = action.args
        if action.name == "HandleProduce":
            return self._produce(args, before, after)
        if action.name == "Disconnect":
            self.session.close_connection(f"producer-{args['connection']}")
            return Performed(requests=[f"(connection {args['connection']} closed)"])
        if action.name == "BumpEpoch" and args["producerId"] not in self.real_pids:
            self._init_producer_id(args["producerId"])  # before KAFKA-8805: a new producer id
            return Performed(requests=["InitProducerId()"])
        return Performed()

    def _produce(self, args: dict[str, Any], before: Any, after: Any) -> Performed:
        connection, record, outcome = args["connection"], args["record"], args["outcome"]
        request = next(r for r in before.requests if (r.connection, r.broker) == (connection, args["broker"]))
        wire = request.batch
        pid = self.real_pids.get(wire.producerId, wire.producerId)
        records = batch(wire.record, pid, wire.producerEpoch, wire.baseSequence)
        acks = ACKS[self.config.acks]
        if outcome == NOT_ENOUGH_REPLICAS:
            if acks != -1:
                raise UserError("NOT_ENOUGH_REPLICAS answers only acks=all: this trace cannot be driven")
            self._shrink_isr()
            self._min_isr("2")
        live = connection == before.client.connection
        name = f"producer-{connection}" if live else f"producer-{connection}-closed"
        conn = self.session.connection(name, self.leader)
        sent = f"Produce(record={record}, producerEpoch={wire.producerEpoch}, baseSequence={wire.baseSequence})"
        correlation = conn.send(
            "PRODUCE", produce_request(self.topic, 0, records, acks), min(NAMES_UP_TO, conn.version("PRODUCE"))
        )
        performed = Performed(requests=[sent if live else f"{sent} on closed connection {connection}"])
        if acks != 0:
            error, offset = produce_answer(conn.receive(correlation))
            expected = next((r for r in after.responses if (r.connection, r.record) == (connection, record)), None)
            if expected is not None and expected not in before.responses:
                performed.answered = {"error": error, "baseOffset": offset}
                want = "NONE" if expected.error in (PENDING, DUPLICATE) else expected.error
                performed.expected = {"error": want, "baseOffset": expected.baseOffset}
            else:
                performed.answered = {"error": error}
                performed.expected = {"error": "NONE" if outcome == DUPLICATE else outcome}
        if not live:
            self.session.connections.pop(name).close()
        if outcome == NOT_ENOUGH_REPLICAS:
            self._min_isr("1")
            self._resume_follower()
        return performed

    def _shrink_isr(self) -> None:
        """Pause the follower until the controller fences it and the ISR is the leader alone: then a
        min.insync.replicas of 2 refuses acks=all writes (Kafka caps it at the replication factor)."""
        cluster = self.session.cluster
        if cluster is None:
            raise UserError("a NOT_ENOUGH_REPLICAS step needs a cluster the drive starts itself (not --cluster)")
        cluster.node(self.follower).pause()
        self.paused = True
        self.session.down.add(self.follower)
        self.session.until(
            "shrink the ISR to the leader", lambda: True if self.session.isr(self.topic, 0) == [self.leader] else None
        )

    def _resume_follower(self) -> None:
        if self.paused:
            self.session.cluster.node(self.follower).resume()
            self.paused = False
            self.session.down.discard(self.follower)

    def _min_isr(self, value: str) -> None:
        """Set the topic's min.insync.replicas and wait until the leader's log applies it: a plain
        acks=all probe to partition 1 is refused with NOT_ENOUGH_REPLICAS exactly when it does."""
        self.session.set_topic_config(self.topic, "min.insync.replicas", value)
        refusing = value != "1"
        deadline = time.monotonic() + CONFIG_TIMEOUT_S
        while True:
            probe = produce_request(self.topic, 1, batch(-1, -1, -1, -1), -1)
            conn = self.session.connection("probe", self.leader)
            error, _ = produce_answer(conn.call("PRODUCE", probe, min(NAMES_UP_TO, conn.version("PRODUCE"))))
            if (error == NOT_ENOUGH_REPLICAS) == refusing:
                return
            if time.monotonic() > deadline:
                raise UserError(f"the leader did not apply min.insync.replicas={value} in time")
            time.sleep(0.05)

    # -- projections -------------------------------------------------------------------------------
    def expected(self, state: Any) -> dict[str, Any]:
        leader = state.replicas[state.leader]
        log = [[b.record, b.producerId, b.producerEpoch, b.baseSequence] for b in leader.log]
        producers = {
            str(e.producerId): {
                "producerEpoch": e.producerEpoch,
                "lastSequence": e.batchMetadata[-1].lastSeq if e.batchMetadata else -1,
            }
            for e in leader.producers
        }
        return {"log": log, "producers": producers}

    def observed(self) -> dict[str, Any]:
        batches = read_log(self.session, self.leader, self.topic, 0)
        log = [[b.record, self._model_pid(b.producerId), b.producerEpoch, b.baseSequence] for b in batches]
        producers = {
            str(self._model_pid(pid)): {"producerEpoch": shown["producerEpoch"], "lastSequence": shown["lastSequence"]}
            for pid, shown in active_producers(self.session, self.leader, self.topic, 0).items()
        }
        return {"log": log, "producers": producers}

    def _model_pid(self, real: int) -> int | str:
        if real < 0:
            return real
        return self.model_pids.get(real, f"(unknown producer {real})")

    def close(self) -> None:
        self._resume_follower()
        self.session.close()
