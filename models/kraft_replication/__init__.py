"""Replication as it runs in KRaft: the model (model.py), its state types (state.py), the
controller's steps (controller.py), its drawing, and its successor function in C (_c/, loaded by
fast.py)."""

from kmc.models.kraft_replication.model import KraftReplicationModel

__all__ = ["KraftReplicationModel"]
