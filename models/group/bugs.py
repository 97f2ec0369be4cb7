"""The Kafka bugs the group presets reproduce: the classic coordinator's JoinGroup, SyncGroup and
static-membership fixes from 2.2 to 3.0, the sticky assignors' stale claims, and one finding of
the model that real brokers confirm."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-7610",
        "A new consumer's JoinGroup, parked without a memberId, times out at the client and is sent again "
        "without one: the coordinator adds a second member for the same process.",
        also=("KIP-394", "KAFKA-7824"),
        component="group coordinator",
        since="0.9.0",
        fixed_in="2.2.0",
        preset="kafka-7610",
        violates="MembersWithinLiveProcesses",
        fixed_preset="join-retry",
    ),
    kafka_bug(
        "KAFKA-7026",
        "StickyAssignor's user data names no generation: a consumer removed while paused rejoins claiming "
        "its old partitions beside their new owner, and the leader assigns one partition to both.",
        also=("KIP-341",),
        component="consumer client",
        since="0.11.0",
        fixed_in="2.3.0",
        preset="sticky-kafka-7026",
        violates="NoPartitionTwiceInGeneration",
        fixed_preset="sticky-kafka-7026",
        fixed_settings={"sticky_user_data_generation": True},
    ),
    kafka_bug(
        "KAFKA-8500",
        "A second process with a known group.instance.id that joins with no memberId during a rebalance "
        "is handed the existing memberId, so two processes run as one member.",
        component="group coordinator",
        since=None,
        fixed_in="2.3.0",
        preset="static-kafka-8500",
        violates="OneProcessPerMemberId",
        fixed_preset="static",
        fixed_settings={"duplicate_instance": True},
    ),
    kafka_bug(
        "KAFKA-8653",
        "The coordinator reads a JoinGroup v0's missing rebalance timeout as -1, so each join phase ends at "
        "once and drops the members that have not rejoined yet, rebalance after rebalance.",
        component="group coordinator",
        since="2.3.0",
        fixed_in="2.3.1",
        preset="kafka-8653",
        violates="RebalanceCompletes",
        fixed_preset="join-group-v0",
    ),
    kafka_bug(
        "KAFKA-9801",
        "A static member that rejoins with no memberId while the group is in CompletingRebalance starts no "
        "rebalance: the leader's assignment names the old memberId and a partition is left unassigned.",
        component="group coordinator",
        since="2.3.0",
        fixed_in="2.5.0",
        preset="static-kafka-9801",
        violates="StableAssignmentCovers",
        fixed_preset="static",
    ),
    kafka_bug(
        "KAFKA-10284",
        "The new memberId of a static member that rejoins a Stable group is not written to the group "
        "record: after a coordinator failover the old one is loaded and the live consumer is fenced.",
        component="group coordinator",
        since="2.3.0",
        fixed_in="2.6.1",
        preset="static-kafka-10284",
        violates=("StaticReplacementPersisted", "NoLiveConsumerFenced"),
        fixed_preset="static",
    ),
    kafka_bug(
        "finding",
        "A static member replaced while the group rebalances is written only by the leader's next "
        "SyncGroup; a coordinator failover before it loads the old memberId and fences the live consumer.",
        component="group coordinator",
        since="2.3.0",
        fixed_in=None,
        preset="static",
        settings={"max_faults": 2},
        violates="NoLiveConsumerFenced",
    ),
    kafka_bug(
        "KAFKA-12984",
        "A consumer rejoins without onJoinPrepare and still claims partitions another member holds "
        "(KAFKA-12983); cooperative-sticky, reading claims without a generation, then throws on every "
        "rebalance and the group never syncs.",
        also=("KAFKA-12983",),
        component="consumer client",
        since="2.4.0",
        fixed_in="3.0.0",
        preset="cooperative-kafka-12984",
        violates="SyncCompletes",
        fixed_preset="cooperative-sticky",
        fixed_settings={"consumer_pauses": True},
    ),
    kafka_bug(
        "KAFKA-12890",
        "A member whose heartbeat thread runs but which never sends SyncGroup holds the group in "
        "CompletingRebalance for good: heartbeats are accepted there and no timer waits for the SyncGroup.",
        component="group coordinator",
        since="2.6.1",
        fixed_in="2.8.1",
        preset="kafka-12890",
        violates="SyncCompletes",
        fixed_preset="eager-range",
        fixed_settings={"poll_stalls": True},
    ),
    kafka_bug(
        "KAFKA-14639",
        "A member whose SyncGroup met REBALANCE_IN_PROGRESS rejoins claiming its partition at an older "
        "generation; cooperative-sticky drops the claim and gives the partition to another member at once.",
        also=("KAFKA-13891",),
        component="consumer client",
        since="3.0.1",
        fixed_in="3.4.1",
        preset="cooperative-kafka-14639",
        violates="ExclusiveOwnership",
        fixed_preset="cooperative-kafka-14639",
        fixed_settings={"keep_uncontested_older_claims": True, "max_generation": 6},
    ),
)
