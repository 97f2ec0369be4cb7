"""The `group` model against Kafka's classic group (``ClassicGroup``, ``ClassicGroupState``).

The coordinator's request handling lives in ``GroupMetadataManager``, which needs the coordinator
runtime (timer, executor, metadata image, snapshot registry, record replay) and so is not driven
here. What ``ClassicGroup`` decides on its own is: which state transitions are legal
(``transitionTo``), when every member has joined (``hasAllMembersJoined``), who leads after a
join (``maybeElectNewJoinedLeader``), the next generation (``initNextGeneration``, with
``selectProtocol``), which members did not rejoin (``notYetRejoinedMembers``), whether a new
member's protocols fit (``supportsProtocols``), member validation (``validateMember``), offset
commit validation (``validateOffsetCommit``) and the static-member swap (``replaceStaticMember``).

For each step, the model's handler is re-executed with its group writes recorded (every
``with_group`` of :mod:`kmc.models.group.coordinator`, in order), so the oracle sees the
intermediate groups inside one handler (Stable → PreparingRebalance → CompletingRebalance is two
writes, two transitions). A real ``ClassicGroup`` is built from the group just before each
decision and asked the same question.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import pairwise
from typing import Any

from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.checker.model import Action
from kmc.models.group import coordinator as group_coordinator
from kmc.models.group import model as gm
from kmc.models.group.model import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    FENCED_INSTANCE_ID,
    NONE,
    PREPARING_REBALANCE,
    UNKNOWN_MEMBER_ID,
    Group,
    GroupModel,
    GroupState,
)

from . import jvm

CLASSIC = "org.apache.kafka.coordinator.group.classic."
PROTOCOL_TYPE = "consumer"
TOPIC = "t"
"""The model's one subscribed topic (``GroupModel._run_assignor`` names it so)."""
TIMER_ACTIONS = ("RebalanceTimeout", "InitialDelayExpired")
"""Timers complete a join whether or not everyone joined (``DelayedJoin`` expiry)."""


class _Traced(GroupState):
    """A GroupState that remembers every group its handler wrote, in order (for re-execution only)."""

    writes: tuple[Group, ...]

    def _replace(self, **changes: Any) -> _Traced:  # type: ignore[override]
        new = GroupState._replace(self, **changes)
        new.writes = self.writes  # type: ignore[attr-defined]
        return new  # type: ignore[return-value]


def _traced(s: GroupState, writes: tuple[Group, ...] = ()) -> _Traced:
    t = _Traced(*s)
    t.writes = writes
    return t


def _recording_set_group(s: GroupState, group: Group) -> GroupState:
    new = s._replace(group=group)
    if isinstance(new, _Traced):
        new.writes = (*new.writes, group)
    return new


class ClassicGroupOracle(Oracle):
    name = "classic-group"
    model_name = "group"
    reference = (
        CLASSIC + "ClassicGroup",
        CLASSIC + "ClassicGroupState",
        CLASSIC + "ClassicGroupMember",
    )
    description = "Kafka's ClassicGroup accepts every transition and makes the join/commit decisions the model makes"

    def __init__(self, model: GroupModel, release: str | None = None) -> None:  # type: ignore[override]
        super().__init__(model, release)
        self.release = jvm.start(self.release)
        self.ClassicGroup = jvm.jclass(CLASSIC + "ClassicGroup")
        self.ClassicGroupMember = jvm.jclass(CLASSIC + "ClassicGroupMember")
        state_enum = jvm.jclass(CLASSIC + "ClassicGroupState")
        self.states = {
            EMPTY: state_enum.EMPTY,
            PREPARING_REBALANCE: state_enum.PREPARING_REBALANCE,
            COMPLETING_REBALANCE: state_enum.COMPLETING_REBALANCE,
            gm.STABLE: state_enum.STABLE,
            DEAD: state_enum.DEAD,
        }
        self.names = {str(v.toString()): k for k, v in self.states.items()}
        self.Optional = jvm.jclass("java.util.Optional")
        self.Future = jvm.jclass("java.util.concurrent.CompletableFuture")
        self.log_context = jvm.jclass("org.apache.kafka.common.utils.LogContext")()
        self.time = jvm.jclass("org.apache.kafka.common.utils.Time").SYSTEM
        join = jvm.jclass("org.apache.kafka.common.message.JoinGroupRequestData")
        self.Protocols = join.JoinGroupRequestProtocolCollection
        self.Protocol = join.JoinGroupRequestProtocol
        assignor = jvm.jclass("org.apache.kafka.clients.consumer.ConsumerPartitionAssignor")
        self.Subscription = assignor.Subscription
        self.Assignment = assignor.Assignment
        self.ConsumerProtocol = jvm.jclass("org.apache.kafka.clients.consumer.internals.ConsumerProtocol")
        self.TopicPartition = jvm.jclass("org.apache.kafka.common.TopicPartition")
        self.List = jvm.jclass("java.util.List")
        self.Utils = jvm.jclass("org.apache.kafka.common.utils.Utils")
        self._cache_key: GroupState | None = None
        self._cache: list[tuple[Action, _Traced]] = []

    def unsupported(self) -> str | None:
        if not jvm.has_constructor(self.ClassicGroup, 9):
            return (
                f"Kafka {self.release}'s ClassicGroup constructors take a GroupCoordinatorMetricsShard (before 4.0), "
                "which this adapter does not build"
            )
        return None

    # -- building Kafka's group from the model's --------------------------------------------------
    def _partitions(self, partitions: Iterable[int]) -> Any:
        out = jvm.jclass("java.util.ArrayList")()
        for p in sorted(partitions):
            out.add(self.TopicPartition(TOPIC, p))
        return out

    def _protocols(self, metadata: tuple[tuple[int, ...], int]) -> Any:
        """The JoinGroup protocols a consumer sends: one (the configured assignor), its metadata the
        ConsumerProtocol subscription to the one topic with the owned partitions and generation."""
        owned, generation = metadata
        topics = self.List.of(jvm.jclass("java.lang.String")(TOPIC))
        subscription = self.Subscription(topics, None, self._partitions(owned), generation, self.Optional.empty())
        encoded = self.Utils.toArray(self.ConsumerProtocol.serializeSubscription(subscription))
        protocols = self.Protocols()
        protocols.add(self.Protocol().setName(self.model.config.assignor).setMetadata(encoded))
        return protocols

    def _assignment(self, partitions: Iterable[int]) -> Any:
        return self.Utils.toArray(
            self.ConsumerProtocol.serializeAssignment(self.Assignment(self._partitions(partitions)))
        )

    def build(self, g: Group) -> Any:
        """A ClassicGroup holding exactly what the model's group holds: state, generation, leader,
        members (parked JoinGroup/SyncGroup callbacks as pending futures, ``isNew``), KIP-394 pending
        members, pending-sync members and the KIP-134 new-member flag."""
        protocol = self.Optional.of(self.model.config.assignor) if g.members else self.Optional.empty()
        leader = self.Optional.of(g.leaderId) if g.leaderId else self.Optional.empty()
        group = self.ClassicGroup(
            self.log_context,
            "group",
            self.states[g.state],
            self.time,
            g.generationId,
            self.Optional.of(PROTOCOL_TYPE),
            protocol,
            leader,
            self.Optional.of(0),
        )
        for m in g.members:
            member = self.ClassicGroupMember(
                m.memberId,
                self.Optional.ofNullable(m.groupInstanceId),
                "client",
                "host",
                60000,
                45000,
                PROTOCOL_TYPE,
                self._protocols(m.metadata),
                self._assignment(m.assignment),
            )
            member.setIsNew(m.isNew)
            group.add(member, self.Future() if m.awaitingJoin else None)
            if m.awaitingSync:
                member.setAwaitingSyncFuture(self.Future())
        for member_id in sorted(g.pendingMembers):
            group.addPendingMember(member_id)
        for member_id in sorted(g.pendingSyncMembers):
            group.addPendingSyncMember(member_id)
        group.setNewMemberAdded(g.newMemberAdded)
        return group

    def _error(self, call: Any) -> str:
        """Run a Kafka validation: NONE, or the error its exception stands for."""
        try:
            call()
        except Exception as exc:  # a Kafka ApiException is the answer; anything else too (as text)
            if not jvm.is_java_exception(exc):
                raise
            errors = jvm.jclass("org.apache.kafka.common.protocol.Errors")
            code = errors.forException(exc)
            if code != errors.UNKNOWN_SERVER_ERROR:
                return str(code.name())
            return jvm.java_exception_text(exc)
        return NONE

    # -- re-executing the model's step with its group writes recorded ---------------------------
    def _raw_steps(self, state: GroupState) -> list[tuple[Action, _Traced]]:
        if self._cache_key is not state:
            saved = (group_coordinator.with_group, gm.normalised)
            group_coordinator.with_group, gm.normalised = _recording_set_group, lambda s: s  # type: ignore[assignment]
            try:
                steps = self.model.successors(_traced(state))
            finally:
                group_coordinator.with_group, gm.normalised = saved
            self._cache_key, self._cache = state, steps  # type: ignore[assignment]
        return self._cache

    def _writes(self, state: GroupState, action: Action, next_state: GroupState) -> tuple[Group, ...]:
        for a, raw in self._raw_steps(state):
            if a == action and gm.normalised(GroupState(*raw)) == next_state:
                writes: tuple[Group, ...] = getattr(raw, "writes", ())
                if raw.group != (writes[-1] if writes else state.group):
                    writes += (raw.group,)  # a group set without with_group: its last form counts
                return writes
        raise AssertionError(f"step {action} is not among the model's successors on re-execution")

    # -- the comparisons ------------------------------------------------------------------------
    def compare_state(self, state: GroupState) -> Iterable[Comparison]:
        """A group the model leaves waiting in PreparingRebalance (no timer pending but DelayedJoin)
        must be one Kafka would not complete either."""
        g = state.group
        if g.state == PREPARING_REBALANCE and g.joinDelay == "join":
            theirs = bool(self.build(g).hasAllMembersJoined())
            yield Comparison("hasAllMembersJoined (waiting)", False, theirs, {"group": g})

    def compare_step(self, state: GroupState, action: Action, next_state: GroupState) -> Iterator[Comparison]:
        name = action.name
        args = action.args
        before = state.group
        if name == "OffsetCommit":
            yield from self._offset_commit(state, action)
            return
        if name in ("Heartbeat", "HandleSyncGroup", "HandleJoinGroup") and before.state != DEAD:
            yield from self._validate_member(state, action)
        if name == "Heartbeat":
            return
        if name in ("SessionTimeout", "NewMemberJoinTimeout", "ConsumerPause"):
            yield self._expiry(before, args["memberId"])
        if name == "HandleJoinGroup" and before.state != DEAD:
            yield from self._pending(state, action, next_state)
        if name == "CoordinatorLoad":
            return  # a new group object loaded from the log (GroupMetadataManager replay)
        if name == "CoordinatorUnload":
            yield from self._unload(state, next_state)
            return
        writes = self._writes(state, action, next_state)
        groups = [before, *writes]
        if name == "HandleJoinGroup" and args.get("error") == NONE:
            yield from self._join(state, action, writes)
        for src, dst in pairwise(groups):
            if src.state == dst.state and dst.generationId == src.generationId:
                continue
            if src.state == PREPARING_REBALANCE and dst.state in (COMPLETING_REBALANCE, EMPTY):
                yield from self._complete_join(src, dst, name)
            else:
                yield self._transition(src, dst)

    def _transition(self, src: Group, dst: Group) -> Comparison:
        group = self.build(src)
        try:
            group.transitionTo(self.states[dst.state])
            theirs = (src.state, self.names[str(group.currentState().toString())])
        except Exception as exc:
            if not jvm.is_java_exception(exc):
                raise
            theirs = (src.state, jvm.java_exception_text(exc))
        return Comparison("transitionTo", (src.state, dst.state), theirs, {"from": src.state, "to": dst.state})

    def _complete_join(self, src: Group, dst: Group, action_name: str) -> Iterator[Comparison]:
        """``completeClassicGroupJoin``: drop dynamic members that did not rejoin, keep or elect a
        leader among those that did, then ``initNextGeneration``."""
        group = self.build(src)
        inputs = {"before": src, "after": dst}
        if action_name not in TIMER_ACTIONS:
            yield Comparison("hasAllMembersJoined", True, bool(group.hasAllMembersJoined()), inputs)
        not_rejoined = {str(k) for k, v in group.notYetRejoinedMembers().items() if not v.isStaticMember()}
        dropped = {m.memberId for m in src.members} - {m.memberId for m in dst.members}
        yield Comparison(
            "notYetRejoinedMembers (dynamic, dropped)", frozenset(dropped), frozenset(not_rejoined), inputs
        )
        for member_id in sorted(not_rejoined):
            group.remove(member_id)
        joined = {str(m.memberId()) for m in group.allMembers() if m.isAwaitingJoin()}
        # Kafka completes only if a leader rejoined or was elected, or nobody is left
        completes = bool(group.maybeElectNewJoinedLeader()) or group.allMembers().isEmpty()
        try:
            group.initNextGeneration()
        except Exception as exc:
            if not jvm.is_java_exception(exc):
                raise
            yield Comparison(
                "initNextGeneration",
                (dst.state, dst.generationId - src.generationId),
                jvm.java_exception_text(exc),
                inputs,
            )
            return
        leader = group.leaderOrNull()
        theirs_leader = "" if leader is None or not dst.members else str(leader)
        protocol = group.protocolName()
        yield Comparison(
            "initNextGeneration",
            (dst.state, dst.generationId - src.generationId, self.model.config.assignor if dst.members else None),
            (
                self.names[str(group.currentState().toString())],
                int(group.generationId()) - src.generationId,
                str(protocol.get()) if protocol.isPresent() else None,
            ),
            inputs,
        )
        # Which rejoined member leads when the old leader did not rejoin is Kafka's HashMap order
        # over random UUIDs (the model takes the smallest id): compared is that the join completes,
        # whether the leader is kept, and that the leader is one that rejoined.
        yield Comparison(
            "maybeElectNewJoinedLeader",
            (True, dst.leaderId == src.leaderId, dst.leaderId in joined or not dst.members),
            (completes, theirs_leader == src.leaderId, theirs_leader in joined or not dst.members),
            inputs,
        )

    def _join(self, state: GroupState, action: Action, writes: tuple[Group, ...]) -> Iterator[Comparison]:
        """A JoinGroup that added a member or swapped a static member's id."""
        before = state.group
        c = action.args["consumer"]
        request = state.consumers[c].request
        assert request is not None
        instance = self.model.instance_id(c)
        known = {m.memberId for m in before.members}
        added: set[str] = set()
        for g in writes:
            added = {m.memberId for m in g.members} - known
            if added:
                break
        if not added:
            return
        if (
            request.memberId == gm.NO_MEMBER
            and instance is not None
            and any(m.groupInstanceId == instance for m in before.members)
        ):
            yield from self._replace_static(before, writes, instance, added)
            return
        group = self.build(before)
        theirs = bool(group.supportsProtocols(PROTOCOL_TYPE, self._protocols(request.metadata)))
        yield Comparison("supportsProtocols", True, theirs, {"group": before})

    def _replace_static(
        self, before: Group, writes: tuple[Group, ...], instance: str, added: set[str]
    ) -> Iterator[Comparison]:
        old = next(m for m in before.members if m.groupInstanceId == instance)
        [new_id] = added
        # the model's answer: the group right after the swap, and the callbacks it fenced first
        swapped = next(g for g in writes if any(m.memberId == new_id for m in g.members))
        fenced: set[str] = set()
        for g in writes:
            if g is swapped:
                break
            was = gm.find_member(g, old.memberId)
            if was is not None:
                if old.awaitingJoin and not was.awaitingJoin:
                    fenced.add("JoinGroup")
                if old.awaitingSync and not was.awaitingSync:
                    fenced.add("SyncGroup")
        new = gm.find_member(swapped, new_id)
        assert new is not None
        ours = (swapped.leaderId, new.assignment == old.assignment, frozenset(fenced))
        group = self.build(before)
        join_future = group.member(old.memberId).awaitingJoinFuture()
        sync_future = group.member(old.memberId).awaitingSyncFuture()
        member = group.replaceStaticMember(instance, old.memberId, new_id)
        theirs_fenced = set()
        for api, future in (("JoinGroup", join_future), ("SyncGroup", sync_future)):
            if future is not None and future.isDone():
                code = future.get().errorCode()
                if code == jvm.jclass("org.apache.kafka.common.protocol.Errors").FENCED_INSTANCE_ID.code():
                    theirs_fenced.add(api)
        theirs = (
            str(group.leaderOrNull() or ""),
            bytes(member.assignment()) == bytes(self._assignment(old.assignment)),
            frozenset(theirs_fenced),
        )
        yield Comparison("replaceStaticMember", ours, theirs, {"group": before, "instance": instance, "new": new_id})
        yield Comparison("staticMemberId", new_id, str(group.staticMemberId(instance)), {"instance": instance})

    def _expiry(self, before: Group, member_id: str) -> Comparison:
        """The model expires this member: Kafka's heartbeat expiry removes only a member that has not
        satisfied its heartbeat (a member parked in a join or sync has, unless it is new: KAFKA-7610)."""
        member = gm.find_member(before, member_id)
        assert member is not None
        theirs = bool(self.build(before).member(member_id).hasSatisfiedHeartbeat())
        inputs = {
            "memberId": member_id,
            "isNew": member.isNew,
            "awaitingJoin": member.awaitingJoin,
            "awaitingSync": member.awaitingSync,
        }
        return Comparison("hasSatisfiedHeartbeat", False, theirs, inputs)

    def _pending(self, state: GroupState, action: Action, next_state: GroupState) -> Iterator[Comparison]:
        """KIP-394: a JoinGroup without a member id answered MEMBER_ID_REQUIRED adds a pending member;
        one with a pending member id is a new member's join (``isPendingMember``)."""
        before = state.group
        request = state.consumers[action.args["consumer"]].request
        assert request is not None
        group = self.build(before)
        if action.args["error"] == gm.MEMBER_ID_REQUIRED:
            [new_id] = next_state.group.pendingMembers - before.pendingMembers or {""}
            added = bool(group.addPendingMember(new_id)) if new_id else False
            theirs = (added, bool(group.isPendingMember(new_id)), bool(group.hasAllMembersJoined()))
            ours = (bool(new_id), True, False)
            yield Comparison("addPendingMember", ours, theirs, {"group": before, "memberId": new_id})
        elif request.memberId != gm.NO_MEMBER:
            ours = request.memberId in before.pendingMembers
            theirs = bool(group.isPendingMember(request.memberId))
            yield Comparison("isPendingMember", ours, theirs, {"memberId": request.memberId})

    def _validate_member(self, state: GroupState, action: Action) -> Iterator[Comparison]:
        """``validateMember``: the first check of Heartbeat, SyncGroup and a known member's JoinGroup."""
        c = action.args["consumer"]
        me = state.consumers[c]
        before = state.group
        if action.name == "Heartbeat":
            member_id = me.memberId
        else:
            assert me.request is not None
            member_id = me.request.memberId
            if action.name == "HandleJoinGroup" and (member_id == gm.NO_MEMBER or member_id in before.pendingMembers):
                return  # a new member: not validated against the members
        error = action.args["error"]
        ours = error if error in (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) else NONE
        instance = self.model.instance_id(c)
        group = self.build(before)
        theirs = self._error(lambda: group.validateMember(member_id, instance, action.name))
        yield Comparison("validateMember", ours, theirs, {"memberId": member_id, "groupInstanceId": instance})

    def _offset_commit(self, state: GroupState, action: Action) -> Iterator[Comparison]:
        args = action.args
        c = args["consumer"]
        group = self.build(state.group)
        instance = self.model.instance_id(c)
        theirs = self._error(
            lambda: group.validateOffsetCommit(args["memberId"], instance, args["generationId"], False, 9)
        )
        inputs = {"memberId": args["memberId"], "generationId": args["generationId"], "state": state.group.state}
        yield Comparison("validateOffsetCommit", args["error"], theirs, inputs)

    def _unload(self, state: GroupState, next_state: GroupState) -> Iterator[Comparison]:
        """``onUnloaded``: transitionTo(DEAD), then parked callbacks complete with NOT_COORDINATOR
        (JoinGroup ones from PreparingRebalance, SyncGroup ones from CompletingRebalance/Stable)."""
        before = state.group
        yield self._transition(before, next_state.group)
        group = self.build(before)
        futures = {}
        for m in before.members:
            member = group.member(m.memberId)
            futures[m.memberId] = (member.awaitingJoinFuture(), member.awaitingSyncFuture(), member)
        group.transitionTo(self.states[DEAD])
        previous = self.names[str(group.previousState().toString())]
        theirs = set()
        for member_id, (join_future, sync_future, member) in futures.items():
            if previous == PREPARING_REBALANCE:
                response = jvm.jclass("org.apache.kafka.common.message.JoinGroupResponseData")()
                group.completeJoinFuture(member, response.setMemberId(member_id))
            elif previous in (COMPLETING_REBALANCE, gm.STABLE):
                response = jvm.jclass("org.apache.kafka.common.message.SyncGroupResponseData")()
                group.completeSyncFuture(member, response)
            if join_future is not None and join_future.isDone():
                theirs.add((member_id, "JoinGroup"))
            if sync_future is not None and sync_future.isDone():
                theirs.add((member_id, "SyncGroup"))
        after = {m.memberId: m for m in next_state.group.members}
        ours = set()
        for m in before.members:
            now = after.get(m.memberId)
            if now is None:
                continue
            if m.awaitingJoin and not now.awaitingJoin:
                ours.add((m.memberId, "JoinGroup"))
            if m.awaitingSync and not now.awaitingSync:
                ours.add((m.memberId, "SyncGroup"))
        yield Comparison("callbacks completed on unload", frozenset(ours), frozenset(theirs), {"state": before.state})
