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
from kmc.models.transactions.log import aborted_index, read_committed
from kmc.models.transactions.model import TransactionsModel

ROOT = Path(__file__).resolve().parents[1]
TRACES = sorted((ROOT / "counterexamples" / "transactions").glob("*.itf.json"))
SAFETY = ["AtomicVisibility", "AbortedNeverVisible", "OpenTransactionKnownToCoordinator", "ReadCommittedBoundedByLso"]


def _check(preset: str, names: list[str] | None = None, **overrides: object):
    model = TransactionsModel.build(preset, overrides)
    return bfs(model, select_properties(TransactionsModel, names=names))


def test_kip_890_part_2_safety_holds_completely() -> None:
    result = _check("kip-890-part-2", SAFETY)
    assert result.status is Status.HOLDS_COMPLETE, result.violations
    assert (result.stats.distinct_states, result.stats.depth) == (108984, 45)


@pytest.mark.parametrize(
    ("preset", "states"),
    [("read-committed", 21318), ("zombie", 3091), ("txn-timeout", 7971), ("failover", 23428), ("offsets", 23428)],
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
        ("pre-kip-890", "AtomicVisibility", 20),
        ("pre-kip-890", "AbortedNeverVisible", 24),
        ("pre-kip-890", "LastStableOffsetAdvances", 20),
        ("pre-kafka-18464", "FencedOnlyByANewerProducer", 19),
        ("kip-890-part-1", "FencedOnlyByANewerProducer", 29),
        ("pre-kafka-14884", "OpenTransactionKnownToCoordinator", 17),
        ("kip-890-part-1", "AbortedNeverVisible", 26),
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
    assert (result.status, result.stats.distinct_states) == (Status.HOLDS_COMPLETE, 1292)
    assert result.coverage["actions"]["AbortTimedOutTransaction"] == [6, 6]
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
    assert result.stats.distinct_states == 2221


def test_fifo_delivery_changes_the_state_space_not_the_verdict() -> None:
    result = _check("kip-890-part-2", SAFETY, delivery="fifo", partitions=1)
    assert result.status is Status.HOLDS_COMPLETE
    assert result.stats.distinct_states == FIFO_STATES


FIFO_STATES = 680  # with "any" delivery: 1,223


def test_read_committed_skips_aborted_data_and_stops_at_the_lso() -> None:
    doc = read_trace(ROOT / "counterexamples" / "transactions" / "kip-890-part-1-AbortedNeverVisible.itf.json")
    last = replay(doc).trace.states[-1]
    p = last.partitions[0]
    assert aborted_index(p) == []  # the aborted record slipped into the next transaction, which committed
    assert [b.txn for _, b in read_committed(p)] == [0]
    assert 0 in last.aborted


def test_coordinator_transition_table_matches_kafka_docs() -> None:
    assert tc.is_valid_transition(tc.EMPTY, tc.PREPARE_ABORT)  # transaction version 2
    assert not tc.is_valid_transition(tc.EMPTY, tc.PREPARE_COMMIT)
    meta = tc.TxnMeta(0, 3, -1, tc.ONGOING, frozenset({0}))
    assert tc.fence_and_abort(meta, tv2=False)[1:3] == (4, -1)
    assert tc.fence_and_abort(meta, tv2=True)[1:3] == (5, 4)


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
    assert len(TRACES) == 8
    for trace in TRACES:
        assert trace.with_name(trace.name.replace(".itf.json", ".svg")).exists()
