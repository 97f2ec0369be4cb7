"""The zk-controller model's config: every flag named after the KIP or JIRA that changed the
behaviour, and the presets that bundle them."""

from __future__ import annotations

from dataclasses import dataclass

from kmc.checker import Preset, param


@dataclass(frozen=True)
class ZkControllerConfig:
    brokers: int = param(2, "how many brokers (each holds a replica of the one partition)", min=2, max=4)
    max_controller_epoch: int = param(2, "controller elections stop at this /controller_epoch", min=1, max=5)
    max_leader_epoch: int = param(1, "partition leader elections stop at this leader epoch", min=0, max=5)
    max_session_expiries: int = param(1, "how many ZooKeeper sessions may expire in all", min=0, max=3)
    max_restarts: int = param(1, "how many times brokers may bounce in all", min=0, max=3)
    conditional_writes: bool = param(True, "KAFKA-6082: metadata writes check the /controller_epoch zkVersion")
    broker_epochs: bool = param(True, "KIP-380: brokers reject requests meant for an earlier incarnation")
    controller_epoch_check: bool = param(True, "brokers reject requests from an older controller epoch")
    bounced_broker_detection: bool = param(
        True, "KAFKA-1120 (with KIP-380): processBrokerChange treats a broker whose epoch changed as bounced"
    )


PRESETS = {
    "kip-380": Preset.of(
        "Kafka 2.2 to 3.x in ZooKeeper mode: conditional writes and broker epochs",
        {
            "OneControllerPerEpoch": "holds",
            "OnlyNewestControllerWrites": "holds",
            "NoStaleControllerEpochApplied": "holds",
            "NoRequestForEarlierIncarnation": "holds",
            "LeaderEpochsOnlyIncrease": "holds",
            "EveryBrokerGetsItsState": "holds",
        },
    ),
    "pre-kafka-1120": Preset.of(
        "KIP-380's broker epochs without the controller's bounce detection: a fast bounce is missed",
        {"EveryBrokerGetsItsState": "violated"},
        bounced_broker_detection=False,
    ),
    "pre-kip-380": Preset.of(
        "Kafka 2.1: conditional writes, no broker epochs, bounces missed",
        {"NoRequestForEarlierIncarnation": "violated", "EveryBrokerGetsItsState": "violated"},
        broker_epochs=False,
        bounced_broker_detection=False,
    ),
    "pre-kafka-6082": Preset.of(
        "Kafka 2.0 and before: a zombie controller's metadata writes succeed",
        {"OnlyNewestControllerWrites": "violated", "NoRequestForEarlierIncarnation": "violated"},
        conditional_writes=False,
        broker_epochs=False,
        bounced_broker_detection=False,
    ),
}
