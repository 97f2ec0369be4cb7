"""Consumer delivery semantics: the model's poll loop and transactions (model.py), the group
membership it runs on, classic or KIP-848, with the commit-fencing decisions (membership.py), its
state types (state.py), its flags and presets (config.py) and its drawing (drawing.py)."""

from kmc.models.consumer_delivery.model import ConsumerDeliveryModel

__all__ = ["ConsumerDeliveryModel"]
