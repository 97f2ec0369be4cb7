"""The Kafka bugs the replication presets reproduce: the four steps from truncating to the high
watermark to KIP-320's fencing, each found by the TLA+ specification it ports."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-1211",
        "A restarted follower truncates to its high watermark, which lags the leader's, and is elected "
        "next: a committed record is lost. KIP-101 fixed this scenario; its preset still loses data by "
        "KAFKA-6361, so the fixed preset is kip-279.",
        also=("KIP-101",),
        component="replication",
        since="0.8.0",
        fixed_in="0.11.0",
        preset="truncate-to-hw",
        violates=("StrongIsr", "WeakIsr"),
        fixed_preset="kip-279",
    ),
    kafka_bug(
        "KAFKA-6361",
        "With truncation by leader epoch, two fast leader changes let a follower keep a record of an "
        "epoch the new leader never wrote, and the logs diverge below the high watermark.",
        also=("KIP-279",),
        component="replication",
        since="0.11.0",
        fixed_in="2.0.0",
        preset="kip-101",
        violates="StrongIsr",
        fixed_preset="kip-279",
    ),
    kafka_bug(
        "KAFKA-6880",
        "A zombie leader's answer lets a follower take its truncation point from a leader of another "
        "epoch; with three replicas a committed record is lost (fixed by KIP-320's fencing).",
        also=("KIP-320",),
        component="replication",
        since="2.0.0",
        fixed_in="2.1.0",
        preset="kip-279",
        settings={"replicas": 3},
        violates="StrongIsr",
        fixed_preset="kip-320",
        fixed_settings={"replicas": 3},
    ),
    kafka_bug(
        "KIP-320",
        "KIP-320's first draft, fencing fetches by the last fetched epoch only, lets the high watermark "
        "advance on a follower of an older epoch: caught in the specification, never released.",
        component="replication",
        since=None,
        fixed_in="2.1.0",
        preset="kip-320-first-try",
        settings={"replicas": 3},
        violates="StrongIsr",
        fixed_preset="kip-320",
        fixed_settings={"replicas": 3},
    ),
)
