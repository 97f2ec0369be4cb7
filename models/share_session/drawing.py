"""How a share-session trace is drawn: a lane for the consumer, one per broker and one for the
controller; tables for the brokers' sessions and the consumer's handlers, requests and records."""

from __future__ import annotations

from typing import Any

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.models.share_session.state import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    NONE,
    ShareFetchRequest,
    ShareSessionState,
)

CONSUMER = "consumer"
CONTROLLER = "controller"


def epoch_text(epoch: int) -> str:
    return {INITIAL_EPOCH: "0 (initial)", FINAL_EPOCH: "-1 (final)"}.get(epoch, str(epoch))


def request_text(r: ShareFetchRequest) -> str:
    parts = [f"epoch {epoch_text(r.shareSessionEpoch)}"]
    parts += ["adds the partition"] if r.added else []
    parts += ["forgets the partition"] if r.forgotten else []
    parts += ["with acknowledgements"] if r.acknowledgements else []
    return ", ".join(parts)


class ShareSessionDrawing(Drawing):
    def __init__(self, model: Any) -> None:
        self.brokers = [f"broker {b}" for b in range(model.config.brokers)]

    def lanes(self) -> list[str]:
        return [CONSUMER, *self.brokers, CONTROLLER]

    def arrow(self, action: Action, before: ShareSessionState, after: ShareSessionState) -> Arrow:
        a, name = action.args, action.name
        if name == "ShareFetch":
            notes = []
            for node in a["nodes"]:
                request = after.requests[node]
                notes.append(f"{self.brokers[node]}: {request_text(request) if request else 'sent'}")
            return Arrow(CONSUMER, tuple(self.brokers[n] for n in a["nodes"]), "ShareFetch: " + "; ".join(notes))
        if name == "ShareFetchResponse":
            note = a["error"]
            if a["error"] == NONE and a["partitionError"]:
                note = a["partitionError"]
            elif a["error"] == NONE and not a["partitionError"]:
                note = "NONE (no partition)"
            if a["partitionError"] == NONE:
                note = "records"
            return Arrow(self.brokers[a["node"]], (CONSUMER,), f"ShareFetch answer: {note}")
        if name == "Poll":
            acked = describe({self.brokers[n] for n in a["acknowledged"]})
            return Arrow(
                CONSUMER, (), f"poll(): acknowledges the records of {acked}" if a["acknowledged"] else "poll()"
            )
        if name == "BrokerRestart":
            return Arrow(self.brokers[a["node"]], (), "restarts: no share sessions")
        if name == "LeaderChange":
            return Arrow(CONTROLLER, (self.brokers[a["leader"]],), f"leader {a['leader']}, epoch {a['leaderEpoch']}")
        if name == "MetadataUpdate":
            return Arrow(CONTROLLER, (CONSUMER,), f"metadata: leader {a['leader']}, epoch {a['leaderEpoch']}")
        return Arrow(CONSUMER)

    def tables(self, state: ShareSessionState) -> list[Table]:
        rows = []
        for b, (session, handler, request) in enumerate(
            zip(state.sessions, state.handlers, state.requests, strict=True)
        ):
            rows.append(
                [
                    self.brokers[b] + (" (leader)" if b == state.leader else ""),
                    "none"
                    if session is None
                    else f"epoch {session.epoch}, " + ("the partition" if session.holdsPartition else "empty"),
                    "none"
                    if handler is None
                    else f"next epoch {epoch_text(handler.nextEpoch)}, "
                    + ("the partition" if handler.holdsPartition else "empty"),
                    request_text(request) if request is not None else "",
                ]
            )
        sessions = Table(
            f"share sessions (leader {state.leader}, epoch {state.leaderEpoch})",
            ["broker", "broker's session", "consumer's handler", "ShareFetch in flight"],
            rows,
        )
        cache = "none" if state.leaderCache is None else f"leader {state.leaderCache[0]}, epoch {state.leaderCache[1]}"
        consumer = Table(
            "consumer",
            ["metadata", "session leader cache", "fetched from", "application holds", "acknowledgements queued"],
            [
                [
                    f"leader {state.metadataLeader}, epoch {state.metadataLeaderEpoch}",
                    cache,
                    describe({self.brokers[n] for n in state.fetched}),
                    describe({self.brokers[n] for n in state.processing}),
                    describe({self.brokers[n] for n in state.acknowledgementsToSend}),
                ]
            ],
        )
        return [sessions, consumer]
