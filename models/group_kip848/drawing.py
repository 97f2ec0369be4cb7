"""How a group-kip848 trace is drawn: a lane for the coordinator and one per consumer; tables for
the epochs, the target assignment, the members and the consumers."""

from __future__ import annotations

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.models.group_kip848.state import FREE, NONE, Kip848State, group_state


class Kip848Drawing(Drawing):
    """Lanes: the coordinator and one per consumer. Tables: epochs, target assignment, members
    with their state, assigned and pending-revocation partitions, partition epochs; consumers."""

    def __init__(self, consumers: int) -> None:
        self.consumers = [f"consumer {c}" for c in range(consumers)]

    def lanes(self) -> list[str]:
        return ["coordinator", *self.consumers]

    def arrow(self, action: Action, before: Kip848State, after: Kip848State) -> Arrow:
        args = action.args
        error = args.get("error", NONE)
        suffix = "" if error == NONE else f" → {error}"
        if "consumer" not in args:
            return Arrow("coordinator", (), action.name)
        lane = self.consumers[args["consumer"]]
        if action.name == "SendHeartbeat":
            hb = after.consumers[args["consumer"]].request
            assert hb is not None
            return Arrow(
                lane,
                ("coordinator",),
                f"Heartbeat(epoch {hb.memberEpoch}, owned "
                f"{'unchanged' if hb.ownedPartitions is None else describe(hb.ownedPartitions)})",
            )
        if action.name == "HandleHeartbeat":
            return Arrow("coordinator", (), f"handle Heartbeat{suffix}")
        if action.name == "ReceiveHeartbeat":
            return Arrow("coordinator", (lane,), f"Heartbeat response{suffix}")
        if action.name == "OffsetCommit":
            return Arrow(lane, ("coordinator",), f"OffsetCommit{suffix}")
        return Arrow(lane, (), action.name)

    def tables(self, state: Kip848State) -> list[Table]:
        coord = state.coordinator
        target = "; ".join(f"{m}→{describe(p)}" for m, p in coord.targetAssignment) or "-"
        epochs = " ".join(f"p{p}:{'-' if e == FREE else e}" for p, e in enumerate(coord.partitionEpochs))
        group = Table(
            "group coordinator",
            ["state", "group epoch", "target epoch", "target assignment", "partition epochs"],
            [[group_state(coord), str(coord.groupEpoch), str(coord.targetAssignmentEpoch), target, epochs]],
        )
        members = Table(
            "members",
            ["memberId", "epoch", "previous", "state", "assigned", "pending revocation"],
            [
                [
                    m.memberId,
                    str(m.memberEpoch),
                    str(m.previousMemberEpoch),
                    m.state,
                    describe(m.assigned),
                    describe(m.pendingRevocation),
                ]
                for m in coord.members
            ]
            or [["-", "", "", "", "", ""]],
        )
        consumers = Table(
            "consumers",
            ["", "phase", "memberId", "epoch", "owned", "assignment", "reconciling", "in flight"],
            [
                [
                    self.consumers[c],
                    me.phase,
                    me.memberId or "-",
                    str(me.memberEpoch),
                    describe(me.owned),
                    describe(me.assignment),
                    "-" if me.reconciling is None else describe(me.reconciling),
                    "Heartbeat" if me.request else ("response" if me.response else "-"),
                ]
                for c, me in enumerate(state.consumers)
            ],
        )
        return [group, members, consumers]
