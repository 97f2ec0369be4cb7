"""The producer model's config: every flag named after the KIP or JIRA that changed the behaviour,
the presets that bundle them, and the names of every action's arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kmc.checker import Preset, param

ACTION_ARGS = {
    "SendProduce": ("record",),
    "HandleProduce": ("connection", "broker", "record", "outcome"),
    "HandleProduceResponse": ("connection", "broker", "record", "error"),
    "Disconnect": ("connection",),
    "DeliveryTimeout": ("record",),
    "ResolveSequences": ("bump",),
    "BumpEpoch": ("producerId", "producerEpoch"),
    "Replicate": ("follower", "offset"),
    "ElectLeader": ("broker", "leaderEpoch"),
    "DeleteRecords": ("broker", "logStartOffset"),
    "ExpireProducer": ("broker", "producerId"),
}


Acks = Literal["0", "1", "all"]


@dataclass(frozen=True)
class ProducerConfig:
    max_records: int = param(2, "records the application sends (one batch each)", min=1, max=4)
    enable_idempotence: bool = param(True, "enable.idempotence")
    acks: Acks = param("all", "acks")
    max_in_flight: int = param(2, "max.in.flight.requests.per.connection", min=1, max=5)
    retries: bool = param(True, "retries > 0 (a retriable error is retried; bounded by the faults)")
    num_batches_to_retain: int = param(
        5,
        "ProducerStateEntry.NUM_BATCHES_TO_RETAIN: batches cached for duplicate detection (1 before KAFKA-5494)",
        min=1,
        max=5,
    )
    max_disconnects: int = param(2, "connection drops (and request timeouts), in all", min=0, max=4)
    max_rejections: int = param(
        0, "NOT_ENOUGH_REPLICAS answers: the leader refuses a request without writing it", min=0, max=4
    )
    max_delivery_timeouts: int = param(0, "batches that reach delivery.timeout.ms (queued or in flight)", min=0, max=3)
    max_failovers: int = param(1, "leader elections", min=0, max=3)
    max_deletions: int = param(0, "retention deletes the head of the leader's log (one batch each)", min=0, max=3)
    max_expirations: int = param(0, "a broker expires an idle producer's state", min=0, max=3)
    max_producer_epoch: int = param(2, "epoch bumps (or new producer ids) stop here", min=0, max=4)
    transactional: bool = param(
        False,
        "transactional.id set: TransactionManager's error handling of a transactional producer (its transactions "
        "are the transactions model's); before KIP-360 a sequence error it cannot retry is fatal",
    )
    kafka_7190: bool = param(True, "KAFKA-7190: producer state outlives the retention of its batches")
    kafka_5793: bool = param(
        True,
        "KAFKA-5793 (1.0): a leader with no state for a producer answers UNKNOWN_PRODUCER_ID with its log start "
        "offset (before: OUT_OF_ORDER_SEQUENCE_NUMBER, which fails the batch)",
    )
    kafka_8710: bool = param(True, "KAFKA-8710: the broker accepts any sequence from a producer it has no state for")
    kafka_8805: bool = param(True, "KAFKA-8805 (KIP-360 client): bump the epoch to recover from a sequence error")
    kafka_15591: bool = param(
        False, "KAFKA-15591 (Kafka 4.5): a never-written partition takes only sequence 0 from a producer without state"
    )

    def __post_init__(self) -> None:
        if self.enable_idempotence and self.acks != "all":
            raise ValueError("enable.idempotence requires acks=all (ProducerConfig)")
        if self.transactional and not self.enable_idempotence:
            raise ValueError("a transactional producer is idempotent: set enable_idempotence (ProducerConfig)")
        if self.enable_idempotence and not self.retries:
            raise ValueError("enable.idempotence requires retries > 0 (ProducerConfig)")
        if not self.kafka_5793 and (self.kafka_8710 or self.kafka_8805):
            raise ValueError(
                "kafka_8710 and kafka_8805 (KIP-360) build on KAFKA-5793's UNKNOWN_PRODUCER_ID: turn them off"
            )


PROPERTIES = (
    "NoDuplicates",
    "PerProducerOrder",
    "AcknowledgedSendNeverLost",
    "EpochFencing",
    "SendFailsOnlyByTimeout",
    "ProducerNeverFatal",
    "EverySendCompletes",
)


_ALL_HOLD = {name: "holds" for name in PROPERTIES}


_STUCK = {"EverySendCompletes": "violated"}
"""A batch refused OUT_OF_ORDER_SEQUENCE_NUMBER behind an acknowledged later one is retried until
delivery.timeout.ms, which these presets never reach."""


_BOUNDS = {"max_records": 3, "max_failovers": 0, "max_expirations": 1}
"""The idempotent producer's bounds: three records, two requests in flight, two disconnects."""


_RETENTION = {"max_deletions": 1, "max_disconnects": 1, "max_failovers": 0}
"""Bounds where retention deletes a batch whose answer was lost."""


_ZOMBIE = {"max_records": 2, "max_deletions": 2, "max_disconnects": 2, "max_rejections": 1, "max_failovers": 0}
"""Bounds where an epoch bump leaves a request of the old epoch behind on a closed connection."""


_PRE_KIP_360 = {"kafka_7190": False, "kafka_8710": False, "kafka_8805": False}


_TRANSACTIONAL_EXPIRY = {
    "transactional": True,
    "max_records": 3,
    "max_expirations": 1,
    "max_deletions": 0,
    "max_disconnects": 0,
}
"""A transactional producer, three records, and one expiry of its state on the leader."""

PRESETS = {
    "idempotent": Preset.of(
        "Kafka 4.x: idempotent producer, acks=all, 2 requests in flight, retries, 2 disconnects, expiry",
        _ALL_HOLD,
        **_BOUNDS,
    ),
    "cache-1": Preset.of(
        "idempotent's bounds with a broker that caches 1 batch (NUM_BATCHES_TO_RETAIN before KAFKA-5494)",
        {"NoDuplicates": "violated", "PerProducerOrder": "holds", "EverySendCompletes": "holds"},
        **_BOUNDS,
        num_batches_to_retain=1,
    ),
    "non-idempotent": Preset.of(
        "enable.idempotence=false with 2 requests in flight and retries: the log reorders and duplicates",
        {"NoDuplicates": "violated", "PerProducerOrder": "violated"},
        enable_idempotence=False,
        max_failovers=0,
    ),
    "in-flight-1": Preset.of(
        "Kafka 4.x, idempotent, one request in flight: survives a failover, two disconnects and a delivery timeout",
        _ALL_HOLD,
        max_in_flight=1,
        max_delivery_timeouts=1,
    ),
    "leader-change": Preset.of(
        "Kafka 4.x before KAFKA-15591, idempotent, 2 in flight, a failover and a disconnect: the new leader takes "
        "the producer's second batch as its first, and the epoch bump after OUT_OF_ORDER_SEQUENCE_NUMBER rewrites it",
        {"NoDuplicates": "violated", "PerProducerOrder": "violated", **_STUCK},
        max_disconnects=1,
    ),
    "not-enough-replicas": Preset.of(
        "Kafka 4.x, idempotent, 2 in flight, one NOT_ENOUGH_REPLICAS answer and a disconnect: the same, on one leader",
        {"NoDuplicates": "violated", "PerProducerOrder": "violated", **_STUCK},
        max_rejections=1,
        max_failovers=0,
        max_disconnects=1,
    ),
    "kafka-15591": Preset.of(
        "leader-change's bounds with KAFKA-15591 (Kafka 4.5): the new leader, never written, refuses the "
        "second batch OUT_OF_ORDER_SEQUENCE_NUMBER; the first is written first",
        _ALL_HOLD,
        max_disconnects=1,
        kafka_15591=True,
    ),
    "delivery-timeout": Preset.of(
        "Kafka 4.x, idempotent, 2 in flight, a disconnect and a delivery timeout: requests left on the closed "
        "connection are written after the epoch bump that resolved the expired batch's sequence",
        {"NoDuplicates": "violated"},
        **_BOUNDS,
        max_disconnects=1,
        max_delivery_timeouts=1,
    ),
    "acks-1": Preset.of(
        "acks=1 (idempotence off): the leader answers before the follower has the record, then fails over",
        {"AcknowledgedSendNeverLost": "violated", "NoDuplicates": "violated"},
        enable_idempotence=False,
        acks="1",
        max_in_flight=1,
        max_records=1,
    ),
    "pre-kip-360": Preset.of(
        "Kafka 1.0 to 2.3: retention drops producer state (before KAFKA-7190), UNKNOWN_PRODUCER_ID (before "
        "KAFKA-8710), the client restarts its sequences at 0 (before KAFKA-8805); an election then takes a retry "
        "for a duplicate",
        {"AcknowledgedSendNeverLost": "violated"},
        **_PRE_KIP_360,
        max_deletions=1,
        max_disconnects=0,
    ),
    "pre-kafka-5793": Preset.of(
        "Kafka 0.11: retention drops the producer's state with its batches, and the leader answers its next batch "
        "OUT_OF_ORDER_SEQUENCE_NUMBER: the client fails the send and resets its producer id",
        {**_ALL_HOLD, "SendFailsOnlyByTimeout": "violated"},
        **_PRE_KIP_360,
        kafka_5793=False,
        max_deletions=1,
        max_disconnects=0,
    ),
    "kip-360": Preset.of(
        "pre-kip-360's bounds with the three KIP-360 fixes (Kafka 2.5 and later)",
        {**_ALL_HOLD, **_STUCK},
        max_deletions=1,
        max_disconnects=0,
    ),
    "pre-kip-360-transactional": Preset.of(
        "Kafka 1.0 to 2.4 with a transactional.id: a leader expires the idle producer's state while its records "
        "stay in the log and answers its next batch UNKNOWN_PRODUCER_ID, which is fatal to a transactional "
        "producer: every record it holds fails, and the application must close it",
        {**_ALL_HOLD, "SendFailsOnlyByTimeout": "violated", "ProducerNeverFatal": "violated"},
        **_TRANSACTIONAL_EXPIRY,
        **_PRE_KIP_360,
    ),
    "kip-360-transactional": Preset.of(
        "pre-kip-360-transactional's bounds with KIP-360 (Kafka 2.5 and later): the broker accepts the batch of a "
        "producer it has no state for, and the producer is never fatally failed",
        {**_ALL_HOLD, **_STUCK},
        **_TRANSACTIONAL_EXPIRY,
    ),
    "pre-kafka-7190": Preset.of(
        "Kafka 4.x but retention drops producer state with its batches: the retry of a written batch whose "
        "answer was lost is written again",
        {"NoDuplicates": "violated"},
        **_RETENTION,
        kafka_7190=False,
    ),
    "kafka-7190": Preset.of(
        "pre-kafka-7190's bounds with producer state retained (KAFKA-7190, Kafka 2.4 and later)",
        _ALL_HOLD,
        **_RETENTION,
    ),
    "zombie": Preset.of(
        "before KAFKA-7190: once retention drops the state of the new epoch, a request of the old epoch left "
        "on a closed connection is written after it",
        {"EpochFencing": "violated", "NoDuplicates": "violated", "PerProducerOrder": "violated", **_STUCK},
        **_ZOMBIE,
        kafka_7190=False,
    ),
}
