"""The share-session model (KIP-932's share sessions): exact state counts, KAFKA-19485 and KAFKA-20736
as shortest counterexamples, each fix taking the same steps and changing the one that mattered, and
the relative epochs that keep a consumer fetching for ever a finite cycle."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from kmc.checker import Check
from kmc.checker.result import Status
from kmc.checker.testing import retake
from kmc.checker.traces.itf import read_trace
from kmc.checker.traces.replay import replay
from kmc.models.share_session.model import ShareSessionModel, relative_epochs
from kmc.models.share_session.state import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_REQUEST,
    ShareFetchRequest,
    ShareSession,
    ShareSessionHandler,
    ShareSessionState,
)

TRACES = Path(__file__).resolve().parent.parent / "counterexamples" / "share-session"


@pytest.mark.parametrize(
    ("preset", "states", "violated"),
    [
        ("kafka-4.3", 2198, {"SessionsFollowTheLeader"}),
        ("kafka-4.4", 2187, set()),
        ("kafka-4.4-leader-returns", 992, set()),
        ("kafka-4.1.0", 2347, {"NoAcknowledgementsOnTheInitialEpoch", "SessionsFollowTheLeader"}),
    ],
)
def test_presets_verdicts_and_state_counts(preset: str, states: int, violated: set[str]) -> None:
    expected = ShareSessionModel.presets[preset].expected
    assert violated == {name for name, verdict in expected.items() if verdict == "violated"}
    result = Check("share-session", preset=preset, settings={"keep_going": True}).run()
    assert result.complete and result.stats.distinct_states == states
    assert {v.property for v in result.violations} == violated
    taken = {name for name, (_distinct, generated) in result.coverage["actions"].items() if generated}
    assert taken == set(ShareSessionModel.actions) - set(result.coverage["inactive"])


def _replayed_with(trace: str, **flags: bool) -> list[ShareSessionState]:
    """The trace's actions taken again by the model with ``flags`` changed: the fixed model follows
    the same steps as far as they stay enabled."""
    return retake(TRACES / trace, **flags)


def test_kafka_19485_acknowledgements_ride_on_the_initial_epoch_and_the_broker_refuses_the_request() -> None:
    trace = "kafka-4.1.0-NoAcknowledgementsOnTheInitialEpoch.itf.json"
    before = _replayed_with(trace)
    fixed = _replayed_with(trace, kafka_19485=True)
    assert before[-1].requests[0] == ShareFetchRequest(INITIAL_EPOCH, True, False, True)
    assert fixed[-1].requests[0] == ShareFetchRequest(INITIAL_EPOCH, True, False, False)  # they fail in the consumer
    assert not before[-1].acknowledgementsToSend and not fixed[-1].acknowledgementsToSend
    model = ShareSessionModel(ShareSessionModel.make_config("kafka-4.1.0"))
    [(answer, after)] = [(a, t) for a, t in model.successors(before[-1]) if a.name == "ShareFetchResponse"]
    assert answer.args["error"] == INVALID_REQUEST
    assert after.sessions[0] is None and after.handlers[0] == ShareSessionHandler(1, True)  # nextEpoch, no session


def test_kafka_20736_the_old_leader_keeps_the_partition_and_the_fix_forgets_it_then_closes_the_session() -> None:
    done = replay(read_trace(TRACES / "kafka-4.3-SessionsFollowTheLeader.itf.json"))
    loop = done.trace.states[done.trace.loop :]
    assert all(s.leader == 1 and s.sessions[0] == ShareSession(1, True) for s in loop)
    assert not any(a is not None and a.name == "ShareFetch" and 0 in a.args["nodes"] for a in done.trace.actions[3:])
    # Kafka 4.4: from the same state after the leader change, broker 0's session is forgotten, then closed
    model = ShareSessionModel(ShareSessionModel.make_config("kafka-4.4"))
    state = done.trace.states[3]._replace(leaderCache=(0, 0))
    seen: list[tuple[str, ShareSession | None]] = []
    order = {"Poll": 0, "ShareFetchResponse": 1, "ShareFetch": 2}
    for _ in range(30):  # the application consumes and brokers answer before the consumer polls again
        steps = [(a, t) for a, t in model.successors(state) if a.name in order]
        action, state = min(steps, key=lambda step: order[step[0].name])
        seen.append((action.name, state.sessions[0]))
        if state.sessions[0] is None:
            break
    assert state.sessions[0] is None and state.handlers[0] is None
    forgotten = [i for i, (name, session) in enumerate(seen) if session is not None and not session.holdsPartition]
    assert forgotten and seen[forgotten[0]][0] == "ShareFetchResponse"  # the partition forgotten before the close


def test_relative_epochs_keep_every_equality_and_the_first_epoch() -> None:
    """Every triple of a broker's positive epochs (session, handler, request) up to 9."""
    for epochs in itertools.product(range(1, 10), repeat=3):
        _check_relative(epochs)


def _check_relative(epochs: tuple[int, int, int]) -> None:
    session, handler, request = epochs
    s = ShareSessionModel().init_states()[0]
    s = s._replace(
        sessions=(ShareSession(session, True), None),
        handlers=(ShareSessionHandler(handler, True), ShareSessionHandler(FINAL_EPOCH, False)),
        requests=(ShareFetchRequest(request, False, False, False), None),
    )
    t = relative_epochs(s)
    after = [t.sessions[0].epoch, t.handlers[0].nextEpoch, t.requests[0].shareSessionEpoch]
    assert all(
        (a == b) == (x == y) for a, x in zip(after, epochs, strict=True) for b, y in zip(after, epochs, strict=True)
    )
    assert all((a == 1) == (x == 1) for a, x in zip(after, epochs, strict=True))
    assert min(after) <= 2 and t.handlers[1] == ShareSessionHandler(FINAL_EPOCH, False)


def test_a_consumer_fetching_for_ever_is_a_cycle() -> None:
    result = Check("share-session", preset="kafka-4.4", overrides={"max_restarts": 0, "max_leader_changes": 0}).run()
    assert result.status is Status.HOLDS_COMPLETE
    assert (result.stats.distinct_states, result.stats.depth) == (19, 10)
