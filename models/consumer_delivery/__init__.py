"""Consumer delivery semantics: the model (model.py) and the group membership it runs on (group.py)."""

from kmc.models.consumer_delivery.model import ConsumerDeliveryModel

__all__ = ["ConsumerDeliveryModel"]
