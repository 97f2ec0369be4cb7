"""The producer model: exact counts, the positive controls, every pre-fix counterexample, the rules underneath."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import Action, BfsOptions, Check, UserError, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import confirm_violation, replay
from kmc.models.producer.model import (
    DUPLICATE,
    NONE,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    UNKNOWN_PRODUCER_ID,
    Batch,
    BatchMetadata,
    ProducerModel,
    ProducerStateEntry,
    Replica,
)

ROOT = Path(__file__).resolve().parents[1]
MODEL = "kmc.models.producer.model:ProducerModel"
TRACES = sorted((ROOT / "counterexamples" / "producer").glob("*.itf.json"))


def _all(preset: str, **overrides: object):
    model = ProducerModel.build(preset, overrides)
    return bfs(model, select_properties(ProducerModel), BfsOptions(keep_going=True))


@pytest.mark.parametrize(
    ("preset", "states"),
    [("idempotent", 1505), ("in-flight-1", 3239), ("kip-360", 211), ("kafka-7190", 182), ("kafka-15591", 485)],
)
def test_fixed_presets_hold_completely(preset: str, states: int) -> None:
    result = _all(preset)
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert result.stats.distinct_states == states


@pytest.mark.parametrize(
    ("preset", "prop", "length", "states"),
    [
        ("non-idempotent", "NoDuplicates", 6, 3684),
        ("non-idempotent", "PerProducerOrder", 7, 3684),
        ("cache-1", "NoDuplicates", 12, 1783),
        ("acks-1", "AcknowledgedSendNeverLost", 5, 309),
        ("pre-kip-360", "AcknowledgedSendNeverLost", 13, 210),
        ("pre-kafka-7190", "NoDuplicates", 8, 257),
        ("zombie", "EpochFencing", 19, 8521),
        ("leader-change", "PerProducerOrder", 12, 575),
        ("leader-change", "NoDuplicates", 17, 575),
        ("not-enough-replicas", "PerProducerOrder", 12, 312),
        ("delivery-timeout", "NoDuplicates", 17, 2326),
        ("pre-kafka-5793", "SendFailsOnlyByTimeout", 9, 186),
        ("pre-kip-360-transactional", "ProducerNeverFatal", 9, 398),
    ],
)
def test_each_bug_at_its_shortest(preset: str, prop: str, length: int, states: int) -> None:
    result = _all(preset)
    assert result.complete and result.stats.distinct_states == states
    [violation] = [v for v in result.violations if v.property == prop]
    assert violation.trace_length == length


def test_the_zombie_is_fenced_once_state_is_retained() -> None:
    """zombie's bounds with KAFKA-7190: the old epoch's request is refused (EpochFencing holds)."""
    model = ProducerModel.build("zombie", {"kafka_7190": True})
    result = bfs(model, select_properties(ProducerModel, names=["EpochFencing"]))
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == 3576


@pytest.mark.parametrize(("flag", "states"), [("kafka_8710", 259), ("kafka_8805", 211)])
def test_kip_360_flags_alone_hold(flag: str, states: int) -> None:
    """The silent loss of pre-kip-360 needs all three: the client's sequence reset (KAFKA-8805), the
    UNKNOWN_PRODUCER_ID that triggers it (KAFKA-8710) and the lost state (KAFKA-7190)."""
    result = _all("kip-360", **{flag: False})
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == states


def test_the_cache_size_is_what_stops_the_duplicate() -> None:
    """cache-1 and idempotent differ only in NUM_BATCHES_TO_RETAIN; the duplicate is the retry of a
    batch that fell out of a one-batch cache, answered OUT_OF_ORDER_SEQUENCE_NUMBER, bumped and rewritten."""
    result = bfs(ProducerModel.build("cache-1"), select_properties(ProducerModel, names=["NoDuplicates"]))
    names = [a.name for a in result.violations[0].trace.actions[1:]]
    assert "BumpEpoch" in names and names.count("Disconnect") >= 1
    for k in ("num_batches_to_retain",):
        assert ProducerModel.build("cache-1").config_dict()[k] != ProducerModel.build("idempotent").config_dict()[k]


@pytest.mark.parametrize("trace", TRACES, ids=[t.name for t in TRACES])
def test_checked_in_counterexamples_replay(trace: Path) -> None:
    doc = read_trace(trace)
    done = replay(doc)
    assert confirm_violation(done) == doc["#meta"]["property"]


def test_every_checked_in_counterexample_is_one_of_the_thirteen() -> None:
    assert len(TRACES) == 14


# -- the leader's decision (the oracle compares it with Kafka's) ---------------------------------
def _leader(*cached: tuple[int, int], epoch: int = 0) -> Replica:
    entry = ProducerStateEntry(0, epoch, tuple(BatchMetadata(s, o) for s, o in cached))
    return Replica((), 0, (entry,) if cached or epoch else ())


@pytest.mark.parametrize(
    ("cached", "batch", "answer"),
    [
        (((0, 0), (1, 1)), Batch(9, 0, 0, 0), (DUPLICATE, 0)),
        (((0, 0), (1, 1)), Batch(9, 0, 0, 2), (NONE, -1)),
        (((0, 0), (1, 1)), Batch(9, 0, 0, 3), (OUT_OF_ORDER_SEQUENCE_NUMBER, -1)),
        (((0, 0),), Batch(9, 0, 1, 0), (NONE, -1)),  # a new epoch starts at 0
        (((0, 0),), Batch(9, 0, 1, 1), (OUT_OF_ORDER_SEQUENCE_NUMBER, -1)),
        ((), Batch(9, 0, 0, 1), (NONE, -1)),  # KAFKA-8710: no state, any sequence
    ],
)
def test_check_produce(cached: tuple, batch: Batch, answer: tuple[str, int]) -> None:
    assert ProducerModel.build("idempotent").check_produce(_leader(*cached), batch) == answer


def test_before_kafka_8710_an_unknown_producer_needs_sequence_0() -> None:
    model = ProducerModel.build("pre-kip-360")
    assert model.check_produce(_leader(), Batch(9, 0, 0, 1)) == (UNKNOWN_PRODUCER_ID, -1)
    assert model.check_produce(_leader(), Batch(9, 0, 0, 0)) == (NONE, -1)


def test_before_kafka_5793_an_unknown_producer_is_out_of_sequence() -> None:
    """0.11 had no UNKNOWN_PRODUCER_ID: a producer whose state retention removed is out of sequence,
    and the 0.11 client fails the batch and asks for a new producer id."""
    model = ProducerModel.build("pre-kafka-5793")
    assert model.check_produce(_leader(), Batch(9, 0, 0, 1)) == (OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
    [violation] = Check(MODEL, preset="pre-kafka-5793", property_names=["SendFailsOnlyByTimeout"]).run().violations
    names = [a.name for a in violation.trace.actions[1:]]
    assert names.index("DeleteRecords") < names.index("HandleProduceResponse", names.index("DeleteRecords"))
    assert violation.trace.states[-1].failed == frozenset({1}) and violation.trace.states[-1].timeouts == 0
    with pytest.raises(UserError, match="build on KAFKA-5793"):
        ProducerModel.build("pre-kafka-5793", {"kafka_8710": True})


def test_before_kip_360_unknown_producer_id_is_fatal_to_a_transactional_producer() -> None:
    """1.0-2.4: the leader expired the idle producer's state while its records stayed in the log, so
    the client cannot take the answer for retention: an idempotent producer fails the batch and takes
    a new producer id, a transactional one is defunct and fails the record it has not even sent."""
    [violation] = (
        Check(MODEL, preset="pre-kip-360-transactional", property_names=["ProducerNeverFatal"]).run().violations
    )
    last = violation.trace.states[-1]
    assert [a.name for a in violation.trace.actions[-4:]] == [
        "ExpireProducer",
        "SendProduce",
        "HandleProduce",
        "HandleProduceResponse",
    ]
    assert last.failed == frozenset({1, 2}) and last.client.batches == () and last.timeouts == 0
    idempotent = Check(
        MODEL, preset="pre-kip-360-transactional", overrides={"transactional": False}, settings={"keep_going": True}
    ).run()
    assert "ProducerNeverFatal" not in {v.property for v in idempotent.violations}
    fixed = Check(
        MODEL, preset="kip-360-transactional", property_names=["ProducerNeverFatal", "SendFailsOnlyByTimeout"]
    )
    assert fixed.run().status is Status.HOLDS_COMPLETE
    with pytest.raises(UserError, match="transactional producer is idempotent"):
        ProducerModel.build("pre-kip-360-transactional", {"enable_idempotence": False})


def test_idempotence_needs_acks_all() -> None:
    with pytest.raises(UserError, match="requires acks=all"):
        ProducerModel.build("idempotent", {"acks": "1"})


@pytest.mark.parametrize("preset", sorted(ProducerModel.presets))
def test_presets_verdicts_are_what_kmc_list_says(preset: str) -> None:
    """Each preset's documented verdicts, liveness included, are what a complete search finds."""
    expected = ProducerModel.presets[preset].expected
    result = Check(MODEL, preset=preset, settings={"keep_going": True}).run()
    assert result.complete
    violated = {v.property for v in result.violations}
    assert violated == {name for name, verdict in expected.items() if verdict == "violated"}


def test_the_retry_loop_that_only_delivery_timeout_ends() -> None:
    """kip-360: the new leader took r1 first; r0 is refused OUT_OF_ORDER_SEQUENCE_NUMBER behind the
    acknowledged r1 and, not being the next sequence, is retried for ever (until delivery.timeout.ms)."""
    result = Check(MODEL, preset="kip-360", property_names=["EverySendCompletes"]).run()
    [violation] = result.violations
    assert violation.trace_length == 11
    assert violation.trace.actions[-1] == Action(
        "HandleProduce", connection=0, broker=1, record=0, outcome=OUT_OF_ORDER_SEQUENCE_NUMBER
    )


# -- the Kafka 4.x findings: what the Java client does, and the broker fix that closes them ------
@pytest.mark.parametrize(("preset", "states"), [("not-enough-replicas", 270), ("kip-360", 189)])
def test_kafka_15591_closes_the_findings_at_their_bounds(preset: str, states: int) -> None:
    """A never-written leader refuses the second batch, so it cannot overtake the first: order,
    no duplicate and the retry loop (EverySendCompletes) all hold, liveness included."""
    result = Check(MODEL, preset=preset, overrides={"kafka_15591": True}, settings={"keep_going": True}).run()
    assert result.status is Status.HOLDS_COMPLETE and result.complete
    assert result.stats.distinct_states == states


def test_kafka_15591_leaves_the_delivery_timeout_finding() -> None:
    """delivery-timeout needs no stateless leader: with the fix it is still a duplicate (shorter, 13)."""
    result = _all("delivery-timeout", kafka_15591=True)
    assert result.stats.distinct_states == 2456
    [violation] = result.violations
    assert (violation.property, violation.trace_length) == ("NoDuplicates", 13)


def test_kafka_15591_refuses_a_first_sequence_above_0_on_a_never_written_log() -> None:
    model = ProducerModel.build("kafka-15591")
    assert model.check_produce(_leader(), Batch(9, 0, 0, 1)) == (OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
    assert model.check_produce(_leader(), Batch(9, 0, 0, 0)) == (NONE, -1)
    written = Replica((Batch(8, 5, 0, 0),), 1, ())  # held a record once (deleted since): any sequence
    assert model.check_produce(written, Batch(9, 0, 0, 1)) == (NONE, -1)


def test_the_epoch_bump_does_not_wait_for_batches_in_flight() -> None:
    """Sender.runOnce bumps at its next loop and startSequencesAtBeginning renumbers every batch with a
    sequence, the one on the wire too, which keeps sequenceHasBeenReset until it is drained again."""
    model = ProducerModel.build("idempotent")
    [s] = model.init_states()
    r0, r1, r2 = s.client.batches
    batches = (r0._replace(baseSequence=0, inRetry=True), r1._replace(baseSequence=1, inFlight=True), r2)
    client = s.client._replace(batches=batches, nextSequence=2, epochBumpRequired=True)
    out: list = []
    model._bump_epoch(s._replace(client=client), out)
    [(action, nxt)] = out
    assert action == Action("BumpEpoch", producerId=0, producerEpoch=1)
    bumped = nxt.client.batches
    assert [(b.producerEpoch, b.baseSequence, b.sequenceHasBeenReset) for b in bumped[:2]] == [
        (1, 0, True),
        (1, 1, True),
    ]
    assert bumped[1].inFlight and bumped[2].baseSequence == -1 and not nxt.client.epochBumpRequired


def test_only_the_oldest_unfinished_batch_reaches_delivery_timeout() -> None:
    """Every batch has the same delivery.timeout.ms from its creation; the Sender expires in creation order."""
    model = ProducerModel.build("delivery-timeout")
    [s] = model.init_states()
    out: list = []
    model._delivery_timeout(s, out)
    assert [a for a, _ in out] == [Action("DeliveryTimeout", record=0)]
