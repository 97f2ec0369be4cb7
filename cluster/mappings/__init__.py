"""Mappings from what a real cluster's logs show onto the models' states, one per model (like an
oracle's adapter: written once, never imported by the engine)."""

from __future__ import annotations

from kmc.cluster.mappings.base import Mapping
from kmc.cluster.mappings.kraft_quorum import KraftQuorumMapping
from kmc.cluster.mappings.kraft_replication import KraftReplicationMapping

MAPPINGS: dict[str, Mapping] = {
    KraftReplicationMapping.model_name: KraftReplicationMapping(),
    KraftQuorumMapping.model_name: KraftQuorumMapping(),
}
"""Every model a campaign's metadata log is validated against, by model name."""
