"""The ZooKeeper-era replication protocol, as its published TLA+ specification: the model
(model.py), its state types (state.py), its flags and presets (config.py), its drawing
(drawing.py), its z3 encoding (symbolic.py) and its successor function in C (_c/)."""

from kmc.models.replication.model import ReplicationModel

__all__ = ["ReplicationModel"]
