"""Kafka transactions: the model (model.py), its state types (state.py), its flags and presets
(config.py), the transaction coordinator's state machine (coordinator.py), the partitions' logs
with their markers (log.py), and its drawing (drawing.py)."""

from kmc.models.transactions.model import TransactionsModel

__all__ = ["TransactionsModel"]
