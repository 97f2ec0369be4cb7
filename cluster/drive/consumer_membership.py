"""The consumer-membership driver: the model's KIP-848 member played against a real group coordinator,
ConsumerGroupHeartbeat by ConsumerGroupHeartbeat, read back with ConsumerGroupDescribe.

The driver is the member's client: its metadata, its reconciliation and the callbacks are the model's
(and KAFKA-16198's bugs live there), so the broker is asked only what the member asks it. A
``Heartbeat`` step queues the request the member built -- its epoch, and its owned partitions when it
reports them -- and the coordinator takes it at the ``HeartbeatResponse`` step, where the driver
sends it and compares the answer: the member epoch and whether it carries the assignment, and which.
The model's topics are topics of the driver's own, created before the first step; the coordinator
assigns the one member every partition of them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model
from kmc.cluster.drive.base import EpochNames, Performed
from kmc.cluster.drive.consumer_group import SESSION_TIMEOUT_MS, ConsumerGroup, Kip848Protocol
from kmc.cluster.drive.session import Session
from kmc.cluster.drive.wire import error_name
from kmc.models.consumer_membership.state import JOIN_GROUP_MEMBER_EPOCH, HeartbeatRequest

MEMBER = "member"
"""The model's one member, as the driver names it to map the broker's member id."""
CLIENT = "the client's own state: its metadata, reconciliation and callbacks, played by the driver"


class MembershipDriver(Kip848Protocol):
    model_name = "consumer-membership"
    not_driven: ClassVar[dict[str, str]] = {}
    unseen = (
        "state, metadataTopics, currentTargetAssignment, assignmentUnresolved, assignmentReadyToReconcile, "
        f"currentAssignment, reconciliation, sentTopicPartitions, heartbeat: {CLIENT}",
    )
    unseen_properties: ClassVar[dict[str, str]] = {
        "RevokesOnlyWhatTheTargetDrops": f"it reads the reconciliation, {CLIENT}; the coordinator is not told of "
        "a revocation until the member reports what it owns",
        "EventuallyOwnsTheTarget": f"it reads the partitions the member owns, {CLIENT}; the coordinator shows the "
        "member owning its target from the join on",
    }
    max_drive_s = SESSION_TIMEOUT_MS / 2000
    settle_s = 0.0

    def __init__(self, session: Session, model: Model, initial: Any) -> None:
        self.session = session
        self.partitions: int = model.config.partitions
        self.group = ConsumerGroup(session, "kmc-drive-membership", topics=model.config.topics)
        self.epochs = EpochNames()
        self.queued: HeartbeatRequest | None = None

    def setup(self) -> None:
        self.group.create(self.partitions)

    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        if action.name == "Heartbeat":
            self.queued = after.heartbeat
            return Performed(requests=[f"(queued: {_text(after.heartbeat)})"])
        if action.name == "HeartbeatResponse":
            return self._heartbeat(action.args)
        if action.name in ("MetadataUpdate", "PartitionsRevoked", "PartitionsAssigned", "Poll"):
            return Performed(requests=["(the client's own step: no request)"])
        raise UserError(f"the consumer-membership driver has no mapping for {action.name}")

    def _heartbeat(self, args: dict[str, Any]) -> Performed:
        request, self.queued = self.queued, None
        if request is None:
            raise UserError("a heartbeat answer with no heartbeat queued: the trace does not replay")
        joining = request.memberEpoch == JOIN_GROUP_MEMBER_EPOCH
        epoch = self.epochs.broker(request.memberEpoch)
        answer = self.group.heartbeat(0, "" if joining else MEMBER, epoch, request.topicPartitions)
        error = error_name(answer.errorCode())
        if error != "NONE":
            return Performed([_text(request)], {"error": error}, {"error": "NONE"})
        if joining:
            self.group.learn(MEMBER, str(answer.memberId()))
        assignment = answer.assignment()
        shown = None if assignment is None else sorted(self.group.assignment(assignment.topicPartitions()))
        wanted = None if args["assignment"] is None else sorted(tuple(tp) for tp in args["assignment"])
        answered = {"memberEpoch": int(answer.memberEpoch()), "assignment": shown}
        return Performed([_text(request)], answered, {"memberEpoch": args["memberEpoch"], "assignment": wanted})

    def expected(self, state: Any) -> dict[str, Any]:
        """The coordinator's view: no group before the join's answer, then the member at its epoch owning
        (for the coordinator) every partition of its topics."""
        if state.memberEpoch == JOIN_GROUP_MEMBER_EPOCH:
            return {"members": {}}
        everything = sorted((t, p) for t in range(len(self.group.topics)) for p in range(self.partitions))
        return {"members": {MEMBER: {"memberEpoch": state.memberEpoch, "assignment": everything}}}

    def observed(self) -> dict[str, Any]:
        error, described = self.group.describe()
        if error == "GROUP_ID_NOT_FOUND":
            return {"members": {}}
        if error != "NONE":
            return {"error": error}
        members = {
            self.group.model_id(str(m.memberId())): {
                "memberEpoch": int(m.memberEpoch()),
                "assignment": sorted(self.group.assignment(m.assignment().topicPartitions())),
            }
            for m in described.members()
        }
        return {"members": members}

    def close(self) -> None:
        self.session.close()


def _text(request: HeartbeatRequest) -> str:
    owned = "" if request.topicPartitions is None else f", topicPartitions={sorted(request.topicPartitions)}"
    return f"ConsumerGroupHeartbeat(memberEpoch={request.memberEpoch}{owned})"
