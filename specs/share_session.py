"""Properties of the `share-session` model: what a share consumer's sessions promise across restarts
and leader changes."""

from __future__ import annotations

from kmc.checker import invariant, leads_to
from kmc.models.share_session.state import INITIAL_EPOCH, ShareSessionState


@invariant
def NoAcknowledgementsOnTheInitialEpoch(s: ShareSessionState) -> bool:
    """No ShareFetch that opens a share session (epoch 0) carries acknowledgements: the broker
    refuses such a request whole, with INVALID_REQUEST, so the session is not opened and the fetch
    fails with the acknowledgements."""
    return not any(r is not None and r.shareSessionEpoch == INITIAL_EPOCH and r.acknowledgements for r in s.requests)


def _stale(s: ShareSessionState) -> bool:
    return any(session is not None and session.holdsPartition and b != s.leader for b, session in enumerate(s.sessions))


@leads_to(_stale)
def SessionsFollowTheLeader(s: ShareSessionState) -> bool:
    """A broker that lost the partition's leadership, and still lists the partition in the consumer's
    share session, eventually drops it: the consumer's sessions end up where it fetches from."""
    return not _stale(s)
