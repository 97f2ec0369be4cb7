"""Counterexamples driven on a real broker: one driver per model (``kmc drive TRACE``)."""

from __future__ import annotations

from typing import Any


def drivers() -> dict[str, Any]:
    """Every model's driver, by model name (imported on first use: the drivers start a JVM)."""
    from kmc.cluster.drive.consumer_delivery import DeliveryDriver
    from kmc.cluster.drive.consumer_membership import MembershipDriver
    from kmc.cluster.drive.group import GroupDriver
    from kmc.cluster.drive.group_kip848 import Kip848Driver
    from kmc.cluster.drive.producer import ProducerDriver
    from kmc.cluster.drive.share_group import ShareGroupDriver
    from kmc.cluster.drive.share_group_membership import ShareGroupMembershipDriver
    from kmc.cluster.drive.share_session import ShareSessionDriver
    from kmc.cluster.drive.streams_group import StreamsGroupDriver
    from kmc.cluster.drive.transactions import TransactionsDriver

    drivers = (
        GroupDriver,
        Kip848Driver,
        ProducerDriver,
        TransactionsDriver,
        DeliveryDriver,
        MembershipDriver,
        StreamsGroupDriver,
        ShareGroupDriver,
        ShareSessionDriver,
        ShareGroupMembershipDriver,
    )
    return {driver.model_name: driver for driver in drivers}
