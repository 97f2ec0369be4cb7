"""The `share-group` model against Kafka's ``SharePartition`` itself (the broker's class, in the core
jar): every step of the model taken on a real share partition, whose three threads' moves kmc holds
and lets go as the step says. A leader change is a new share partition that reads what the model's
share coordinator holds.

The model's actors race inside one broker, where requests cannot order them; here they are ordered
by hand. A ``SharePartition`` is built with stand-ins: a persister whose ``writeState`` answers only
when the model's ``WriteShareGroupStateResponse`` says (with NONE or COORDINATOR_NOT_AVAILABLE), a
timer that never fires by itself (``AcquisitionLockExpire`` marks the task expired, as ``run()``
begins; ``AcquisitionLockTimeout`` calls its timeout handler), and a replica manager that answers
nothing. Each step of the search is taken on a share partition brought to the step's state by
replaying the path the search reached it by, and compared: every record's state, delivery count,
owner and whether a write of it is in flight; the share-partition start offset; the records a
fetch acquires and their delivery counts; an acknowledgement's error; and the lock tasks, matched
to the model's in the order they were made.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.checker.errors import UserError
from kmc.checker.model import Action
from kmc.cluster.release import Release, server_jars
from kmc.models.share_group.model import ShareGroupModel, member_id
from kmc.models.share_group.state import AVAILABLE, NONE, LockTimer, ShareGroupState

from . import jvm

SHARE = "kafka.server.share."
FETCH = "org.apache.kafka.server.share.fetch."
PERSISTER = "org.apache.kafka.server.share.persister."
FLAGS = ("kafka_18084", "kafka_19476_terminal", "kafka_19476_expired_lock", "kafka_19476_cancelled_lock", "kafka_19972")
GROUP = "kmc-share-partition"
LOCK_DURATION_MS = 3_600_000
"""Longer than any run: the lock tasks sit in a real timer (which marks whether one was cancelled)
whose clock never reaches them."""
MAX_IN_FLIGHT_RECORDS = 200
ACKNOWLEDGE_TYPE = {"ACCEPT": 1, "RELEASE": 2, "REJECT": 3}
COORDINATOR_NOT_AVAILABLE = 15
FIRST_RELEASE = (4, 3)
"""``acquire`` takes a share acquire mode from Kafka 4.3 (KIP-1206); 4.2's share partition is asked
by the ``in-flight-state`` oracle, record by record."""


class SharePartitionOracle(Oracle):
    name = "share-partition"
    model_name = "share-group"
    reference = (SHARE + "SharePartition", PERSISTER + "Persister (held by kmc)", "timer (held by kmc)")
    description = (
        "every step taken on Kafka's SharePartition, its persister's answers and lock timeouts held and released "
        "as the step says"
    )

    follows_paths = True
    model: ShareGroupModel

    def unsupported(self) -> str | None:
        c = self.model.config
        off = [flag for flag in FLAGS if not getattr(c, flag)]
        if off:
            return f"{', '.join(off)} off: the rules before those fixes are the model's alone (Kafka has every fix)"
        if c.max_fetch_records != 1:
            return "max_fetch_records above 1: Kafka locks each batch it acquires, the model one range of records"
        return None

    def __init__(self, model: ShareGroupModel, release: str | None = None) -> None:
        super().__init__(model, release)
        if self.unsupported() is not None:
            return
        version = jvm.requested_version(release)
        self.release = jvm.start(version, server_jars(Release.parse(version)))
        if jvm.release_tuple(self.release) < FIRST_RELEASE:
            raise UserError(
                f"the share-partition oracle calls SharePartition.acquire of Kafka 4.3 and later (asked for "
                f"{self.release}); the in-flight-state oracle asks Kafka 4.2's InFlightState"
            )
        try:
            jvm.jclass(SHARE + "SharePartition")
        except Exception as exc:
            raise UserError(
                "the share-partition oracle needs Kafka's server jars in a JVM of its own: run it alone "
                f"(kmc conform share-group --oracle share-partition) ({jvm.java_exception_text(exc)})"
            ) from None
        self.kafka = _Kafka()
        self.parents: dict[ShareGroupState, tuple[ShareGroupState, Action] | None] = {}

    # -- the path to a state -------------------------------------------------------------------------
    def _path(self, state: ShareGroupState) -> list[tuple[ShareGroupState, Action, ShareGroupState]]:
        """The steps the search took to reach ``state`` (it met every state as a successor first)."""
        steps = []
        while (parent := self.parents.get(state)) is not None:
            before, action = parent
            steps.append((before, action, state))
            state = before
        return steps[::-1]

    def compare_step(self, state: ShareGroupState, action: Action, next_state: ShareGroupState) -> Iterator[Comparison]:
        self.parents.setdefault(state, None)
        self.parents.setdefault(next_state, (state, action))
        partition = _Replay(self.kafka, self.model)
        path = self._path(state)
        for before, done, after in path:
            partition.take(before, done, after)
        answered = partition.take(state, action, next_state)
        inputs = {"action": repr(action), "path": len(path)}
        if answered is not None:
            question, ours, theirs = answered
            yield Comparison(question, ours, theirs, inputs)
        yield Comparison("records", _records(next_state), partition.records(len(next_state.records)), inputs)
        yield Comparison("startOffset", next_state.startOffset, partition.start_offset(), inputs)
        yield Comparison("lock tasks", _locks(next_state.timers), partition.locks(next_state), inputs)
        partition.discard()


def _records(s: ShareGroupState) -> list[tuple[str, int, str, bool]]:
    """Each record the leader's cache holds: state, delivery count, owner, write in flight."""
    return [
        (r.state, r.deliveryCount, r.memberId, r.rollback is not None)
        for offset, r in enumerate(s.records)
        if offset >= s.cacheStart and (r.state != AVAILABLE or r.deliveryCount or r.rollback is not None)
    ]


def _locks(timers: tuple[LockTimer, ...]) -> list[tuple[str, int, int, bool, bool]]:
    return [(t.memberId, t.first, t.last, t.expired, t.cancelled) for t in timers if not t.handled]


class _Kafka:
    """Kafka's classes, and the stand-ins a share partition is built with."""

    def __init__(self) -> None:
        import jpype

        self.jpype = jpype
        _quiet_logs()
        self.SharePartition = jvm.jclass(SHARE + "SharePartition")
        self.TopicIdPartition = jvm.jclass("org.apache.kafka.common.TopicIdPartition")
        self.Uuid = jvm.jclass("org.apache.kafka.common.Uuid")
        self.Time = jvm.jclass("org.apache.kafka.common.utils.Time")
        self.ShareAcquireMode = jvm.jclass("org.apache.kafka.clients.consumer.internals.ShareAcquireMode")
        self.FetchIsolation = jvm.jclass("org.apache.kafka.server.storage.log.FetchIsolation")
        self.Batch = jvm.jclass("org.apache.kafka.server.share.acknowledge.ShareAcknowledgementBatch")
        self.Byte = jvm.jclass("java.lang.Byte")
        self.List = jvm.jclass("java.util.List")
        self.topic = self.TopicIdPartition(self.Uuid.randomUuid(), 0, "kmc-share")
        self.unsafe = _unsafe()
        self.wheel = jvm.jclass("org.apache.kafka.server.util.timer.SystemTimer")("kmc-share-partition-locks")
        self.ManualTimer = _manual_timer_class()
        self.HeldPersister = _held_persister_class(self)
        self.notifier, self.dead_letter_queue_off = _ignored(), _no_dead_letter_queue()
        self.replica_manager = self._replica_manager()
        self.group_configs = self._group_config_manager()
        self.constructor = self._constructor()
        self.update_cache = self._declared("updateCacheAndOffsets", jpype.JLong)
        self.cached_state = self._declared("cachedState")
        self.start_offset = self._declared("startOffset")
        task = jvm.jclass(FETCH + "AcquisitionLockTimerTask").class_
        self.expired_field = _field(task, "hasExpired")
        self.handler_field = _field(task, "timeoutHandler")
        self.member_field = _field(task, "memberId")
        self.first_field = _field(task, "firstOffset")
        self.last_field = _field(task, "lastOffset")
        self.Handler = jvm.jclass(FETCH + "AcquisitionLockTimeoutHandler")

    def _declared(self, name: str, *types: Any) -> Any:
        method = self.SharePartition.class_.getDeclaredMethod(name, *[t.class_ for t in types])
        method.setAccessible(True)
        return method

    def _constructor(self) -> Any:
        """Kafka 4.3's (12 arguments: a replica manager and a group config manager) or 4.4's (15: a
        metadata provider, a notifier of delayed fetches, a config provider and the dead-letter queue's)."""
        for constructor in self.SharePartition.class_.getDeclaredConstructors():
            if constructor.getParameterCount() in (12, 15):
                constructor.setAccessible(True)
                return constructor
        raise UserError("this release's SharePartition has no constructor the oracle knows")

    def _replica_manager(self) -> Any | None:
        """A ReplicaManager with only the purgatory a share partition completes fetches in."""
        if not _has_field("kafka.server.ReplicaManager", "delayedShareFetchPurgatory"):
            return None  # Kafka 4.4 notifies delayed fetches through a callback instead
        manager_class = jvm.jclass("kafka.server.ReplicaManager").class_
        manager = self.unsafe.allocateInstance(manager_class)
        purgatory_class = jvm.jclass("org.apache.kafka.server.purgatory.DelayedOperationPurgatory")
        self.purgatory = purgatory_class("ShareFetch", self.ManualTimer([], self.wheel), 0, self.jpype.JBoolean(False))
        _field(manager_class, "delayedShareFetchPurgatory").set(manager, self.purgatory)
        return manager

    def _group_config_manager(self) -> Any:
        """A GroupConfigManager with no group configs: the partition's defaults apply."""
        manager_class = jvm.jclass("org.apache.kafka.coordinator.group.GroupConfigManager").class_
        manager = self.unsafe.allocateInstance(manager_class)
        _field(manager_class, "configMap").set(manager, jvm.jclass("java.util.concurrent.ConcurrentHashMap")())
        return manager

    def new(self, limit: int, tasks: list[Any], persister: Any) -> Any:
        jpype = self.jpype
        common = [
            GROUP,
            self.topic,
            jpype.JInt(0),
            jpype.JInt(MAX_IN_FLIGHT_RECORDS),
            jpype.JInt(limit),
            jpype.JInt(LOCK_DURATION_MS),
            self.ManualTimer(tasks, self.wheel),
            self.Time.SYSTEM,
            persister,
        ]
        if self.constructor.getParameterCount() == 12:
            return self.constructor.newInstance(*common, self.replica_manager, self.group_configs, None)
        provider = jvm.jclass("org.apache.kafka.coordinator.group.modern.share.ShareGroupConfigProvider")
        return self.constructor.newInstance(
            *common, None, self.notifier, provider(self.group_configs), None, self.dead_letter_queue_off, None
        )


class _Replay:
    """One share partition taken along a path of the model's steps."""

    def __init__(self, kafka: _Kafka, model: ShareGroupModel) -> None:
        self.kafka = kafka
        self.model = model
        self.tasks: list[Any] = []
        """every lock task the partition scheduled, in order"""
        self.aligned: list[Any] = []
        """the tasks of the model's timers of the current state, in their order"""
        self.handled: set[int] = set()
        self.writes: list[Any] = []
        """the persister's writes not answered yet, oldest first"""
        self.loaded: tuple[int, list[tuple[int, str, int]]] = (0, [])
        """what the share coordinator holds when a leader reads it: start offset, (offset, state, count)"""
        self.persister = kafka.HeldPersister(self)
        self.partition = kafka.new(model.config.delivery_count_limit, self.tasks, self.persister)
        self.partition.maybeInitialize().get()

    def take(self, s: ShareGroupState, action: Action, t: ShareGroupState) -> tuple[str, Any, Any] | None:
        """Do ``action`` on the partition; the question it answers, the model's answer and Kafka's."""
        made = len(self.tasks)
        answered = self._do(s, action, t)
        self._align(t, made)
        return answered

    def _do(self, s: ShareGroupState, action: Action, t: ShareGroupState) -> tuple[str, Any, Any] | None:
        k, a, name = self.kafka, action.args, action.name
        if (name == "ShareFetch" and a["first"] < 0) or name == "LogStartOffsetMove":
            k.update_cache.invoke(self.partition, k.jpype.JLong(t.logStartOffset))
            return None
        if name == "ShareFetch":
            fetch_offset = self.partition.nextFetchOffset()
            acquired = self.partition.acquire(
                member_id(a["consumer"]),
                k.ShareAcquireMode.BATCH_OPTIMIZED,
                k.jpype.JInt(1),
                k.jpype.JInt(1),
                k.jpype.JLong(fetch_offset),
                _fetched(len(s.records), fetch_offset, s.logStartOffset),
                k.FetchIsolation.HIGH_WATERMARK,
            )
            theirs = [
                (o, int(r.deliveryCount()))
                for r in acquired.acquiredRecords()
                for o in range(int(r.firstOffset()), int(r.lastOffset()) + 1)
            ]
            ours = [(o, t.records[o].deliveryCount) for o in range(a["first"], a["last"] + 1)]
            return "acquire", ours, theirs
        if name == "ShareAcknowledge":
            types = k.List.of(k.Byte(ACKNOWLEDGE_TYPE[a["acknowledgeType"]]))
            batch = k.Batch(k.jpype.JLong(a["offset"]), k.jpype.JLong(a["offset"]), types)
            future = self.partition.acknowledge(member_id(a["consumer"]), k.List.of(batch))
            refused = future.isCompletedExceptionally()
            theirs = "INVALID_RECORD_STATE" if refused else NONE
            return "acknowledge's error", a["error"], theirs
        if name == "ShareSessionRelease":
            self.partition.releaseAcquiredRecords(member_id(a["consumer"]))
            return None
        if name == "LeaderChange":
            # the new leader's SharePartition reads what the model's share coordinator holds once the
            # old leader's writes landed or were fenced; the old one, its locks and writes, are gone
            self.writes.clear()
            written = [(o, state, n) for o, (state, n) in enumerate(t.persisted) if state != AVAILABLE or n]
            self.loaded = (t.persistedStartOffset, [w for w in written if w[0] >= t.persistedStartOffset])
            self.partition = k.new(self.model.config.delivery_count_limit, self.tasks, self.persister)
            self.partition.maybeInitialize().get()
            return None
        if name == "WriteShareGroupStateResponse":
            if not self.writes:
                return "a write to answer", a["kind"], "(no write in flight)"
            future, parameters = self.writes.pop(0)
            error = 0 if a["error"] == NONE else COORDINATOR_NOT_AVAILABLE
            future.complete(_write_result(k, parameters, error))
            return None
        if name == "AcquisitionLockExpire":
            k.expired_field.set(self.aligned[a["timer"]], True)
            return None
        if name == "AcquisitionLockTimeout":
            task = self.aligned[a["timer"]]
            self.handled.add(id(task))
            handler = k.jpype.JObject(k.handler_field.get(task), k.Handler)
            member, first, last = k.member_field.get(task), k.first_field.get(task), k.last_field.get(task)
            handler.handle(member, k.jpype.JLong(first), k.jpype.JLong(last), task)
            return None
        raise UserError(f"the share-partition oracle has no mapping for {name}")

    def _align(self, t: ShareGroupState, made: int) -> None:
        """The tasks of ``t``'s timers: the model keeps its timers in the order they were made and
        forgets the dead ones; so does this list, matching each to the first task alike."""
        candidates = self.aligned + list(self.tasks[made:])
        aligned: list[Any] = []
        for timer in t.timers:
            while candidates and self._lock(candidates[0]) != (
                timer.memberId,
                timer.first,
                timer.last,
                timer.expired,
                timer.cancelled,
                timer.handled,
            ):
                candidates.pop(0)
            if not candidates:
                break
            aligned.append(candidates.pop(0))
        self.aligned = aligned

    def _lock(self, task: Any) -> tuple[str, int, int, bool, bool, bool]:
        k = self.kafka
        return (
            str(k.member_field.get(task)),
            int(k.first_field.get(task)),
            int(k.last_field.get(task)),
            bool(task.hasExpired()),
            bool(task.isCancelled()),
            id(task) in self.handled,
        )

    def locks(self, t: ShareGroupState) -> list[tuple[str, int, int, bool, bool]]:
        """The lock tasks standing for the model's timers that have not been handled (matched in order;
        a timer no task matches is missing from the list)."""
        locks = [self._lock(task) for task in self.aligned]
        return [lock[:5] for lock in locks if not lock[5]]

    def records(self, count: int) -> list[tuple[str, int, str, bool]]:
        out = []
        for entry in self.kafka.cached_state.invoke(self.partition).entrySet():
            batch = entry.getValue()
            states = batch.offsetState()
            if states is None:
                out.extend(
                    (
                        str(batch.batchState().name()),
                        int(batch.batchDeliveryCount()),
                        str(batch.batchMemberId()),
                        bool(batch.batchHasOngoingStateTransition()),
                    )
                    for _offset in range(int(batch.firstOffset()), int(batch.lastOffset()) + 1)
                )
            else:
                out.extend(
                    (
                        str(s.state().name()),
                        int(s.deliveryCount()),
                        str(s.memberId()),
                        bool(s.hasOngoingStateTransition()),
                    )
                    for s in states.values()
                )
        return out[:count]

    def start_offset(self) -> int:
        return int(self.kafka.start_offset.invoke(self.partition))

    def discard(self) -> None:
        """Take this replay's lock tasks out of the shared timer, which would keep them (and through
        their handlers, the share partition) for the rest of the run, and cut the references between
        the Python stand-ins and the Java objects: a cycle through both heaps is never collected."""
        for task in self.tasks:
            task.cancel()
        self.tasks.clear()
        self.aligned.clear()
        self.writes.clear()
        self.persister.replay = None
        self.partition = None


def _fetched(records: int, fetch_offset: int, log_start: int) -> Any:
    """A fetch's answer from ``fetch_offset``: one batch of one record for each offset the log holds."""
    import jpype

    buffer_class = jvm.jclass("java.nio.ByteBuffer")
    memory = jvm.jclass("org.apache.kafka.common.record.MemoryRecords")
    compression = jvm.jclass("org.apache.kafka.common.compress.Compression").NONE
    simple = jvm.jclass("org.apache.kafka.common.record.SimpleRecord")
    batches = [
        memory.withRecords(jpype.JLong(offset), compression, simple(f"r{offset}".encode())).buffer()
        for offset in range(max(fetch_offset, log_start), records)
    ]
    joined = buffer_class.allocate(sum(b.remaining() for b in batches))
    for b in batches:
        joined.put(b)
    joined.flip()
    data = jvm.jclass("org.apache.kafka.server.storage.log.FetchPartitionData")
    optional = jvm.jclass("java.util.Optional")
    return data(
        jvm.jclass("org.apache.kafka.common.protocol.Errors").NONE,
        records,
        log_start,
        memory.readableRecords(joined),
        optional.empty(),
        jvm.jclass("java.util.OptionalLong").empty(),
        optional.empty(),
        jvm.jclass("java.util.OptionalInt").empty(),
        False,
    )


def _write_result(kafka: _Kafka, parameters: Any, error: int) -> Any:
    """The share coordinator's answer to a write: its partition, with ``error``."""
    factory = jvm.jclass(PERSISTER + "PartitionFactory")
    topic_data = jvm.jclass(PERSISTER + "TopicData")
    asked = parameters.groupTopicPartitionData().topicsData().get(0)
    partition = factory.newPartitionErrorData(asked.partitions().get(0).partition(), kafka.jpype.JShort(error), None)
    result = jvm.jclass(PERSISTER + "WriteShareGroupStateResult$Builder")()
    return result.setTopicsData(kafka.List.of(topic_data(asked.topicId(), kafka.List.of(partition)))).build()


def _held_persister_class(kafka: _Kafka) -> Any:
    """A persister that reads what its replay says the share coordinator holds (nothing, start
    offset 0, for the first leader) and holds every write until the model's step answers it. One
    class for the run (each JImplements class is a new proxy class in the JVM), one instance per
    replay."""
    jpype = kafka.jpype
    future_class = jvm.jclass("java.util.concurrent.CompletableFuture")
    factory = jvm.jclass(PERSISTER + "PartitionFactory")
    topic_data = jvm.jclass(PERSISTER + "TopicData")
    batch_class = jvm.jclass(PERSISTER + "PersisterStateBatch")
    record_state = jvm.jclass(FETCH + "RecordState")
    array_list = jvm.jclass("java.util.ArrayList")
    read_result = jvm.jclass(PERSISTER + "ReadShareGroupStateResult$Builder")

    @jpype.JImplements(PERSISTER + "Persister")
    class HeldPersister:
        def __init__(self, replay: _Replay) -> None:
            self.replay = replay

        @jpype.JOverride
        def readState(self, request: Any) -> Any:
            asked = request.groupTopicPartitionData().topicsData().get(0)
            start, written = self.replay.loaded
            batches = array_list()
            for offset, state, count in written:
                state_id = jpype.JByte(int(record_state.valueOf(state).id()))
                batches.add(batch_class(jpype.JLong(offset), jpype.JLong(offset), state_id, jpype.JShort(count)))
            partition = factory.newPartitionAllData(
                asked.partitions().get(0).partition(), 0, jpype.JLong(start), jpype.JShort(0), None, batches
            )
            done = read_result().setTopicsData(kafka.List.of(topic_data(asked.topicId(), kafka.List.of(partition))))
            return future_class.completedFuture(done.build())

        @jpype.JOverride
        def writeState(self, request: Any) -> Any:
            future = future_class()
            self.replay.writes.append((future, request))
            return future

        @jpype.JOverride
        def initializeState(self, request: Any) -> Any:
            return future_class.completedFuture(None)

        @jpype.JOverride
        def deleteState(self, request: Any) -> Any:
            return future_class.completedFuture(None)

        @jpype.JOverride
        def readSummary(self, request: Any) -> Any:
            return future_class.completedFuture(None)

        @jpype.JOverride
        def stop(self) -> None:
            return None

    return HeldPersister


def _manual_timer_class() -> Any:
    """A timer that collects its tasks: each is put in ``wheel`` (a real timer, whose entry tells
    whether the task was cancelled) whose clock never reaches it, so none runs unless the model's
    step runs it."""
    import jpype

    @jpype.JImplements("org.apache.kafka.server.util.timer.Timer")
    class ManualTimer:
        def __init__(self, tasks: list[Any], wheel: Any) -> None:
            self.tasks, self.wheel = tasks, wheel

        @jpype.JOverride
        def add(self, task: Any) -> None:
            self.tasks.append(task)
            self.wheel.add(task)

        @jpype.JOverride
        def advanceClock(self, timeout: Any) -> bool:
            return False

        @jpype.JOverride
        def size(self) -> int:
            return len(self.tasks)

        @jpype.JOverride
        def close(self) -> None:
            return None

    return ManualTimer


def _unsafe() -> Any:
    unsafe_class = jvm.jclass("sun.misc.Unsafe").class_
    field = unsafe_class.getDeclaredField("theUnsafe")
    field.setAccessible(True)
    return field.get(None)


def _field(java_class: Any, name: str) -> Any:
    field = java_class.getDeclaredField(name)
    field.setAccessible(True)
    return field


def _quiet_logs() -> None:
    """The server jars log through log4j to the console: a failed write the model asked for is an
    ERROR there, and no concern of the run's."""
    try:
        configurator = jvm.jclass("org.apache.logging.log4j.core.config.Configurator")
    except Exception:  # a release logging otherwise
        return
    configurator.setRootLevel(jvm.jclass("org.apache.logging.log4j.Level").OFF)


def _has_field(class_name: str, field: str) -> bool:
    try:
        jvm.jclass(class_name).class_.getDeclaredField(field)
    except Exception:
        return False
    return True


def _ignored() -> Any:
    """Kafka 4.4's notifier of delayed share fetches: there are none."""
    import jpype

    @jpype.JImplements("java.util.function.Consumer")
    class Ignored:
        @jpype.JOverride
        def accept(self, key: Any) -> None:
            return None

    return Ignored()


def _no_dead_letter_queue() -> Any:
    """Kafka 4.4's switch of the dead-letter queue (KIP-1191): off."""
    import jpype

    @jpype.JImplements("java.util.function.Supplier")
    class Off:
        @jpype.JOverride
        def get(self) -> Any:
            return jpype.JObject(False, jpype.JClass("java.lang.Boolean"))

    return Off()
