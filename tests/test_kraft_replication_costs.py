"""The `kraft-replication` model's shortcuts: each gives what the plain computation gives."""

from __future__ import annotations

import gc

import pytest
from kmc.models.kraft_replication.model import KraftReplicationConfig, KraftReplicationModel
from kmc.models.kraft_replication.state import (
    AlterPartition,
    KraftReplicationState,
    Record,
    dense_partition_epochs,
    with_controller,
    with_fetches,
    with_follower_state,
    with_high_watermark,
    with_log,
    with_partition_epoch,
    with_pending,
)


def walk(model: KraftReplicationModel) -> tuple[dict[KraftReplicationState, None], int, set[str]]:
    """Every reachable state, the number of transitions, and the actions taken (without the cyclic
    garbage collector, as the search engines run)."""
    seen = dict.fromkeys(model.init_states())
    frontier, generated, taken = list(seen), 0, set()
    gc.disable()
    try:
        while frontier:
            following = []
            for s in frontier:
                for action, t in model.successors(s):
                    generated += 1
                    taken.add(action.name)
                    if t not in seen:
                        seen[t] = None
                        following.append(t)
            frontier = following
    finally:
        gc.enable()
    return seen, generated, taken


@pytest.mark.parametrize(
    ("overrides", "states", "generated", "actions"),
    [
        ({"max_records": 1, "max_leader_epoch": 1, "max_shutdowns": 1}, 35_680, 139_227, {"ControlledShutdown"}),
        (
            {
                "brokers": 3,
                "max_controller_failovers": 1,
                "max_leader_epoch": 0,
                "max_crashes": 0,
                "max_fences": 0,
                "max_records": 1,
                "alter_partition_awaits_metadata": True,
            },
            13_906,
            52_460,
            {"ControllerFailover"},
        ),
        (
            {
                "brokers": 3,
                "max_reassignments": 1,
                "max_crashes": 0,
                "max_fences": 0,
                "max_leader_epoch": 1,
                "max_records": 1,
            },
            21_674,
            77_099,
            {"AlterPartitionReassignments"},
        ),
        (
            {"truncation": "offsets_for_leader_epoch", "max_records": 1, "max_leader_epoch": 1},
            11_101,
            40_311,
            {"HandleOffsetsForLeaderEpochResponse"},
        ),
    ],
)
def test_only_epoch_changing_actions_need_ranking(overrides: dict, states: int, generated: int, actions: set) -> None:
    """successors ranks partition epochs only after the actions that can move one: every state it
    reaches is already ranked, and the counts are those of ranking every successor."""
    model = KraftReplicationModel(KraftReplicationConfig(**overrides))
    seen, transitions, taken = walk(model)
    assert (len(seen), transitions) == (states, generated)
    assert actions <= taken
    assert all(dense_partition_epochs(s) is s for s in seen)
    # The controller changes it remembered are what PartitionChangeBuilder gives afresh.
    fresh = {"commit": model._partition_change_isr, "fence": model._fenced_change, "unfence": model._unfenced_change}
    for (change, c, *args), changed in model.controller_changes.items():
        assert fresh[change](c, *args) == changed


def test_the_hot_path_builders_are_replace() -> None:
    [s] = KraftReplicationModel().init_states()
    r = s.replicas[1]
    log = (Record(1, 0),)
    pending = AlterPartition(frozenset({0}), ())
    assert with_log(r, log, 1) == r._replace(log=log, highWatermark=1)
    assert with_high_watermark(r, 3) == r._replace(highWatermark=3)
    assert with_follower_state(r, ((0, 1), (2, 3))) == r._replace(followerState=((0, 1), (2, 3)))
    assert with_pending(r, pending) == r._replace(pendingAlterPartition=pending)
    assert with_partition_epoch(r, 4) == r._replace(partitionEpoch=4)
    assert with_fetches(s, (None, None)) == s._replace(fetches=(None, None))
    c = s.controller._replace(leader=1)
    assert with_controller(s, c) == s._replace(controller=c)
    assert type(with_log(r, log, 1)) is type(r) and type(with_controller(s, c)) is type(s)
