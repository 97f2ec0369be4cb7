"""The idempotent producer (KIP-98, KIP-360): the model (model.py), its state types (state.py), its
flags and presets (config.py), the partition leader's producer-state checks (broker.py) and its
drawing (drawing.py)."""

from kmc.models.producer.model import ProducerModel

__all__ = ["ProducerModel"]
