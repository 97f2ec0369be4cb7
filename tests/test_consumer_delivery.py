"""The consumer-delivery model: exact counts, each guarantee holding or failing with its configuration,
the pre-fix counterexamples of KIP-447 and KIP-1251, and the commit-fencing rules underneath."""

from __future__ import annotations

from pathlib import Path

import pytest
from kmc.checker import Check, SimulationOptions, simulate
from kmc.checker.properties import select_properties
from kmc.checker.result import Status
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import confirm_violation, replay
from kmc.models.consumer_delivery.membership import validate_classic_offset_commit, validate_consumer_offset_commit
from kmc.models.consumer_delivery.model import (
    EMPTY,
    ILLEGAL_GENERATION,
    NONE,
    PREPARING_REBALANCE,
    REBALANCE_IN_PROGRESS,
    STABLE,
    STALE_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
    ConsumerDeliveryModel,
)
from kmc.models.consumer_delivery.state import COMPLETING_REBALANCE

MODEL = "kmc.models.consumer_delivery.model:ConsumerDeliveryModel"
ROOT = Path(__file__).resolve().parents[1]
TRACES = sorted((ROOT / "counterexamples" / "consumer-delivery").glob("*.itf.json"))
SAFETY = ["AtMostOnce", "AtLeastOnce", "ExactlyOnce", "NoFalseCommitFencing"]


def _check(preset: str, props: list[str], **overrides: object):  # type: ignore[no-untyped-def]
    """BFS (and, for liveness properties, the liveness check on its graph) as `kmc check` runs it."""
    return Check(MODEL, preset=preset, overrides=overrides, property_names=props).run()


STATES = {
    "auto-commit": 3397,
    "auto-commit-pre-kafka-14196": 198,
    "auto-commit-kip-848": 11421,
    "auto-commit-kip-848-pre-kafka-18641": 14859,
    "commit-after-processing-kip-848-pre-kafka-20332": 443,
    "commit-before-processing": 2485,
    "commit-after-processing": 2721,
    "commit-on-revoke": 3111,
    "commit-before-processing-kip-848": 8635,
    "commit-after-processing-kip-848": 275,
    "commit-after-processing-kip-848-pre-kip-1251": 407,
    "eos-v1": 8521,
    "eos-v2": 5671,
    "eos-v2-kip-848": 17771,
    "eos-pre-kip-447-zombie": 6093,
    "eos-v2-pre-kafka-9346": 6375,
    "eos-v2-pre-kafka-9365": 6035,
    "eos-v2-pre-kafka-17507": 13601,
}
"""Distinct states of each preset's complete search (every property, past every violation)."""


@pytest.mark.parametrize("preset", list(STATES))
def test_each_preset_verdict_and_state_count(preset: str) -> None:
    """One complete search per preset settles the verdict of every property that `kmc list` shows."""
    expected = ConsumerDeliveryModel.presets[preset].expected
    result = Check(MODEL, preset=preset, settings={"keep_going": True}).run()
    assert result.complete and result.stats.distinct_states == STATES[preset]
    violated = {v.property for v in result.violations}
    assert violated == {p for p, verdict in expected.items() if verdict == "violated"}


@pytest.mark.parametrize(
    ("preset", "prop", "length"),
    [
        ("auto-commit", "AtMostOnce", 15),
        ("auto-commit", "ExactlyOnce", 15),
        ("auto-commit-pre-kafka-14196", "ProcessedAtMostOnce", 17),
        ("auto-commit-kip-848-pre-kafka-18641", "AtLeastOnce", 7),
        ("commit-after-processing-kip-848-pre-kafka-20332", "ProcessedAtMostOnce", 15),
        ("commit-before-processing", "AtLeastOnce", 8),
        ("commit-after-processing", "AtMostOnce", 15),
        ("commit-on-revoke", "AtMostOnce", 15),
        ("commit-on-revoke", "EventuallyAllCommitted", 11),
        ("commit-before-processing-kip-848", "AtLeastOnce", 7),
        ("commit-after-processing-kip-848-pre-kip-1251", "NoFalseCommitFencing", 9),
        ("commit-after-processing-kip-848-pre-kip-1251", "AtMostOnce", 12),
        ("eos-pre-kip-447-zombie", "ExactlyOnce", 18),
        ("eos-v2-pre-kafka-9346", "ExactlyOnce", 18),
        ("eos-v2-pre-kafka-9365", "ExactlyOnce", 18),
        ("eos-v2", "ProcessedAtMostOnce", 14),
    ],
)
def test_guarantees_that_fail(preset: str, prop: str, length: int) -> None:
    [violation] = _check(preset, [prop]).violations
    assert (violation.property, violation.trace_length) == (prop, length)


def test_commit_before_processing_loses_a_record_on_a_crash() -> None:
    [violation] = _check("commit-before-processing", ["AtLeastOnce"]).violations
    names = [a.name for a in violation.trace.actions[1:]]
    assert names[-3:] == ["Poll", "OffsetCommit", "ConsumerCrash"]
    assert violation.trace_length == 8


def test_kip_447_zombie_commits_after_the_handover() -> None:
    """Without KIP-447, the expelled consumer's transaction (its offsets sent without the group
    metadata) commits after the new owner read the old committed offset; with both halves of KIP-447
    (eos-v2) the same bounds hold, and so does one transactional.id per partition (eos-v1)."""
    [violation] = _check("eos-pre-kip-447-zombie", ["ExactlyOnce"]).violations
    actions = violation.trace.actions[1:]
    assert [a.name for a in actions].count("CommitTransaction") == 2
    timeout = next(a for a in actions if a.name == "SessionTimeout")
    assert timeout.args["processAlive"] is True  # eos-v2 and eos-v1 hold: test_each_preset_verdict_and_state_count


def test_each_half_of_kip_447_is_needed() -> None:
    """KAFKA-9365 (group metadata in TxnOffsetCommit) fences offsets sent after the handover;
    KAFKA-9346 (requireStable) makes the new owner wait for offsets sent before it."""
    [no_stable] = _check("eos-v2-pre-kafka-9346", ["ExactlyOnce"]).violations
    sends = [a for a in no_stable.trace.actions[1:] if a.name == "SendOffsetsToTransaction"]
    assert sends[0].args["generationId"] == 1 and sends[0].args["error"] == NONE
    [no_metadata] = _check("eos-v2-pre-kafka-9365", ["ExactlyOnce"]).violations
    names = [a.name for a in no_metadata.trace.actions[1:]]
    assert names.index("OffsetFetch", 5) < names.index("SendOffsetsToTransaction")


def test_kip_1251_false_fencing_then_duplicate() -> None:
    """Before KIP-1251 a healthy consumer whose epoch was bumped (a new member joined) has its commit
    rejected with STALE_MEMBER_EPOCH before the heartbeat response arrives, and processes the record
    again; no crash, no expulsion."""
    [violation] = _check("commit-after-processing-kip-848-pre-kip-1251", ["AtMostOnce"]).violations
    commit = next(a for a in violation.trace.actions[1:] if a.name == "OffsetCommit")
    assert commit.args["error"] == STALE_MEMBER_EPOCH
    assert violation.trace.states[-1].faults == 0  # and commit-after-processing-kip-848 holds


def test_commit_on_revoke_holds_without_faults() -> None:
    """Committing in onPartitionsRevoked loses nothing to a clean handover: only faults duplicate."""
    result = _check("commit-on-revoke", ["AtMostOnce"], max_faults=0)
    assert (result.status, result.stats.distinct_states) == (Status.HOLDS_COMPLETE, 138)
    [violation] = _check("commit-on-revoke", ["AtMostOnce"], max_faults=1, timeouts="any").violations
    assert violation.trace_length == 14  # an expelled consumer: onPartitionsLost, no commit


def test_classic_offset_commit_validation() -> None:
    members = frozenset({"c0-0"})
    assert validate_classic_offset_commit(STABLE, 2, members, "c0-0", 2, False) == NONE
    assert validate_classic_offset_commit(STABLE, 2, members, "c0-0", 1, False) == ILLEGAL_GENERATION
    assert validate_classic_offset_commit(STABLE, 2, members, "c1-0", 2, False) == UNKNOWN_MEMBER_ID
    assert validate_classic_offset_commit(PREPARING_REBALANCE, 2, members, "c0-0", 2, False) == NONE
    assert validate_classic_offset_commit(COMPLETING_REBALANCE, 2, members, "c0-0", 2, False) == REBALANCE_IN_PROGRESS
    assert validate_classic_offset_commit(COMPLETING_REBALANCE, 2, members, "c0-0", 2, True) == NONE
    assert validate_classic_offset_commit(EMPTY, 2, frozenset(), "", -1, False) == NONE
    assert validate_classic_offset_commit(STABLE, 2, members, "", -1, False) == UNKNOWN_MEMBER_ID
    assert validate_classic_offset_commit(STABLE, 2, members, "", -1, True) == NONE  # before KIP-447


def test_consumer_offset_commit_validation() -> None:
    members = (("c0-0", 3), ("c1-0", 3))
    assert validate_consumer_offset_commit(members, "c0-0", 2, "c0-0", 3, False) == NONE
    assert validate_consumer_offset_commit(members, "c0-0", 2, "c0-0", 4, False) == STALE_MEMBER_EPOCH
    assert validate_consumer_offset_commit(members, "c0-0", 2, "c0-0", 2, False) == NONE  # KIP-1251
    assert validate_consumer_offset_commit(members, "c0-0", 2, "c0-0", 2, False, kip_1251=False) == STALE_MEMBER_EPOCH
    assert validate_consumer_offset_commit(members, "c0-0", 2, "c0-0", 1, False) == STALE_MEMBER_EPOCH
    assert validate_consumer_offset_commit(members, "c0-0", 2, "c1-0", 2, False) == STALE_MEMBER_EPOCH
    assert validate_consumer_offset_commit(members, "c0-0", 2, "c2-0", 3, False) == UNKNOWN_MEMBER_ID
    assert validate_consumer_offset_commit(members, "c0-0", 2, "", -1, True) == NONE


def test_simulation_finds_no_eos_v2_violation() -> None:
    model = ConsumerDeliveryModel.build("eos-v2")
    props = select_properties(ConsumerDeliveryModel, names=SAFETY)
    result = simulate(model, props, SimulationOptions(seed=7, depth=40, walks=200))
    assert not result.violations


@pytest.mark.parametrize("trace", TRACES, ids=[t.name for t in TRACES])
def test_checked_in_counterexamples_replay(trace: Path) -> None:
    doc = read_trace(trace)
    done = replay(doc)
    assert confirm_violation(done) == doc["#meta"]["property"]


def test_every_checked_in_counterexample_is_named_for_its_preset() -> None:
    assert len(TRACES) == 16
    for trace in TRACES:
        meta = read_trace(trace)["#meta"]
        assert trace.name == f"{meta['preset']}-{meta['property']}.itf.json"
        assert meta["model"] == "consumer-delivery"
        assert trace.with_suffix("").with_suffix(".svg").exists()


def test_kafka_14196_the_records_polled_while_the_revocation_commit_is_in_flight_come_back() -> None:
    """3.2.0-3.2.2: onJoinPrepare's auto-commit is asynchronous and poll() goes on fetching the
    partition; what it processes meanwhile is past the commit, and the next owner processes it again.
    With KAFKA-14196 the partition is not fetched while the commit is in flight: no crash, no
    duplicate, at the same bounds."""
    [violation] = _check("auto-commit-pre-kafka-14196", ["ProcessedAtMostOnce"]).violations
    names = [a.name for a in violation.trace.actions[1:]]
    sent = names.index("AutoCommitBeforeRevocation")
    assert "Process" in names[sent : names.index("JoinGroup", sent)]
    assert not any(name in ("ConsumerCrash", "SessionTimeout") for name in names)
    fixed = _check("auto-commit-pre-kafka-14196", ["ProcessedAtMostOnce", "AtMostOnce"], kafka_14196=True)
    assert (fixed.status, fixed.stats.distinct_states) == (Status.HOLDS_COMPLETE, 150)


def test_kafka_18641_the_background_auto_commit_passes_a_record_not_yet_processed() -> None:
    """3.7-3.9: the KIP-848 consumer's background thread commits the consumed position at any moment;
    poll() has already moved it past the record it returned, so a crash before processing loses it.
    With KAFKA-18641 the commit is part of the next poll, and no record is lost at the same bounds."""
    [violation] = _check("auto-commit-kip-848-pre-kafka-18641", ["AtLeastOnce"]).violations
    names = [a.name for a in violation.trace.actions[1:]]
    assert names[-3:] == ["Poll", "BackgroundAutoCommit", "ConsumerCrash"]
    committed = violation.trace.states[-2]
    assert committed.coordinator.committedOffset == 1 and committed.consumers[0].fetched == 0
    assert violation.trace.states[-1].processed == (0, 0)
    fixed = _check("auto-commit-kip-848-pre-kafka-18641", ["AtLeastOnce"], kafka_18641=True)
    assert (fixed.status, fixed.stats.distinct_states) == (Status.HOLDS_COMPLETE, 11421)


def test_kafka_20332_a_record_of_a_partition_revoked_during_poll_is_processed_twice() -> None:
    """4.2.0: the background thread revokes the partition while the application's poll() returns its
    buffered record; the old owner processes it, and so does the member the partition goes to. No
    fault is needed. With KAFKA-20332 poll() waits for the reconciliation, and nothing is processed twice."""
    preset = "commit-after-processing-kip-848-pre-kafka-20332"
    [violation] = _check(preset, ["ProcessedAtMostOnce"]).violations
    names = [a.name for a in violation.trace.actions[1:]]
    revoked = names.index("PollDuringRevocation")
    after = violation.trace.states[revoked + 1].consumers[0]
    assert (after.owned, after.fetched) == (False, 0)
    assert "Process" in names[revoked:] and not any(n in ("ConsumerCrash", "SessionTimeout") for n in names)
    assert violation.trace.states[-1].processed[0] == 2
    fixed = Check(MODEL, preset=preset, overrides={"kafka_20332": True}).run()
    assert (fixed.status, fixed.stats.distinct_states) == (Status.HOLDS_COMPLETE, 275)


def test_kafka_17507_the_earlier_marker_commits_the_next_transactions_offsets() -> None:
    """2.0 to 3.9.0's classic coordinator answers WriteTxnMarkers before it materialises the offsets:
    the producer's next transaction sends its offsets first, and the earlier commit's task commits
    them while that transaction is open. With KAFKA-17507 the same steps commit only the first
    transaction's offsets, and there is no task left to run."""
    done = replay(
        read_trace(ROOT / "counterexamples" / "consumer-delivery" / "eos-v2-pre-kafka-17507-ExactlyOnce.itf.json")
    )
    states, actions = done.trace.states, done.trace.actions
    committed = actions.index(next(a for a in actions[1:] if a.name == "CommitTransaction"))
    assert states[committed].coordinator.txnCompletions == (("c0", True),)
    assert states[committed].coordinator.committedOffset == -1  # the commit is answered, its offsets wait
    assert states[-2].coordinator.pendingOffsets == (("c0", 2),)  # the next transaction's, still open
    assert actions[-1].name == "CompleteTxnOffsetCommit" and states[-1].coordinator.committedOffset == 2
    assert states[-1].consumers[0].inTxn and states[-1].output == (1, 0)
    fixed = ConsumerDeliveryModel(ConsumerDeliveryModel.make_config("eos-v2-pre-kafka-17507", {"kafka_17507": True}))
    s = states[0]
    for action in actions[1:-1]:
        (s,) = [t for a, t in fixed.successors(s) if a == action]
        if action.name == "CommitTransaction":
            assert s.coordinator.committedOffset == 1 and not s.coordinator.txnCompletions
    assert s.coordinator.committedOffset == 1 and s.coordinator.pendingOffsets == (("c0", 2),)
    assert "CompleteTxnOffsetCommit" in fixed.inactive_actions()
