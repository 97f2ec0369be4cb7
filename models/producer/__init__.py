"""The idempotent producer (KIP-98, KIP-360): the model (model.py) and the partition leader's
producer-state checks (broker.py)."""

from kmc.models.producer.model import ProducerModel

__all__ = ["ProducerModel"]
