"""Properties of the `consumer-membership` model: what the KIP-848 consumer's reconciliation promises
about the target assignment the group coordinator sends."""

from __future__ import annotations

from kmc.checker import invariant, leads_to
from kmc.models.consumer_membership.state import MembershipState


def _reconciling(s: MembershipState) -> bool:
    return s.reconciliation is not None


@invariant(guard=_reconciling)
def RevokesOnlyWhatTheTargetDrops(s: MembershipState, model) -> bool:  # type: ignore[no-untyped-def]
    """A reconciliation revokes only partitions that the coordinator's target assignment no longer
    gives the member: a partition still assigned is never handed back (its commit, its
    onPartitionsRevoked callback, its fetch positions dropped). Checked when the reconciliation
    starts: the clients modelled always go on to the revocation."""
    return s.reconciliation is None or not (s.reconciliation.revoked & model.target_assignment)


@leads_to(lambda s: True)
def EventuallyOwnsTheTarget(s: MembershipState, model) -> bool:  # type: ignore[no-untyped-def]
    """The member eventually owns the coordinator's target assignment, once the metadata has the names."""
    return s.currentAssignment == model.target_assignment
