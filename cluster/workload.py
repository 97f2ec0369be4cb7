"""Workloads through a real client (confluent-kafka, librdkafka's Python binding, the maintained client
on PyPI): producers and consumers in threads, every operation recorded in the history.

* Producers send unique integers (``process * 1,000,000 + n``) to the partitions of one topic, with
  acks 0, 1 or all, idempotent or not, or inside transactions of a few sends (committed, or aborted
  now and then on purpose).
* Consumers poll in a group, classic or consumer (KIP-848), read_committed or read_uncommitted,
  and record what each poll returned, with each record's leader epoch.
* At the end, once the faults are healed, two readers read every partition from the start to its
  end: read_uncommitted (what the log holds) and read_committed (what a committed reader sees).

An operation is ``ok`` only when Kafka said it happened and ``fail`` only when Kafka said it did
not (an error that means nothing was appended); anything else -- a timeout, a lost connection, an
error after the append -- is ``info``: unknown, maybe written.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kmc.checker.errors import UserError
from kmc.cluster.history import History

NOT_APPENDED = (
    "NOT_ENOUGH_REPLICAS",
    "MSG_SIZE_TOO_LARGE",
    "RECORD_LIST_TOO_LARGE",
    "INVALID_RECORD",
    "TOPIC_AUTHORIZATION_FAILED",
    "_INVALID_ARG",
    "_UNKNOWN_PARTITION",
    "_UNKNOWN_TOPIC",
)
"""Errors that mean the broker appended nothing: the send failed. Every other error leaves it unknown."""
OP_TIMEOUT_S = 15.0
CLIENT_LOG = logging.getLogger("kmc.cluster.clients")
"""Where every client's own log lines go (librdkafka's timeouts and reconnects): a campaign writes
them to ``clients.log`` in its run directory; nothing reaches the terminal."""
CLIENT_LOG.propagate = False
CLIENT_LOG.addHandler(logging.NullHandler())


@contextlib.contextmanager
def client_log(path: Path) -> Iterator[None]:
    """The clients' log lines into ``path`` for the ``with`` block."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    CLIENT_LOG.addHandler(handler)
    try:
        yield
    finally:
        CLIENT_LOG.removeHandler(handler)
        handler.close()


def client_config(bootstrap: str, **settings: Any) -> dict[str, Any]:
    """A client's configuration: the cluster, and its log lines sent to CLIENT_LOG."""
    return {"bootstrap.servers": bootstrap, "logger": CLIENT_LOG, **settings}


@dataclass(frozen=True)
class WorkloadSpec:
    topic: str = "kmc"
    partitions: int = 1
    replication_factor: int = 3
    min_insync_replicas: int = 2
    unclean_election: bool = False
    producers: int = 2
    acks: str = "all"
    idempotent: bool = True
    transactional: bool = False
    txn_size: int = 3
    abort_every: int = 5
    """A transactional producer aborts one transaction in this many, on purpose."""
    consumers: int = 1
    group_protocol: str = "classic"
    isolation: str = "read_committed"
    rate: float = 20.0
    """Sends (or transactions) a second, per producer."""
    seed: int = 0

    def check(self) -> None:
        if self.acks not in ("0", "1", "all"):
            raise UserError(f"acks must be 0, 1 or all, not {self.acks!r}")
        if self.group_protocol not in ("classic", "consumer"):
            raise UserError(f"group protocol must be classic or consumer, not {self.group_protocol!r}")
        if self.isolation not in ("read_committed", "read_uncommitted"):
            raise UserError(f"isolation must be read_committed or read_uncommitted, not {self.isolation!r}")
        if self.transactional and (self.acks != "all" or not self.idempotent):
            raise UserError("a transactional producer is idempotent with acks=all")
        if self.idempotent and self.acks != "all":
            raise UserError(f"an idempotent producer needs acks=all: with acks={self.acks}, give --no-idempotent")

    @property
    def keys(self) -> list[str]:
        return [f"{self.topic}-{p}" for p in range(self.partitions)]


def client_library() -> Any:
    try:
        import confluent_kafka
    except ImportError:
        raise UserError("the Kafka client confluent-kafka is not installed: pip install confluent-kafka") from None
    return confluent_kafka


def create_topic(bootstrap: str, spec: WorkloadSpec) -> None:
    kafka = client_library()
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(client_config(bootstrap, **{"socket.timeout.ms": 10000}))
    config = {
        "min.insync.replicas": str(spec.min_insync_replicas),
        "unclean.leader.election.enable": str(spec.unclean_election).lower(),
    }
    topic = NewTopic(
        spec.topic, num_partitions=spec.partitions, replication_factor=spec.replication_factor, config=config
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            admin.create_topics([topic], operation_timeout=20)[spec.topic].result(timeout=30)
            return
        except kafka.KafkaException as exc:
            error = exc.args[0]
            if error.code() == kafka.KafkaError.TOPIC_ALREADY_EXISTS:
                return
            if time.monotonic() > deadline:
                raise UserError(f"cannot create topic {spec.topic}: {error.str()}") from None
            time.sleep(1)


class Workload:
    """Producer and consumer threads writing one history until ``stop`` is set."""

    def __init__(self, bootstrap: str, history: History, spec: WorkloadSpec) -> None:
        spec.check()
        self.bootstrap, self.history, self.spec = bootstrap, history, spec
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.errors: list[str] = []

    def start(self) -> None:
        create_topic(self.bootstrap, self.spec)
        runners: list[Callable[[int], None]] = [self._produce] * self.spec.producers
        runners += [self._consume] * self.spec.consumers
        for process, runner in enumerate(runners):
            thread = threading.Thread(
                target=self._guarded, args=(runner, process), name=f"kmc-client-{process}", daemon=True
            )
            thread.start()
            self.threads.append(thread)

    def _guarded(self, runner: Callable[[int], None], process: int) -> None:
        try:
            runner(process)
        except Exception as exc:  # a client bug ends that client, not the campaign: reported
            self.errors.append(f"client {process}: {type(exc).__name__}: {exc}")

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=OP_TIMEOUT_S + 15)

    # -- producers ---------------------------------------------------------------------------------
    def _producer_config(self, process: int) -> dict[str, Any]:
        config = {
            "bootstrap.servers": self.bootstrap,
            "logger": CLIENT_LOG,
            "acks": self.spec.acks,
            "enable.idempotence": self.spec.idempotent,
            "message.timeout.ms": int(OP_TIMEOUT_S * 1000 - 3000),
            "request.timeout.ms": 3000,
            "socket.timeout.ms": 3000,
            "linger.ms": 0,
            "max.in.flight.requests.per.connection": 5 if self.spec.idempotent else 1,
            "retries": 2**31 - 1 if self.spec.idempotent else 3,
        }
        if self.spec.transactional:
            config["transactional.id"] = f"kmc-{self.spec.topic}-{process}"
            config["transaction.timeout.ms"] = 20000
        return config

    def _produce(self, process: int) -> None:
        kafka = client_library()
        rng = random.Random(self.spec.seed * 1000 + process)
        if self.spec.transactional:
            self._transactions(process, rng)
            return
        producer = kafka.Producer(self._producer_config(process))
        count = 0
        while not self.stop.is_set():
            value = process * 1_000_000 + count
            count += 1
            key = rng.choice(self.spec.keys)
            try:
                self._send(process, producer, key, value)
                producer.poll(0)
            except Exception as exc:  # a fatal error (an idempotent producer's lost sequence): start afresh
                self.errors.append(f"client {process}: {type(exc).__name__}: {exc}; a new producer took over")
                CLIENT_LOG.warning("client %s: %s: %s; a new producer takes over", process, type(exc).__name__, exc)
                producer = kafka.Producer(self._producer_config(process))
            time.sleep(1 / self.spec.rate)
        producer.flush(OP_TIMEOUT_S)

    def _send(self, process: int, producer: Any, key: str, value: int) -> None:
        self.history.record(process, "invoke", "send", [["send", key, value]])
        partition = int(key.rsplit("-", 1)[1])

        def delivered(error: Any, message: Any) -> None:
            if error is None and self.spec.acks == "0":  # sent, never acknowledged: unknown
                self.history.record(process, "info", "send", [["send", key, value]], error="acks=0")
            elif error is None:
                offset = message.offset() if message.offset() >= 0 else None
                self.history.record(process, "ok", "send", [["send", key, [offset, value]]])
            else:
                kind = "fail" if error.name() in NOT_APPENDED else "info"
                self.history.record(process, kind, "send", [["send", key, value]], error=error.name())

        try:
            producer.produce(self.spec.topic, value=str(value).encode(), partition=partition, on_delivery=delivered)
        except BufferError:
            self.history.record(process, "fail", "send", [["send", key, value]], error="local queue full")

    def _transactions(self, process: int, rng: random.Random) -> None:
        producer = self._transactional_producer(process)
        count = 0
        while producer is not None and not self.stop.is_set():
            sends = []
            for _ in range(self.spec.txn_size):
                sends.append(["send", rng.choice(self.spec.keys), process * 1_000_000 + count])
                count += 1
            abort = self.spec.abort_every > 0 and rng.randrange(self.spec.abort_every) == 0
            producer = self._transaction(process, producer, sends, abort)
            time.sleep(1 / self.spec.rate)

    def _transactional_producer(self, process: int) -> Any | None:
        """A producer with its transactional id initialised (which fences an earlier one of the same
        id and ends its open transaction); None when the coordinator never answers."""
        kafka = client_library()
        for _attempt in range(3):
            producer = kafka.Producer(self._producer_config(process))
            try:
                producer.init_transactions(OP_TIMEOUT_S)
                return producer
            except kafka.KafkaException as exc:
                failure = exc
            if self.stop.is_set():
                break
        self.errors.append(f"client {process}: init_transactions: {failure}")
        return None

    def _transaction(self, process: int, producer: Any, sends: list[list[Any]], abort: bool) -> Any | None:
        """One transaction, and the producer for the next: the same one, or a new one when this one
        is left unable to go on (a fatal error, or a transaction it could not end)."""
        kafka = client_library()
        self.history.record(process, "invoke", "txn", sends)
        try:
            producer.begin_transaction()
            for _send, key, value in sends:
                producer.produce(self.spec.topic, value=str(value).encode(), partition=int(key.rsplit("-", 1)[1]))
            _end_transaction(kafka, producer, commit=not abort)
        except kafka.KafkaException as exc:
            error = exc.args[0]
            self.history.record(process, "info", "txn", sends, error=error.name())
            if error.txn_requires_abort() and not error.fatal():
                with contextlib.suppress(kafka.KafkaException):
                    _end_transaction(kafka, producer, commit=False)
                    return producer
            CLIENT_LOG.warning("client %s: %s; a new producer takes over", process, error.str())
            if error.fatal():
                self.errors.append(f"client {process}: {error.name()}: {error.str()}; a new producer took over")
            return self._transactional_producer(process)
        if abort:
            self.history.record(process, "fail", "txn", sends, error="aborted on purpose")
        else:
            self.history.record(process, "ok", "txn", sends)
        return producer

    # -- consumers ---------------------------------------------------------------------------------
    def _consume(self, process: int) -> None:
        kafka = client_library()
        config = {
            "bootstrap.servers": self.bootstrap,
            "logger": CLIENT_LOG,
            "group.id": f"kmc-{self.spec.topic}",
            "group.protocol": self.spec.group_protocol,
            "isolation.level": self.spec.isolation,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
        }
        if self.spec.group_protocol == "classic":
            config["session.timeout.ms"] = 6000
        consumer = kafka.Consumer(config)
        consumer.subscribe([self.spec.topic])
        self.history.record(process, "invoke", "subscribe", [self.spec.topic])
        self.history.record(process, "ok", "subscribe", [self.spec.topic])
        try:
            while not self.stop.is_set():
                messages = consumer.consume(num_messages=100, timeout=0.5)
                polled = _polled(self.spec.topic, messages)
                if polled:
                    self.history.record(process, "invoke", "poll", [["poll"]])
                    self.history.record(process, "ok", "poll", [["poll", polled]])
        finally:
            with contextlib.suppress(Exception):
                consumer.close()


def _polled(topic: str, messages: list[Any]) -> dict[str, list[list[int]]]:
    out: dict[str, list[list[int]]] = {}
    for message in messages:
        if message.error() is not None:
            continue
        epoch = message.leader_epoch()
        out.setdefault(f"{topic}-{message.partition()}", []).append(
            [message.offset(), int(message.value()), -1 if epoch is None else epoch]
        )
    return out


def read_all(bootstrap: str, spec: WorkloadSpec, isolation: str, history: History, process: str) -> None:
    """Read every partition from its start to its end with a fresh consumer (no group), as one poll."""
    kafka = client_library()
    consumer = kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "logger": CLIENT_LOG,
            "group.id": f"kmc-final-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    history.record(process, "invoke", "poll", [["poll"]])
    try:
        _read_to_the_end(kafka, consumer, spec, history, process)
    except kafka.KafkaException as exc:  # a partition without a leader at the end: what was read is unknown
        history.record(process, "info", "poll", [["poll", {}]], error=f"could not read to the end: {exc}")
    finally:
        consumer.close()


def _read_to_the_end(kafka: Any, consumer: Any, spec: WorkloadSpec, history: History, process: str) -> None:
    """Every partition from its start to the end offsets it had when the read began, as one poll."""
    ends = {}
    for p in range(spec.partitions):
        _low, high = consumer.get_watermark_offsets(kafka.TopicPartition(spec.topic, p), timeout=OP_TIMEOUT_S)
        ends[p] = high
    consumer.assign([kafka.TopicPartition(spec.topic, p, kafka.OFFSET_BEGINNING) for p in range(spec.partitions)])
    polled: dict[str, list[list[int]]] = {key: [] for key in spec.keys}
    deadline = time.monotonic() + 60
    done = {p for p, end in ends.items() if end == 0}
    while len(done) < spec.partitions and time.monotonic() < deadline:
        for message in consumer.consume(num_messages=500, timeout=0.5):
            if message.error() is not None:
                continue
            for key, records in _polled(spec.topic, [message]).items():
                polled[key].extend(records)
            if message.offset() + 1 >= ends[message.partition()]:
                done.add(message.partition())
        positions = consumer.position([kafka.TopicPartition(spec.topic, p) for p in range(spec.partitions)])
        done |= {tp.partition for tp in positions if tp.offset >= ends[tp.partition]}
    kind = "ok" if len(done) == spec.partitions else "info"
    history.record(process, kind, "poll", [["poll", polled]], error=None if kind == "ok" else "did not reach the end")


def partition_leader(bootstrap: str, topic: str, partition: int) -> int | None:
    """The leader of a partition as a client's metadata shows it now (None: none, or no answer)."""
    kafka = client_library()
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(client_config(bootstrap, **{"socket.timeout.ms": 5000}))
    try:
        metadata = admin.list_topics(topic, timeout=10)
    except kafka.KafkaException:
        return None
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or partition not in found.partitions:
        return None
    leader = found.partitions[partition].leader
    return leader if leader >= 0 else None


def _end_transaction(kafka: Any, producer: Any, commit: bool) -> None:
    """Commit or abort, called again while the error is retriable (librdkafka's rule), for at most
    OP_TIMEOUT_S; any other error is raised."""
    deadline = time.monotonic() + OP_TIMEOUT_S
    end = producer.commit_transaction if commit else producer.abort_transaction
    while True:
        try:
            end(max(1.0, deadline - time.monotonic()))
            return
        except kafka.KafkaException as exc:
            if not exc.args[0].retriable() or time.monotonic() >= deadline:
                raise
