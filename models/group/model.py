"""The classic consumer-group protocol: the group coordinator and the consumers that join it.

One group, one subscribed topic with ``partitions`` partitions, ``consumers`` client processes.
The coordinator follows ``GroupCoordinator``/``GroupMetadata``: the five
group states and their legal transitions, JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit
with their error codes, member ids, KIP-394 pending members, generations, the KIP-134 initial
delay, the rebalance and session timeouts and DelayedSync as expiry actions, static membership
(KIP-345) and coordinator failover with exactly what is persisted. The consumers follow
``ConsumerCoordinator``: eager (revoke everything before JoinGroup) or cooperative (KIP-429:
keep owned partitions, revoke only what the new assignment takes away, then rejoin), with the
group leader running one of the assignors of :mod:`kmc.models.group.assignors`.

Requests are messages: a consumer has at most one JoinGroup or SyncGroup outstanding; the
coordinator handles it when it arrives and either answers at once or parks the callback, as the
Kafka code does, and completes it later. Heartbeat, LeaveGroup and OffsetCommit are answered in
the step that sends them. Wall-clock time is abstracted: a timer may expire whenever the
consumer behind it could have missed it — with ``timeouts=crashed`` only when that consumer is
not running, with ``timeouts=any`` at any moment (slow consumers, long GC pauses).

Two abstractions keep the state space finite without changing any behaviour: a new member id is
the smallest number not mentioned anywhere in the state (Kafka mints a UUID: it is only ever
compared for equality), and generations are shifted so the smallest one in the state is 1 when
none is 0 (they are only compared with each other, plus one, or with 0 and -1).
"""

from __future__ import annotations

from kmc.checker import Action, Model
from kmc.checker.extension import SuccessorsInC
from kmc.checker.search.liveness import WF
from kmc.models.group.bugs import BUGS
from kmc.models.group.client import ClientSide
from kmc.models.group.config import ACTION_ARGS, PRESETS, GroupConfig
from kmc.models.group.coordinator import CoordinatorSide
from kmc.models.group.drawing import GroupDrawing
from kmc.models.group.state import (
    ASSIGNOR_FAILED,
    COMPLETING_REBALANCE,
    CONSUMING,
    COORDINATOR_NOT_AVAILABLE,
    DEAD,
    EMPTY,
    FENCED,
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    JOINING,
    MEMBER_ID_REQUIRED,
    NO_GENERATION,
    NO_MEMBER,
    NONE,
    NOT_COORDINATOR,
    PREPARING_REBALANCE,
    REBALANCE_IN_PROGRESS,
    STABLE,
    STOPPED,
    SYNCING,
    UNJOINED,
    UNKNOWN_MEMBER_ID,
    VALID_PREVIOUS_STATES,
    Consumer,
    Group,
    GroupMember,
    GroupState,
    Request,
    Response,
    Step,
    StoredGroup,
    canonical_state,
    error_response,
    find_member,
    fresh_member_id,
    generations_of,
    highest_generation,
    holds_member_id,
    is_parked,
    mentioned_member_ids,
    normalised,
    stored_group,
    sync_response,
    with_consumer,
    with_group,
    without_member,
)

__all__ = [
    "ACTION_ARGS",
    "ASSIGNOR_FAILED",
    "COMPLETING_REBALANCE",
    "CONSUMING",
    "COORDINATOR_NOT_AVAILABLE",
    "DEAD",
    "EMPTY",
    "FENCED",
    "FENCED_INSTANCE_ID",
    "ILLEGAL_GENERATION",
    "JOINING",
    "MEMBER_ID_REQUIRED",
    "NONE",
    "NOT_COORDINATOR",
    "NO_GENERATION",
    "NO_MEMBER",
    "PREPARING_REBALANCE",
    "PRESETS",
    "REBALANCE_IN_PROGRESS",
    "STABLE",
    "STOPPED",
    "SYNCING",
    "UNJOINED",
    "UNKNOWN_MEMBER_ID",
    "VALID_PREVIOUS_STATES",
    "Consumer",
    "Group",
    "GroupConfig",
    "GroupDrawing",
    "GroupMember",
    "GroupModel",
    "GroupState",
    "Request",
    "Response",
    "Step",
    "StoredGroup",
    "error_response",
    "find_member",
    "fresh_member_id",
    "generations_of",
    "highest_generation",
    "holds_member_id",
    "is_parked",
    "mentioned_member_ids",
    "normalised",
    "stored_group",
    "sync_response",
    "with_consumer",
    "with_group",
    "without_member",
]
"""What other modules import from here (the state lives in :mod:`.group_state`)."""


class GroupModel(SuccessorsInC, ClientSide, CoordinatorSide, Model):
    name = "group"
    actions = tuple(ACTION_ARGS)
    description = "the classic consumer-group coordinator with eager or cooperative consumers"
    Config = GroupConfig
    presets = PRESETS
    bugs = BUGS
    default_preset = "eager-range"
    spec_modules = ("kmc.specs.group",)
    fairness = (
        WF("Send*", each=True),
        WF("Handle*", each=True),
        WF("Receive*", each=True),
        WF("Heartbeat", each=True),
        WF("ConsumerStart", each=True),
        WF("InitialDelayExpired"),
        WF("RebalanceTimeout"),
        WF("SyncTimeout"),
        WF("SessionTimeout", each=True),
        WF("PendingMemberTimeout", each=True),
        WF("NewMemberJoinTimeout", each=True),
        WF("CoordinatorLoad"),
    )
    """Everything but the faults (crash, leave, stall, a slow coordinator, failover) and commits
    happens if it stays enabled."""

    config: GroupConfig

    def __init__(self, config: GroupConfig | None = None) -> None:
        super().__init__(config)
        self.partition_ids = frozenset(range(self.config.partitions))
        self.sticky = self.config.assignor in ("sticky", "cooperative-sticky")
        self.cooperative = self.config.rebalance_protocol == "cooperative"
        self.claims_generation = self._claims_generation()
        """Which generation a subscription reports with its owned partitions: the consumer's
        "current" one, that of its last "assignment", or "none"."""
        self.claimless_generation_matters = not self.config.keep_uncontested_older_claims
        """Whether a member claiming nothing still reports its generation: only the rule before
        KAFKA-14639 (the newest generation's claims alone count) reads it, so elsewhere the model
        leaves it out and does not split states on it."""
        self.validates_cooperative_assignment = self.cooperative and (
            self.config.cooperative_assignment_validation == "all"
            or (
                self.config.cooperative_assignment_validation == "except-built-in"
                and self.config.assignor != "cooperative-sticky"
            )
        )
        self._assignments: dict[tuple, tuple[tuple[str, frozenset[int]], ...] | None] = {}
        """The assignor's answer by subscriptions (it is deterministic), None where it throws."""
        self._own_steps_of = {}
        """A consumer's steps that read only the consumer, by (index, Consumer)."""
        self._actions: dict[tuple[str, tuple[object, ...]], Action] = {}
        extension = self.use_c_twin("kmc.models.group._successors", GroupModel, self._twin_context)
        self._twin_highest_generation = extension.max_generation if extension is not None else None

    def _claims_generation(self) -> str:
        assignor = self.config.assignor
        if assignor == "cooperative-sticky":
            if self.config.subscription_generation:  # KIP-792: read before the user data
                return "current"
            return "assignment" if self.config.cooperative_sticky_generation else "none"
        if assignor == "sticky":
            if self.cooperative:  # an assignor that reads the subscription (the unsafe presets)
                return "current"
            return "assignment" if self.config.sticky_user_data_generation else "none"
        return "none"  # range and roundrobin read no generation

    def inactive_actions(self) -> tuple[str, ...]:
        """Actions this config turns off: coverage does not call them vacuous."""
        off = []
        if not self.config.slow_coordinator:
            off.append("RequestTimeout")
        if not self.config.poll_stalls:
            off.append("ConsumerStall")
        if not self.config.consumer_pauses or self.config.timeouts == "any":
            off.append("ConsumerPause")
        if self.config.static_membership:  # static members do not send LeaveGroup, nor get MEMBER_ID_REQUIRED
            off.append("LeaveGroup")
        if self.config.static_membership or not self.config.require_known_member_id:
            off.append("PendingMemberTimeout")
        if not self.config.new_member_join_timeout:
            off.append("NewMemberJoinTimeout")
        if not self.config.delayed_sync:
            off.append("SyncTimeout")
        if not self.config.initial_rebalance_delay:
            off.append("InitialDelayExpired")
        if not self.config.coordinator_failover:
            off += ["CoordinatorUnload", "CoordinatorLoad"]
        if self.config.max_faults == 0:
            off += [
                "ConsumerCrash",
                "ConsumerStall",
                "ConsumerPause",
                "LeaveGroup",
                "RequestTimeout",
                "CoordinatorUnload",
                "CoordinatorLoad",
            ]
            if not self.config.duplicate_instance:
                off.append("ConsumerStart")
                if self.config.timeouts == "crashed":  # every process runs: no timer waits for a dead one
                    off += ["SessionTimeout", "PendingMemberTimeout", "NewMemberJoinTimeout"]
                    if not (self.config.join_group_v0 and not self.config.v0_rebalance_timeout):
                        off.append("RebalanceTimeout")
        return tuple(dict.fromkeys(off))

    def _act(self, name: str, *values: object) -> Action:
        action = self._actions.get((name, values))
        if action is None:
            action = self._actions[(name, values)] = Action.of(name, zip(ACTION_ARGS[name], values, strict=True))
        return action

    def instance_id(self, c: int) -> str | None:
        """Consumer c's group.instance.id; the duplicate process (the last one) shares consumer 0's."""
        if not self.config.static_membership:
            return None
        return "i0" if c == self.config.consumers else f"i{c}"

    @property
    def processes(self) -> int:
        """Consumer processes: one per consumer, and the duplicate of consumer 0 if there is one."""
        return self.config.consumers + (1 if self.config.duplicate_instance else 0)

    # -- init ----------------------------------------------------------------------------------
    def init_states(self) -> list[GroupState]:
        group = Group(EMPTY, 0, NO_MEMBER, (), frozenset(), frozenset(), "", False, 0, None)
        consumer = Consumer(UNJOINED, NO_MEMBER, NO_GENERATION, frozenset(), frozenset(), None, None, 0, False)
        consumers = (consumer,) * self.config.consumers
        if self.config.duplicate_instance:  # not running yet: ConsumerStart launches it
            consumers += (consumer._replace(phase=STOPPED),)
        return [GroupState(group, consumers, 0)]

    def _twin_context(self) -> tuple:
        """What the C successor function reads: the state types, the model's strings, the action
        names (labels come from ``_act``, cached by the C under its own keys), the assignor and the
        config as small ints."""
        c = self.config
        flags = (
            c.consumers,
            self.cooperative,
            self.sticky,
            ("none", "current", "assignment").index(self.claims_generation),
            self.claimless_generation_matters,
            c.static_membership,
            c.require_known_member_id,
            c.new_member_join_timeout,
            c.pending_members_block_join,
            c.join_group_v0,
            c.v0_rebalance_timeout,
            c.initial_rebalance_delay,
            c.delay_extensions,
            c.delayed_sync,
            c.rebalance_static_rejoin_in_completing,
            c.join_prepare_after_reset,
            c.sync_rebalance_resets_generation,
            c.fence_replaced_static_member,
            c.persist_static_replacement,
            c.timeouts == "any",
            c.max_faults,
            c.coordinator_failover,
            c.slow_coordinator,
            c.consumer_pauses,
            c.poll_stalls,
        )
        return (
            GroupState,
            Group,
            GroupMember,
            StoredGroup,
            Consumer,
            Request,
            Response,
            (EMPTY, PREPARING_REBALANCE, COMPLETING_REBALANCE, STABLE, DEAD),
            (STOPPED, UNJOINED, JOINING, SYNCING, CONSUMING, FENCED),
            (
                NONE,
                UNKNOWN_MEMBER_ID,
                ILLEGAL_GENERATION,
                REBALANCE_IN_PROGRESS,
                MEMBER_ID_REQUIRED,
                FENCED_INSTANCE_ID,
                NOT_COORDINATOR,
                COORDINATOR_NOT_AVAILABLE,
                ASSIGNOR_FAILED,
            ),
            ("JoinGroup", "SyncGroup"),
            ("", "initial", "join"),
            _FAST_ACTIONS,
            {},
            self._act,
            self._run_assignor,
            tuple(int(f) for f in flags),
        )

    # -- next ----------------------------------------------------------------------------------
    def _successors(self, s: GroupState) -> list[Step]:
        """The definition of the model's steps (the C extension's successors return the same list)."""
        out: list[Step] = []
        for c, consumer in enumerate(s.consumers):
            self._consumer_steps(s, c, consumer, out)
        if s.group.state == DEAD:
            out.append((self._act("CoordinatorLoad"), self._load(s)))
        else:
            self._coordinator_timers(s, out)
            if self.config.coordinator_failover and s.faults < self.config.max_faults:
                out.append((self._act("CoordinatorUnload"), self._unload(s)))
        group = s.group  # canonical already: a successor that keeps it needs no canonical form
        return [(a, normalised(n if n.group is group else canonical_state(n))) for a, n in out]

    def within_bounds(self, s: GroupState) -> bool:
        """Generations stay finite only if bounded when timers can expire at any moment: a consumer
        can sit idle while the group moves on (its generation falls ever further behind)."""
        if self._twin_ctx is not None:
            highest = self._twin_highest_generation(self._twin_ctx, s)
            if highest is not None:
                return highest < self.config.max_generation
        return highest_generation(s) < self.config.max_generation

    def drawing(self) -> GroupDrawing:
        return GroupDrawing(self.processes)


_FAST_ACTIONS = (
    "SendJoinGroup",
    "HandleJoinGroup",
    "HandleSyncGroup",
    "ReceiveJoinGroup",
    "ReceiveSyncGroup",
    "Heartbeat",
    "OffsetCommit",
    "LeaveGroup",
    "ConsumerCrash",
    "ConsumerStart",
    "ConsumerStall",
    "RequestTimeout",
    "InitialDelayExpired",
    "RebalanceTimeout",
    "SyncTimeout",
    "SessionTimeout",
    "ConsumerPause",
    "PendingMemberTimeout",
    "NewMemberJoinTimeout",
    "CoordinatorUnload",
    "CoordinatorLoad",
)
"""The actions in the order of the C's action kinds."""
