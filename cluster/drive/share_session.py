"""The share-session driver: the model's share consumer played against real brokers, one model broker
per node, with ShareFetch on a share session per broker.

The driver is the model's consumer. A ``ShareFetch`` step queues the request the trace's consumer
built for each broker; the broker takes it at the ``ShareFetchResponse`` step, where the driver sends
it -- its epoch, the partition added or forgotten, the acknowledgements (ACCEPT) of the records the
application held from that broker -- and compares the answer: its error, and the partition's data
(records acquired, NOT_LEADER_OR_FOLLOWER with the leader it names, or no data). A request queued for
a broker that restarts before it is taken is lost with its connection, as the model says.

The model's epochs are relative (only their equality matters); the driver keeps each session's real
epoch as Kafka's client does, from the answers it gets. The broker's sessions are shown by probing:
after each step, every broker that does not lead the partition and holds a session of the consumer
is sent a ShareFetch at its next epoch with nothing to add or forget, and lists the partition in its
answer (NOT_LEADER_OR_FOLLOWER) only if its session still holds it. A probe acquires nothing (the
broker leads nothing of it) and moves the session's epoch, which the driver follows.

A restart is a crash of the node (SIGKILL) and a start; the topic then has one replica, so the node
leads the partition again, as the model's restart says. A leader change reorders the replicas (an
AlterPartitionReassignments with the same two) and elects the preferred one (ElectLeaders); the topic
then has the two model brokers as replicas, and the old leader stays up as a follower.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Sequence
from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model
from kmc.cluster.drive.base import EpochNames, Performed
from kmc.cluster.drive.records import NAMES_UP_TO, batch, produce_answer, produce_request
from kmc.cluster.drive.session import GROUP_RESOURCE, RETRIABLE, Session
from kmc.cluster.drive.wire import BrokerGoneError, error_name, java_ints, java_list, message
from kmc.cluster.release import Release
from kmc.models.share_session.state import FINAL_EPOCH, INITIAL_EPOCH, NONE, ShareFetchRequest

PARTITION = 0
LOCK_DURATION_MS = 60_000
"""The longest lock a group may set: no record the consumer holds is released during a drive."""
RECORDS = 40
"""Records written before the first step, one batch each: every fetch from the leader acquires one."""
FIRST_SHARE_GROUPS = Release(4, 2, 0)
JOIN_TIMEOUT_S = 30.0
FETCH_ATTEMPTS = 6
"""ShareFetches of the leader (each waiting up to 2 s) before an answer without records is the broker's:
a share partition on a leader that just started is loading its state."""
ACCEPT = 1
PREFERRED_ELECTION = 0


class ShareSessionDriver:
    model_name = "share-session"
    settings: ClassVar[dict[str, str]] = {"group.share.max.record.lock.duration.ms": str(LOCK_DURATION_MS)}
    not_driven: ClassVar[dict[str, str]] = {}
    unseen = (
        "sessions[].epoch: the broker's epochs are not shown (the driver follows them from its answers); "
        "whether a session holds the partition is probed on every broker that does not lead it",
        "handlers, requests, fetched, processing, acknowledgementsToSend, fetchMoreRecords, metadataLeader, "
        "metadataLeaderEpoch, leaderCache: the consumer's, played by the driver",
        "leaderEpoch, restarts, leaderChanges: Kafka's leader epochs are counted differently; the counters are the "
        "model's",
    )
    unseen_properties: ClassVar[dict[str, str]] = {
        "NoAcknowledgementsOnTheInitialEpoch": "it reads the request the consumer (the driver) built, which the broker "
        "takes at the next step: the witness NoRequestRefused drives it to the broker's answer",
    }
    settle_s = 0.0
    max_drive_s = LOCK_DURATION_MS / 1000

    @classmethod
    def check_release(cls, release: Release, model: Any) -> None:
        release.require(FIRST_SHARE_GROUPS, "share groups (ShareFetch, production-ready in 4.2) need")

    @classmethod
    def check_trace(cls, actions: Sequence[Action | None]) -> None:
        names = [a.name for a in actions if a is not None]
        if "BrokerRestart" in names and "LeaderChange" in names:
            raise UserError(
                "a trace with both a restart and a leader change: a restarted node leads the partition again only "
                "when it is the topic's one replica, and a leader change needs two"
            )

    def __init__(self, session: Session, model: Model, initial: Any) -> None:
        self.session = session
        self.model = model
        self.nodes = sorted(session.brokers)[: model.config.brokers]
        """model broker -> node id"""
        self.group = f"kmc-drive-share-session-{uuid.uuid4().hex[:12]}"
        self.topic = f"{self.group}-topic"
        self.topic_id: Any = None
        self.member = str(uuid.uuid4())
        self.next_epochs: dict[int, int] = {}
        """model broker -> the real epoch of the consumer's next request to it (Kafka's ShareSessionHandler)"""
        self.queued: dict[int, tuple[ShareFetchRequest, list[int]]] = {}
        """model broker -> the request the consumer built for it, with the offsets it acknowledges"""
        self.fetched: dict[int, list[int]] = {}
        """model broker -> offsets acquired from it, in the fetch buffer"""
        self.processing: dict[int, list[int]] = {}
        self.acknowledging: dict[int, list[int]] = {}
        self.replicas = 1
        self.probed: list[int] = []
        """brokers not leading the partition whose session the model says the consumer has"""
        self.epochs = EpochNames()

    def plan(self, actions: list[Action | None]) -> None:
        self.replicas = 2 if any(a is not None and a.name == "LeaderChange" for a in actions) else 1

    # -- setup -------------------------------------------------------------------------------------
    def setup(self) -> None:
        session = self.session
        session.create_topic(self.topic, 1, self.replicas, replicas=self.nodes[: self.replicas])
        described = session.describe_topic(self.topic)
        if described is None:
            raise UserError(f"topic {self.topic} has no id in the metadata")
        self.topic_id = described.topicId()
        self._await_leader(0)
        producer = session.connection("producer", self.nodes[0])
        for record in range(RECORDS):
            data = produce_request(self.topic, PARTITION, batch(record, -1, -1, -1), -1)
            answer = producer.call("PRODUCE", data, min(NAMES_UP_TO, producer.version("PRODUCE")))
            if produce_answer(answer) != ("NONE", record):
                raise UserError(f"writing record {record} failed: {produce_answer(answer)}")
        configs = {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": str(LOCK_DURATION_MS)}
        session.set_configs(GROUP_RESOURCE, self.group, configs)
        self._join()

    def _join(self) -> None:
        """ShareGroupHeartbeat until the consumer's member is assigned the partition."""
        coordinator = [self.session.find_coordinator(self.group, 0)]
        epoch = [0]

        def attempt() -> bool | None:
            request = message("ShareGroupHeartbeatRequestData").setGroupId(self.group).setMemberId(self.member)
            request.setMemberEpoch(epoch[0])
            if epoch[0] == 0:
                request.setSubscribedTopicNames(java_list([self.topic]))
            answer = self.session.connection("heartbeat", coordinator[0]).call("SHARE_GROUP_HEARTBEAT", request)
            error = error_name(answer.errorCode())
            if error in RETRIABLE:
                coordinator[0] = self.session.find_coordinator(self.group, 0)
                return None
            if error != "NONE":
                raise UserError(f"the consumer could not join the share group: {error}")
            epoch[0] = int(answer.memberEpoch())
            assignment = answer.assignment()
            if assignment is None:
                return None
            return True if any(t.topicId().equals(self.topic_id) for t in assignment.topicPartitions()) else None

        self.session.until("assign the partition to the consumer", attempt, JOIN_TIMEOUT_S)

    def _await_leader(self, broker: int) -> None:
        """Until every live node's metadata names ``broker``'s node the partition's leader."""
        node = self.nodes[broker]

        def known() -> bool | None:
            for asked in set(self.nodes) - self.session.down:
                leaders = self.session.leaders(self.topic, 1, asked)
                if leaders is None or leaders[PARTITION] != node:
                    return None
            return True

        self.session.until(f"make node {node} the partition's leader", known)

    # -- steps -------------------------------------------------------------------------------------
    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        args = action.args
        if action.name == "ShareFetch":
            for broker in before.acknowledgementsToSend - after.acknowledgementsToSend:
                request = after.requests[broker]
                if request is None or not request.acknowledgements:  # failed in the consumer
                    self.acknowledging.pop(broker, None)
            sent = []
            for broker in args["nodes"]:
                request = after.requests[broker]
                acked = self.acknowledging.pop(broker, []) if request.acknowledgements else []
                self.queued[broker] = (request, acked)
                sent.append(f"(queued for node {self.nodes[broker]}: {_text(after.requests[broker])})")
            return Performed(requests=sent)
        if action.name == "ShareFetchResponse":
            return self._share_fetch(args["node"], args["error"], args["partitionError"], after)
        if action.name == "Poll":
            for broker in args["acknowledged"]:
                self.acknowledging.setdefault(broker, []).extend(self.processing.pop(broker, []))
            self.processing = {b: self.fetched.pop(b) for b in list(self.fetched)}
            return Performed(requests=["(the application's poll: no request)"])
        if action.name == "BrokerRestart":
            return self._restart(args["node"], after.leader)
        if action.name == "LeaderChange":
            return self._leader_change(args["leader"])
        if action.name == "MetadataUpdate":
            leaders = self.session.leaders(self.topic, 1)
            leader = None if leaders is None else self._broker_of(leaders[PARTITION])
            answered = {"leader": leader}
            return Performed(requests=["Metadata"], answered=answered, expected={"leader": args["leader"]})
        raise UserError(f"the share-session driver has no mapping for {action.name}")

    def _share_fetch(self, broker: int, error: str, partition_error: str, after: Any) -> Performed:
        request, acked = self.queued.pop(broker)
        expected = {"error": error, "partition": partition_error or "(none)"}
        if partition_error == "NOT_LEADER_OR_FOLLOWER":
            expected["currentLeader"] = after.leader
        for _attempt in range(FETCH_ATTEMPTS):
            sent, answered = self._send(broker, request, acked)
            if not (expected["partition"] == NONE and answered == {"error": NONE, "partition": "(none)"}):
                break
            # the session is open now: the next request continues it
            request, acked = ShareFetchRequest(1, False, False, False), []
        return Performed(requests=[sent], answered=answered, expected=expected)

    def _send(self, broker: int, request: ShareFetchRequest, acked: list[int]) -> tuple[str, dict[str, Any]]:
        epoch = {INITIAL_EPOCH: 0, FINAL_EPOCH: FINAL_EPOCH}.get(request.shareSessionEpoch)
        if epoch is None:
            epoch = self.next_epochs.get(broker, 0)
        data = message("ShareFetchRequestData").setGroupId(self.group).setMemberId(self.member)
        data.setShareSessionEpoch(epoch).setMinBytes(1).setMaxBytes(1 << 20).setMaxRecords(1).setBatchSize(1)
        data.setMaxWaitMs(2_000 if broker == self._leader_broker() and epoch != FINAL_EPOCH else 0)
        if request.added or acked:
            partition = message("ShareFetchRequestData$FetchPartition").setPartitionIndex(PARTITION)
            for offset in acked:
                ack = message("ShareFetchRequestData$AcknowledgementBatch").setFirstOffset(offset).setLastOffset(offset)
                ack.setAcknowledgeTypes(_bytes([ACCEPT]))
                partition.acknowledgementBatches().add(ack)
            topic = message("ShareFetchRequestData$FetchTopic").setTopicId(self.topic_id)
            topic.partitions().add(partition)
            data.topics().add(topic)
        if request.forgotten:
            forgotten = message("ShareFetchRequestData$ForgottenTopic").setTopicId(self.topic_id)
            forgotten.setPartitions(java_ints([PARTITION]))
            data.forgottenTopicsData().add(forgotten)
        conn = self.session.connection(f"consumer-{broker}", self.nodes[broker])
        answer = conn.call("SHARE_FETCH", data)
        answered = self._answer(answer)
        self._follow_epoch(broker, epoch, answered["error"])
        if answered.get("records"):
            self.fetched.setdefault(broker, []).extend(answered.pop("records"))
        parts = [f"shareSessionEpoch={epoch}"]
        parts += ["adds the partition"] if request.added else []
        parts += ["forgets the partition"] if request.forgotten else []
        parts += [f"acknowledges {acked} (ACCEPT)"] if acked else []
        return f"ShareFetch to node {self.nodes[broker]} ({', '.join(parts)})", answered

    def _answer(self, answer: Any) -> dict[str, Any]:
        """The answer in the model's terms: its error, and the partition's data."""
        answered: dict[str, Any] = {"error": error_name(answer.errorCode()), "partition": "(none)"}
        for topic_answer in answer.responses():
            for p in topic_answer.partitions():
                error = error_name(p.errorCode())
                offsets = [o for r in p.acquiredRecords() for o in range(int(r.firstOffset()), int(r.lastOffset()) + 1)]
                if error == NONE and not offsets:
                    continue  # the partition's acknowledgements answered, no records
                answered["partition"] = error
                if error == "NOT_LEADER_OR_FOLLOWER":
                    answered["currentLeader"] = self._broker_of(int(p.currentLeader().leaderId()))
                if offsets:
                    answered["records"] = offsets
        return answered

    def _follow_epoch(self, broker: int, sent: int, error: str) -> None:
        """Kafka's ShareSessionHandler: not found or another epoch starts again at 0; a close forgets the
        handler; anything else moves to the next epoch."""
        if error in ("SHARE_SESSION_NOT_FOUND", "INVALID_SHARE_SESSION_EPOCH"):
            self.next_epochs[broker] = 0
        elif sent == FINAL_EPOCH:
            self.next_epochs.pop(broker, None)
        else:
            self.next_epochs[broker] = sent + 1

    def _restart(self, broker: int, leader: int) -> Performed:
        node = self.nodes[broker]
        self.session.stop_node(node, signal.SIGKILL, "a broker restart")
        address = self.session.brokers[node]
        for name, conn in list(self.session.connections.items()):
            if f"{conn.host}:{conn.port}" == address:
                conn.close()
                del self.session.connections[name]
        if broker in self.queued:  # lost with the connection, acknowledgements and all: the next opens a session
            del self.queued[broker]
            self.next_epochs[broker] = 0
        self.session.start_nodes([node])
        self._await_leader(leader)
        return Performed(requests=[f"(node {node} killed and started again)"])

    def _leader_change(self, leader: int) -> Performed:
        order = [self.nodes[leader], *[n for n in self.nodes[: self.replicas] if n != self.nodes[leader]]]
        partition = message("AlterPartitionReassignmentsRequestData$ReassignablePartition").setPartitionIndex(PARTITION)
        partition.setReplicas(java_ints(order))
        topic = message("AlterPartitionReassignmentsRequestData$ReassignableTopic").setName(self.topic)
        topic.partitions().add(partition)
        request = message("AlterPartitionReassignmentsRequestData").setTimeoutMs(30_000)
        request.topics().add(topic)
        answer = self.session.admin().call("ALTER_PARTITION_REASSIGNMENTS", request)
        if answer.errorCode() != 0:
            raise UserError(f"reordering the replicas failed: {error_name(answer.errorCode())}")
        elect = message("ElectLeadersRequestData").setElectionType(PREFERRED_ELECTION).setTimeoutMs(30_000)
        partitions = message("ElectLeadersRequestData$TopicPartitions").setTopic(self.topic)
        partitions.setPartitions(java_ints([PARTITION]))
        elect.topicPartitions().add(partitions)
        self.session.admin().call("ELECT_LEADERS", elect)
        self._await_leader(leader)
        return Performed(requests=[f"AlterPartitionReassignments(replicas={order}), ElectLeaders(PREFERRED)"])

    # -- projections -------------------------------------------------------------------------------
    def expected(self, state: Any) -> dict[str, Any]:
        """The leader, and whether each session of a broker that does not lead the partition holds it;
        ``observed`` then probes those brokers."""
        self.probed = [b for b, session in enumerate(state.sessions) if session is not None and b != state.leader]
        sessions = {str(b): state.sessions[b].holdsPartition for b in self.probed}
        return {"leader": state.leader, "staleSessions": sessions}

    def observed(self) -> dict[str, Any]:
        leader = self._leader_broker()
        sessions: dict[str, bool | str] = {}
        for broker in self.probed:
            _sent, answered = self._send(broker, ShareFetchRequest(1, False, False, False), [])
            if answered["error"] != NONE:
                sessions[str(broker)] = answered["error"]
            else:
                sessions[str(broker)] = answered["partition"] == "NOT_LEADER_OR_FOLLOWER"
        return {"leader": leader, "staleSessions": sessions}

    def _leader_broker(self) -> int | None:
        try:
            leaders = self.session.leaders(self.topic, 1)
        except BrokerGoneError:
            return None
        return None if leaders is None else self._broker_of(leaders[PARTITION])

    def _broker_of(self, node: int) -> int | None:
        return self.nodes.index(node) if node in self.nodes else None

    def close(self) -> None:
        self.session.close()


def _text(request: ShareFetchRequest) -> str:
    from kmc.models.share_session.drawing import request_text

    return request_text(request)


def _bytes(values: list[int]) -> Any:
    from kmc.cluster.drive.wire import java

    return java("java.util.ArrayList")([java("java.lang.Byte")(v) for v in values])
