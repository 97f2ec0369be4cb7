"""KIP-932's share groups at the group coordinator: membership through ShareGroupHeartbeat, the
server-side SimpleAssignor, and the initialization of each share partition's state before it is
assigned.

The coordinator keeps a group epoch (bumped when a member joins, leaves or changes its subscription,
when a subscribed topic's partitions change, and when initialized partitions wait to be assigned), a
target assignment and its epoch, and per member an epoch, a previous epoch, its subscribed topics and
its assigned partitions. Share groups need no revocation: several members may read one partition, so
a member moves to the target at its next heartbeat. Only partitions whose share-group state the share
coordinator has initialized are assignable: a heartbeat that finds a subscribed partition neither
initialized nor being initialized sends InitializeShareGroupState for it, and the answer marks it
initialized, or, on an error, not initializing (the next heartbeat sends it again); when the answer
never comes it is sent again after ``group.share.initialize.retry.interval.ms``.
(``GroupMetadataManager.shareGroupHeartbeat``, ``initializedAssignmentPending``,
``subscribedTopicsChangeMap``, ``initializeShareGroupState``, ``uninitializeShareGroupState``,
``ShareGroupAssignmentBuilder``, ``SimpleAssignor``, ``GroupCoordinatorService.persisterInitialize``.)

Each share consumer (``ShareMembershipManager``) keeps its member id for life, sends one heartbeat at
a time with its subscription when it joins, after a failed request, or when the application changed
it, and rejoins with epoch 0 when fenced.
"""

from __future__ import annotations

from itertools import combinations

from kmc.checker import Action, Model
from kmc.checker.search.liveness import WF
from kmc.models.share_group_membership.assignor import assign
from kmc.models.share_group_membership.bugs import BUGS
from kmc.models.share_group_membership.config import ACTION_ARGS, PRESETS, ShareGroupMembershipConfig
from kmc.models.share_group_membership.drawing import ShareGroupMembershipDrawing, partitions_text
from kmc.models.share_group_membership.state import (
    ANSWER_LOST,
    FENCED_MEMBER_EPOCH,
    INITIALIZED,
    JOIN_EPOCH,
    JOINING,
    LEAVE_EPOCH,
    LEAVING,
    MEMBER,
    NONE,
    PERSISTER_ERROR,
    STOPPED,
    UNKNOWN_MEMBER_ID,
    UNSUBSCRIBED,
    Heartbeat,
    HeartbeatResponse,
    Partitions,
    ShareConsumer,
    ShareGroup,
    ShareGroupMember,
    ShareGroupMembershipState,
    ShareGroupStatePartitionMetadata,
    Step,
    assigned_anywhere,
    member_of,
    subscribed_topics,
    target_of,
)

NO_PARTITIONS: Partitions = frozenset()
MAX_PARTITIONS = 3
"""CreatePartitions grows a topic to at most this many partitions."""


def member_id(consumer: int) -> str:
    """The member id a share consumer generates and keeps for its whole life."""
    return f"m{consumer}"


def consumer_of(memberId: str) -> int:
    return int(memberId[1:])


def topic_name(index: int) -> str:
    return f"t{index}"


class ShareGroupMembershipModel(Model):
    name = "share-group-membership"
    description = "share groups (KIP-932) at the group coordinator: heartbeats, assignment, state initialization"
    Config = ShareGroupMembershipConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "kafka-4.3"
    spec_modules = ("kmc.specs.share_group_membership",)
    actions = tuple(ACTION_ARGS)
    fairness = (
        WF("Subscribe", each=True),
        WF("SendHeartbeat", each=True),
        WF("HandleHeartbeat", each=True),
        WF("ReceiveHeartbeat", each=True),
        WF("SessionTimeout", each=True),
        WF("InitializeShareGroupState", each=True),
        WF("InitializeRetryIntervalElapses"),
        WF("AssignmentIntervalElapses"),
    )
    """Consumers heartbeat, the coordinators answer, a crashed consumer's member times out, and the
    intervals pass; crashes, leaves, lost answers and subscription changes need not happen at all."""

    config: ShareGroupMembershipConfig

    def __init__(self, config: ShareGroupMembershipConfig | None = None) -> None:
        super().__init__(config)
        c = self.config
        self.topic_names = tuple(topic_name(t) for t in range(c.topics))
        self.subscription_choices = tuple(
            frozenset(chosen) for k in range(1, c.topics + 1) for chosen in combinations(self.topic_names, k)
        )
        self._targets: dict[tuple[object, ...], tuple[tuple[str, Partitions], ...]] = {}
        """The assignor's target by its inputs: members with subscriptions and previous targets, partition counts
        and the assignable partitions."""
        self._actions: dict[tuple[str, tuple[object, ...]], Action] = {}

    def assignor_calls(self) -> dict[tuple[object, ...], tuple[tuple[str, Partitions], ...]]:
        """Every target this model has computed, by the assignor's inputs (members with subscriptions and
        previous targets, partition counts, assignable partitions): what a drive checks a real cluster's
        topic ids do not change. After a replay that is the trace's targets and those of the steps the replay
        and its reordering tried besides: more than needed, which only asks more of the ids."""
        return dict(self._targets)

    def inactive_actions(self) -> tuple[str, ...]:
        c = self.config
        off: list[str] = []
        if c.max_lost_responses == 0:
            off.append("HeartbeatResponseLost")
        if c.max_faults == 0 or not c.crashes:
            off.append("ConsumerCrash")
            if c.timeouts == "crashed":
                off.append("SessionTimeout")
        if c.max_faults == 0:
            off.append("Unsubscribe")
        if c.max_subscription_changes == 0 or c.topics == 1:
            off.append("ChangeSubscription")
        if c.max_initialize_failures == 0:
            off.append("InitializeRetryIntervalElapses")
        if not c.kafka_20291:
            off.append("AssignmentIntervalElapses")
        if c.max_partitions_added == 0:
            off.append("CreatePartitions")
        return tuple(off)

    def first_subscription(self, consumer: int) -> frozenset[str]:
        if self.config.subscriptions == "all":
            return frozenset(self.topic_names)
        return frozenset({self.topic_names[consumer % len(self.topic_names)]})

    def init_states(self) -> list[ShareGroupMembershipState]:
        c = self.config
        consumers = tuple(
            ShareConsumer(UNSUBSCRIBED, JOIN_EPOCH, self.first_subscription(i), None, NO_PARTITIONS, None, None)
            for i in range(c.consumers)
        )
        counts = tuple((t, c.partitions) for t in self.topic_names)
        group = ShareGroup(0, 0, (), (), (), True)
        metadata = ShareGroupStatePartitionMetadata(NO_PARTITIONS, NO_PARTITIONS, NO_PARTITIONS)
        return [ShareGroupMembershipState(group, metadata, (), counts, consumers, 0, 0, 0, 0)]

    def within_bounds(self, s: ShareGroupMembershipState) -> bool:
        return s.group.groupEpoch < self.config.max_group_epoch

    def _act(self, name: str, *values: object) -> Action:
        action = self._actions.get((name, values))
        if action is None:
            action = self._actions[(name, values)] = Action.of(name, zip(ACTION_ARGS[name], values, strict=True))
        return action

    # -- next ------------------------------------------------------------------------------------
    def successors(self, s: ShareGroupMembershipState) -> list[Step]:
        out: list[Step] = []
        for c in range(len(s.consumers)):
            out += self._consumer_steps(s, c)
        out += self._coordinator_steps(s)
        return out

    def _consumer_steps(self, s: ShareGroupMembershipState, c: int) -> list[Step]:
        cfg = self.config
        me = s.consumers[c]
        out: list[Step] = []

        def with_consumer(after: ShareConsumer, **counts: int) -> ShareGroupMembershipState:
            return s._replace(consumers=(*s.consumers[:c], after, *s.consumers[c + 1 :]), **counts)

        if me.phase == UNSUBSCRIBED:
            return [(self._act("Subscribe", c), with_consumer(me._replace(phase=JOINING)))]
        if me.request is None and me.response is None and me.phase in (JOINING, MEMBER, LEAVING):
            out.append((self._act("SendHeartbeat", c), with_consumer(_with_heartbeat(c, me))))
        if me.request is not None:
            out.append(self._heartbeat_step(s, c))
        if me.response is not None:
            out.append((self._act("ReceiveHeartbeat", c, me.response.error), with_consumer(_received(me))))
            if s.lostResponses < cfg.max_lost_responses:
                # the request failed for the client: its heartbeat state is reset (the next one is full)
                lost = me._replace(response=None, sentSubscription=None)
                out.append(
                    (self._act("HeartbeatResponseLost", c), with_consumer(lost, lostResponses=s.lostResponses + 1))
                )
        if me.phase in (JOINING, MEMBER) and s.subscriptionChanges < cfg.max_subscription_changes:
            for topics in self.subscription_choices:
                if topics != me.subscription:
                    changed = me._replace(subscription=topics, sentSubscription=None)
                    step = with_consumer(changed, subscriptionChanges=s.subscriptionChanges + 1)
                    out.append((self._act("ChangeSubscription", c, ",".join(sorted(topics))), step))
        if s.faults < cfg.max_faults and me.phase in (JOINING, MEMBER):
            if cfg.crashes:
                crashed = me._replace(phase=STOPPED, response=None, assignment=NO_PARTITIONS)
                out.append((self._act("ConsumerCrash", c), with_consumer(crashed, faults=s.faults + 1)))
            if me.phase == MEMBER and me.request is None and me.response is None:
                out.append(
                    (self._act("Unsubscribe", c), with_consumer(me._replace(phase=LEAVING), faults=s.faults + 1))
                )
        return out

    def _coordinator_steps(self, s: ShareGroupMembershipState) -> list[Step]:
        cfg = self.config
        out: list[Step] = []
        group, metadata = s.group, s.shareGroupStatePartitionMetadata
        for m in group.members:
            if cfg.timeouts == "any" or s.consumers[consumer_of(m.memberId)].phase == STOPPED:
                out.append((self._act("SessionTimeout", m.memberId), s._replace(group=self._fence(s, m))))
        for i, partitions in enumerate(s.initializeRequests):
            rest = (*s.initializeRequests[:i], *s.initializeRequests[i + 1 :])
            label = partitions_text(partitions)
            done = metadata._replace(
                initializingTopics=metadata.initializingTopics - partitions,
                staleInitializingTopics=metadata.staleInitializingTopics - partitions,
                initializedTopics=metadata.initializedTopics | partitions,
            )
            out.append(
                (
                    self._act("InitializeShareGroupState", label, INITIALIZED),
                    s._replace(shareGroupStatePartitionMetadata=done, initializeRequests=rest),
                )
            )
            if s.initializeFailures < cfg.max_initialize_failures:
                failed = s.initializeFailures + 1
                undone = metadata._replace(
                    initializingTopics=metadata.initializingTopics - partitions,
                    staleInitializingTopics=metadata.staleInitializingTopics - partitions,
                )
                for error, after in ((PERSISTER_ERROR, undone), (ANSWER_LOST, metadata)):
                    step = s._replace(
                        shareGroupStatePartitionMetadata=after, initializeRequests=rest, initializeFailures=failed
                    )
                    out.append((self._act("InitializeShareGroupState", label, error), step))
        in_flight = frozenset(tp for request in s.initializeRequests for tp in request)
        waiting = metadata.initializingTopics - in_flight
        if waiting:
            stale = metadata._replace(
                initializingTopics=metadata.initializingTopics - waiting,
                staleInitializingTopics=metadata.staleInitializingTopics | waiting,
            )
            out.append(
                (self._act("InitializeRetryIntervalElapses"), s._replace(shareGroupStatePartitionMetadata=stale))
            )
        if cfg.kafka_20291 and not group.assignmentDue:
            due = group._replace(assignmentDue=True)
            out.append((self._act("AssignmentIntervalElapses"), s._replace(group=due)))
        added = sum(n for _, n in s.partitionCounts) - cfg.partitions * cfg.topics
        if added < cfg.max_partitions_added:
            for t, (topic, n) in enumerate(s.partitionCounts):
                if n < MAX_PARTITIONS:
                    counts = (*s.partitionCounts[:t], (topic, n + 1), *s.partitionCounts[t + 1 :])
                    out.append((self._act("CreatePartitions", topic), s._replace(partitionCounts=counts)))
        return out

    # -- the coordinator: ShareGroupHeartbeat -------------------------------------------------------
    def _heartbeat_step(self, s: ShareGroupMembershipState, c: int) -> Step:
        me = s.consumers[c]
        hb = me.request
        assert hb is not None
        if hb.memberEpoch == LEAVE_EPOCH:
            member = member_of(s.group, hb.memberId)
            error = NONE if member is not None else UNKNOWN_MEMBER_ID
            group = s.group if member is None else self._fence(s, member)
            response = HeartbeatResponse(error, LEAVE_EPOCH, None)
            after = s._replace(group=group)
        else:
            error, after, response = self._handle_heartbeat(s, hb)
        answered = me._replace(request=None, response=None if me.phase == STOPPED else response)
        consumers = (*after.consumers[:c], answered, *after.consumers[c + 1 :])
        return self._act("HandleHeartbeat", c, error), after._replace(consumers=consumers)

    def _handle_heartbeat(
        self, s: ShareGroupMembershipState, hb: Heartbeat
    ) -> tuple[str, ShareGroupMembershipState, HeartbeatResponse]:
        """``GroupMetadataManager.shareGroupHeartbeat``."""
        group = s.group
        member = member_of(group, hb.memberId)
        joining = hb.memberEpoch == JOIN_EPOCH
        if member is None and not joining:
            return UNKNOWN_MEMBER_ID, s, HeartbeatResponse(UNKNOWN_MEMBER_ID, hb.memberEpoch, None)
        if member is not None and not self._epoch_valid(member, hb.memberEpoch):
            return FENCED_MEMBER_EPOCH, s, HeartbeatResponse(FENCED_MEMBER_EPOCH, hb.memberEpoch, None)
        if member is None:  # getOrMaybeCreateMember: a new member at epoch 0, subscribed to nothing yet
            member = ShareGroupMember(hb.memberId, 0, 0, frozenset(), NO_PARTITIONS)
        updated = member
        if hb.subscribedTopicNames is not None:
            updated = member._replace(subscribedTopicNames=hb.subscribedTopicNames)
        bump = updated.subscribedTopicNames != member.subscribedTopicNames
        metadata = s.shareGroupStatePartitionMetadata
        if self.asks_initialized_assignment_pending(group):
            bump |= self.initialized_assignment_pending(group, metadata.initializedTopics)
        others = tuple(m for m in group.members if m.memberId != hb.memberId)
        members = tuple(sorted((*others, updated)))
        subscribed = subscribed_topics(group._replace(members=members))
        metadata_hash = _metadata_hash(s, subscribed)
        bump |= metadata_hash != group.metadataHash
        group = group._replace(members=members)
        if bump:
            group = group._replace(groupEpoch=group.groupEpoch + 1, metadataHash=metadata_hash)
        group = self._maybe_update_target_assignment(group, s, metadata.initializedTopics)
        reconciled = self._reconcile(updated, group, bump)
        group = group._replace(members=tuple(sorted((*others, reconciled))))
        changed = reconciled.assignedPartitions != member.assignedPartitions
        full = joining or hb.subscribedTopicNames is not None or changed
        response = HeartbeatResponse(NONE, reconciled.memberEpoch, reconciled.assignedPartitions if full else None)
        after = s._replace(group=group)
        return NONE, self._maybe_initialize(after, subscribed), response

    def _epoch_valid(self, member: ShareGroupMember, epoch: int) -> bool:
        """``throwIfShareGroupMemberEpochIsInvalid``: the member's epoch, or its previous one (the answer that
        moved it on may have been lost); since KAFKA-19233, epoch 0 too (a rejoin)."""
        if epoch == JOIN_EPOCH and self.config.kafka_19233:
            return True
        return epoch == member.memberEpoch or (epoch < member.memberEpoch and epoch == member.previousMemberEpoch)

    def asks_initialized_assignment_pending(self, group: ShareGroup) -> bool:
        """Whether a heartbeat asks ``initializedAssignmentPending``: since KAFKA-20291 only while the target is
        as new as the group (a delayed target would otherwise bump the epoch at every heartbeat)."""
        return not self.config.kafka_20291 or group.assignmentEpoch >= group.groupEpoch

    def initialized_assignment_pending(self, group: ShareGroup, initialized: Partitions) -> bool:
        """``initializedAssignmentPending``: whether initialized partitions wait for an assignment. Since
        KAFKA-19468 only subscribed topics count, each compared whole with what the target assigns of it;
        before, the initialized partitions of every topic were compared with the whole target."""
        if not group.members or not initialized:
            return False
        assigned = assigned_anywhere(group)
        if not self.config.kafka_19468:
            return initialized != assigned
        subscribed = subscribed_topics(group)
        if not subscribed:
            return False
        for topic in sorted({t for t, _ in initialized} & subscribed):
            of_topic = frozenset(tp for tp in initialized if tp[0] == topic)
            if frozenset(tp for tp in assigned if tp[0] == topic) != of_topic:
                return True
        return False

    def _maybe_update_target_assignment(
        self, group: ShareGroup, s: ShareGroupMembershipState, initialized: Partitions
    ) -> ShareGroup:
        """``maybeUpdateTargetAssignment``: a new target for a new group epoch, unless one was computed within
        the assignment interval (``canComputeNextTargetAssignment``)."""
        if group.assignmentEpoch >= group.groupEpoch:
            return group
        if self.config.kafka_20291 and not group.assignmentDue:
            return group
        previous = dict(group.targetAssignment)
        inputs = (
            tuple((m.memberId, m.subscribedTopicNames, previous.get(m.memberId, NO_PARTITIONS)) for m in group.members),
            s.partitionCounts,
            initialized,
        )
        target = self._targets.get(inputs)
        if target is None:
            result = assign(inputs[0], dict(s.partitionCounts), initialized)
            target = self._targets[inputs] = tuple(sorted(result.items()))
        due = not self.config.kafka_20291
        return group._replace(targetAssignment=target, assignmentEpoch=group.groupEpoch, assignmentDue=due)

    def _maybe_initialize(self, s: ShareGroupMembershipState, subscribed: frozenset[str]) -> ShareGroupMembershipState:
        """``maybeCreateInitializeShareGroupStateRequest``: the subscribed partitions neither initialized nor
        being initialized within the retry interval go to initializing and to the share coordinator."""
        metadata = s.shareGroupStatePartitionMetadata
        known = metadata.initializedTopics | metadata.initializingTopics
        missing = frozenset(
            (topic, p)
            for topic, n in s.partitionCounts
            if topic in subscribed
            for p in range(n)
            if (topic, p) not in known
        )
        if not missing:
            return s
        metadata = metadata._replace(
            initializingTopics=metadata.initializingTopics | missing,
            staleInitializingTopics=metadata.staleInitializingTopics - missing,
        )
        requests = tuple(sorted((*s.initializeRequests, missing), key=sorted))
        return s._replace(shareGroupStatePartitionMetadata=metadata, initializeRequests=requests)

    def _fence(self, s: ShareGroupMembershipState, member: ShareGroupMember) -> ShareGroup:
        """``shareGroupFenceMember``: the member and its target go, the group epoch is bumped with the metadata
        of what the others subscribe to."""
        group = s.group
        members = tuple(m for m in group.members if m.memberId != member.memberId)
        target = tuple((m, t) for m, t in group.targetAssignment if m != member.memberId)
        metadata_hash = _metadata_hash(s, subscribed_topics(group._replace(members=members)))
        return group._replace(
            groupEpoch=group.groupEpoch + 1, targetAssignment=target, members=members, metadataHash=metadata_hash
        )

    def _reconcile(self, member: ShareGroupMember, group: ShareGroup, bumped: bool) -> ShareGroupMember:
        """``maybeReconcile`` and ``ShareGroupAssignmentBuilder.build``: a member moves to the target epoch at
        once (nothing to revoke), keeping of its target only the topics it subscribes to; after a bump it takes
        its target again even at the same epoch (Kafka passes the bump as "the subscription changed")."""
        epoch = group.assignmentEpoch
        if not bumped and member.memberEpoch == epoch:
            return member
        target = target_of(group, member.memberId)
        kept = frozenset(tp for tp in target if tp[0] in member.subscribedTopicNames)
        if epoch != member.memberEpoch:
            return member._replace(previousMemberEpoch=member.memberEpoch, memberEpoch=epoch, assignedPartitions=kept)
        return member._replace(assignedPartitions=kept)

    def drawing(self) -> ShareGroupMembershipDrawing:
        return ShareGroupMembershipDrawing(self.config.consumers)


def _metadata_hash(s: ShareGroupMembershipState, subscribed: frozenset[str]) -> tuple[tuple[str, int], ...]:
    """What ``computeMetadataHash`` hashes: the partition count of each subscribed topic."""
    return tuple((t, n) for t, n in s.partitionCounts if t in subscribed)


# -- the client (ShareMembershipManager, ShareHeartbeatRequestManager) -----------------------------
def _with_heartbeat(c: int, me: ShareConsumer) -> ShareConsumer:
    """The consumer's next ShareGroupHeartbeat: a leave, a join, or its epoch with its subscription when the
    coordinator has not had it yet."""
    if me.phase == LEAVING:
        return me._replace(request=Heartbeat(member_id(c), LEAVE_EPOCH, None))
    if me.phase == MEMBER and me.sentSubscription == me.subscription:
        return me._replace(request=Heartbeat(member_id(c), me.memberEpoch, None))
    heartbeat = Heartbeat(member_id(c), me.memberEpoch, me.subscription)
    return me._replace(request=heartbeat, sentSubscription=me.subscription)


def _received(me: ShareConsumer) -> ShareConsumer:
    """The consumer after it handles its heartbeat's response."""
    response = me.response
    assert response is not None
    me = me._replace(response=None)
    if me.phase == LEAVING:
        return me._replace(phase=STOPPED, memberEpoch=JOIN_EPOCH, assignment=NO_PARTITIONS, sentSubscription=None)
    if response.error != NONE:  # fenced or unknown: every partition is released, rejoin with the same member id
        return me._replace(phase=JOINING, memberEpoch=JOIN_EPOCH, assignment=NO_PARTITIONS, sentSubscription=None)
    me = me._replace(phase=MEMBER, memberEpoch=response.memberEpoch)
    if response.assignment is not None:
        me = me._replace(assignment=response.assignment)
    return me
