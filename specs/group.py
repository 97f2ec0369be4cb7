"""Properties of the `group` model: the classic coordinator's invariants and the
rebalance guarantees (ownership, coverage, progress)."""

from __future__ import annotations

from kmc.checker import Action, invariant, leads_to, step
from kmc.models.group.assignors import pairwise_disjoint
from kmc.models.group.model import (
    COMPLETING_REBALANCE,
    EMPTY,
    FENCED,
    FENCED_INSTANCE_ID,
    NONE,
    PREPARING_REBALANCE,
    STABLE,
    STOPPED,
    VALID_PREVIOUS_STATES,
    GroupState,
)


@invariant
def ExclusiveOwnership(s: GroupState) -> bool:
    """G-Own: no partition is processed by two consumers at the same time. A consumer whose
    application stopped polling for good (``poll_stalls``) processes nothing and is left out."""
    return pairwise_disjoint(consumer.owned for consumer in s.consumers if not consumer.stalled)


@invariant
def StableAssignmentCovers(s: GroupState, model) -> bool:  # type: ignore[no-untyped-def]
    """GC-2: a Stable group's assignment gives every partition to exactly one member (the
    cooperative assignor may hold some back for one more round, so only the eager ones)."""
    group = s.group
    if group.state != STABLE or not group.members:
        return True
    assigned = [p for m in group.members for p in m.assignment]
    if len(assigned) != len(set(assigned)):
        return False
    return model.config.rebalance_protocol == "cooperative" or set(assigned) == model.partition_ids


@invariant
def NoPartitionTwiceInGeneration(s: GroupState) -> bool:
    """The assignment the coordinator holds for its generation (what SyncGroup hands out, and
    the record it stores) names each partition at most once, in every group state."""
    stored = s.group.stored
    holdings = [s.group.members] if stored is None else [s.group.members, stored.members]
    return all(pairwise_disjoint(m.assignment for m in members) for members in holdings)


@invariant
def OneMemberPerInstance(s: GroupState) -> bool:
    """GC-4: at most one member id per group.instance.id."""
    instances = [m.groupInstanceId for m in s.group.members if m.groupInstanceId is not None]
    return len(instances) == len(set(instances))


@step
def NoLiveConsumerFenced(s: GroupState, action: Action, t: GroupState, model) -> bool:  # type: ignore[no-untyped-def]
    """GC-6: the coordinator answers FENCED_INSTANCE_ID only when another process took over the
    group.instance.id (a duplicate, ``duplicate_instance``): never to the one process of an instance
    because the coordinator forgot or mixed up its member id."""
    for c, after in enumerate(t.consumers):
        response = after.response
        answered = response is not None and response.error == FENCED_INSTANCE_ID
        if not answered and after.phase != FENCED:  # the common case: nothing to check
            continue
        before = s.consumers[c]
        issued = answered and response != before.response
        told = after.phase == FENCED and before.phase != FENCED and not action.name.startswith("Receive")
        if not (issued or told):
            continue
        instance = model.instance_id(c)
        holder = next((m for m in t.group.members if m.groupInstanceId == instance), None)
        if holder is None or holder.consumer == c:
            return False
    return True


@invariant
def OneProcessPerMemberId(s: GroupState) -> bool:
    """GC-4: no two running consumer processes hold the same member id -- a replaced member id can
    never be answered with NONE again, so a duplicate process is always told apart."""
    held = [consumer.memberId for consumer in s.consumers if consumer.phase not in (STOPPED, FENCED)]
    held = [m for m in held if m]
    return len(held) == len(set(held))


@invariant
def MembersWithinLiveProcesses(s: GroupState) -> bool:
    """Members ≤ live processes: no running consumer process is behind two members (a static
    member is one member per instance). A crashed process's member waits for its session timeout,
    and its next incarnation is another process; a JoinGroup retried after a request timeout is
    the same process, and before KIP-394 it mints a second member (KAFKA-7610)."""
    behind = [
        (m.consumer, m.incarnation)
        for m in s.group.members
        if s.consumers[m.consumer].phase not in (STOPPED, FENCED)
        and s.consumers[m.consumer].incarnation == m.incarnation
    ]
    return len(behind) == len(set(behind))


@invariant
def StaticReplacementPersisted(s: GroupState) -> bool:
    """GC-6: in a Stable group, the stored record maps every group.instance.id to the member id the
    coordinator holds, so a failover cannot bring back a replaced member id."""
    group = s.group
    if group.state != STABLE:
        return True
    live = {m.groupInstanceId: m.memberId for m in group.members if m.groupInstanceId is not None}
    stored = group.stored.members if group.stored is not None else ()
    return live == {m.groupInstanceId: m.memberId for m in stored if m.groupInstanceId is not None}


@step
def LegalGroupTransition(s: GroupState, action: Action, t: GroupState) -> bool:
    """GC-1: every state change is one ClassicGroupState allows, or two through PreparingRebalance
    when the handler that starts a rebalance also completes the join (``tryCompleteJoin`` runs
    under the same group lock). Loading after a failover makes a new group object."""
    before, after = s.group.state, t.group.state
    if action.name == "CoordinatorLoad" or before == after or before in VALID_PREVIOUS_STATES[after]:
        return True
    return before in VALID_PREVIOUS_STATES[PREPARING_REBALANCE] and PREPARING_REBALANCE in VALID_PREVIOUS_STATES[after]


@step
def CommitFencedByGeneration(s: GroupState, action: Action, t: GroupState) -> bool:
    """GC-3: an OffsetCommit is accepted only from a current member with the current generation."""
    if action.name != "OffsetCommit" or action.args["error"] != NONE:
        return True
    args = action.args
    members = {m.memberId for m in s.group.members}
    return args["memberId"] in members and args["generationId"] == s.group.generationId


@leads_to(lambda s: s.group.state == PREPARING_REBALANCE)
def RebalanceCompletes(s: GroupState) -> bool:
    """GC-5: a rebalance that starts ends: the group reaches Stable (or Empty)."""
    return s.group.state in (STABLE, EMPTY)


@leads_to(lambda s: s.group.state == COMPLETING_REBALANCE)
def SyncCompletes(s: GroupState) -> bool:
    """GC-5: CompletingRebalance ends, in Stable or in another rebalance."""
    return s.group.state != COMPLETING_REBALANCE
