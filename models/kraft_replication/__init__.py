"""Replication as it runs in KRaft: the model (model.py), its state types (state.py), its flags
and presets (config.py), the controller's steps (controller.py), its drawing (drawing.py), and
its successor function in C (_c/, with the context it reads in twin.py)."""

from kmc.models.kraft_replication.model import KraftReplicationModel

__all__ = ["KraftReplicationModel"]
