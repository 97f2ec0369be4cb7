"""The KIP-848 consumer's membership manager (``MembershipManagerImpl`` of Kafka 3.7 and of apache/kafka
trunk up to March 2024): one member of a consumer group, the group coordinator that assigns it every
partition of its topics, and the client's metadata, which learns the topics' names late and in any order.

The coordinator sends the target assignment by topic id; the client can reconcile only the partitions
whose topic names its metadata has resolved. A reconciliation runs one at a time, in two parts
(``revokeAndAssign``): the commit and ``onPartitionsRevoked``, then -- if the member is still
RECONCILING -- the assignment applied to the subscription and ``onPartitionsAssigned``, after which
the member acknowledges with a heartbeat that reports what it owns. Before KAFKA-16367 the coordinator
answered such a heartbeat with the target again (``GroupMetadataManager``: the assignment went out when
the member reported its owned partitions, joined, or its assignment changed); since, only a join or a
full request gets it.

Before KAFKA-16198 the client split the target into ``assignmentUnresolved`` and
``assignmentReadyToReconcile``, and every resolution rebuilt the second from the first alone: a topic
resolved after the member had reconciled the others became the whole assignment to reconcile, and the
member revoked what it owned; a resolution while a reconciliation ran forgot what was ready. The fix
keeps the whole target (``currentTargetAssignment``) and resolves it on every reconciliation. The
client has no oracle: ``MembershipManagerImpl`` at 3.7.0, a5888aabb2 (KAFKA-16198) and c6f4c604d8
(KAFKA-15832) is followed, not called.

Left out: the local epochs of KAFKA-16312 and KAFKA-16185 (5c929874b88, in 3.8.0), which change how a
partially resolved target is acknowledged and when owned partitions are reported, so no preset is
3.8.0's client; a target that changes after the join (another member, a topic deleted or created),
where the member epoch moves during a reconciliation; errors and fencing; leaving the group;
callbacks that fail; metadata that forgets a topic (the local topic-name cache covers it in Kafka);
consumed offsets (a member that owns partitions commits before it revokes; one that owns none has
nothing to commit, so its reconciliation applies the assignment at once).
"""

from __future__ import annotations

from itertools import combinations

from kmc.checker import Action, Model
from kmc.checker.search.liveness import WF
from kmc.models.consumer_membership.bugs import BUGS
from kmc.models.consumer_membership.config import ACTION_ARGS, PRESETS, ConsumerMembershipConfig
from kmc.models.consumer_membership.state import (
    ACKNOWLEDGING,
    JOIN_GROUP_MEMBER_EPOCH,
    JOINING,
    RECONCILING,
    STABLE,
    Assignment,
    HeartbeatRequest,
    MembershipState,
    Reconciliation,
)

Step = tuple[Action, MembershipState]

FIRST_MEMBER_EPOCH = 1
"""The epoch the coordinator gives a member that joins (the group's epoch after the join)."""


class ConsumerMembershipModel(Model):
    name = "consumer-membership"
    description = (
        "the KIP-848 consumer's membership manager: reconciling a target assignment by topic id "
        "with topic names the metadata learns late"
    )
    Config = ConsumerMembershipConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "kafka-15832"
    spec_modules = ("kmc.specs.consumer_membership",)
    actions = tuple(ACTION_ARGS)
    fairness = (
        WF("Heartbeat"),
        WF("HeartbeatResponse"),
        WF("PartitionsRevoked"),
        WF("PartitionsAssigned"),
        WF("MetadataUpdate", each=True),
        WF("Poll"),
    )
    """The member keeps heartbeating, the coordinator answers, callbacks complete, the background
    thread keeps polling, and a metadata response with every topic is eventually received."""

    config: ConsumerMembershipConfig

    def __init__(self, config: ConsumerMembershipConfig | None = None) -> None:
        super().__init__(config)
        c = self.config
        self.target_assignment: Assignment = frozenset(
            (topic, partition) for topic in range(c.topics) for partition in range(c.partitions)
        )
        """The group coordinator's target assignment for the member: every partition of its topics."""

    def init_states(self) -> list[MembershipState]:
        return [
            MembershipState(
                state=JOINING,
                memberEpoch=JOIN_GROUP_MEMBER_EPOCH,
                metadataTopics=frozenset(),
                currentTargetAssignment=frozenset(),
                assignmentUnresolved=frozenset(),
                assignmentReadyToReconcile=frozenset(),
                currentAssignment=frozenset(),
                reconciliation=None,
                sentTopicPartitions=None,
                heartbeat=None,
            )
        ]

    def successors(self, s: MembershipState) -> list[Step]:
        out: list[Step] = []
        if s.heartbeat is None:
            out.append(self._heartbeat(s))
        else:
            out.append(self._heartbeat_response(s, s.heartbeat))
        unknown = sorted(set(range(self.config.topics)) - s.metadataTopics)
        for size in range(len(unknown) + 1):
            for learned in combinations(unknown, size):
                topics = s.metadataTopics | set(learned)
                t = self._on_metadata_update(s._replace(metadataTopics=topics))
                out.append((_act("MetadataUpdate", tuple(sorted(topics))), t))
        r = s.reconciliation
        if r is not None and not r.applied:
            out.append((_act("PartitionsRevoked", tuple(sorted(r.revoked))), self._after_revocation(s, r)))
        if r is not None and r.applied:
            out.append(self._partitions_assigned(s, r))
        if self.config.kafka_15832 and s.state == RECONCILING:
            t = self._reconcile(s)
            if t != s:  # a poll that starts nothing leaves the state as it was
                out.append((_act("Poll"), t))
        return out

    def inactive_actions(self) -> tuple[str, ...]:
        off = () if self.config.kafka_15832 else ("Poll",)
        # one topic resolves whole: the member reconciles only from owning nothing, which revokes nothing
        return off + (("PartitionsRevoked",) if self.config.topics == 1 else ())

    # -- HeartbeatRequestManager and the coordinator's answer -------------------------------------
    def _heartbeat(self, s: MembershipState) -> Step:
        """A heartbeat reports the owned partitions only when they changed since the last one; sending it
        ends ACKNOWLEDGING (``onHeartbeatRequestSent``)."""
        owned = s.currentAssignment if s.currentAssignment != s.sentTopicPartitions else None
        t = s._replace(
            heartbeat=HeartbeatRequest(s.memberEpoch, owned),
            sentTopicPartitions=s.currentAssignment,
        )
        if s.state == ACKNOWLEDGING:
            t = t._replace(state=STABLE if self._reconciled(t) else RECONCILING)
        return _act("Heartbeat", s.memberEpoch, None if owned is None else tuple(sorted(owned))), t

    def _heartbeat_response(self, s: MembershipState, request: HeartbeatRequest) -> Step:
        """The coordinator sends the assignment to a joining member and, before KAFKA-16367, to one that
        reported its owned partitions (the target never changes here, and only a join is a full
        request); the client takes the epoch and then the assignment."""
        reported = request.topicPartitions is not None and not self.config.kafka_16367
        send = request.memberEpoch == JOIN_GROUP_MEMBER_EPOCH or reported
        assignment = self.target_assignment if send else None
        t = s._replace(heartbeat=None, memberEpoch=FIRST_MEMBER_EPOCH)
        if assignment is not None:
            t = self._process_assignment_received(t, assignment)
        elif self._reconciled(t):
            t = t._replace(state=STABLE)
        shown = None if assignment is None else tuple(sorted(assignment))
        return _act("HeartbeatResponse", FIRST_MEMBER_EPOCH, shown), t

    # -- MembershipManagerImpl ---------------------------------------------------------------------
    def _reconciled(self, s: MembershipState) -> bool:
        """``targetAssignmentReconciled``; before KAFKA-16198 ``allPendingAssignmentsReconciled``."""
        if self.config.kafka_16198:
            return s.currentAssignment == s.currentTargetAssignment
        return not s.assignmentUnresolved and not s.assignmentReadyToReconcile

    def _process_assignment_received(self, s: MembershipState, assignment: Assignment) -> MembershipState:
        if self.config.kafka_16198:
            s = s._replace(currentTargetAssignment=assignment)
        else:
            s = s._replace(assignmentUnresolved=assignment)
        if assignment != s.currentAssignment:
            s = s._replace(state=RECONCILING)
            if not self.config.kafka_16198:
                s = self._resolve_metadata_for_unresolved_assignment(s)
            return s if self.config.kafka_15832 else self._reconcile(s)
        if s.state in (RECONCILING, JOINING):
            s = s._replace(state=STABLE)
        return s

    def _resolve_metadata_for_unresolved_assignment(self, s: MembershipState) -> MembershipState:
        """Before KAFKA-16198: the ready set is rebuilt from the unresolved partitions alone, which move
        to it when their topic's name is found."""
        resolved = _resolvable(s.assignmentUnresolved, s.metadataTopics)
        return s._replace(assignmentReadyToReconcile=resolved, assignmentUnresolved=s.assignmentUnresolved - resolved)

    def _on_metadata_update(self, s: MembershipState) -> MembershipState:
        """``onUpdate``: with KAFKA-16198, a RECONCILING member reconciles again; before, the unresolved
        partitions are resolved and whatever is ready is reconciled, in any state. With KAFKA-15832 the
        reconciliation waits for the manager's poll."""
        if self.config.kafka_16198:
            return self._reconcile(s) if s.state == RECONCILING and not self.config.kafka_15832 else s
        s = self._resolve_metadata_for_unresolved_assignment(s)
        return self._reconcile(s) if s.assignmentReadyToReconcile and not self.config.kafka_15832 else s

    def _reconcile(self, s: MembershipState) -> MembershipState:
        """One reconciliation at a time, of a copy of the assignment: with the fix, the target's
        partitions whose topic names are resolved; before, the ready set."""
        if s.reconciliation is not None:
            return s
        if self.config.kafka_16198:
            assigned = _resolvable(s.currentTargetAssignment, s.metadataTopics)
        else:
            assigned = s.assignmentReadyToReconcile
        if assigned == s.currentAssignment:
            return s
        r = Reconciliation(assigned, s.currentAssignment - assigned)
        if not s.currentAssignment:  # nothing consumed to commit, nothing to revoke: both futures are done
            return self._after_revocation(s, r)
        return s._replace(reconciliation=r)

    def _after_revocation(self, s: MembershipState, r: Reconciliation) -> MembershipState:
        """The commit and ``onPartitionsRevoked`` completed: a member still RECONCILING applies the
        assignment to its subscription and calls ``onPartitionsAssigned``; otherwise the reconciliation
        is interrupted after the revocation."""
        if s.state != RECONCILING:
            return s._replace(reconciliation=None)
        return s._replace(currentAssignment=r.assigned, reconciliation=r._replace(applied=True))

    def _partitions_assigned(self, s: MembershipState, r: Reconciliation) -> Step:
        """``onPartitionsAssigned`` completed: a member still RECONCILING acknowledges the assignment;
        otherwise the reconciliation is interrupted after the callback (the assignment stays applied)."""
        t = s._replace(reconciliation=None)
        if s.state == RECONCILING:
            t = t._replace(state=ACKNOWLEDGING)
            if not self.config.kafka_16198:
                t = t._replace(assignmentReadyToReconcile=t.assignmentReadyToReconcile - r.assigned)
        return _act("PartitionsAssigned", tuple(sorted(r.assigned))), t

    def drawing(self):  # type: ignore[no-untyped-def]
        from kmc.models.consumer_membership.drawing import ConsumerMembershipDrawing

        return ConsumerMembershipDrawing(self)


def _resolvable(partitions: Assignment, metadataTopics: frozenset[int]) -> Assignment:
    """The partitions whose topic names the client's metadata has."""
    return frozenset(tp for tp in partitions if tp[0] in metadataTopics)


def _act(name: str, *values: object) -> Action:
    return Action.of(name, zip(ACTION_ARGS[name], values, strict=True))
