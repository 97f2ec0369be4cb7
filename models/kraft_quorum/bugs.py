"""The Kafka bugs the kraft-quorum presets reproduce: KRaft elections before check-quorum and
pre-vote, voters without directory ids, the high watermark over a stale voter set, and a finding on
dynamic voters that a real 4.3.1 quorum confirmed."""

from kmc.models.common.bugs import kafka_bug

BUGS = (
    kafka_bug(
        "KAFKA-15489",
        "A KRaft leader cut off from a majority of voters never resigns: without a check-quorum timer it "
        "stays leader of its epoch for ever and keeps serving its stale metadata.",
        component="raft",
        since="2.8.0",
        fixed_in="3.7.0",
        preset="pre-kafka-15489",
        violates="DeposedLeaderResigns",
        fixed_preset="kip-996",
    ),
    kafka_bug(
        "KIP-853",
        "With static voters (kraft.version 0) a controller whose disk was formatted anew rejoins as the "
        "same voter without its quorum-state: it votes twice in one epoch, electing two leaders, and a "
        "committed record is truncated.",
        component="raft",
        since="2.8.0",
        fixed_in="3.9.0",
        preset="pre-kip-853",
        violates=("ElectionSafety", "Durability"),
        fixed_preset="pre-kip-853",
        fixed_settings={"directory_ids": True},
    ),
    kafka_bug(
        "KIP-996",
        "Without pre-vote a voter whose election timer fires bumps its epoch and sends Vote requests even "
        "when it cannot win, and its higher epoch deposes a leader that was working.",
        also=("KAFKA-16164",),
        component="raft",
        since="2.8.0",
        fixed_in="4.0.0",
        preset="kip-595",
        violates="NoDisruptiveCandidate",
        fixed_preset="kip-996",
    ),
    kafka_bug(
        "finding",
        "A leader that removes itself with RemoveVoter and restarts before the VotersRecord commits is no "
        "voter in its own view, and the last voter needs its vote but has a shorter log: no leader, for ever.",
        component="raft",
        since="3.9.0",
        fixed_in=None,
        preset="kip-853",
        violates="EventuallyLeaderElected",
    ),
    kafka_bug(
        "KAFKA-16144",
        "Check-quorum expires the timer of a one-voter quorum, where nobody else ever fetches, so the only "
        "controller resigns though nothing cut it off; the fix shipped with check-quorum in 3.7.0.",
        component="raft",
        since=None,
        fixed_in="3.7.0",
        preset="pre-kafka-16144",
        violates="ResignOnlyWithoutQuorum",
        fixed_preset="pre-kafka-16144",
        fixed_settings={"single_voter_exemption": True},
    ),
    kafka_bug(
        "KAFKA-16530",
        "A KIP-853 leader counts its highWatermark over the voter set it was elected with, not its latest "
        "VotersRecord: a record only removed voters hold is committed, then lost when the remaining voter leads.",
        component="raft",
        since=None,
        fixed_in="3.8.0",
        preset="pre-kafka-16530",
        violates=("LeaderCompleteness", "Durability"),
        fixed_preset="pre-kafka-16530",
        fixed_settings={"kafka_16530": True},
    ),
    kafka_bug(
        "KAFKA-17641",
        "A follower that has not yet fetched from its leader refuses pre-votes: when that leader dies "
        "early, its followers refuse each other for ever and no leader is elected.",
        component="raft",
        since=None,
        fixed_in="4.0.0",
        preset="pre-kafka-17641",
        violates="EventuallyLeaderElected",
        fixed_preset="kip-996",
    ),
)
