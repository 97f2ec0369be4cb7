"""Share sessions (KIP-932): one share consumer fetching one partition whose leadership moves between
brokers, each broker holding a share session of the consumer with an epoch.

The consumer keeps one ``ShareSessionHandler`` per broker. ``ShareConsumeRequestManager.poll`` routes
the partition to its leader and sends each chosen broker a ShareFetch: at the initial epoch (0) it
opens a session, at the next epoch it adds or forgets partitions incrementally, at the final epoch
(-1) it closes the session. The acknowledgements of the records the application was handed ride on
the next ShareFetch to the broker they came from. A broker checks the epoch
(``SharePartitionManager.newContext``): no session is SHARE_SESSION_NOT_FOUND, another epoch is
INVALID_SHARE_SESSION_EPOCH (the consumer then starts again at the initial epoch), and
acknowledgements on the initial epoch make the whole request INVALID_REQUEST. A broker that no
longer leads the partition answers NOT_LEADER_OR_FOLLOWER with the new leader.

Epochs grow with every fetch; the model keeps them relative (only whether two are equal matters),
so that a consumer fetching for ever is a cycle of states. Left out: records (every fetch from the
leader returns some; their states are the `share-group` model's), other partitions and the
assignment (#22720's removal of unassigned partitions), ShareAcknowledge (explicit commits), a
metadata answer without a leader, the share-session cache's limit and lock renewal.
"""

from __future__ import annotations

from kmc.checker import Action, Model
from kmc.checker.search.liveness import WF
from kmc.models.share_session.bugs import BUGS
from kmc.models.share_session.config import ACTION_ARGS, PRESETS, ShareSessionConfig
from kmc.models.share_session.state import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_REQUEST,
    INVALID_SHARE_SESSION_EPOCH,
    NO_PARTITION_DATA,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    SHARE_SESSION_NOT_FOUND,
    ShareFetchRequest,
    ShareSession,
    ShareSessionHandler,
    ShareSessionState,
    next_epoch,
)

Step = tuple[Action, ShareSessionState]


class ShareSessionModel(Model):
    name = "share-session"
    description = "share sessions (KIP-932): a share consumer's session epochs and routing across leader changes"
    Config = ShareSessionConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "kafka-4.3"
    spec_modules = ("kmc.specs.share_session",)
    actions = tuple(ACTION_ARGS)
    fairness = (
        WF("ShareFetch"),
        WF("ShareFetchResponse", each=True),
        WF("Poll"),
        WF("MetadataUpdate"),
    )
    """The consumer keeps polling, brokers answer, the application keeps consuming and metadata is
    refreshed; restarts and leader changes need not happen at all."""

    config: ShareSessionConfig

    def inactive_actions(self) -> tuple[str, ...]:
        c = self.config
        off = ("BrokerRestart",) if c.max_restarts == 0 else ()
        off += ("LeaderChange",) if c.max_leader_changes == 0 else ()
        # a restarted leader is elected again with a new epoch, which the metadata then learns
        return off + (("MetadataUpdate",) if c.max_leader_changes == 0 and c.max_restarts == 0 else ())

    def init_states(self) -> list[ShareSessionState]:
        n = self.config.brokers
        return [
            ShareSessionState(
                leader=0,
                leaderEpoch=0,
                sessions=(None,) * n,
                metadataLeader=0,
                metadataLeaderEpoch=0,
                leaderCache=None,
                handlers=(None,) * n,
                requests=(None,) * n,
                fetched=frozenset(),
                processing=frozenset(),
                acknowledgementsToSend=frozenset(),
                fetchMoreRecords=True,
                restarts=0,
                leaderChanges=0,
            )
        ]

    def successors(self, s: ShareSessionState) -> list[Step]:
        c = self.config
        out: list[Step] = []
        fetch = self._share_fetch(s)
        if fetch is not None:
            out.append(fetch)
        for node, request in enumerate(s.requests):
            if request is not None:
                out.append(self._share_fetch_response(s, node, request))
        if s.fetched or s.processing:
            acknowledged = tuple(sorted(s.processing))
            out.append(
                (
                    _act("Poll", acknowledged),
                    s._replace(
                        acknowledgementsToSend=s.acknowledgementsToSend | s.processing,
                        processing=s.fetched,
                        fetched=frozenset(),
                        fetchMoreRecords=True,
                    ),
                )
            )
        if s.restarts < c.max_restarts:
            out.extend(self._broker_restart(s, node) for node in range(c.brokers))
        if s.leaderChanges < c.max_leader_changes:
            for node in range(c.brokers):
                if node != s.leader:
                    epoch = s.leaderEpoch + 1
                    t = s._replace(leader=node, leaderEpoch=epoch, leaderChanges=s.leaderChanges + 1)
                    out.append((_act("LeaderChange", node, epoch), t))
        if s.leaderEpoch > s.metadataLeaderEpoch:
            t = s._replace(metadataLeader=s.leader, metadataLeaderEpoch=s.leaderEpoch)
            out.append((_act("MetadataUpdate", s.leader, s.leaderEpoch), t))
        return [(action, relative_epochs(t)) for action, t in out]

    # -- the consumer's poll: ShareConsumeRequestManager.poll ----------------------------------------
    def _route(self, s: ShareSessionState) -> tuple[int, ShareSessionState]:
        """The broker the partition is fetched from: the metadata's leader, or (Kafka 4.4) the leader
        the session was built against, taken from the metadata the first time."""
        if not self.config.kafka_20736:
            return s.metadataLeader, s
        if s.leaderCache is None:
            s = s._replace(leaderCache=(s.metadataLeader, s.metadataLeaderEpoch))
        assert s.leaderCache is not None
        return s.leaderCache[0], s

    def _share_fetch(self, s: ShareSessionState) -> Step | None:
        if not s.fetchMoreRecords:
            return None
        routed, s = self._route(s)
        handlers = list(s.handlers)
        acks = set(s.acknowledgementsToSend)
        chosen: dict[int, tuple[bool, bool]] = {}  # node -> (fetch the partition there, acknowledgements ride)
        if s.requests[routed] is None:
            handler = handlers[routed] or ShareSessionHandler(INITIAL_EPOCH, False)
            handlers[routed] = handler
            ride = routed in acks
            if ride:
                acks.discard(routed)
                # maybeAddAcknowledgements: none on the initial epoch (they fail in the consumer);
                # before KAFKA-19485 they failed there and were sent all the same
                ride = handler.nextEpoch != INITIAL_EPOCH or not self.config.kafka_19485
            chosen[routed] = (True, ride)
        for node, handler in enumerate(handlers):
            if handler is None or node in chosen or s.requests[node] is not None:
                continue
            if node in acks:  # the partition is routed elsewhere: they fail in the consumer (4.3:
                acks.discard(node)  # NOT_LEADER_OR_FOLLOWER; 4.4: that or NETWORK_EXCEPTION)
                if self.config.kafka_20736:
                    chosen[node] = (False, False)
                continue
            if not self.config.kafka_20736:
                continue
            # isSessionCloseCandidate: empty, established, and none of its records buffered or held by
            # the application (their acknowledgements are still to come)
            if (
                not handler.holdsPartition
                and handler.nextEpoch != INITIAL_EPOCH
                and node not in s.fetched | s.processing
            ):
                handlers[node] = handler._replace(nextEpoch=FINAL_EPOCH)
            chosen[node] = (False, False)  # prepareRemainingSessionHandlerForRequest
        if not chosen:
            return None
        requests = list(s.requests)
        for node, (fetch, ride) in sorted(chosen.items()):
            handler = handlers[node]
            assert handler is not None
            if handler.nextEpoch == INITIAL_EPOCH:  # a new session lists every partition the handler has
                holds = handler.holdsPartition or fetch
                request = ShareFetchRequest(INITIAL_EPOCH, holds, False, ride)
            else:
                holds = fetch
                request = ShareFetchRequest(
                    handler.nextEpoch, fetch and not handler.holdsPartition, handler.holdsPartition and not fetch, ride
                )
            handlers[node] = handler._replace(holdsPartition=holds)
            requests[node] = request
        t = s._replace(handlers=tuple(handlers), requests=tuple(requests), acknowledgementsToSend=frozenset(acks))
        return _act("ShareFetch", tuple(sorted(chosen))), t

    # -- a broker answers: SharePartitionManager.newContext, then the consumer's handleResponse -------
    def _share_fetch_response(self, s: ShareSessionState, node: int, request: ShareFetchRequest) -> Step:
        session = s.sessions[node]
        error = NONE
        if request.shareSessionEpoch == INITIAL_EPOCH:
            if request.acknowledgements:
                error = INVALID_REQUEST  # "Acknowledge data present in Initial Fetch Request"
            else:
                session = ShareSession(next_epoch(INITIAL_EPOCH), request.added)
        elif session is None:
            error = SHARE_SESSION_NOT_FOUND
        elif request.shareSessionEpoch == FINAL_EPOCH:
            session = None  # releaseSession
        elif session.epoch != request.shareSessionEpoch:
            error = INVALID_SHARE_SESSION_EPOCH
        else:
            holds = (session.holdsPartition or request.added) and not request.forgotten
            session = ShareSession(next_epoch(session.epoch), holds)
        t = s._replace(sessions=_with(s.sessions, node, session), requests=_with(s.requests, node, None))
        handler = s.handlers[node]
        assert handler is not None
        partition_error = NO_PARTITION_DATA
        if error in (SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH):
            handler = handler._replace(nextEpoch=INITIAL_EPOCH)  # nextCloseExistingAttemptNew
        else:
            handler = handler._replace(nextEpoch=next_epoch(handler.nextEpoch))
        if error == NONE and request.shareSessionEpoch == FINAL_EPOCH:
            handler = None  # maybeRemoveSessionHandlerOnClose
        elif error == NONE and session is not None and session.holdsPartition:
            if node == s.leader:
                partition_error = NONE
                t = t._replace(fetched=t.fetched | {node}, fetchMoreRecords=False)
            else:
                partition_error = NOT_LEADER_OR_FOLLOWER
                t = self._learn_leader(t)
        t = t._replace(handlers=_with(t.handlers, node, handler))
        return _act("ShareFetchResponse", node, error, partition_error), t

    def _learn_leader(self, s: ShareSessionState) -> ShareSessionState:
        """NOT_LEADER_OR_FOLLOWER carries the current leader: the metadata takes it if newer
        (``updatePartitionLeadership``), and so, in 4.4, does the session's cache (``maybeUpdateLeaderCache``)."""
        if s.leaderEpoch > s.metadataLeaderEpoch:
            s = s._replace(metadataLeader=s.leader, metadataLeaderEpoch=s.leaderEpoch)
        if self.config.kafka_20736 and (s.leaderCache is None or s.leaderEpoch > s.leaderCache[1]):
            s = s._replace(leaderCache=(s.leader, s.leaderEpoch))
        return s

    # -- faults ---------------------------------------------------------------------------------------
    def _broker_restart(self, s: ShareSessionState, node: int) -> Step:
        """The new process has no share sessions. A ShareFetch in flight fails (``handleError``: the
        next one opens a new session). A leader is elected again, with a new epoch."""
        t = s._replace(sessions=_with(s.sessions, node, None), restarts=s.restarts + 1)
        if s.requests[node] is not None:
            handler = s.handlers[node]
            assert handler is not None
            handlers = _with(s.handlers, node, handler._replace(nextEpoch=INITIAL_EPOCH))
            t = t._replace(requests=_with(s.requests, node, None), handlers=handlers)
        if node == s.leader:
            t = t._replace(leaderEpoch=s.leaderEpoch + 1)
        return _act("BrokerRestart", node), t

    def drawing(self):  # type: ignore[no-untyped-def]
        from kmc.models.share_session.drawing import ShareSessionDrawing

        return ShareSessionDrawing(self)


def relative_epochs(s: ShareSessionState) -> ShareSessionState:
    """Shift each broker's positive epochs (its session's, the handler's, the request's) down together
    while all are at least 3: equalities and the epoch 1 a new session starts at are kept."""
    sessions, handlers, requests = list(s.sessions), list(s.handlers), list(s.requests)
    for node, (session, handler, request) in enumerate(zip(sessions, handlers, requests, strict=True)):
        epochs = [e for e in _epochs(session, handler, request) if e > 0]
        if not epochs or min(epochs) < 3:
            continue
        shift = min(epochs) - 2
        if session is not None:
            sessions[node] = session._replace(epoch=session.epoch - shift)
        if handler is not None and handler.nextEpoch > 0:
            handlers[node] = handler._replace(nextEpoch=handler.nextEpoch - shift)
        if request is not None and request.shareSessionEpoch > 0:
            requests[node] = request._replace(shareSessionEpoch=request.shareSessionEpoch - shift)
    return s._replace(sessions=tuple(sessions), handlers=tuple(handlers), requests=tuple(requests))


def _epochs(
    session: ShareSession | None, handler: ShareSessionHandler | None, request: ShareFetchRequest | None
) -> list[int]:
    return [
        *([session.epoch] if session is not None else []),
        *([handler.nextEpoch] if handler is not None else []),
        *([request.shareSessionEpoch] if request is not None else []),
    ]


def _act(name: str, *values: object) -> Action:
    return Action.of(name, zip(ACTION_ARGS[name], values, strict=True))


def _with(items: tuple, index: int, value: object) -> tuple:  # type: ignore[type-arg]
    return (*items[:index], value, *items[index + 1 :])
