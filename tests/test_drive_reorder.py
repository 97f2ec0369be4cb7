"""Commuting steps moved so that what a broker does at once is one run of steps (cluster/drive/reorder.py):
every order it produces is an execution of the model ending where the trace ends, and a step is never
moved across one it does not commute with."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kmc.checker.model import Action
from kmc.checker.traces.itf import action_to_json, read_trace
from kmc.checker.traces.replay import replay
from kmc.cluster.drive.reorder import regroup
from kmc.cluster.drive.run import load
from kmc.cluster.drive.transactions import TransactionsDriver

TRANSACTIONS = Path(__file__).resolve().parent.parent / "counterexamples" / "transactions"


def _is_an_execution(model, states: Sequence, actions: Sequence) -> bool:
    return all(
        any(
            action_to_json(a) == action_to_json(actions[i]) and t == states[i]
            for a, t in model.successors(states[i - 1])
        )
        for i in range(1, len(states))
    )


def test_the_markers_answers_are_moved_before_a_produce_they_commute_with() -> None:
    done, _driver = load(TRANSACTIONS / "pre-kip-890-LastStableOffsetAdvances.itf.json")
    written = replay(read_trace(TRANSACTIONS / "pre-kip-890-LastStableOffsetAdvances.itf.json"))
    assert done.moved == ["step 19 taken right after step 16", "step 20 taken right after step 19"]
    assert done.numbers == [*range(17), 19, 20, 17, 18]
    assert [a.name for a in done.trace.actions[16:19]] == [
        "HandleWriteTxnMarkers",
        "HandleWriteTxnMarkersResponse",
        "WriteTxnCompletion",
    ]
    assert done.trace.states[-1] == written.trace.states[-1]
    assert _is_an_execution(done.model, done.trace.states, done.trace.actions)


def test_a_step_is_pushed_forward_when_the_glued_one_cannot_come_back() -> None:
    """The verification of the aborted transaction's late produce needs the next transaction's
    AddPartitionsToTxn first: the produce goes forward to it instead."""
    done, _driver = load(TRANSACTIONS / "kip-890-part-1-AbortedNeverVisible.itf.json")
    assert "step 17 taken right before step 23" in done.moved
    names = [a.name for a in done.trace.actions[1:]]
    at = names.index("HandleVerifyPartition")
    assert names[at - 1 : at + 2] == ["HandleProduce", "HandleVerifyPartition", "HandleVerifyResponse"]
    assert _is_an_execution(done.model, done.trace.states, done.trace.actions)


def test_steps_that_do_not_commute_are_left_where_they_are() -> None:
    """The late produce to partition 1 cannot pass that partition's abort marker, nor the produce to
    partition 0 the marker of partition 0: asked to bring them together, regroup moves nothing."""
    done = replay(read_trace(TRANSACTIONS / "pre-kip-890-AtomicVisibility.itf.json"))
    produces = [i for i, a in enumerate(done.trace.actions) if a is not None and a.name == "HandleProduce"]

    def glue_the_produces(actions: Sequence[Action | None]) -> int | None:
        return produces[0] if len(actions) - 1 == produces[1] else None

    order = regroup(done.model, done.trace.states, done.trace.actions, glue_the_produces)
    assert order.moved == []
    assert order.actions == list(done.trace.actions)
    assert order.original == list(range(len(done.trace.states)))


def test_a_trace_whose_verification_answer_is_held_back_is_still_refused() -> None:
    done = replay(read_trace(TRANSACTIONS / "pre-kafka-14884-OpenTransactionKnownToCoordinator.itf.json"))
    order = regroup(done.model, done.trace.states, done.trace.actions, TransactionsDriver.glued)
    assert order.moved == []
