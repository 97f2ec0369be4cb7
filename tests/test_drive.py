"""Counterexamples driven on a real broker (`kmc drive`): the two results the models found on Kafka
4.3.1 confirmed request by request, a wrong mapping that must make a drive diverge, and the inputs
a drive refuses before it starts anything.

The drives share one three-node cluster of the pinned release, started with both drivers' settings."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import kmc.cluster.cluster
import kmc.cluster.drive.run
import pytest
from kmc.checker.cli.suite import Entry, run_suite
from kmc.checker.errors import UserError
from kmc.cluster.cluster import Cluster, ClusterSpec, started
from kmc.cluster.drive.base import Difference
from kmc.cluster.drive.consumer_delivery import DeliveryDriver
from kmc.cluster.drive.consumer_group import ConsumerGroup
from kmc.cluster.drive.consumer_membership import MembershipDriver
from kmc.cluster.drive.group import GroupDriver
from kmc.cluster.drive.group_kip848 import Kip848Driver
from kmc.cluster.drive.producer import ProducerDriver
from kmc.cluster.drive.run import DriveResult, SharedCluster, StepResult, cluster_spec, drive_trace, load
from kmc.cluster.drive.share_group import ShareGroupDriver
from kmc.cluster.drive.share_group_membership import ShareGroupMembershipDriver
from kmc.cluster.drive.share_session import ShareSessionDriver
from kmc.cluster.drive.streams_group import StreamsGroupDriver
from kmc.cluster.drive.suite import DriveJob, load_drive
from kmc.cluster.drive.transactions import TransactionsDriver
from kmc.cluster.release import requested

COUNTEREXAMPLES = Path(__file__).resolve().parent.parent / "counterexamples"
KIP848 = COUNTEREXAMPLES / "group-kip848" / "kip-848-NoDoubleClientAssignment.itf.json"
STATIC = COUNTEREXAMPLES / "group" / "static-1aa00f68-NoLiveConsumerFenced.itf.json"
PRODUCER_NER = COUNTEREXAMPLES / "producer" / "not-enough-replicas-PerProducerOrder.itf.json"
PRODUCER_CACHE_1 = COUNTEREXAMPLES / "producer" / "cache-1-NoDuplicates.itf.json"
KIP1251 = (
    COUNTEREXAMPLES / "consumer-delivery" / "commit-after-processing-kip-848-pre-kip-1251-NoFalseCommitFencing.itf.json"
)


@pytest.fixture(scope="module")
def cluster(runs: Path) -> Iterator[Cluster]:
    settings = {
        **Kip848Driver.settings,
        **GroupDriver.settings,
        **TransactionsDriver.settings,
        **DeliveryDriver.settings,
        **MembershipDriver.settings,
        **StreamsGroupDriver.settings,
        **ShareGroupDriver.settings,
        **ShareSessionDriver.settings,
        **ShareGroupMembershipDriver.settings_for(requested(None)),
    }
    with started(runs / "shared", ClusterSpec(nodes=3, settings=settings, node_users=False)) as running:
        yield running


def test_the_kip848_double_assignment_happens_on_the_real_broker(cluster: Cluster) -> None:
    result = drive_trace(KIP848, cluster=cluster)
    assert result.agreed, result.verdict
    assert (len(result.steps), result.total_steps) == (29, 29)
    assert result.violated_on_broker is True
    assert result.verdict == "agreed at every step: NoDoubleClientAssignment violated on the real broker"
    # the heartbeat that reports the older, empty reconciliation at epoch 3 moves the member straight on
    reported = result.steps[22]
    assert reported.action == "HandleHeartbeat(consumer=1, error='NONE')"
    assert reported.requests == ["ConsumerGroupHeartbeat(memberEpoch=3, topicPartitions=[])"]
    assert reported.answered == {"error": "NONE", "memberId": "c1-0", "memberEpoch": 5, "assignment": [0]}
    # and the other consumer is given the partition consumer 1 is still taking
    assert result.steps[23].answered["assignment"] == [1]


def test_a_static_member_is_fenced_after_a_coordinator_failover_on_the_real_broker(cluster: Cluster) -> None:
    result = drive_trace(STATIC, cluster=cluster)
    assert result.agreed, result.verdict
    assert result.violated_on_broker is True
    unload, load_, sync = result.steps[12:15]
    assert unload.observed == {"state": "Dead"}
    # the group came back as it was stored before the rebalance: generation 1, the crashed incarnation
    assert load_.observed == {"state": "Stable", "members": {"c0-0": {"groupInstanceId": "i0", "assignment": [0, 1]}}}
    assert sync.answered == {"consumer 0": {"error": "FENCED_INSTANCE_ID"}}
    assert all(node.running() for node in cluster.nodes)  # the node shut down for the failover is back


def test_an_idempotent_producer_reorders_its_records_on_the_real_broker(cluster: Cluster) -> None:
    """not-enough-replicas: the leader refuses sequence 0 (NOT_ENOUGH_REPLICAS), takes sequence 1 as
    the producer's first batch, refuses the retried 0 as out of order, and after the epoch bump
    appends it behind 1."""
    result = drive_trace(PRODUCER_NER, cluster=cluster)
    assert result.agreed, result.verdict
    assert result.violated_on_broker is True
    assert result.steps[2].answered == {"error": "NOT_ENOUGH_REPLICAS", "baseOffset": -1}
    assert result.steps[6].answered == {"error": "OUT_OF_ORDER_SEQUENCE_NUMBER", "baseOffset": -1}
    assert result.steps[-1].observed["log"] == [[1, 0, 0, 1], [0, 0, 1, 0]]
    assert all(node.running() and not node.paused for node in cluster.nodes)


def test_a_bug_fixed_before_the_release_diverges_where_the_fix_decides(cluster: Cluster) -> None:
    """cache-1: a leader that caches one batch per producer (before KAFKA-5494) refuses a retried
    batch it has written; Kafka's cache of five finds it and answers with its offset."""
    result = drive_trace(PRODUCER_CACHE_1, cluster=cluster)
    assert result.verdict == (
        "diverged at step 7 (HandleProduce(connection=1, broker=0, record=0, outcome='OUT_OF_ORDER_SEQUENCE_NUMBER'))"
    ), [(step.action, step.requests, step.answered, step.differences) for step in result.steps]
    shown = {d.field: (d.model, d.broker) for d in result.steps[-1].differences}
    assert shown == {"response.error": ("OUT_OF_ORDER_SEQUENCE_NUMBER", "NONE"), "response.baseOffset": (-1, 0)}


def test_kafka_19367_is_fixed_on_the_real_broker(cluster: Cluster) -> None:
    """4.0.0's second bump past Short.MaxValue (pre-kafka-19367), on the pinned release: the
    transactional id is first brought to epoch 32,765 by a new producer's InitProducerId per epoch;
    the second producer's InitProducerId is then answered CONCURRENT_TRANSACTIONS, the abort written
    at Short.MaxValue, where 4.0.0 failed it UNKNOWN_SERVER_ERROR and kept the transaction open."""
    result = drive_trace(
        COUNTEREXAMPLES / "transactions" / "pre-kafka-19367-LastStableOffsetAdvances.itf.json", cluster=cluster
    )
    assert result.verdict == "diverged at step 9 (HandleInitProducerId(client=1))", result.verdict
    assert result.steps[2].answered == {"error": "NONE", "producerEpoch": 32766}
    shown = {d.field: (d.model, d.broker) for d in result.steps[-1].differences}
    assert shown["response.error"] == ("UNKNOWN_SERVER_ERROR", "CONCURRENT_TRANSACTIONS")
    assert shown["coordinator.state"] == ("Ongoing", "CompleteAbort")


def test_kafka_8500_is_fixed_on_the_real_broker(cluster: Cluster) -> None:
    """A second process with a known group.instance.id joining mid-rebalance: before KAFKA-8500 it took
    over the old member id; Kafka gives it a new one (and fences the old process later)."""
    result = drive_trace(
        COUNTEREXAMPLES / "group" / "static-kafka-8500-OneProcessPerMemberId.itf.json", cluster=cluster
    )
    assert result.verdict == "diverged at step 7 (HandleJoinGroup(consumer=2, error='NONE'))"
    shown = {d.field: d.model for d in result.steps[-1].differences}
    assert shown["response.consumer 2.memberId"] == "c0-0"
    assert result.violated_on_broker is None


def test_a_property_the_broker_cannot_show_is_not_confirmed(cluster: Cluster) -> None:
    """Before KAFKA-10284 the replacement's id is not in the stored record: DescribeGroups cannot show
    the record, so a drive that agrees at every step does not claim the violation."""
    trace = COUNTEREXAMPLES / "group" / "static-kafka-10284-StaticReplacementPersisted.itf.json"
    result = drive_trace(trace, cluster=cluster)
    assert result.agreed
    assert result.violated_on_broker is None
    assert result.verdict.startswith("agreed at every step the broker shows; StaticReplacementPersisted not confirmed")


def test_pre_kafka_16147_diverges_where_the_old_reconciliation_took_partitions_back(cluster: Cluster) -> None:
    trace = COUNTEREXAMPLES / "group-kip848" / "pre-kafka-16147-NoDoubleClientAssignment.itf.json"
    result = drive_trace(trace, cluster=cluster)
    assert result.verdict == "diverged at step 11 (HandleHeartbeat(consumer=0, error='NONE'))"
    shown = {d.field: (d.model, d.broker) for d in result.steps[-1].differences}
    assert shown["members.c0-0.assignment"] == ([0], [0, 1])


def test_kafka_18464_is_fixed_on_the_real_broker(cluster: Cluster) -> None:
    """Transaction version 2: an abort at the bumped epoch while the previous commit's markers wait.
    Before KAFKA-18464 the coordinator fenced the producer; Kafka answers CONCURRENT_TRANSACTIONS."""
    trace = COUNTEREXAMPLES / "transactions" / "pre-kafka-18464-FencedOnlyByANewerProducer.itf.json"
    result = drive_trace(trace, cluster=cluster)
    assert result.verdict == "diverged at step 17 (HandleEndTxn(client=0, commit=False, producerEpoch=1))"
    shown = {d.field: (d.model, d.broker) for d in result.steps[-1].differences}
    assert shown == {"response.error": ("PRODUCER_FENCED", "CONCURRENT_TRANSACTIONS")}
    # the verification went with its produce, and the commit's markers were held back by the paused leader
    assert [s.deferred for s in result.steps[5:8]] == [True, True, False]
    assert result.steps[10].observed["coordinator"]["state"] == "PrepareCommit"
    assert result.steps[15].observed["coordinator"]["state"] == "PrepareCommit"
    assert all(node.running() and not node.paused for node in cluster.nodes)


def test_the_hanging_transaction_is_fixed_on_the_real_broker(cluster: Cluster) -> None:
    """Before KIP-890 part 1 (3.6) a produce delayed past the abort's markers opened a transaction the
    coordinator never knew; the leader now verifies it with the coordinator and refuses it. The
    coordinator's marker answers and completion are driven before the produce (they commute)."""
    trace = COUNTEREXAMPLES / "transactions" / "pre-kip-890-LastStableOffsetAdvances.itf.json"
    result = drive_trace(trace, cluster=cluster)
    assert result.reordered == ("step 19 taken right after step 16", "step 20 taken right after step 19")
    assert [s.index for s in result.steps[15:]] == [16, 19, 20, 17]
    assert result.verdict == "diverged at step 17 (HandleProduce(partition=0, client=0, producerEpoch=0, txn=0))"
    shown = {d.field: (d.model, d.broker) for d in result.steps[-1].differences}
    assert shown["response.error"] == ("NONE", "TRANSACTION_ABORTABLE")
    assert shown["partition 0.log"] == ([["marker", 0, "abort"], ["data", 0, 0]], [["marker", 0, "abort"]])


def test_aborted_data_of_a_transaction_version_1_client_is_visible_on_the_real_broker(cluster: Cluster) -> None:
    """KIP-890 part 1's gap, which only transaction version 2 closes: a batch expires after
    commitTransaction(), so the Java client aborts without a KIP-360 epoch bump; the delayed produce
    of the aborted transaction is verified against the next transaction of the same epoch and
    committed with it. Kafka 4.3.1 serves a client of version 1 so."""
    trace = COUNTEREXAMPLES / "transactions" / "kip-890-part-1-AbortedNeverVisible.itf.json"
    result = drive_trace(trace, cluster=cluster)
    shown = [(s.index, d.to_json()) for s in result.steps if not s.agreed for d in s.differences]
    assert result.verdict == "agreed at every step: AbortedNeverVisible violated on the real broker", shown
    assert "step 17 taken right before step 23" in result.reordered
    assert result.steps[-1].observed["partition 0"]["log"] == [
        ["marker", 0, "abort"],
        ["data", 0, 0],
        ["data", 0, 1],
        ["marker", 0, "commit"],
    ]


KIP_360_BUMP = """
from kmc.checker import invariant


@invariant
def NoClientBump(s) -> bool:
    \"\"\"Witness: the coordinator bumped the epoch for a producer that asked with its own.\"\"\"
    meta = s.coordinator.metadata
    return not (meta is not None and meta.state == "Empty" and meta.lastProducerEpoch == 0)
"""


def test_the_java_clients_kip_360_bump_is_kafkas(cluster: Cluster, kmc, tmp_path: Path) -> None:
    """A transaction-version-1 client: a partition added, its batch expired before it was sent, the
    abort (an ABORT marker on a partition with no data), then InitProducerId with the producer's own
    id and epoch, which bumps it. Kafka 4.3.1 agrees at every step."""
    spec = tmp_path / "bump.py"
    spec.write_text(KIP_360_BUMP)
    args = ["check", "transactions", "--preset", "kip-890-part-1", "--set", "partitions=1", "--spec", spec]
    code, _out, _err = kmc(*args, "--property", "NoClientBump", "--no-progress", "--out", tmp_path)
    assert code == 1
    [trace] = tmp_path.glob("*NoClientBump.itf.json")
    result = drive_trace(trace, cluster=cluster)
    assert result.verdict == "agreed at every step: NoClientBump violated on the real broker"
    assert result.steps[-1].requests == ["InitProducerId(producerEpoch=0)"]
    assert result.steps[-1].observed["partition 0"]["log"] == [["marker", 0, "abort"]]


def test_kip_1251_is_fixed_on_the_real_broker(cluster: Cluster) -> None:
    """A commit sent at member epoch 1 reaches the coordinator after the heartbeat that moved the member
    to epoch 2 (another consumer joined): before KIP-1251 (4.3) it was refused STALE_MEMBER_EPOCH,
    though the member held the partition since epoch 1; Kafka 4.3.1 accepts it."""
    trace = (
        COUNTEREXAMPLES
        / "consumer-delivery"
        / "commit-after-processing-kip-848-pre-kip-1251-NoFalseCommitFencing.itf.json"
    )
    result = drive_trace(trace, cluster=cluster)
    assert result.verdict == (
        "diverged at step 8 (OffsetCommit(consumer=0, memberId='c0-0', generationId=1, offset=1, "
        "error='STALE_MEMBER_EPOCH'))"
    )
    shown = {d.field: (d.model, d.broker) for d in result.steps[-1].differences}
    assert shown == {"response.error": ("STALE_MEMBER_EPOCH", "NONE"), "committedOffset": (-1, 1)}
    # both members at the new epoch (the broker's numbers run one ahead once a topic is subscribed)
    joined = result.steps[6]
    assert joined.agreed and set(joined.observed["members"]) == {"c0-0", "c1-0"}
    assert len({m["memberEpoch"] for m in joined.observed["members"].values()}) == 1


STREAMS = COUNTEREXAMPLES / "streams-group"


def test_kafka_20442_leaves_an_empty_streams_group_behind_its_target_on_the_real_broker(cluster: Cluster) -> None:
    result = drive_trace(STREAMS / "kafka-4.3-leave-EmptyGroupAtAssignmentEpoch.itf.json", cluster=cluster)
    assert result.verdict == "agreed at every step: EmptyGroupAtAssignmentEpoch violated on the real broker"
    leave = result.steps[-1]
    assert leave.requests == ["StreamsGroupHeartbeat(memberEpoch=-1, tasks=null)"]
    assert leave.observed == {"groupEpoch": 3, "assignmentEpoch": 2, "members": {}}


def test_a_lost_streams_heartbeat_response_is_answered_without_tasks_on_the_real_broker(cluster: Cluster) -> None:
    result = drive_trace(STREAMS / "lost-response-ClientsReachTheirAssignment.itf.json", cluster=cluster)
    assert result.agreed and result.violated_on_broker is True, result.verdict
    assert result.loop_rounds == 2
    # the heartbeat retried after the lost answer that gave thread 1 task 0_1: accepted, and no tasks in it
    retried = result.steps[24]
    assert retried.requests == ["StreamsGroupHeartbeat(memberEpoch=3, tasks=-)"]
    assert retried.answered == {"error": "NONE", "memberEpoch": 3, "tasks": "unchanged"}
    assert retried.observed["members"]["m1"]["assignment"] == "0_1"


def test_kafka_19233_is_fixed_on_the_real_broker(cluster: Cluster) -> None:
    result = drive_trace(STREAMS / "kafka-4.1-EveryMemberJoins.itf.json", cluster=cluster)
    assert not result.agreed
    rejoin = result.steps[-1]
    assert (rejoin.index, rejoin.requests) == (20, ["StreamsGroupHeartbeat(memberEpoch=0, tasks=-)"])
    assert rejoin.answered["error"] == "NONE"  # 4.1 answered FENCED_MEMBER_EPOCH, again and again


def test_a_released_share_record_is_redelivered_and_archived_at_the_limit_on_the_real_broker(cluster: Cluster) -> None:
    result = drive_trace(
        COUNTEREXAMPLES / "share-group" / "kafka-4.2-NoRecordArchivedAtTheDeliveryLimit.itf.json", cluster=cluster
    )
    assert result.verdict == "agreed at every step: NoRecordArchivedAtTheDeliveryLimit violated on the real broker"
    fetches = [s for s in result.steps if s.action.startswith("ShareFetch")]
    assert [s.answered["acquired"] for s in fetches] == [[[0, 1]], [[0, 2]]]  # offset 0, its delivery count
    assert [s.requests for s in fetches] == [
        ["ShareFetch(shareSessionEpoch=0, maxRecords=1)"],
        ["ShareFetch(shareSessionEpoch=2, maxRecords=1)"],
    ]


SESSIONS = COUNTEREXAMPLES / "share-session"


def test_kafka_19485_acknowledgements_on_a_new_share_session_are_refused_by_the_real_broker(cluster: Cluster) -> None:
    """Kafka 4.1.0's consumer, after its broker restarted: the ShareFetch that opens the new session carries
    the acknowledgements of records fetched before, and the broker refuses the whole request."""
    result = drive_trace(SESSIONS / "kafka-4.1.0-NoRequestRefused.itf.json", cluster=cluster)
    assert result.verdict == "agreed at every step: NoRequestRefused violated on the real broker"
    refused = result.steps[-1]
    assert refused.requests[0].endswith("(shareSessionEpoch=0, adds the partition, acknowledges [0] (ACCEPT))")
    assert refused.answered == {"error": "INVALID_REQUEST", "partition": "(none)"}
    assert all(node.running() for node in cluster.nodes)


def test_kafka_20736_the_old_leader_keeps_the_partition_in_its_share_session_on_the_real_broker(
    cluster: Cluster,
) -> None:
    """Kafka 4.3's consumer after a leader change fetches from the new leader only; the old leader, probed
    after every step, still lists the partition in the consumer's session (NOT_LEADER_OR_FOLLOWER)."""
    result = drive_trace(SESSIONS / "kafka-4.3-SessionsFollowTheLeader.itf.json", cluster=cluster)
    assert result.agreed and result.violated_on_broker is True, result.verdict
    assert result.loop_rounds == 2
    assert [s.observed["staleSessions"] for s in result.steps[-3:]] == [{"0": True}] * 3
    assert result.steps[2].requests == ["AlterPartitionReassignments(replicas=[2, 1]), ElectLeaders(PREFERRED)"]


def test_kafka_4_4s_consumer_makes_the_old_leader_forget_the_partition_on_the_real_broker(cluster: Cluster) -> None:
    result = drive_trace(SESSIONS / "kafka-4.4-NoSessionForgetsThePartition.itf.json", cluster=cluster)
    assert result.verdict == "agreed at every step: NoSessionForgetsThePartition violated on the real broker"
    assert result.steps[2].answered == {"error": "NONE", "partition": "NOT_LEADER_OR_FOLLOWER", "currentLeader": 1}
    assert result.steps[-1].observed["staleSessions"] == {"0": False}


CONSUMER_MEMBERSHIP = COUNTEREXAMPLES / "consumer-membership"


def test_kafka_16198_a_3_7_client_on_a_newer_broker_is_answered_as_its_lasso_says(cluster: Cluster) -> None:
    """The 3.7 client on the pinned broker, left owning T1-0 alone: the heartbeat that reports T1-0 and
    every heartbeat of the loop are answered with the member's epoch and no assignment, while the
    coordinator has it own both partitions. The property reads the client's state, so the drive cannot
    confirm it; 3.7.2's coordinator diverges where it resends the target (its result is beside the trace)."""
    trace = CONSUMER_MEMBERSHIP / "pre-kafka-16198-newer-coordinator-EventuallyOwnsTheTarget.itf.json"
    result = drive_trace(trace, cluster=cluster)
    assert result.agreed and result.loop_rounds == 2, result.verdict
    assert result.verdict.startswith("agreed at every step the broker shows; EventuallyOwnsTheTarget not confirmed")
    joined = result.steps[1]
    assert joined.requests == ["ConsumerGroupHeartbeat(memberEpoch=0, topicPartitions=[])"]
    assert joined.answered["assignment"] == [(0, 0), (1, 0)]
    reported = result.steps[6]
    assert reported.requests == ["ConsumerGroupHeartbeat(memberEpoch=1, topicPartitions=[(0, 0)])"]
    answers = [s for s in result.steps if s.action.startswith("HeartbeatResponse")][1:]
    assert len(answers) == 4 and all(s.answered["assignment"] is None for s in answers)
    assert result.steps[-1].observed["members"]["member"]["assignment"] == [(0, 0), (1, 0)]


def test_kafka_16367_the_pinned_coordinator_does_not_resend_the_assignment_for_owned_partitions(
    cluster: Cluster,
) -> None:
    """Kafka 3.7's coordinator answers a heartbeat that reports the owned partitions with the assignment
    (reproduced on 3.7.2, whose result is beside the trace); since KAFKA-16367 only a full request does."""
    result = drive_trace(CONSUMER_MEMBERSHIP / "pre-kafka-16198-NoAssignmentResent.itf.json", cluster=cluster)
    assert not result.agreed and len(result.steps) == 5
    last = result.steps[-1]
    assert last.requests == ["ConsumerGroupHeartbeat(memberEpoch=1, topicPartitions=[(0, 0)])"]
    assert [(d.field, d.model, d.broker) for d in last.differences] == [("response.assignment", [(0, 0), (1, 0)], None)]


MEMBERSHIP = COUNTEREXAMPLES / "share-group-membership"


def test_kafka_19468_is_fixed_on_the_pinned_release_the_heartbeat_that_changes_nothing_rebalances_nothing(
    cluster: Cluster,
) -> None:
    """Kafka 4.1's rebalance for an unsubscribed topic's initialized partition (reproduced on 4.1.2, whose
    result is beside the trace): on the pinned release the same heartbeat leaves the group epoch alone."""
    result = drive_trace(MEMBERSHIP / "pre-kafka-19468-NoRebalanceWithoutCause.itf.json", cluster=cluster)
    assert not result.agreed and len(result.steps) == 11
    assert result.reordered == ("step 7 taken right after step 3",)  # the initialization follows its heartbeat
    last = result.steps[-1]
    assert last.requests == ["ShareGroupHeartbeat(memberEpoch=2, subscribedTopicNames=null)"]
    assert "groupEpoch" in {d.field for d in last.differences}
    # the broker answers at the epoch it gave the subscription change: no rebalance (4.1.2 bumps it)
    changed = result.steps[7]
    assert changed.requests == ["ShareGroupHeartbeat(memberEpoch=1, subscribedTopicNames=t0)"]
    assert last.answered["memberEpoch"] == changed.answered["memberEpoch"]
    assert changed.observed["members"]["m0"]["assignment"] == "t0-0"


def test_kafka_19233_is_fixed_on_the_pinned_release_a_rejoin_at_epoch_0_is_accepted(cluster: Cluster) -> None:
    result = drive_trace(MEMBERSHIP / "pre-kafka-19233-EveryMemberJoins.itf.json", cluster=cluster)
    assert not result.agreed and len(result.steps) == 14
    rejoin = result.steps[-1]
    assert rejoin.requests == ["ShareGroupHeartbeat(memberEpoch=0, subscribedTopicNames=t0)"]
    assert rejoin.answered["error"] == "NONE"
    assert ("response.error", "FENCED_MEMBER_EPOCH", "NONE") in {
        (d.field, d.model, d.broker) for d in rejoin.differences
    }


def test_a_wrong_mapping_makes_the_drive_diverge(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """Partitions read back swapped: the broker's first two-member assignment no longer matches."""
    right = ConsumerGroup.partitions
    monkeypatch.setattr(ConsumerGroup, "partitions", lambda self, tps: {1 - p for p in right(self, tps)})
    result = drive_trace(KIP848, cluster=cluster)
    assert not result.agreed
    assert result.verdict == "diverged at step 9 (HandleHeartbeat(consumer=1, error='NONE'))"
    fields = {d.field for d in result.steps[-1].differences}
    assert fields == {"members.c0-0.targetAssignment", "members.c1-0.targetAssignment"}


def test_a_drive_writes_its_result_next_to_the_trace_and_exits_0(cluster: Cluster, kmc, tmp_path: Path) -> None:
    """On a running cluster (`--cluster`, as `kmc cluster start` leaves one): it is used and left running."""
    trace = tmp_path / KIP848.name
    shutil.copy(KIP848, trace)
    code, out, err = kmc("drive", trace, "--cluster", cluster.run_dir, "--no-progress")
    assert code == 0, out + err
    assert all(node.running() for node in cluster.nodes)
    written = json.loads((tmp_path / "kip-848-NoDoubleClientAssignment.drive-4.3.1.json").read_text())
    assert (written["agreed"], written["violated_on_broker"], written["steps_driven"]) == (True, True, 29)


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        ("replication/kip-101-StrongIsr.itf.json", "model replication has no driver"),
        ("consumer-delivery/eos-v2-ProcessedAtMostOnce.itf.json", "the classic protocol's rebalance is one abstract"),
        ("producer/leader-change-NoDuplicates.itf.json", "action ElectLeader cannot be driven"),
        ("transactions/pre-kafka-14884-OpenTransactionKnownToCoordinator.itf.json", "answer cannot be held back"),
        ("group/kafka-8653-RebalanceCompletes.itf.json", "cannot be driven"),
        ("group/nowhere.itf.json", "no trace at"),
        ("share-group/pre-kafka-19476-terminal-FinishedStaysFinished.itf.json", "LogStartOffsetMove cannot be driven"),
        ("share-group/pre-kafka-19476-expired-lock-AcquiredRecordHasLock.itf.json", "AcquisitionLockExpire cannot"),
        ("share-group/pre-kafka-18084-AcquiredRecordHasLock.itf.json", "answers the acknowledgement only once"),
    ],
)
def test_a_trace_that_cannot_be_driven_is_refused_before_anything_starts(trace: str, message: str, kmc) -> None:
    code, _out, err = kmc("drive", COUNTEREXAMPLES / trace, "--no-progress")
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("trace", "release", "message"),
    [
        (
            KIP848,
            "3.6.2",
            "the KIP-848 protocol (ConsumerGroupHeartbeat, early access in 3.7) needs Kafka 3.7.0 or later",
        ),
        (
            COUNTEREXAMPLES / "transactions" / "pre-kafka-18464-FencedOnlyByANewerProducer.itf.json",
            "3.6.2",
            "needs Kafka 4.0.0",
        ),
        (STATIC, "3.2.3", "production-ready from Kafka 3.3.0: 3.2.3 is older"),
        (
            COUNTEREXAMPLES / "streams-group" / "kafka-4.1-EveryMemberJoins.itf.json",
            "4.0.2",
            "streams groups (StreamsGroupHeartbeat, early access in 4.1) need Kafka 4.1.0 or later",
        ),
    ],
)
def test_a_release_the_driver_cannot_speak_to_is_refused_before_anything_starts(
    trace: Path, release: str, message: str, kmc, tmp_path: Path
) -> None:
    code, _out, err = kmc("drive", trace, "--kafka-version", release, "--run-dir", tmp_path / "run", "--no-progress")
    assert (code, len(err.strip().splitlines())) == (2, 1)
    assert message in err
    assert not (tmp_path / "run").exists()


def test_a_cluster_that_is_not_running_is_refused(kmc, tmp_path: Path) -> None:
    code, _out, err = kmc("drive", KIP848, "--cluster", tmp_path, "--no-progress")
    assert code == 2
    assert "is not a run directory of kmc" in err


def test_every_action_of_the_driven_models_is_performed_or_listed() -> None:
    from kmc.models.consumer_delivery.config import ACTION_ARGS as DELIVERY_ACTIONS
    from kmc.models.consumer_membership.config import ACTION_ARGS as CONSUMER_MEMBERSHIP_ACTIONS
    from kmc.models.group.config import ACTION_ARGS as GROUP_ACTIONS
    from kmc.models.group_kip848.config import ACTION_ARGS as KIP848_ACTIONS
    from kmc.models.producer.config import ACTION_ARGS as PRODUCER_ACTIONS
    from kmc.models.share_group.config import ACTION_ARGS as SHARE_ACTIONS
    from kmc.models.share_group_membership.config import ACTION_ARGS as MEMBERSHIP_ACTIONS
    from kmc.models.share_session.config import ACTION_ARGS as SESSION_ACTIONS
    from kmc.models.streams_group.config import ACTION_ARGS as STREAMS_ACTIONS
    from kmc.models.transactions.config import ACTION_ARGS as TRANSACTIONS_ACTIONS

    assert set(ProducerDriver.not_driven) <= set(PRODUCER_ACTIONS)
    assert set(TransactionsDriver.not_driven) <= set(TRANSACTIONS_ACTIONS)
    assert set(GroupDriver.not_driven) <= set(GROUP_ACTIONS)
    assert set(Kip848Driver.not_driven) <= set(KIP848_ACTIONS)
    assert set(DeliveryDriver.not_driven) <= set(DELIVERY_ACTIONS)
    assert set(MembershipDriver.not_driven) <= set(CONSUMER_MEMBERSHIP_ACTIONS)
    assert set(StreamsGroupDriver.not_driven) <= set(STREAMS_ACTIONS)
    assert set(ShareGroupDriver.not_driven) <= set(SHARE_ACTIONS)
    assert set(ShareSessionDriver.not_driven) <= set(SESSION_ACTIONS)
    assert set(ShareGroupMembershipDriver.not_driven) <= set(MEMBERSHIP_ACTIONS)
    done, driver = load(KIP848)
    assert driver is Kip848Driver and done.model.name == "group-kip848"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"trace": "group/static-1aa00f68-NoLiveConsumerFenced.itf.json", "expect": "reproduces"}, "needs a name"),
        ({"name": "x", "expect": "reproduces"}, "needs a trace"),
        ({"name": "x", "trace": "group/missing.itf.json", "expect": "reproduces"}, "no trace at"),
        ({"name": "x", "trace": "group/static-1aa00f68-NoLiveConsumerFenced.itf.json", "expect": "holds"}, "'expect'"),
        ({"name": "x", "trace": "t", "expect": "fixed", "release": "4.0.2"}, "unknown key(s) release"),
    ],
)
def test_a_suite_drive_entry_that_contradicts_itself_is_refused(raw: dict, message: str) -> None:
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_drive(raw, COUNTEREXAMPLES, "suite.toml [[drive]] 1")


def test_the_report_shows_a_drive_beside_the_model_s_steps(kmc, tmp_path: Path) -> None:
    out = tmp_path / "kip848.html"
    code, _out, err = kmc("render", KIP848, "-o", out)
    assert code == 0, err
    page = out.read_text()
    assert "Driven on Kafka 4.3.1: agreed at every step: NoDoubleClientAssignment violated on the real broker" in page
    assert "&#10003; on Kafka 4.3.1" in page
    assert "ConsumerGroupHeartbeat(memberEpoch=3, topicPartitions=[])" in page


def test_a_drive_result_that_is_not_one_is_refused(kmc, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"steps": 3}')
    code, _out, err = kmc("render", KIP848, "-o", tmp_path / "x.html", "--drive", bogus)
    assert code == 2
    assert "is not a `kmc drive` result" in err


def test_show_says_a_drive_result_is_a_driven_trace(kmc) -> None:
    result = KIP848.with_name("kip-848-NoDoubleClientAssignment.drive-4.3.1.json")
    code, out, _err = kmc("show", result)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        f"{KIP848.relative_to(COUNTEREXAMPLES.parent)}: driven on Kafka 4.3.1: agreed at every step: "
        "NoDoubleClientAssignment violated on the real broker"
    )
    assert "Step 23: HandleHeartbeat(consumer=1, error='NONE')  [agreed]" in lines
    assert "  -> ConsumerGroupHeartbeat(memberEpoch=3, topicPartitions=[])" in lines


def test_sigterm_ends_a_drive_with_the_steps_so_far_kept_and_its_cluster_stopped(runs: Path, tmp_path: Path) -> None:
    run_dir, out = runs / "terminated-drive", tmp_path / "result.json"
    argv = [sys.executable, "-m", "kmc.checker.cli", "drive", str(STATIC), "--run-dir", str(run_dir), "--out", str(out)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    while "  2 agreed" not in (line := proc.stderr.readline()):  # the JoinGroup parked for the initial delay
        assert line, "the drive ended before its second step"
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, (stdout, stderr)
    assert stderr.strip().splitlines()[-1] == "kmc: interrupted (SIGTERM)"
    kept = json.loads(out.read_text())
    assert kept["interrupted"] == "SIGTERM" and kept["verdict"].startswith("interrupted (SIGTERM) after step")
    assert subprocess.run(["pgrep", "-f", str(run_dir)], capture_output=True).stdout == b""


def test_a_suite_drive_that_diverges_unexpectedly_says_what_differed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An entry expected to reproduce that diverges names the step and the fields that differed, so
    a failure seen once in CI can be read from its one line."""
    steps = [
        StepResult(1, "InitProducerId(client=0)", [], True, [], {}, {}),
        StepResult(
            2,
            "AddPartitionsToTxn(client=0, partition=0)",
            [],
            False,
            [Difference("response.error", "CONCURRENT_TRANSACTIONS", "NONE")],
            {},
            {},
        ),
    ]

    def fake_drive(trace: Path, release: str | None, run_dir: Path, shared: object) -> DriveResult:
        return DriveResult(str(trace), "transactions", None, None, "4.3.1", steps=steps, total_steps=3)

    monkeypatch.setattr(kmc.cluster.drive.run, "drive_trace", fake_drive)
    ok, message = DriveJob("torn", KIP848, "reproduces", None).run(tmp_path)
    assert not ok
    assert message == (
        "expected the trace to be reproduces on the broker, but it fixed: Kafka 4.3.1: diverged at step 2 "
        "(AddPartitionsToTxn(client=0, partition=0)) (2 of 3 steps); at step 2: response.error: model "
        "'CONCURRENT_TRANSACTIONS', broker 'NONE'"
    )


def test_suite_drives_that_need_the_same_cluster_share_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`kmc ci`'s drives of one release, settings and features run on one cluster, started by the first
    and stopped after the last even when one fails or raises; each is judged and reported alone, in
    the suite's order. Starts and drives are faked: no node runs."""
    events: list[str] = []
    failures: dict[Path, Exception] = {PRODUCER_CACHE_1: UserError("the broker stopped answering")}

    @contextmanager
    def fake_started(run_dir: Path, spec: ClusterSpec) -> Iterator[object]:
        events.append(f"start {run_dir.name}")
        try:
            yield SimpleNamespace(nodes=[SimpleNamespace(resume=lambda: None, running=lambda: True)])
        finally:
            events.append(f"stop {run_dir.name}")

    def fake_drive(trace: Path, release: str | None, run_dir: Path, shared: SharedCluster) -> DriveResult:
        done, driver = load(trace)
        shared.cluster(cluster_spec(driver, requested(release)))
        if trace in failures:
            raise failures[trace]
        events.append(f"drive {done.model.name}")
        return DriveResult(str(trace), done.model.name, None, None, "4.3.1", violated_on_broker=True)

    def entries(traces: list[Path]) -> list[Entry]:
        return [Entry(t.name, None, "", job=DriveJob(t.name, t, "reproduces", None)) for t in traces]

    monkeypatch.setattr(kmc.cluster.cluster, "started", fake_started)
    monkeypatch.setattr(kmc.cluster.drive.run, "drive_trace", fake_drive)
    traces = [KIP848, PRODUCER_NER, PRODUCER_CACHE_1, KIP1251]
    reported: list[str] = []
    outcomes = run_suite(entries(traces), tmp_path, lambda o: reported.append(o.entry.name))
    assert reported == [o.entry.name for o in outcomes] == [t.name for t in traces]
    assert [o.ok for o in outcomes] == [True, True, False, True]
    assert outcomes[2].message == "error: the broker stopped answering"
    assert events == [
        "start kafka-4.3.1-consumer-delivery+group-kip848",
        "drive group-kip848",
        "drive consumer-delivery",
        "stop kafka-4.3.1-consumer-delivery+group-kip848",
        "start kafka-4.3.1-producer",
        "drive producer",
        "stop kafka-4.3.1-producer",
    ]
    events.clear()
    failures[KIP848] = RuntimeError("a driver's bug")
    with pytest.raises(RuntimeError):
        run_suite(entries([KIP848, KIP1251]), tmp_path)
    assert events == [
        "start kafka-4.3.1-consumer-delivery+group-kip848",
        "stop kafka-4.3.1-consumer-delivery+group-kip848",
    ]
