"""The transactions model: exact counts, each counterexample before its fix, the fixed protocol holding."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import Check, bfs
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.transactions import coordinator as tc
from kmc.models.transactions.log import ProducerEntry, aborted_index, read_committed
from kmc.models.transactions.model import TransactionsModel
from kmc.models.transactions.state import Message

ROOT = Path(__file__).resolve().parents[1]
TRACES = sorted((ROOT / "counterexamples" / "transactions").glob("*.itf.json"))
SAFETY = ["AtomicVisibility", "AbortedNeverVisible", "OpenTransactionKnownToCoordinator", "ReadCommittedBoundedByLso"]


def _check(preset: str, names: list[str] | None = None, **overrides: object):
    model = TransactionsModel.build(preset, overrides)
    return bfs(model, select_properties(TransactionsModel, names=names))


def test_kip_890_part_2_safety_holds_completely() -> None:
    result = _check("kip-890-part-2", SAFETY)
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert (result.stats.distinct_states, result.stats.depth) == (59389, 45)


@pytest.mark.parametrize(
    ("preset", "states"),
    [
        ("read-committed", 52396),
        ("zombie", 5372),
        ("txn-timeout", 9209),
        ("failover", 7138),
        ("offsets", 7138),
        ("epoch-exhaustion", 15553),
    ],
)
def test_fixed_presets_hold_every_property_including_liveness(preset: str, states: int) -> None:
    result = Check("transactions", preset=preset).run()
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert result.stats.distinct_states == states
    _enabled, failovers = result.coverage["actions"]["CoordinatorFailover"]
    assert (failovers > 0) == (preset in ("read-committed", "offsets", "failover"))


@pytest.mark.parametrize(
    ("preset", "prop", "length"),
    [
        ("pre-kip-890", "OpenTransactionKnownToCoordinator", 15),
        ("pre-kip-890", "AtomicVisibility", 21),
        ("pre-kip-890", "AbortedNeverVisible", 28),
        ("pre-kip-890", "LastStableOffsetAdvances", 21),
        ("pre-kafka-18464", "FencedOnlyByANewerProducer", 19),
        ("kip-890-part-1", "FencedOnlyByANewerProducer", 34),
        ("pre-kafka-14884", "OpenTransactionKnownToCoordinator", 17),
        ("kip-890-part-1", "AbortedNeverVisible", 30),
        ("kip-890-part-1", "AtomicVisibility", 33),
        ("kafka-17754", "AtomicVisibility", 39),
        ("kafka-17754", "AbortedNeverVisible", 41),
        ("pre-kafka-6119", "OpenTransactionKnownToCoordinator", 13),
        ("pre-kafka-6119", "AtomicVisibility", 18),
        ("pre-kafka-6119", "LastStableOffsetAdvances", 18),
        ("pre-kafka-5355", "ReadCommittedSeesOnlyCommitted", 11),
        ("pre-kafka-5355", "ReadCommittedBoundedByLso", 11),
        ("pre-kafka-5355", "AbortedNeverVisible", 13),
        ("pre-kafka-5376", "AbortedNeverVisible", 15),
        ("pre-kafka-5376", "ReadCommittedSeesOnlyCommitted", 15),
        ("pre-kafka-20090", "LastStableOffsetAdvances", 39),
        ("pre-kafka-9666", "LastStableOffsetAdvances", 23),
        ("pre-kafka-19367", "LastStableOffsetAdvances", 16),
        ("pre-kafka-18660", "FencedOnlyByANewerProducer", 29),
        ("pre-kafka-18660", "TransactionFailsOnlyByAFault", 34),
    ],
)
def test_each_bug_before_its_fix(preset: str, prop: str, length: int) -> None:
    [violation] = Check("transactions", preset=preset, property_names=[prop]).run().violations
    assert (violation.property, violation.trace_length) == (prop, length)


def test_hanging_transaction_is_a_produce_delayed_past_the_abort_marker() -> None:
    [violation] = _check("pre-kip-890", ["OpenTransactionKnownToCoordinator"]).violations
    names = [a.name for a in violation.trace.actions[1:]]
    assert names.index("RequestTimeout") < names.index("HandleWriteTxnMarkers") < names.index("HandleProduce")
    last = violation.trace.states[-1]
    assert last.coordinator.metadata.state == tc.PREPARE_ABORT and not last.coordinator.pendingMarkers
    assert last.partitions[0].currentTxnFirstOffset == 1  # the data after the ABORT marker: the LSO stays at 1


def test_a_hanging_transaction_never_ends_once_producers_stop() -> None:
    """Before KIP-890 the LSO stays behind for good: the coordinator completed the abort, so neither
    its markers nor its transaction timeout (which fires only for an Ongoing transaction) close the
    partition's open transaction."""
    doc = read_trace(ROOT / "counterexamples" / "transactions" / "pre-kip-890-LastStableOffsetAdvances.itf.json")
    done = replay(doc)
    loop = done.trace.states[done.trace.loop :]
    for s in loop:
        assert [c.state for c in s.clients] == ["READY"] and s.nextTxn == 2
        assert s.coordinator.metadata.state == tc.COMPLETE_ABORT
        assert s.partitions[0].currentTxnFirstOffset == 1 < len(s.partitions[0].log)


def test_end_txn_of_the_next_transaction_waits_for_the_pending_completion() -> None:
    """KAFKA-18464: under TV 2, an EndTxn at the bumped epoch while the previous transaction's markers
    are being written is told CONCURRENT_TRANSACTIONS, not PRODUCER_FENCED."""
    prepared = tc.TxnMeta(0, 1, 0, tc.PREPARE_COMMIT, frozenset({0}))
    assert tc.handle_end_txn(prepared, 0, 1, False, tv2=True).error == tc.CONCURRENT_TRANSACTIONS
    assert tc.handle_end_txn(prepared, 0, 0, True, tv2=True).error == tc.CONCURRENT_TRANSACTIONS
    assert tc.handle_end_txn(prepared, 0, 0, False, tv2=False).error == tc.PRODUCER_FENCED  # 3.x: epoch first


class NoTimeoutFairness(TransactionsModel):
    """The coordinator's timeout as a fault only, as the model first had it."""

    fairness = tuple(f for f in TransactionsModel.fairness if f.pattern != "AbortTimedOutTransaction")


def test_the_coordinator_timeout_closes_what_a_self_fenced_producer_left_open() -> None:
    """Before KAFKA-18464 the producer fences itself with a record open on the partition; only the
    coordinator's timeout aborts it, so the LSO advances under its fairness and not without."""
    result = Check(
        "transactions",
        preset="pre-kafka-18464",
        overrides={"partitions": 1},
        property_names=["LastStableOffsetAdvances"],
    ).run()
    assert (result.status, result.stats.distinct_states) == (Status.HOLDS_COMPLETE, 1716)
    assert result.coverage["actions"]["AbortTimedOutTransaction"] == [4, 4]
    unfair = Check(
        f"{Path(__file__)}:NoTimeoutFairness",
        preset="pre-kafka-18464",
        overrides={"partitions": 1},
        property_names=["LastStableOffsetAdvances"],
    ).run()
    [violation] = unfair.violations
    assert violation.property == "LastStableOffsetAdvances"
    assert violation.trace.states[-1].clients[0].state == "FATAL_ERROR"


def test_kip_890_part_1_keeps_the_lso_moving() -> None:
    result = _check("kip-890-part-1", ["OpenTransactionKnownToCoordinator"], partitions=1)
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == 2704


def test_fifo_delivery_changes_the_state_space_not_the_verdict() -> None:
    result = _check("kip-890-part-2", SAFETY, delivery="fifo", partitions=1)
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == FIFO_STATES


FIFO_STATES = 1046  # with "any" delivery: 1,701


def test_read_committed_skips_aborted_data_and_stops_at_the_lso() -> None:
    doc = read_trace(ROOT / "counterexamples" / "transactions" / "kip-890-part-1-AbortedNeverVisible.itf.json")
    last = replay(doc).trace.states[-1]
    p = last.partitions[0]
    assert aborted_index(p) == []  # the aborted record slipped into the next transaction, which committed
    assert [b.txn for _, b in read_committed(p)] == [0, 1]  # transaction 1 committed 0's record with its own
    assert 0 in last.aborted


def test_coordinator_transition_table_matches_kafka_docs() -> None:
    assert tc.is_valid_transition(tc.EMPTY, tc.PREPARE_ABORT)  # transaction version 2
    assert not tc.is_valid_transition(tc.EMPTY, tc.PREPARE_COMMIT)
    meta = tc.TxnMeta(0, 3, -1, tc.ONGOING, frozenset({0}))
    assert tc.fence_and_abort(meta, tv2=False)[1:3] == (4, -1)
    assert tc.fence_and_abort(meta, tv2=True)[1:3] == (4, 3)  # one bump since KAFKA-19367
    assert tc.fence_and_abort(meta, tv2=True, kafka_19367=False)[1:3] == (5, 4)  # 4.0.0: two


@pytest.mark.parametrize("trace", TRACES, ids=[t.name for t in TRACES])
def test_checked_in_counterexamples_replay(trace: Path) -> None:
    doc = read_trace(trace)
    done = replay(doc)
    prop = doc["#meta"]["property"]
    props = select_properties(TransactionsModel, names=[prop])
    if props.invariants:
        check = props.invariants[0].bind(done.model)
        assert not check(done.trace.states[-1])
        assert all(check(s) for s in done.trace.states[:-1])


def test_every_checked_in_counterexample_has_its_diagram() -> None:
    assert len(TRACES) == 23
    for trace in TRACES:
        assert trace.with_name(trace.name.replace(".itf.json", ".svg")).exists()


def _reachable(model: TransactionsModel) -> list:
    """Every (state, action, next state) of a small configuration, for checks over all steps."""
    seen = set(model.init_states())
    frontier, steps = list(seen), []
    while frontier:
        nxt = []
        for s in frontier:
            for action, t in model.successors(s):
                steps.append((s, action, t))
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        frontier = nxt
    return steps


def test_the_java_client_sends_no_end_txn_while_a_batch_is_incomplete() -> None:
    """TransactionManager.nextRequest holds back the EndTxn, commit or abort, while the accumulator
    has incomplete batches (KAFKA-5449, 0.11); a commit covers a batch for every partition added."""
    ends = 0
    for s, action, _t in _reachable(TransactionsModel.build("kip-890-part-1", {"partitions": 1})):
        if action.name == "EndTxn":
            client = s.clients[action.args["client"]]
            assert client.completed == client.produced, (action, client)
            assert not action.args["commit"] or client.added <= client.produced
            ends += 1
    assert ends > 0


def test_kip_360_bumps_the_epoch_after_a_failed_batch_but_not_while_completing() -> None:
    """maybeTransitionToErrorState: a batch that expires in an open transaction requires an epoch
    bump after the abort (transaction version 0/1); one that expires once commitTransaction() was
    called does not (isCompleting), and version 2 never asks the client for one."""
    bumps: dict[str, set[bool]] = {}
    for s, action, t in _reachable(TransactionsModel.build("kip-890-part-1", {"partitions": 1})):
        if action.name == "RequestTimeout" and action.args["api"] == "Produce":
            bumps.setdefault(s.clients[0].state, set()).add(t.clients[0].epochBumpRequired)
    assert bumps == {"IN_TRANSACTION": {True}, "COMMITTING_TRANSACTION": {False}}
    tv2 = _reachable(TransactionsModel.build("kip-890-part-2", {"partitions": 1}))
    assert not any(t.clients[0].epochBumpRequired for _s, _a, t in tv2)


def test_an_abort_after_the_bump_is_followed_by_init_producer_id_with_the_current_epoch() -> None:
    bumped = [
        (s, t)
        for s, action, t in _reachable(TransactionsModel.build("kip-890-part-1", {"partitions": 1}))
        if action.name == "HandleInitProducerId" and s.clients[0].producerEpoch == 0
    ]
    assert bumped
    for _s, t in bumped:
        meta = t.coordinator.metadata
        if meta.state == tc.EMPTY:
            assert (meta.producerEpoch, meta.lastProducerEpoch) == (1, 0)


def test_the_coordinator_answers_kip_360_init_producer_id() -> None:
    """prepareIncrementProducerEpoch with an expected epoch: bump, a retry at the last epoch, fenced."""
    done = tc.TxnMeta(0, 3, -1, tc.COMPLETE_ABORT, frozenset())
    bump = tc.handle_init_producer_id(done, False, 3, expected_id=0)
    assert (bump.error, bump.meta[1:4]) == (tc.NONE, (4, 3, tc.EMPTY))
    retry = tc.handle_init_producer_id(bump.meta, False, 3, expected_id=0)
    assert (retry.error, retry.meta[1:4]) == (tc.NONE, (4, 3, tc.EMPTY))
    assert tc.handle_init_producer_id(bump.meta, False, 2, expected_id=0).error == tc.PRODUCER_FENCED
    assert tc.handle_init_producer_id(bump.meta, False, 3, expected_id=7).error == tc.PRODUCER_FENCED
    fresh = tc.handle_init_producer_id(bump.meta, False)
    assert fresh.meta[1:3] == (5, -1)


def test_an_added_partition_whose_batch_expired_unsent_gets_only_a_marker() -> None:
    """A batch expires in the accumulator after its partition was added: the abort writes a marker to
    a partition the transaction never wrote to."""
    logs = {
        t.partitions[0].log
        for _s, a, t in _reachable(TransactionsModel.build("kip-890-part-1", {"partitions": 1}))
        if a.name == "HandleWriteTxnMarkers"
    }
    assert any(len(log) == 1 and log[0].control and not log[0].commit for log in logs)


def test_kafka_6119_fence_closes_the_torn_transaction() -> None:
    """Before KAFKA-6119 the timed-out transaction is aborted at the producer's epoch and the producer
    goes on; with the fence every property holds at the same bounds."""
    [violation] = Check("transactions", preset="pre-kafka-6119", property_names=["AtomicVisibility"]).run().violations
    names = [a.name for a in violation.trace.actions[1:]]
    assert names.index("TxnTimeout") < names.index("HandleWriteTxnMarkers") < len(names) - 1
    assert names[-1] == "HandleProduce"
    fixed = Check("transactions", preset="pre-kafka-6119", overrides={"kafka_6119": True}).run()
    assert (fixed.status, fixed.stats.distinct_states) == (Status.HOLDS_COMPLETE, 4826)


def test_kafka_17754_is_a_late_copy_of_the_commit() -> None:
    """Only an EndTxn is resent: the late copy commits the next transaction early. Transaction version
    2 fences the copy with the bumped epoch, and every property holds at the same bounds."""
    [violation] = Check("transactions", preset="kafka-17754", property_names=["AbortedNeverVisible"]).run().violations
    ends = [a for a in violation.trace.actions[1:] if a.name == "HandleEndTxn"]
    assert [(a.args["commit"], a.args["producerEpoch"]) for a in ends] == [(True, 0), (True, 0)]
    assert not any(a.name == "RequestTimeout" and a.args["api"] == "Produce" for a in violation.trace.actions[1:])
    fixed = Check("transactions", preset="kafka-17754", overrides={"transaction_version": 2}).run()
    assert fixed.status is Status.HOLDS_COMPLETE
    assert fixed.stats.distinct_states == KAFKA_17754_FIXED_STATES


KAFKA_17754_FIXED_STATES = 15763


@pytest.mark.parametrize(("flag", "given"), [("kafka_5355", [0]), ("kafka_5376", [0])])
def test_a_delayed_fetch_completes_with_what_the_fix_restored(flag: str, given: list[int]) -> None:
    """KAFKA-5355: the fetch parked in the purgatory completed read_uncommitted, past the LSO, into an
    open transaction. KAFKA-5376: it completed read_committed but lost the aborted-transaction list.
    Either way the consumer is given a record that is not committed; with the fix it never is."""
    preset = "pre-" + flag.replace("_", "-")
    [violation] = (
        Check("transactions", preset=preset, property_names=["ReadCommittedSeesOnlyCommitted"]).run().violations
    )
    names = [a.name for a in violation.trace.actions[1:]]
    assert names[-1] == "CompleteDelayedFetch" and "DelayFetch" in names
    last = violation.trace.states[-1]
    assert list(last.consumed[0]) == given
    if flag == "kafka_5355":
        assert last.partitions[0].currentTxnFirstOffset == 0 < last.consumerPositions[0]  # read past the LSO
    else:
        assert last.partitions[0].log[1].control and not last.partitions[0].log[1].commit  # an aborted record
    fixed = Check("transactions", preset=preset, overrides={flag: True}).run()
    assert (fixed.status, fixed.stats.distinct_states) == (Status.HOLDS_COMPLETE, 6162)


def _trace(name: str):
    return replay(read_trace(ROOT / "counterexamples" / "transactions" / f"{name}.itf.json")).trace


def test_kafka_9144_the_leader_forgets_a_producer_its_marker_just_fenced() -> None:
    """The timeout's abort marker carries the fenced epoch; the leader then expires the producer at
    once and takes a produce of the old epoch that was on its way, or the old coordinator's marker."""
    trace = _trace("pre-kafka-9144-OpenTransactionKnownToCoordinator")
    names = [a.name for a in trace.actions[1:]]
    assert names[-3:] == ["HandleWriteTxnMarkersResponse", "ExpireProducer", "HandleProduce"]
    before_expiry, last = trace.states[-3], trace.states[-1]
    assert before_expiry.partitions[0].producerEpoch == 1  # fenced by the marker
    assert (last.partitions[0].log[-1].producerEpoch, last.partitions[0].currentTxnFirstOffset) == (0, 1)
    assert "Produce" in names[: names.index("TxnTimeout")]  # the record was sent before the timeout
    regress = _trace("pre-kafka-9144-CoordinatorEpochNeverRegresses")
    markers = [b.coordinatorEpoch for b in regress.states[-1].partitions[0].log if b.control]
    assert markers == [1, 0]
    model = TransactionsModel.build("pre-kafka-9144", {"kafka_9144": True})
    assert not any(a.name == "ExpireProducer" for a, _t in model.successors(regress.states[-3]))


def test_kafka_9777_the_completion_is_lost_until_a_reload() -> None:
    trace = _trace("pre-kafka-9777-TransactionCompletes")
    stuck = trace.states[-1].coordinator
    assert (stuck.metadata.state, stuck.pendingMarkers, stuck.completionLost) == (tc.PREPARE_COMMIT, frozenset(), True)
    assert trace.loop == len(trace.states) - 1
    fixed = TransactionsModel.build("pre-kafka-9777", {"kafka_9777": True})
    [(_a, after)] = [(a, t) for a, t in fixed.successors(trace.states[-2]) if a.name == "LoadTxnStatePartition"]
    assert any(a.name == "WriteTxnCompletion" for a, _t in fixed.successors(after))


def test_kafka_18575_the_marker_clears_the_guard_of_the_next_transaction() -> None:
    trace = _trace("pre-kafka-18575-TransactionFailsOnlyByAFault")
    last = trace.states[-1]
    refused = [m for m in trace.states[-2].network if m.api == "ProduceResponse"]
    assert [m.error for m in refused] == [tc.INVALID_TXN_STATE]
    assert last.coordinator.metadata.state == tc.ONGOING and 0 in last.coordinator.metadata.topicPartitions
    names = [a.name for a in trace.actions[1:]]
    assert names.index("HandleWriteTxnMarkers") < names.index("WriteTxnCompletion") < len(names) - 3
    assert names[-3:] == ["HandleVerifyPartition", "HandleVerifyResponse", "HandleProduceResponse"]


def test_init_producer_id_rotates_an_exhausted_producer_id_and_answers_its_retry() -> None:
    exhausted = tc.TxnMeta(0, 32766, -1, tc.COMPLETE_COMMIT, frozenset(), 0)
    new_producer = tc.handle_init_producer_id(exhausted, tv2=True)
    assert (new_producer.method, new_producer.producerId, new_producer.producerEpoch) == (
        "prepareProducerIdRotation",
        1,
        0,
    )
    assert new_producer.meta is not None and new_producer.meta.lastProducerEpoch == -1
    bump = tc.handle_init_producer_id(exhausted, tv2=True, expected_epoch=32766, expected_id=0)
    assert bump.meta == tc.TxnMeta(1, 0, 32766, tc.EMPTY, frozenset(), 0)
    # the same request again, its answer lost: the old id at its exhausted epoch is still valid
    retry = tc.handle_init_producer_id(bump.meta, tv2=True, expected_epoch=32766, expected_id=0)
    assert (retry.error, retry.producerId, retry.producerEpoch) == (tc.NONE, 1, 0)
    stale = tc.handle_init_producer_id(bump.meta, tv2=True, expected_epoch=32765, expected_id=0)
    assert stale.error == tc.PRODUCER_FENCED


def test_end_txn_that_exhausts_the_epoch_answers_with_the_next_producer_id() -> None:
    ongoing = tc.TxnMeta(0, 32766, 32765, tc.ONGOING, frozenset({0}), 0)
    fixed = tc.handle_end_txn(ongoing, 0, 32766, True, tv2=True)
    assert fixed.meta is not None and (fixed.meta.producerEpoch, fixed.meta.nextProducerId) == (32767, 1)
    assert (fixed.producerId, fixed.producerEpoch) == (1, 0)
    assert tc.prepare_complete(fixed.meta) == tc.TxnMeta(1, 0, 32766, tc.COMPLETE_COMMIT, frozenset(), 0)
    before_kafka_18660 = tc.handle_end_txn(ongoing, 0, 32766, True, tv2=True, kafka_18660=False)
    assert (before_kafka_18660.producerId, before_kafka_18660.producerEpoch) == (0, 32767)
    # a retry of that EndTxn once it completed: the old id at Short.MaxValue - 1 (retryOnOverflow)
    completed = tc.prepare_complete(fixed.meta)
    retry = tc.handle_end_txn(completed, 0, 32766, True, tv2=True)
    assert (retry.error, retry.meta, retry.producerId, retry.producerEpoch) == (tc.NONE, None, 1, 0)


def test_kafka_20090_the_fence_at_the_last_epoch_rotates_and_at_short_max_value_no_longer_throws() -> None:
    last = tc.TxnMeta(0, 32766, 32765, tc.ONGOING, frozenset({0}), 0)
    assert tc.abort_timed_out(last, tv2=True).nextProducerId == 1
    assert tc.abort_timed_out(last, tv2=True, kafka_20090=False).nextProducerId == tc.NO_PRODUCER_ID
    at_max = tc.TxnMeta(0, 32767, 32766, tc.ONGOING, frozenset({0}), 0)
    with pytest.raises(tc.EpochOverflowError):
        tc.abort_timed_out(at_max, tv2=True, kafka_20090=False)
    aborted = tc.abort_timed_out(at_max, tv2=True)
    assert (aborted.state, aborted.producerEpoch, aborted.nextProducerId) == (tc.PREPARE_ABORT, 32767, 1)
    commit = tc.handle_end_txn(at_max, 0, 32767, True, tv2=True)
    assert (commit.error, commit.meta) == (tc.UNKNOWN_SERVER_ERROR, None)  # the epoch would pass Short.MaxValue


def test_kafka_20090_the_producer_is_answered_short_max_value_and_its_transaction_hangs() -> None:
    trace = _trace("pre-kafka-20090-LastStableOffsetAdvances")
    timeout = next(i for i, a in enumerate(trace.actions) if a is not None and a.name == "TxnTimeout")
    before, after = trace.states[timeout - 1].coordinator.metadata, trace.states[timeout].coordinator.metadata
    assert (before.producerEpoch, after.producerEpoch, after.nextProducerId) == (32766, 32767, -1)
    fixed = TransactionsModel.build("pre-kafka-20090", {"kafka_20090": True})
    [rotated] = [t for a, t in fixed.successors(trace.states[timeout - 1]) if a.name == "TxnTimeout"]
    assert rotated.coordinator.metadata.nextProducerId == 1
    epochs = [s.clients[0].producerEpoch for s in trace.states]
    assert max(epochs) == 32767 and trace.states[-1].clients[0].state == "FATAL_ERROR"
    refused = [m for s in trace.states for m in s.network if m.api == "EndTxnResponse" and m.error != tc.NONE]
    assert {m.error for m in refused} == {tc.UNKNOWN_SERVER_ERROR}
    model = TransactionsModel.build("pre-kafka-20090")
    for s in trace.states[trace.loop :]:
        assert (s.coordinator.metadata.state, s.coordinator.metadata.producerEpoch) == (tc.ONGOING, 32767)
        assert s.partitions[0].currentTxnFirstOffset < len(s.partitions[0].log)
        assert not any(a.name in ("TxnTimeout", "AbortTimedOutTransaction") for a, _t in model.successors(s))


def test_kafka_18660_the_answer_carried_the_old_producer_id_and_the_next_transaction_is_refused() -> None:
    trace = _trace("pre-kafka-18660-FencedOnlyByANewerProducer")
    last = trace.states[-1]
    assert last.clients[0].state == "FATAL_ERROR"
    assert last.coordinator.metadata.producerId == 1
    answers = [m for s in trace.states for m in s.network if m.api == "EndTxnResponse"]
    assert (answers[-1].producerId, answers[-1].producerEpoch) == (0, 32767)
    refusals = {m.error for s in trace.states for m in s.network if m.api == "ProduceResponse" and m.error != tc.NONE}
    assert refusals == {tc.INVALID_PRODUCER_ID_MAPPING}


def test_a_late_request_of_the_old_producer_id_is_fenced_by_its_own_entry() -> None:
    """After a rotation the leader keeps the old producer id's state: a late produce of it is refused
    by that entry's epoch, whatever the new id's entry holds."""
    model = TransactionsModel.build("epoch-exhaustion")
    init = model.init_states()[0]
    entries = (ProducerEntry(0, 32767, 0), ProducerEntry(1, 0, 0, 2))
    partition = init.partitions[0]._replace(producers=entries)
    late = Message("Produce", "producer 0", "leader 0", client=0, partition=0, producerEpoch=32766, txn=1, producerId=0)
    state = init._replace(partitions=(partition,), network=(late,))
    [(_a, after)] = [(a, t) for a, t in model.successors(state) if a.name == "HandleProduce"]
    [answer] = after.network
    assert (answer.api, answer.error) == ("ProduceResponse", tc.PRODUCER_FENCED)
    assert after.partitions[0].producers == entries


def test_a_trace_that_starts_near_short_max_value_is_driven_from_a_raised_epoch() -> None:
    """`kmc drive` first brings the transactional id to the trace's starting epoch (tests/test_drive.py
    drives one); a release is refused only for the protocol the trace speaks."""
    from kmc.checker.errors import UserError
    from kmc.cluster.drive.transactions import TransactionsDriver
    from kmc.cluster.release import Release

    TransactionsDriver.check_release(Release.parse("4.3.1"), TransactionsModel.build("epoch-exhaustion"))
    with pytest.raises(UserError, match="transaction version 2"):
        TransactionsDriver.check_release(Release.parse("3.9.1"), TransactionsModel.build("epoch-exhaustion"))


def test_kafka_9666_each_failed_fence_bumped_the_epoch_until_the_producer_could_not_be_fenced() -> None:
    trace = _trace("pre-kafka-9666-LastStableOffsetAdvances")
    failures = [i for i, a in enumerate(trace.actions) if a is not None and a.name == "FenceAppendFails"]
    assert [trace.states[i].coordinator.metadata.producerEpoch for i in failures] == [32766, 32767]
    assert {trace.states[i].transactionLog.producerEpoch for i in failures} == {32765}  # never written
    answers = {m.error for s in trace.states for m in s.network if m.api == "InitProducerIdResponse" and m.client == 1}
    assert answers == {tc.COORDINATOR_NOT_AVAILABLE, tc.UNKNOWN_SERVER_ERROR}
    assert [c.state for c in trace.states[-1].clients] == ["FATAL_ERROR", "FATAL_ERROR"]
    for s in trace.states[trace.loop :]:
        meta = s.coordinator.metadata
        assert (meta.state, meta.producerEpoch) == (tc.ONGOING, 32767)
        assert s.partitions[0].currentTxnFirstOffset < len(s.partitions[0].log)
    fixed = TransactionsModel.build("pre-kafka-9666", {"kafka_9666": True})
    [after] = [t for a, t in fixed.successors(trace.states[failures[0] - 1]) if a.name == "FenceAppendFails"]
    assert after.coordinator.hasFailedEpochFence and after.coordinator.metadata.producerEpoch == 32766
    assert tc.fenced_epoch(after.coordinator.metadata, has_failed_epoch_fence=True) == 32766


def test_kafka_19367_the_abort_bumped_the_fenced_epoch_past_short_max_value() -> None:
    """Kafka 4.0.0: the second producer's InitProducerId sets the fenced epoch, Short.MaxValue, and its
    abort overflows; the request fails, the epoch stays in memory unwritten and fences the first
    producer's commit, and the transaction stays open for good. 4.0.1 aborts at Short.MaxValue."""
    trace = _trace("pre-kafka-19367-LastStableOffsetAdvances")
    [init] = [
        i
        for i, a in enumerate(trace.actions)
        if a is not None and a.name == "HandleInitProducerId" and a.args["client"] == 1
    ]
    before, after = trace.states[init - 1], trace.states[init]
    assert (before.coordinator.metadata.state, before.coordinator.metadata.producerEpoch) == (tc.ONGOING, 32766)
    assert (after.coordinator.metadata.state, after.coordinator.metadata.producerEpoch) == (tc.ONGOING, 32767)
    assert after.coordinator.metadata.lastProducerEpoch == -1 and after.transactionLog == before.transactionLog
    assert [m.error for m in after.network if m.api == "InitProducerIdResponse"] == [tc.UNKNOWN_SERVER_ERROR]
    assert [c.state for c in trace.states[-1].clients] == ["FATAL_ERROR", "FATAL_ERROR"]
    hung = trace.states[-1]
    assert hung.coordinator.metadata.state == tc.ONGOING and hung.partitions[0].currentTxnFirstOffset == 0
    fixed = TransactionsModel.build("kafka-19367")
    [(_, answered)] = [(a, t) for a, t in fixed.successors(before) if a == trace.actions[init]]
    assert answered.coordinator.metadata.state == tc.PREPARE_ABORT
    assert (answered.coordinator.metadata.producerEpoch, answered.coordinator.metadata.lastProducerEpoch) == (
        32767,
        32766,
    )
