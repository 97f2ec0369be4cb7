"""KIP-848 consumer groups, member epochs and server-side reconciliation: the model (model.py), its
state types (state.py), its flags and presets (config.py) and its drawing (drawing.py)."""

from kmc.models.group_kip848.model import Kip848Model

__all__ = ["Kip848Model"]
