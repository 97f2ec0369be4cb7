"""The `group` model's configuration, presets and actions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kmc.checker import Preset, param
from kmc.models.group.assignors import STRATEGIES


@dataclass(frozen=True)
class GroupConfig:
    consumers: int = param(2, "consumer processes (each may join, crash and restart)", min=1, max=4)
    partitions: int = param(2, "partitions of the one subscribed topic", min=0, max=6)
    assignor: str = param("range", "the assignor the group leader runs", choices=STRATEGIES)
    rebalance_protocol: Literal["eager", "cooperative"] = param(
        "eager", "how consumers revoke: everything before JoinGroup, or only what moves (KIP-429)"
    )
    static_membership: bool = param(False, "consumers set group.instance.id (KIP-345)")
    require_known_member_id: bool = param(True, "KIP-394: a new member first gets MEMBER_ID_REQUIRED")
    new_member_join_timeout: bool = param(
        True, "KAFKA-7610: a new member's parked JoinGroup is completed after a timeout (its client may have retried)"
    )
    pending_members_block_join: bool = param(
        True,
        "KIP-394, KAFKA-7909: a member id handed out with MEMBER_ID_REQUIRED holds the join open until it joins "
        "or expires",
    )
    join_group_v0: bool = param(
        False,
        "JoinGroup v0 (before KIP-62): no rebalance timeout in the request, the session timeout stands in; "
        "no heartbeat thread",
    )
    v0_rebalance_timeout: bool = param(
        True,
        "KAFKA-8653: a v0 JoinGroup's rebalance timeout is its session timeout (2.3.0 left it -1: the join "
        "phase ends at once)",
    )
    initial_rebalance_delay: bool = param(True, "KIP-134: delay the first rebalance of an Empty group")
    delay_extensions: int = param(1, "KIP-134: how often the initial delay can be extended", min=0, max=3)
    delayed_sync: bool = param(True, "KAFKA-12890: remove members that never send SyncGroup")
    rebalance_static_rejoin_in_completing: bool = param(
        True, "KAFKA-9801: a static member rejoining in CompletingRebalance forces a rebalance"
    )
    sanitise_owned_partitions: bool = param(
        True,
        "KAFKA-12984, KAFKA-14639: the sticky assignors drop an owned partition claimed by an older "
        "generation (and by two members of one generation)",
    )
    keep_uncontested_older_claims: bool = param(
        True,
        "KAFKA-14639 (3.6): the sticky assignors keep a partition only a member of an older generation claims "
        "(before: only the claims of the newest generation count)",
    )
    sticky_user_data_generation: bool = param(
        True, "KIP-341 (2.3): StickyAssignor's user data carries the generation of its last assignment (before: none)"
    )
    cooperative_sticky_generation: bool = param(
        True,
        "KAFKA-12984 (3.0): CooperativeStickyAssignor's user data carries the generation of its last assignment "
        "(before: none)",
    )
    subscription_generation: bool = param(
        True,
        "KIP-792 (3.4): the subscription carries the consumer's current generation, which CooperativeStickyAssignor "
        "reads before its user data",
    )
    cooperative_assignment_validation: Literal["except-built-in", "all", "off"] = param(
        "except-built-in",
        "KAFKA-13406 (3.2): the leader's validateCooperativeAssignment checks every assignor but cooperative-sticky "
        "(all: before 3.2; off: a client without the check)",
    )
    join_prepare_after_reset: bool = param(
        True,
        "KAFKA-12983 (3.0): a member that loses its member id or generation in a JoinGroup or SyncGroup response "
        "runs onJoinPrepare again and drops its owned partitions (before: it rejoins claiming them)",
    )
    sync_rebalance_resets_generation: bool = param(
        False,
        "KAFKA-13891 (3.3 only, reverted in 3.4): a SyncGroup answered REBALANCE_IN_PROGRESS resets the generation, "
        "so the member drops its owned partitions before rejoining",
    )
    fence_replaced_static_member: bool = param(
        True, "KAFKA-8500: a static member rejoining in any state gets a new member id; the old one is fenced"
    )
    duplicate_instance: bool = param(
        False, "a second process with consumer 0's group.instance.id may start (started twice, or back from a pause)"
    )
    persist_static_replacement: bool = param(
        True, "KAFKA-10284: persist the new member id of a static member that rejoins a Stable group"
    )
    timeouts: Literal["crashed", "any"] = param(
        "crashed", "which timers expire: only those of consumers that stopped, or any (slow consumers)"
    )
    max_faults: int = param(
        1, "consumer crashes, leaves, stalls, request timeouts and coordinator failovers in all", min=0, max=4
    )
    coordinator_failover: bool = param(True, "the coordinator may move (its partition's leader changes)")
    slow_coordinator: bool = param(
        False,
        "a fault: the client's request.timeout.ms expires while the coordinator still holds its JoinGroup or SyncGroup",
    )
    consumer_pauses: bool = param(
        False,
        "a fault: a running consumer pauses longer than session.timeout.ms (a long GC pause) and the coordinator "
        "removes its member; it finds out at its next request",
    )
    poll_stalls: bool = param(
        False, "a fault: the application stops polling for good while the heartbeat thread keeps its session alive"
    )
    max_generation: int = param(8, "bound on the (shifted) generation id (within_bounds)", min=1, max=16)


_SMALL_BOUNDS = {"require_known_member_id": False, "initial_rebalance_delay": False, "coordinator_failover": False}
"""What the three-consumer presets leave out to stay small: the KIP-394 handshake, the initial
delay and failover add states there but take no part in the bugs they show."""

PRESETS = {
    "eager-range": Preset.of(
        "eager rebalancing with the range assignor: the default before Kafka 3.x clients",
        {"ExclusiveOwnership": "holds", "StableAssignmentCovers": "holds"},
    ),
    "cooperative-sticky": Preset.of(
        "KIP-429 incremental cooperative rebalancing with the cooperative-sticky assignor",
        {"ExclusiveOwnership": "holds"},
        assignor="cooperative-sticky",
        rebalance_protocol="cooperative",
    ),
    "cooperative-unsafe-assignor": Preset.of(
        "cooperative consumers whose assignor moves partitions in one round (it does not support COOPERATIVE), "
        "on a client without Kafka's validateCooperativeAssignment",
        {"ExclusiveOwnership": "violated"},
        assignor="sticky",
        rebalance_protocol="cooperative",
        cooperative_assignment_validation="off",
    ),
    "cooperative-kafka-14639": Preset.of(
        "cooperative-sticky in 3.2 (before KAFKA-13891, KIP-792 and KAFKA-14639): a member that missed a SyncGroup "
        "claims its partitions with an older generation, the assignor drops the claim and gives one away at once",
        {"ExclusiveOwnership": "violated"},
        assignor="cooperative-sticky",
        rebalance_protocol="cooperative",
        keep_uncontested_older_claims=False,
        subscription_generation=False,
        consumers=3,
        partitions=1,
        max_generation=4,
        **_SMALL_BOUNDS,
    ),
    "cooperative-kafka-12984": Preset.of(
        "cooperative-sticky in 2.8 (before KAFKA-12983, KAFKA-12984 and DelayedSync): a consumer paused past its "
        "session timeout rejoins claiming what it lost, two members claim it with no generation, and the leader's "
        "assignor throws on every rebalance",
        {"SyncCompletes": "violated", "RebalanceCompletes": "violated"},
        assignor="cooperative-sticky",
        rebalance_protocol="cooperative",
        consumer_pauses=True,
        join_prepare_after_reset=False,
        cooperative_sticky_generation=False,
        subscription_generation=False,
        sanitise_owned_partitions=False,
        keep_uncontested_older_claims=False,
        cooperative_assignment_validation="all",
        delayed_sync=False,
    ),
    "sticky-kafka-7026": Preset.of(
        "the eager sticky assignor before KIP-341 (user data without a generation), 3 consumers: a consumer paused "
        "past its session timeout rejoins claiming its old assignment, and the assignor gives a partition to two "
        "members",
        {"NoPartitionTwiceInGeneration": "violated"},
        assignor="sticky",
        sticky_user_data_generation=False,
        sanitise_owned_partitions=False,
        keep_uncontested_older_claims=False,
        consumer_pauses=True,
        delayed_sync=False,
        consumers=3,
        partitions=3,
        max_generation=3,
        **_SMALL_BOUNDS,
    ),
    "static": Preset.of(
        "static membership (KIP-345) with every later fix",
        {"NoLiveConsumerFenced": "holds", "StableAssignmentCovers": "holds"},
        static_membership=True,
    ),
    "slow-coordinator": Preset.of(
        "static members whose JoinGroup or SyncGroup outlives request.timeout.ms at the coordinator: the client "
        "abandons it and rejoins",
        {"NoLiveConsumerFenced": "holds", "RebalanceCompletes": "holds"},
        static_membership=True,
        slow_coordinator=True,
    ),
    "static-kafka-10284": Preset.of(
        "before KAFKA-10284: a static member's new id is not persisted, and a coordinator failover fences it",
        {"NoLiveConsumerFenced": "violated"},
        static_membership=True,
        persist_static_replacement=False,
        max_faults=2,
    ),
    "static-kafka-9801": Preset.of(
        "before KAFKA-9801: a static member rejoining in CompletingRebalance gets no assignment",
        {"StableAssignmentCovers": "violated"},
        static_membership=True,
        rebalance_static_rejoin_in_completing=False,
    ),
    "static-kafka-8500": Preset.of(
        "before KAFKA-8500: a second process with a known group.instance.id joining mid-rebalance takes over the "
        "old member id, and both processes consume as one member",
        {"OneProcessPerMemberId": "violated"},
        static_membership=True,
        duplicate_instance=True,
        fence_replaced_static_member=False,
    ),
    "kafka-12890": Preset.of(
        "before KAFKA-12890: a member that heartbeats but never sends SyncGroup keeps the group in CompletingRebalance",
        {"SyncCompletes": "violated"},
        delayed_sync=False,
        poll_stalls=True,
    ),
    "join-retry": Preset.of(
        "dynamic members whose JoinGroup outlives request.timeout.ms at the coordinator: the client retries "
        "(KIP-394 and KAFKA-7610)",
        {"MembersWithinLiveProcesses": "holds", "RebalanceCompletes": "holds"},
        slow_coordinator=True,
    ),
    "kafka-7610": Preset.of(
        "before KIP-394 and KAFKA-7610: a JoinGroup retried without a member id mints a second member for one process",
        {"MembersWithinLiveProcesses": "violated"},
        slow_coordinator=True,
        require_known_member_id=False,
        new_member_join_timeout=False,
    ),
    "join-group-v0": Preset.of(
        "JoinGroup v0 consumers (before KIP-62): the session timeout is the rebalance timeout, no fault",
        {"RebalanceCompletes": "holds"},
        join_group_v0=True,
        delayed_sync=False,
        max_faults=0,
        max_generation=3,
    ),
    "kafka-8653": Preset.of(
        "before KAFKA-8653: a v0 JoinGroup's rebalance timeout is -1, the join phase ends at once and drops "
        "every member that has not rejoined",
        {"RebalanceCompletes": "violated"},
        join_group_v0=True,
        v0_rebalance_timeout=False,
        delayed_sync=False,
        max_faults=0,
        max_generation=3,
    ),
    "slow-member": Preset.of(
        "timers expire at any moment: a member that keeps missing its rebalance timeout",
        {"RebalanceCompletes": "violated"},
        timeouts="any",
        max_faults=0,
        partitions=1,
        max_generation=2,
    ),
}

ACTION_ARGS = {
    "SendJoinGroup": ("consumer",),
    "HandleJoinGroup": ("consumer", "error"),
    "HandleSyncGroup": ("consumer", "error"),
    "ReceiveJoinGroup": ("consumer", "error"),
    "ReceiveSyncGroup": ("consumer", "error"),
    "Heartbeat": ("consumer", "error"),
    "OffsetCommit": ("consumer", "memberId", "generationId", "error"),
    "LeaveGroup": ("consumer",),
    "ConsumerCrash": ("consumer",),
    "ConsumerStart": ("consumer",),
    "ConsumerStall": ("consumer",),
    "RequestTimeout": ("consumer",),
    "InitialDelayExpired": (),
    "RebalanceTimeout": (),
    "SyncTimeout": (),
    "SessionTimeout": ("memberId",),
    "ConsumerPause": ("memberId",),
    "PendingMemberTimeout": ("memberId",),
    "NewMemberJoinTimeout": ("memberId",),
    "CoordinatorUnload": (),
    "CoordinatorLoad": (),
}
"""Every action of the model and the names of its arguments."""
