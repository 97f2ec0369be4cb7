"""The group driver: the classic group protocol's consumers played against a real group coordinator
with JoinGroup, SyncGroup, Heartbeat, LeaveGroup and OffsetCommit, its state read back with
DescribeGroups.

A request travels when the trace says the coordinator handles it. JoinGroup and SyncGroup may be
parked by the coordinator until the rebalance completes: the driver keeps such a request in flight
and collects its answer at the step where the model's consumer is answered, and at every step checks
that no parked request was answered early. The initial rebalance delay (KIP-134) is the one timer a
trace waits for (``group.initial.rebalance.delay.ms``, short); sessions and rebalances last longer
than any drive. A coordinator failover (CoordinatorUnload, then CoordinatorLoad) is a controlled
shutdown of the node that leads the group's ``__consumer_offsets`` partition: another replica
becomes leader and loads the group from the log; the node is started again when the drive ends.
"""

from __future__ import annotations

import contextlib
import signal
import uuid
from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model
from kmc.cluster.drive.base import EpochNames, Performed
from kmc.cluster.drive.session import Session
from kmc.cluster.drive.wire import BrokerGoneError, Connection, error_name, java, java_list, message
from kmc.cluster.release import FIRST_4X, Release
from kmc.models.group.state import DEAD, Request, mentioned_member_ids

INITIAL_DELAY_MS = 1500
SESSION_TIMEOUT_MS = 60_000
REBALANCE_TIMEOUT_MS = 120_000
PROTOCOL_TYPE = "consumer"


class GroupDriver:
    model_name = "group"
    settings: ClassVar[dict[str, str]] = {"group.initial.rebalance.delay.ms": str(INITIAL_DELAY_MS)}
    not_driven: ClassVar[dict[str, str]] = {
        "RequestTimeout": "a client giving up a request it sent: the broker cannot show it",
        "RebalanceTimeout": "the join phase's timer while members are still missing; not driven yet",
        "SyncTimeout": "KAFKA-12890's sync timer; not driven yet",
        "SessionTimeout": "expiring one member while the others stay: not driven yet",
        "PendingMemberTimeout": "KIP-394's timer for a member that never rejoined: not driven yet",
        "NewMemberJoinTimeout": "a new member's join timer: not driven yet",
        "ConsumerPause": "a paused client seen by the coordinator as alive: not driven yet",
        "ConsumerStall": "the client's poll loop stalling: nothing the broker can see",
    }
    unseen = (
        "group.generationId, leaderId: DescribeGroups does not show them (compared in JoinGroup answers)",
        "group.pendingMembers, pendingSyncMembers, joinDelay, newMemberAdded, delayExtensionsLeft, stored: "
        "inside the coordinator",
        "group.members[]: only memberId, groupInstanceId and the assignment are shown (before 4.0 the "
        "assignment only while the group is Stable)",
        "consumers: the client's own state, held by the driver (it is the model's client)",
        "faults: the model's fault counter",
    )
    max_drive_s = SESSION_TIMEOUT_MS / 2000
    settle_s = 1.0
    unseen_properties: ClassVar[dict[str, str]] = {
        "StaticReplacementPersisted": "it reads the group record the coordinator stored, which DescribeGroups does "
        "not show (a failover does: NoLiveConsumerFenced)",
        "NoPartitionTwiceInGeneration": "it reads the stored group record too",
    }

    def __init__(self, session: Session, model: Model, initial: Any) -> None:
        self.session = session
        self.model = model
        self.config = model.config
        self.group = f"kmc-drive-{uuid.uuid4().hex[:12]}"
        self.topic = f"{self.group}-topic"
        self.epochs = EpochNames()
        self.real_ids: dict[str, str] = {}
        """model member id -> the broker's member id (a model id no longer mentioned is reused)"""
        self.model_ids: dict[str, str] = {}
        self.in_flight: dict[int, tuple[Connection, int, str]] = {}
        """consumer -> (connection, correlation id, api) of a request the coordinator has not answered"""
        self.coordinator = -1
        self.stopped_nodes: list[int] = []
        self.generation_offset = 0
        """the broker's generation minus the model's (the model shifts its generations down)"""
        self.mentioned: set[str] = set()
        """the model's member ids in the state before the step: a new one may name a new broker id"""
        self.instances: dict[str, str] = {}
        """group.instance.id -> the model's member id, in the state last expected"""

    # -- setup -------------------------------------------------------------------------------------
    def setup(self) -> None:
        self.session.create_topic(self.topic, max(self.config.partitions, 1), 1)
        self._find_coordinator()

    def _find_coordinator(self) -> None:
        self.coordinator = self.session.find_coordinator(self.group, 0)
        self.session.until("load the group's coordinator", lambda: None if "error" in self.observed() else True)

    def _connection(self, consumer: int) -> Connection:
        return self.session.connection(f"consumer-{consumer}", self.coordinator)

    # -- steps -------------------------------------------------------------------------------------
    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        name, args = action.name, action.args
        performed = Performed()
        self.mentioned = mentioned_member_ids(before)
        # the model renumbers its generations (the smallest becomes 1); the broker's stay as they are
        self.generation_offset += _renumbering(args.get("consumer"), before, after)
        if name in ("HandleJoinGroup", "HandleSyncGroup", "Heartbeat", "LeaveGroup", "OffsetCommit"):
            self._send(name, args["consumer"], before, after, performed)
        elif name == "ConsumerCrash":
            self._forget(args["consumer"])
            performed.requests.append("(the consumer's connection closed; it sends nothing more)")
        elif name == "CoordinatorUnload":
            self._unload(performed)
        elif name == "CoordinatorLoad":
            self._load(performed)
        wait_s = INITIAL_DELAY_MS / 1000 + 10 if name == "InitialDelayExpired" else 10.0
        self._collect(before, after, performed, wait_s)
        if name in ("OffsetCommit", "Heartbeat"):
            performed.expected[f"consumer {args['consumer']}"] = {"error": args["error"]}
        return performed

    def _send(self, name: str, consumer: int, before: Any, after: Any, performed: Performed) -> None:
        me = before.consumers[consumer]
        request: Request | None = me.request
        if name == "HandleJoinGroup":
            assert request is not None
            data, api = self._join(consumer, request), "JOIN_GROUP"
            if self._asks_for_member_id(request):
                data.setMemberId(self._member_id_required(consumer, data, performed, after))
        elif name == "HandleSyncGroup":
            assert request is not None
            data, api = self._sync(consumer, request), "SYNC_GROUP"
        elif name == "Heartbeat":
            data, api = self._heartbeat(consumer, me), "HEARTBEAT"
        elif name == "LeaveGroup":
            data, api = self._leave(consumer, me), "LEAVE_GROUP"
        else:
            data, api = self._offset_commit(me), "OFFSET_COMMIT"
        conn = self._connection(consumer)
        self.in_flight[consumer] = (conn, conn.send(api, data), api)
        performed.requests.append(f"{api}(memberId={self._shown_id(data)})")

    def _asks_for_member_id(self, request: Request) -> bool:
        """A model before KIP-394 joins a new dynamic member in one JoinGroup; every broker the drive
        runs answers the first one MEMBER_ID_REQUIRED, so the driver makes that round trip itself."""
        return not request.memberId and not self.config.require_known_member_id and not self.config.static_membership

    def _member_id_required(self, consumer: int, data: Any, performed: Performed, after: Any) -> str:
        answer = self._connection(consumer).call("JOIN_GROUP", data)
        if error_name(answer.errorCode()) != "MEMBER_ID_REQUIRED":
            raise UserError(f"a first JoinGroup was answered {error_name(answer.errorCode())}, not MEMBER_ID_REQUIRED")
        performed.requests.append('JOIN_GROUP(memberId="") -> MEMBER_ID_REQUIRED (KIP-394, made by the driver)')
        real = str(answer.memberId())
        minted = [
            m.memberId for m in after.group.members if m.consumer == consumer and m.memberId not in self.mentioned
        ]
        if len(minted) == 1:
            self._learn(minted[0], real)  # the id the model gives the member this JoinGroup adds
        return real

    def _collect(self, before: Any, after: Any, performed: Performed, wait_s: float) -> None:
        """Answers the model gives in this step are awaited; answers it does not give must not come."""
        for c, (conn, correlation, api) in list(self.in_flight.items()):
            expected = after.consumers[c].response
            answered_now = expected is not None and before.consumers[c].response is None
            direct = api in ("HEARTBEAT", "LEAVE_GROUP", "OFFSET_COMMIT")
            if answered_now or direct:
                try:
                    answer = conn.receive(correlation, wait_s)
                except BrokerGoneError:
                    # the coordinator holds an answer the model gives now: a divergence, not an error
                    performed.answered[f"consumer {c}"] = f"(no answer within {wait_s:.0f} s)"
                    performed.expected[f"consumer {c}"] = (
                        self._expected_answer(api, expected) if expected else "(an answer)"
                    )
                    continue
                del self.in_flight[c]
                self._compare_answer(c, api, answer, expected, performed)
            elif after.consumers[c].request is None and expected is None and after.consumers[c].phase == "stopped":
                del self.in_flight[c]
            elif conn.ready(correlation):
                answer = conn.receive(correlation, 0.1)
                del self.in_flight[c]
                performed.answered[f"consumer {c} (answered early)"] = self._answer(api, answer)
                performed.expected[f"consumer {c} (answered early)"] = "(parked)"

    def _compare_answer(self, c: int, api: str, answer: Any, expected: Any, performed: Performed) -> None:
        shown = self._answer(api, answer)
        if expected is not None and api == "JOIN_GROUP":
            # an id the model mints in this step names the broker's new id; one it already used must
            # be the broker's id for it (else the answers differ)
            for model_id, real in (
                (expected.memberId, str(answer.memberId())),
                (expected.leaderId, str(answer.leader())),
            ):
                if model_id and real and model_id not in self.mentioned and real not in self.model_ids:
                    self._learn(model_id, real)
            shown = self._answer(api, answer)
        key = f"consumer {c}"
        performed.answered[key] = shown
        performed.expected[key] = self._expected_answer(api, expected) if expected is not None else shown

    # -- requests ----------------------------------------------------------------------------------
    def _join(self, consumer: int, request: Request) -> Any:
        data = message("JoinGroupRequestData").setGroupId(self.group).setProtocolType(PROTOCOL_TYPE)
        data.setSessionTimeoutMs(SESSION_TIMEOUT_MS).setRebalanceTimeoutMs(REBALANCE_TIMEOUT_MS)
        data.setMemberId(self.real_ids.get(request.memberId, "") if request.memberId else "")
        if self.config.static_membership:
            data.setGroupInstanceId(self.model.instance_id(consumer))
        protocol = message("JoinGroupRequestData$JoinGroupRequestProtocol").setName(self.config.assignor)
        protocol.setMetadata(self._subscription(request.metadata))
        data.protocols().add(protocol)
        return data

    def _sync(self, consumer: int, request: Request) -> Any:
        data = message("SyncGroupRequestData").setGroupId(self.group).setMemberId(self.real_ids[request.memberId])
        data.setGenerationId(self._broker_generation(request.generationId)).setProtocolType(PROTOCOL_TYPE)
        data.setProtocolName(self.config.assignor)
        if self.config.static_membership:
            data.setGroupInstanceId(self.model.instance_id(consumer))
        for member, partitions in request.assignment:
            entry = message("SyncGroupRequestData$SyncGroupRequestAssignment").setMemberId(self.real_ids[member])
            data.assignments().add(entry.setAssignment(self._assignment_bytes(partitions)))
        return data

    def _heartbeat(self, consumer: int, me: Any) -> Any:
        data = message("HeartbeatRequestData").setGroupId(self.group).setMemberId(self.real_ids.get(me.memberId, ""))
        data.setGenerationId(self._broker_generation(me.generationId))
        if self.config.static_membership:
            data.setGroupInstanceId(self.model.instance_id(consumer))
        return data

    def _leave(self, consumer: int, me: Any) -> Any:
        identity = message("LeaveGroupRequestData$MemberIdentity").setMemberId(self.real_ids.get(me.memberId, ""))
        if self.config.static_membership:
            identity.setGroupInstanceId(self.model.instance_id(consumer))
        return message("LeaveGroupRequestData").setGroupId(self.group).setMembers(java_list([identity]))

    def _offset_commit(self, me: Any) -> Any:
        data = message("OffsetCommitRequestData").setGroupId(self.group)
        data.setMemberId(self.real_ids.get(me.memberId, "")).setGenerationIdOrMemberEpoch(
            self._broker_generation(me.generationId)
        )
        topic = message("OffsetCommitRequestData$OffsetCommitRequestTopic").setName(self.topic)
        for p in sorted(me.owned) or [0]:
            entry = message("OffsetCommitRequestData$OffsetCommitRequestPartition").setPartitionIndex(p)
            topic.partitions().add(entry.setCommittedOffset(0))
        data.topics().add(topic)
        return data

    def _subscription(self, metadata: tuple[tuple[int, ...], int]) -> Any:
        owned, generation = metadata
        partitions = java_list([java("org.apache.kafka.common.TopicPartition")(self.topic, p) for p in owned])
        subscription = java("org.apache.kafka.clients.consumer.ConsumerPartitionAssignor$Subscription")(
            java_list([self.topic]),
            None,
            partitions,
            self._broker_generation(generation),
            java("java.util.Optional").empty(),
        )
        buffer = java("org.apache.kafka.clients.consumer.internals.ConsumerProtocol").serializeSubscription(
            subscription
        )
        return java("org.apache.kafka.common.utils.Utils").toArray(buffer)

    def _assignment_bytes(self, partitions: frozenset[int]) -> Any:
        listed = java_list([java("org.apache.kafka.common.TopicPartition")(self.topic, p) for p in sorted(partitions)])
        assignment = java("org.apache.kafka.clients.consumer.ConsumerPartitionAssignor$Assignment")(listed)
        buffer = java("org.apache.kafka.clients.consumer.internals.ConsumerProtocol").serializeAssignment(assignment)
        return java("org.apache.kafka.common.utils.Utils").toArray(buffer)

    def _partitions_of(self, assignment_bytes: Any) -> list[int]:
        if assignment_bytes is None or len(assignment_bytes) == 0:
            return []
        buffer = java("java.nio.ByteBuffer").wrap(assignment_bytes)
        assignment = java("org.apache.kafka.clients.consumer.internals.ConsumerProtocol").deserializeAssignment(buffer)
        return sorted(int(tp.partition()) for tp in assignment.partitions())

    # -- answers -----------------------------------------------------------------------------------
    def _answer(self, api: str, answer: Any) -> dict[str, Any]:
        if api == "LEAVE_GROUP":
            errors = [error_name(answer.errorCode())] + [error_name(m.errorCode()) for m in answer.members()]
            return {"error": next((e for e in errors if e != "NONE"), "NONE")}
        if api == "OFFSET_COMMIT":
            errors = {error_name(p.errorCode()) for t in answer.topics() for p in t.partitions()}
            return {"error": errors.pop() if len(errors) == 1 else sorted(errors)}
        error = error_name(answer.errorCode())
        if api == "HEARTBEAT" or (error != "NONE" and api != "JOIN_GROUP"):
            return {"error": error}
        if api == "SYNC_GROUP":
            return {"error": error, "assignment": self._partitions_of(answer.assignment())}
        shown: dict[str, Any] = {"error": error, "memberId": self._model_id(str(answer.memberId()))}
        if error == "NONE":
            shown["generationId"] = int(answer.generationId()) - self.generation_offset
            shown["leaderId"] = self._model_id(str(answer.leader()))
            # KIP-814 (3.2): a static leader that rejoins a stable group gets the members with
            # SkipAssignment, so that it does not assign; the model gives it none, to the same effect
            skip = bool(answer.skipAssignment()) if hasattr(answer, "skipAssignment") else False
            shown["members"] = [] if skip else sorted(self._model_id(str(m.memberId())) for m in answer.members())
        return shown

    @staticmethod
    def _expected_answer(api: str, response: Any) -> dict[str, Any]:
        if api == "HEARTBEAT" or (response.error != "NONE" and api != "JOIN_GROUP"):
            return {"error": response.error}
        if api == "SYNC_GROUP":
            return {"error": response.error, "assignment": sorted(response.assignment)}
        shown: dict[str, Any] = {"error": response.error, "memberId": response.memberId}
        if response.error == "NONE":
            shown["generationId"] = response.generationId
            shown["leaderId"] = response.leaderId
            shown["members"] = sorted(m for m, _, _ in response.members)
        return shown

    # -- the coordinator moving --------------------------------------------------------------------
    def _unload(self, performed: Performed) -> None:
        # controlled shutdown: the offsets partition's leadership moves
        self.session.stop_node(self.coordinator, signal.SIGTERM, "a coordinator failover")
        self.stopped_nodes.append(self.coordinator)
        for c in list(self.in_flight):
            self._forget(c)
        performed.requests.append(f"(node {self.coordinator}, the group's coordinator, shut down)")

    def _load(self, performed: Performed) -> None:
        previous = self.coordinator
        self.session.down = set(self.stopped_nodes)
        self._find_coordinator()
        performed.requests.append(f"(node {self.coordinator} took over the group from node {previous})")

    # -- projections -------------------------------------------------------------------------------
    def expected(self, state: Any) -> dict[str, Any]:
        group = state.group
        if group.state == DEAD:
            return {"state": DEAD}
        members: dict[str, Any] = {
            m.memberId: {"groupInstanceId": m.groupInstanceId, "assignment": sorted(m.assignment)}
            for m in group.members
        }
        if group.state != "Stable" and not self.assignments_shown_in_rebalance:
            for member in members.values():
                del member["assignment"]
        self.instances = {m.groupInstanceId: m.memberId for m in group.members if m.groupInstanceId}
        return {"state": group.state, "members": members}

    @property
    def assignments_shown_in_rebalance(self) -> bool:
        """The group coordinator of 4.0 and later shows the members' assignments in every state; the one
        before (``GroupMetadata.summary``) only in Stable."""
        return Release.parse(self.session.release) >= FIRST_4X

    def observed(self) -> dict[str, Any]:
        if self.coordinator in self.stopped_nodes:
            return {"state": DEAD}
        request = message("DescribeGroupsRequestData").setGroups(java_list([self.group]))
        try:
            answer = self.session.connection("describe", self.coordinator).call("DESCRIBE_GROUPS", request)
        except BrokerGoneError:
            return {"error": "the coordinator does not answer"}
        described = answer.groups().get(0)
        error = error_name(described.errorCode())
        if error == "GROUP_ID_NOT_FOUND" or (str(described.groupState()) == "Dead" and not described.members()):
            # a classic group is created by its first JoinGroup; before 4.0 (DescribeGroups v5) an unknown
            # group was answered Dead without an error
            return {"state": "Empty", "members": {}}
        if error != "NONE":
            return {"error": error}
        for m in described.members():
            # a static member's id is learnt from its instance id while its JoinGroup is parked
            real, instance = str(m.memberId()), m.groupInstanceId()
            model_id = self.instances.get(instance)
            if real not in self.model_ids and model_id is not None and model_id not in self.mentioned:
                self._learn(model_id, real)
        state = str(described.groupState())
        shown = state == "Stable" or self.assignments_shown_in_rebalance
        members = {
            self._model_id(str(m.memberId())): {"groupInstanceId": m.groupInstanceId()}
            | ({"assignment": self._partitions_of(m.memberAssignment())} if shown else {})
            for m in described.members()
        }
        return {"state": state, "members": members}

    def close(self) -> None:
        self.session.close()
        self.session.start_nodes(self.stopped_nodes)
        self.stopped_nodes.clear()

    def _broker_generation(self, generation: int) -> int:
        return generation + self.generation_offset if generation >= 0 else generation

    # -- ids ---------------------------------------------------------------------------------------
    def _learn(self, model_id: str, real: str) -> None:
        self.real_ids[model_id] = real
        self.model_ids[real] = model_id

    def _model_id(self, real: str) -> str:
        if not real:
            return ""
        return self.model_ids.get(real, f"(unknown member {real})")

    def _shown_id(self, data: Any) -> str:
        with contextlib.suppress(Exception):
            real = str(data.memberId())
            return self.model_ids.get(real, real or '""')
        return "?"

    def _forget(self, consumer: int) -> None:
        self.in_flight.pop(consumer, None)
        self.session.close_connection(f"consumer-{consumer}")


def _renumbering(actor: int | None, before: Any, after: Any) -> int:
    """How far the model shifted its generations down in this step (``normalised``): read from a
    consumer the step did not move, else from the stored record, whose generation only a SyncGroup
    or a load changes."""
    for c, (was, now) in enumerate(zip(before.consumers, after.consumers, strict=True)):
        if c != actor and was.generationId >= 0 and now.generationId >= 0:
            return was.generationId - now.generationId
    stored_before, stored_after = before.group.stored, after.group.stored
    if stored_before is not None and stored_after is not None and stored_before.members == stored_after.members:
        return stored_before.generationId - stored_after.generationId
    return 0
