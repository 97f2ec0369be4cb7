"""How a share-group-membership trace is drawn: lanes for the share coordinator, the group coordinator
and each share consumer; tables for the group, its members, the partitions' state initialization and
the consumers."""

from __future__ import annotations

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table
from kmc.models.share_group_membership.state import NONE, Partitions, ShareGroupMembershipState, is_stable

GROUP_COORDINATOR = "group coordinator"
SHARE_COORDINATOR = "share coordinator"


def partitions_text(partitions: Partitions | None) -> str:
    """``t0-0 t1-0``; "-" for none, "unchanged" when not sent."""
    if partitions is None:
        return "unchanged"
    return " ".join(f"{t}-{p}" for t, p in sorted(partitions)) or "-"


def topics_text(topics: frozenset[str] | None) -> str:
    return "unchanged" if topics is None else ",".join(sorted(topics)) or "-"


class ShareGroupMembershipDrawing(Drawing):
    def __init__(self, consumers: int) -> None:
        self.consumers = [f"consumer {c}" for c in range(consumers)]

    def lanes(self) -> list[str]:
        return [SHARE_COORDINATOR, GROUP_COORDINATOR, *self.consumers]

    def arrow(self, action: Action, before: ShareGroupMembershipState, after: ShareGroupMembershipState) -> Arrow:
        args = action.args
        error = args.get("error", NONE)
        suffix = "" if error == NONE else f" → {error}"
        if action.name == "InitializeShareGroupState":
            return Arrow(
                SHARE_COORDINATOR, (GROUP_COORDINATOR,), f"InitializeShareGroupState({args['partitions']}){suffix}"
            )
        if "consumer" not in args:
            detail = " ".join(str(v) for v in args.values())
            return Arrow(GROUP_COORDINATOR, (), f"{action.name} {detail}".strip())
        lane = self.consumers[args["consumer"]]
        if action.name == "SendHeartbeat":
            hb = after.consumers[args["consumer"]].request
            assert hb is not None
            note = f"ShareGroupHeartbeat(epoch {hb.memberEpoch}, topics {topics_text(hb.subscribedTopicNames)})"
            return Arrow(lane, (GROUP_COORDINATOR,), note)
        if action.name == "HandleHeartbeat":
            sent = frozenset(after.initializeRequests) - frozenset(before.initializeRequests)
            note = f"handle ShareGroupHeartbeat{suffix}"
            if sent:
                asked = " ".join(partitions_text(p) for p in sorted(sent, key=sorted))
                return Arrow(GROUP_COORDINATOR, (SHARE_COORDINATOR,), f"{note}; InitializeShareGroupState({asked})")
            return Arrow(GROUP_COORDINATOR, (), note)
        if action.name == "ReceiveHeartbeat":
            response = before.consumers[args["consumer"]].response
            assert response is not None
            note = f"response(epoch {response.memberEpoch}, partitions {partitions_text(response.assignment)}){suffix}"
            return Arrow(GROUP_COORDINATOR, (lane,), note)
        if action.name == "HeartbeatResponseLost":
            return Arrow(GROUP_COORDINATOR, (), f"response to {lane} lost")
        if action.name == "ChangeSubscription":
            return Arrow(lane, (), f"subscribe({args['topics']})")
        return Arrow(lane, (), action.name)

    def tables(self, state: ShareGroupMembershipState) -> list[Table]:
        g = state.group
        target = "; ".join(f"{m}→{partitions_text(t)}" for m, t in g.targetAssignment) or "-"
        status = (
            "-" if not g.groupEpoch else ("EMPTY" if not g.members else ("STABLE" if is_stable(g) else "ASSIGNING"))
        )
        group = Table(
            "share group",
            ["state", "group epoch", "assignment epoch", "target assignment"],
            [[status, str(g.groupEpoch), str(g.assignmentEpoch), target]],
        )
        members = Table(
            "members",
            ["memberId", "epoch", "previous", "subscribed", "assigned"],
            [
                [
                    m.memberId,
                    str(m.memberEpoch),
                    str(m.previousMemberEpoch),
                    topics_text(m.subscribedTopicNames),
                    partitions_text(m.assignedPartitions),
                ]
                for m in g.members
            ]
            or [["-", "", "", "", ""]],
        )
        metadata = state.shareGroupStatePartitionMetadata
        initialization = Table(
            "share-group state",
            ["initialized", "initializing", "to send again", "requests in flight", "partitions"],
            [
                [
                    partitions_text(metadata.initializedTopics),
                    partitions_text(metadata.initializingTopics),
                    partitions_text(metadata.staleInitializingTopics),
                    "; ".join(partitions_text(r) for r in state.initializeRequests) or "-",
                    " ".join(f"{t}:{n}" for t, n in state.partitionCounts),
                ]
            ],
        )
        consumers = Table(
            "share consumers",
            ["", "phase", "epoch", "subscription", "assignment", "in flight"],
            [
                [
                    self.consumers[c],
                    me.phase,
                    str(me.memberEpoch),
                    topics_text(me.subscription),
                    partitions_text(me.assignment),
                    "heartbeat" if me.request else ("response" if me.response else "-"),
                ]
                for c, me in enumerate(state.consumers)
            ],
        )
        return [group, members, initialization, consumers]
