"""Kafka transactions: the model (model.py), the transaction coordinator's state machine
(coordinator.py), the partitions' logs with their markers (log.py), and its drawing."""

from kmc.models.transactions.model import TransactionsModel

__all__ = ["TransactionsModel"]
