"""The KRaft metadata quorum (KIP-595, KIP-853): the model (model.py), its state types (state.py),
its flags and presets (config.py), the dynamic voter sets (voters.py), its drawing (drawing.py)
and its successor function in C (_c/)."""

from kmc.models.kraft_quorum.model import KraftQuorumModel

__all__ = ["KraftQuorumModel"]
