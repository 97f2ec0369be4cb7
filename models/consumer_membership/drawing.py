"""How a consumer-membership trace is drawn: lanes for the member's application thread, its
background thread (the membership manager), the group coordinator and the metadata; a table of the
assignment as each side holds it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table
from kmc.models.consumer_membership.state import RECONCILING, MembershipState, Reconciliation, TopicIdPartition

APPLICATION = "application (callbacks)"
MEMBER = "membership manager"
COORDINATOR = "group coordinator"
METADATA = "metadata"


def topic_name(topic: int) -> str:
    return f"T{topic + 1}"


def partitions_text(partitions: Iterable[TopicIdPartition] | None) -> str:
    if partitions is None:
        return "-"
    names = [f"{topic_name(topic)}-{partition}" for topic, partition in sorted(partitions)]
    return "{" + ", ".join(names) + "}"


class ConsumerMembershipDrawing(Drawing):
    def __init__(self, model: Any) -> None:
        self.model = model

    def lanes(self) -> list[str]:
        return [APPLICATION, MEMBER, COORDINATOR, METADATA]

    def arrow(self, action: Action, before: MembershipState, after: MembershipState) -> Arrow:
        a, name = action.args, action.name
        if name == "Heartbeat":
            owned = a["topicPartitions"]
            note = f"ConsumerGroupHeartbeat(epoch {a['memberEpoch']}"
            note += f", owned {partitions_text(owned)})" if owned is not None else ")"
            return Arrow(MEMBER, (COORDINATOR,), note)
        if name == "HeartbeatResponse":
            assignment = a["assignment"]
            note = f"epoch {a['memberEpoch']}" + (f", assignment {partitions_text(assignment)}" if assignment else "")
            return Arrow(COORDINATOR, (MEMBER,), note + self._reconciliation_started(before, after))
        if name == "MetadataUpdate":
            names = ", ".join(topic_name(t) for t in a["topicIds"]) or "no topic"
            note = (
                f"metadata: {names}" if after.metadataTopics != before.metadataTopics else f"metadata refresh: {names}"
            )
            return Arrow(METADATA, (MEMBER,), note + self._reconciliation_started(before, after))
        if name == "PartitionsRevoked":
            r = before.reconciliation
            if after.reconciliation is None:
                note = f"commit, onPartitionsRevoked done; member {before.state}: reconciliation interrupted"
            else:
                revoked = f"revoked {partitions_text(a['revoked'])}" if a["revoked"] else "nothing revoked"
                note = f"commit, onPartitionsRevoked done ({revoked}): assigns {partitions_text(r.assigned)}"
            return Arrow(APPLICATION, (MEMBER,), note)
        if name == "PartitionsAssigned":
            if before.state == RECONCILING:
                note = f"onPartitionsAssigned done: acknowledges {partitions_text(a['assigned'])}"
            else:
                note = f"onPartitionsAssigned done, member {before.state}: not acknowledged"
            return Arrow(APPLICATION, (MEMBER,), note)
        return Arrow(MEMBER)

    @staticmethod
    def _reconciliation_started(before: MembershipState, after: MembershipState) -> str:
        r = after.reconciliation
        if r is None or before.reconciliation == r:
            return ""
        revoked = f", revokes {partitions_text(r.revoked)}" if r.revoked else ""
        applied = " (owning nothing: applied at once)" if r.applied else ""
        return f"; reconciles {partitions_text(r.assigned)}{revoked}{applied}"

    @staticmethod
    def _reconciliation_text(r: Reconciliation) -> str:
        if r.applied:
            return f"{partitions_text(r.assigned)} applied, onPartitionsAssigned running"
        revoking = f", revoking {partitions_text(r.revoked)}" if r.revoked else ""
        return f"{partitions_text(r.assigned)}{revoking}: commit, onPartitionsRevoked running"

    def tables(self, state: MembershipState) -> list[Table]:
        r = state.reconciliation
        fixed = self.model.config.kafka_16198
        columns = ["state", "epoch", "owned", "target (by topic id)" if fixed else "unresolved / ready"]
        columns += ["reconciling", "metadata"]
        held = (
            partitions_text(state.currentTargetAssignment)
            if fixed
            else f"{partitions_text(state.assignmentUnresolved)} / {partitions_text(state.assignmentReadyToReconcile)}"
        )
        row = [
            state.state,
            str(state.memberEpoch),
            partitions_text(state.currentAssignment),
            held,
            "-" if r is None else self._reconciliation_text(r),
            ", ".join(topic_name(t) for t in sorted(state.metadataTopics)) or "-",
        ]
        target = partitions_text(self.model.target_assignment)
        return [Table(f"member (coordinator's target {target})", columns, [row])]
