"""KIP-848 consumer groups: member epochs and server-side reconciliation (model.py)."""

from kmc.models.group_kip848.model import Kip848Model

__all__ = ["Kip848Model"]
