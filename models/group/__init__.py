"""The classic consumer group: the model (model.py), its flags and presets (config.py), its state
types (state.py), the coordinator's and the clients' steps (coordinator.py, client.py), the
assignors as pure functions (assignors.py), its drawing (drawing.py), and its successor function
in C (_c/)."""

from kmc.models.group.model import GroupModel

__all__ = ["GroupModel"]
