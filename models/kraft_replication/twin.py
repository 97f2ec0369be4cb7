"""The kraft-replication model's C twin, plumbed in: the context its successor function reads (state
types, strings, action tables, the Python it calls back, the config as small ints). The model loads
the twin (``use_c_twin``); the Python in ``model.py`` stays the definition of every step."""

from __future__ import annotations

from typing import Any

from kmc.models.kraft_replication.controller import action_label
from kmc.models.kraft_replication.state import (
    DIVERGING_EPOCH,
    ERROR_NONE,
    FENCED_LEADER_EPOCH,
    FETCHING,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_OUT_OF_RANGE,
    TRUNCATING,
    UNKNOWN_LEADER_EPOCH,
    AlterPartition,
    FetchRequest,
    FetchResponse,
    KraftReplicationState,
    OffsetsForLeaderEpochRequest,
    OffsetsForLeaderEpochResponse,
    Record,
    Replica,
    dense_partition_epochs,
)


def twin_context(model: Any) -> tuple:
    """What the C successor function reads: the state types, the strings it compares and builds,
    the action tables, the controller-change memo, the Python helpers it calls for the rare
    controller steps, and the config as small ints. ``model`` is the KraftReplicationModel (this module
    is its, and so does not import it back)."""
    c, n, ids = model.config, model.config.brokers, model.ids
    records = range(c.max_records + 1)
    masks = range(1 << n)

    def table(name: str, first: str, second: str | None = None, seconds: range = range(n)) -> list:
        if second is None:
            return [action_label(name, **{first: i}) for i in ids]
        return [[action_label(name, **{first: i, second: j}) for j in seconds] for i in ids]

    tables = (
        table("Produce", "leader", "id", records),
        table("SendFetch", "follower", "leader"),
        table("HandleFetch", "leader", "follower"),
        table("HandleFetchResponse", "follower", "leader"),
        table("SendOffsetsForLeaderEpoch", "follower", "leader"),
        [
            [action_label("ShrinkIsr", leader=i, replicas=tuple(r for r in ids if mask >> r & 1)) for mask in masks]
            for i in ids
        ],
        table("ExpandIsr", "leader", "replica"),
        table("ApplyMetadata", "broker"),
        table("BrokerCrash", "broker", "logEndOffset", records),
        table("UnfenceBroker", "broker"),
        table("FenceBroker", "broker"),
        table("HandleAlterPartition", "leader"),
    )
    types = (
        KraftReplicationState,
        Replica,
        Record,
        AlterPartition,
        FetchRequest,
        FetchResponse,
        OffsetsForLeaderEpochRequest,
        OffsetsForLeaderEpochResponse,
    )
    strings = (
        ERROR_NONE,
        NOT_LEADER_OR_FOLLOWER,
        FENCED_LEADER_EPOCH,
        UNKNOWN_LEADER_EPOCH,
        DIVERGING_EPOCH,
        OFFSET_OUT_OF_RANGE,
        FETCHING,
        TRUNCATING,
    )
    callbacks = (
        model._handle_alter_partition,
        model._controlled_shutdown,
        model._restart,
        model._unfence,
        model._fence,
        model._controller_failover,
        model._alter_partition_reassignments,
        model._handle_offsets_for_leader_epoch,
        model._handle_offsets_for_leader_epoch_response,
        model._apply_metadata,
    )
    ints = (
        n,
        c.min_insync_replicas,
        ("0", "1", "all").index(c.acks),
        c.max_records,
        c.max_crashes,
        c.max_fences,
        c.max_shutdowns,
        ("power", "process", "disk").index(c.crash),
        ("hw", "offsets_for_leader_epoch", "diverging_epoch").index(c.truncation),
        c.fetch_fencing,
        c.maximal_isr,
        c.isr_expand_leso,
        c.isr_broker_epoch,
        c.hw_min_isr,
        c.diverging_fetch_not_counted,
        c.max_controller_failovers,
        c.max_reassignments,
        c.alter_partition_awaits_metadata,
    )
    memo = model.controller_changes
    return (
        types,
        strings,
        model.unknown_followers,
        memo,
        dense_partition_epochs,
        "unfence",
        "fence",
        callbacks,
        tables,
        tuple(int(i) for i in ints),
        "commit",
    )
