"""The Kafka bugs the zk-controller presets reproduce: the ZooKeeper-era controller's zombies and
missed bounces, and the fixes of 2.1 and 2.2."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-6082",
        "A zombie controller, whose ZooKeeper session lives on, rewrites the partition state after its "
        "successor is elected, and brokers apply the older controller's leader epoch.",
        component="controller",
        since="0.8.0",
        fixed_in="2.1.0",
        preset="pre-kafka-6082",
        violates="OnlyNewestControllerWrites",
        fixed_preset="kip-380",
    ),
    kafka_bug(
        "KIP-380",
        "A broker that bounced applies a LeaderAndIsr addressed to its previous incarnation: control "
        "requests carry no broker epoch.",
        also=("KAFKA-7235",),
        component="controller",
        since="0.8.0",
        fixed_in="2.2.0",
        preset="pre-kip-380",
        violates="NoRequestForEarlierIncarnation",
        fixed_preset="kip-380",
    ),
    kafka_bug(
        "KAFKA-1120",
        "The controller compares broker ids only, so a broker that re-registers before the watch fires "
        "is neither dead nor new, and its new incarnation is never sent its partitions' state.",
        component="controller",
        since="0.8.0",
        fixed_in="2.2.0",
        preset="pre-kafka-1120",
        violates="EveryBrokerGetsItsState",
        fixed_preset="kip-380",
    ),
)
