"""The transactions model against Kafka's TransactionMetadata: exact counts, 0 mismatches, a broken variant."""

from __future__ import annotations

import os

import pytest
from kmc.checker.conformance.run import conform
from kmc.models.transactions.coordinator import COMPLETE_ABORT, COMPLETE_COMMIT, EMPTY, PREPARE_COMMIT
from kmc.models.transactions.model import TransactionsModel, TransactionsState

pytestmark = pytest.mark.skipif(os.environ.get("KMC_SKIP_KAFKA") == "1", reason="needs the Kafka jars")


def _conform(model: TransactionsModel):
    from kmc.oracles.transaction_state import TransactionStateOracle

    result = conform(model, [TransactionStateOracle(model)])
    [tally] = result.tallies
    return result, tally


@pytest.mark.parametrize(
    ("preset", "overrides", "states", "steps", "comparisons"),
    [
        ("zombie", {}, 5372, 1480, 49801),
        ("txn-timeout", {}, 9209, 2553, 85416),
        ("epoch-exhaustion", {}, 15553, 5562, 145539),
        ("pre-kafka-20090", {}, 15415, 5538, 144273),
        ("pre-kafka-9666", {}, 1355, 445, 12640),
        ("pre-kafka-9666", {"kafka_9666": True}, 1719, 577, 16048),
        ("pre-kafka-19367", {}, 501, 169, 4678),
        ("kafka-19367", {}, 901, 320, 8429),
        ("kip-890-part-1", {"partitions": 1}, 2704, 675, 24993),
        ("pre-kip-890", {"partitions": 1}, 1128, 322, 10456),
        ("pre-kafka-6119", {"partitions": 1}, 276, 100, 2566),
        ("pre-kafka-9777", {}, 690, 126, 6318),
    ],
)
def test_kafka_agrees_with_every_coordinator_step(
    preset: str, overrides: dict, states: int, steps: int, comparisons: int
) -> None:
    result, tally = _conform(TransactionsModel.build(preset, overrides))
    assert result.check.stats.distinct_states == states
    assert (tally.steps, tally.comparisons, tally.mismatches) == (steps, comparisons, 0)


class CommitForgetsLastEpoch(TransactionsModel):
    """Broken on purpose: under transaction version 2, PrepareCommit does not remember the old epoch."""

    def _apply(self, s: TransactionsState, meta, responses, drop):  # type: ignore[no-untyped-def]
        if meta.state == PREPARE_COMMIT:
            meta = meta._replace(lastProducerEpoch=-1)
        return super()._apply(s, meta, responses, drop)


def test_oracle_catches_a_broken_epoch_bump_with_a_shortest_trace() -> None:
    model = CommitForgetsLastEpoch(TransactionsModel.make_config("zombie"))
    result, tally = _conform(model)
    assert tally.mismatches == 1
    assert tally.first_mismatch.question == "end transition"
    [violation] = result.check.violations
    trace = violation.trace
    assert trace.actions[-1].name == "HandleEndTxn"
    assert len(trace.states) == BROKEN_LENGTH
    state = trace.states[0]  # the trace is a real execution of the broken model
    for action, after in zip(trace.actions[1:], trace.states[1:], strict=True):
        assert after in [t for a, t in model.successors(state) if a == action]
        state = after


BROKEN_LENGTH = 12  # Init, InitProducerId x3, BeginTransaction, Produce, 4 to verify and answer, EndTxn, HandleEndTxn


class BumpForgetsLastEpoch(TransactionsModel):
    """Broken on purpose: a KIP-360 InitProducerId bumps as if a new producer asked (no last epoch)."""

    def _apply(self, s: TransactionsState, meta, responses, drop):  # type: ignore[no-untyped-def]
        if meta.state == EMPTY and meta.lastProducerEpoch != -1:
            meta = meta._replace(lastProducerEpoch=-1)
        return super()._apply(s, meta, responses, drop)


def test_oracle_catches_a_kip_360_bump_that_forgets_the_last_epoch() -> None:
    model = BumpForgetsLastEpoch(TransactionsModel.make_config("kip-890-part-1", {"partitions": 1}))
    _result, tally = _conform(model)
    assert tally.mismatches == 1
    assert tally.first_mismatch.question == "init transition"


class CompletionKeepsTheExhaustedProducerId(TransactionsModel):
    """Broken on purpose: a completion does not move to the producer id allocated on exhaustion."""

    def _apply(self, s: TransactionsState, meta, responses, drop):  # type: ignore[no-untyped-def]
        if meta.state in (COMPLETE_COMMIT, COMPLETE_ABORT) and meta.prevProducerId != meta.producerId:
            meta = meta._replace(producerId=meta.prevProducerId, producerEpoch=32767)
        return super()._apply(s, meta, responses, drop)


def test_oracle_catches_a_completion_that_does_not_rotate_the_producer_id() -> None:
    model = CompletionKeepsTheExhaustedProducerId(TransactionsModel.make_config("epoch-exhaustion"))
    _result, tally = _conform(model)
    assert tally.mismatches == 1
    assert tally.first_mismatch.question == "complete transition"


class FenceBumpsDespiteTheFailedAppend(TransactionsModel):
    """Broken on purpose: a fence retried after a failed append bumps the epoch again (KAFKA-9666's bug
    with the fix's flag set)."""

    def _fence_append_fails(self, s: TransactionsState, m, out):  # type: ignore[no-untyped-def]
        if s.coordinator.hasFailedEpochFence:
            s = s._replace(coordinator=s.coordinator._replace(hasFailedEpochFence=False))
            super()._fence_append_fails(s, m, out)
            action, after = out.pop()
            out.append((action, after._replace(coordinator=after.coordinator._replace(hasFailedEpochFence=True))))
            return
        super()._fence_append_fails(s, m, out)


def test_oracle_catches_a_fence_that_bumps_again_after_a_failed_append() -> None:
    model = FenceBumpsDespiteTheFailedAppend(TransactionsModel.make_config("pre-kafka-9666", {"kafka_9666": True}))
    _result, tally = _conform(model)
    assert tally.mismatches == 1
    assert tally.first_mismatch.question == "failed fence transition"


class OverflowKeepsTheLastEpoch(TransactionsModel):
    """Broken on purpose: the fence an overflowing abort leaves in memory (transaction version 2 before
    KAFKA-19367) keeps the last epoch, where Kafka's endTransaction clears it."""

    def _on_InitProducerId(self, s: TransactionsState, m, out):  # type: ignore[no-untyped-def]
        super()._on_InitProducerId(s, m, out)
        action, after = out.pop()
        meta, old = after.coordinator.metadata, s.coordinator.metadata
        installed = after.transactionLog == s.transactionLog and meta is not None and old is not None
        if installed and meta.producerEpoch != old.producerEpoch:  # changed in memory, nothing appended
            meta = meta._replace(lastProducerEpoch=old.producerEpoch)
            after = after._replace(coordinator=after.coordinator._replace(metadata=meta))
        out.append((action, after))


def test_oracle_catches_an_overflowed_fence_that_keeps_the_last_epoch() -> None:
    _result, tally = _conform(OverflowKeepsTheLastEpoch(TransactionsModel.make_config("pre-kafka-19367")))
    assert tally.mismatches == 1
    assert tally.first_mismatch.question == "init transition"
