"""A drive's view of the cluster: connections by name, and the few admin requests every driver needs
(create a topic, find a coordinator, wait for the metadata), all bounded in time."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kmc.checker.errors import UserError
from kmc.cluster.drive.wire import BrokerGoneError, Connection, error_name, java_ints, java_list, message

SETTLE_TIMEOUT_S = 30.0
NODE_STOP_TIMEOUT_S = 60.0
NODE_START_TIMEOUT_S = 60.0
RETRY_PAUSE_S = 0.1
TOPIC_RESOURCE = 2
GROUP_RESOURCE = 32
RESOURCE_KINDS = {TOPIC_RESOURCE: "topic", GROUP_RESOURCE: "group"}
RETRIABLE = {
    "COORDINATOR_NOT_AVAILABLE",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "NOT_COORDINATOR",
    "LEADER_NOT_AVAILABLE",
    "UNKNOWN_TOPIC_OR_PARTITION",
    "NOT_LEADER_OR_FOLLOWER",
}


@dataclass
class Session:
    """The brokers of one cluster (node id -> host:port) and the connections a drive opened to them."""

    brokers: dict[int, str]
    release: str
    connections: dict[str, Connection] = field(default_factory=dict)
    cluster: Any = None
    """The cluster, when the drive started it (faults need its nodes); None for a cluster running apart."""
    down: set[int] = field(default_factory=set)
    """Nodes a step shut down."""

    def connection(self, name: str, node: int, pinned_versions: dict[str, int] | None = None) -> Connection:
        """The connection called ``name`` (a client of the trace) to ``node``, opened on first use."""
        conn = self.connections.get(name)
        if conn is not None and conn.sock is not None and (conn.host, conn.port) == _split(self.brokers[node]):
            return conn
        if conn is not None:
            conn.close()
        conn = self.connections[name] = Connection.open(self.brokers[node], pinned_versions)
        return conn

    def admin(self) -> Connection:
        return self.connection("admin", min(set(self.brokers) - self.down))

    def stop_node(self, node_id: int, sig: int, what: str) -> None:
        """Stop a node of the cluster the drive started: SIGTERM is a controlled shutdown, SIGKILL a
        crash; ``what`` names the step for the error a cluster running apart gets."""
        if self.cluster is None:
            raise UserError(f"{what} needs a cluster the drive starts itself (not --cluster)")
        node = self.cluster.node(node_id)
        node.signal(sig)
        if node.process is not None:
            node.process.wait(timeout=NODE_STOP_TIMEOUT_S)

    def start_nodes(self, node_ids: list[int]) -> None:
        """Start again the nodes a drive stopped, ready for the next drive."""
        for node_id in node_ids:
            node = self.cluster.node(node_id)
            self.cluster.start_node(node)
            node.wait_ready(time.monotonic() + NODE_START_TIMEOUT_S)

    def close(self) -> None:
        for conn in self.connections.values():
            conn.close()
        self.connections.clear()

    def close_connection(self, name: str) -> None:
        """Close one named connection, if open: a client that crashed or went away sends nothing more."""
        conn = self.connections.pop(name, None)
        if conn is not None:
            conn.close()

    def until(self, what: str, attempt: Callable[[], Any | None], timeout_s: float = SETTLE_TIMEOUT_S) -> Any:
        """Call ``attempt`` until it returns something (bounded in time): the cluster settling."""
        deadline = time.monotonic() + timeout_s
        while True:
            got = attempt()
            if got is not None:
                return got
            if time.monotonic() > deadline:
                raise BrokerGoneError(f"the cluster did not {what} within {timeout_s:.0f} s")
            time.sleep(RETRY_PAUSE_S)

    def create_topic(
        self,
        topic: str,
        partitions: int,
        replication_factor: int,
        configs: dict[str, str] | None = None,
        replicas: list[int] | None = None,
    ) -> None:
        """Create a topic and wait for its leaders; ``replicas``: every partition's replicas, the
        first its preferred leader."""
        request = message("CreateTopicsRequestData").setTimeoutMs(int(SETTLE_TIMEOUT_S * 1000))
        creatable = message("CreateTopicsRequestData$CreatableTopic").setName(topic)
        if replicas is None:
            creatable.setNumPartitions(partitions).setReplicationFactor(replication_factor)
        else:
            creatable.setNumPartitions(-1).setReplicationFactor(-1)
            for index in range(partitions):
                placed = message("CreateTopicsRequestData$CreatableReplicaAssignment").setPartitionIndex(index)
                creatable.assignments().add(placed.setBrokerIds(java_ints(replicas)))
        for key, value in (configs or {}).items():
            creatable.configs().add(
                message("CreateTopicsRequestData$CreatableTopicConfig").setName(key).setValue(value)
            )
        request.topics().add(creatable)
        answer = self.admin().call("CREATE_TOPICS", request, timeout_s=SETTLE_TIMEOUT_S + 5)
        for result in answer.topics():
            error = error_name(result.errorCode())
            if error not in ("NONE", "TOPIC_ALREADY_EXISTS"):
                raise UserError(f"cannot create topic {topic}: {error} {result.errorMessage() or ''}".strip())
        for node in sorted(set(self.brokers) - self.down):
            # every broker must know the leaders before a request may reach it
            self.until(
                f"show topic {topic}'s leaders on node {node}", lambda node=node: self.leaders(topic, partitions, node)
            )

    def applied_everywhere(self) -> None:
        """Until every live broker has applied the metadata written so far, its coordinators too. A
        broker shows a new topic in its Metadata answers before its group coordinator has it (on a
        cluster that ran drives before, a heartbeat can reach the coordinator in between), and it
        applies metadata in order: a topic made now shows only once what came before is applied."""
        self.create_topic(f"kmc-drive-barrier-{uuid.uuid4().hex[:12]}", 1, 1)

    def set_topic_config(self, topic: str, key: str, value: str) -> None:
        """IncrementalAlterConfigs SET on a topic (a config a step changes for a moment)."""
        self.set_configs(TOPIC_RESOURCE, topic, {key: value})

    def set_configs(self, resource_type: int, name: str, configs: dict[str, str]) -> None:
        """IncrementalAlterConfigs SET of ``configs`` on one resource (a topic, a group)."""
        request = message("IncrementalAlterConfigsRequestData")
        resource = message("IncrementalAlterConfigsRequestData$AlterConfigsResource")
        resource.setResourceType(resource_type).setResourceName(name)
        for key, value in configs.items():
            config = message("IncrementalAlterConfigsRequestData$AlterableConfig").setName(key).setValue(value)
            resource.configs().add(config.setConfigOperation(0))
        request.resources().add(resource)
        for answered in self.admin().call("INCREMENTAL_ALTER_CONFIGS", request).responses():
            if answered.errorCode() != 0:
                shown = ", ".join(f"{k}={v}" for k, v in configs.items())
                kind = RESOURCE_KINDS[resource_type]
                raise UserError(f"cannot set {shown} on {kind} {name}: {error_name(answered.errorCode())}")

    def active_controller(self) -> int:
        """The KRaft quorum's leader (DescribeQuorum on ``__cluster_metadata``)."""
        request = message("DescribeQuorumRequestData")
        partition = message("DescribeQuorumRequestData$PartitionData").setPartitionIndex(0)
        topic = message("DescribeQuorumRequestData$TopicData").setTopicName("__cluster_metadata")
        request.topics().add(topic.setPartitions(java_list([partition])))
        for described in self.admin().call("DESCRIBE_QUORUM", request).topics():
            for p in described.partitions():
                return int(p.leaderId())
        return -1

    def describe_topic(self, topic: str, node: int | None = None) -> Any:
        """The topic as a Metadata answer describes it (asked of ``node``, else the admin's broker)."""
        request = message("MetadataRequestData")
        request.setTopics(java_list([message("MetadataRequestData$MetadataRequestTopic").setName(topic)]))
        conn = self.admin() if node is None else self.connection(f"metadata-{node}", node)
        return next((d for d in conn.call("METADATA", request).topics() if d.name() == topic), None)

    def live_brokers(self) -> set[int]:
        """The brokers the metadata lists: registered and not fenced by the controller."""
        answer = self.admin().call("METADATA", message("MetadataRequestData").setTopics(java_list([])))
        return {int(b.nodeId()) for b in answer.brokers()}

    def isr(self, topic: str, partition: int) -> list[int]:
        """The partition's in-sync replicas, as the metadata shows them."""
        described = self.describe_topic(topic)
        for p in described.partitions() if described is not None else ():
            if int(p.partitionIndex()) == partition:
                return sorted(int(node) for node in p.isrNodes())
        return []

    def leaders(self, topic: str, partitions: int, node: int | None = None) -> dict[int, int] | None:
        """The leader of each partition of ``topic`` (as ``node`` knows it), or None while one has none."""
        described = self.describe_topic(topic, node)
        if described is None or described.errorCode() != 0:
            return None
        leaders = {int(p.partitionIndex()): int(p.leaderId()) for p in described.partitions()}
        if len(leaders) == partitions and all(leader >= 0 for leader in leaders.values()):
            return leaders
        return None

    def find_coordinator(self, key: str, key_type: int) -> int:
        """The node coordinating ``key`` (key type 0: a group, 1: a transactional id)."""

        def attempt() -> int | None:
            request = message("FindCoordinatorRequestData").setKeyType(key_type)
            request.setCoordinatorKeys(java_list([key]))
            answer = self.admin().call("FIND_COORDINATOR", request)
            for found in answer.coordinators():
                if found.errorCode() == 0 and found.nodeId() in set(self.brokers) - self.down:
                    return int(found.nodeId())
                if error_name(found.errorCode()) not in RETRIABLE:
                    raise UserError(f"FindCoordinator for {key}: {error_name(found.errorCode())}")
            return None

        return self.until(f"name a coordinator for {key}", attempt)


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)
