"""How traces of the `group` model are drawn."""

from __future__ import annotations

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.models.group.state import NO_GENERATION, NONE, GroupState


# -- how traces are drawn --------------------------------------------------------------------------
class GroupDrawing(Drawing):
    """Lanes: the coordinator and one per consumer. Tables: the group (state, generation, leader,
    members and assignments) and every consumer (member id, generation, phase, owned partitions)."""

    def __init__(self, consumers: int) -> None:
        self.consumers = [f"consumer {c}" for c in range(consumers)]

    def lanes(self) -> list[str]:
        return ["coordinator", *self.consumers]

    def arrow(self, action: Action, before: GroupState, after: GroupState) -> Arrow:
        args = action.args
        name = action.name
        error = args.get("error", "")
        suffix = "" if not error or error == NONE else f" → {error}"
        if "consumer" in args:
            lane = self.consumers[args["consumer"]]
            if name.startswith("Send"):
                return Arrow(lane, ("coordinator",), name.removeprefix("Send"))
            if name.startswith("Handle"):
                return Arrow("coordinator", (), f"handle {name.removeprefix('Handle')}{suffix}")
            if name.startswith("Receive"):
                return Arrow("coordinator", (lane,), f"{name.removeprefix('Receive')} response{suffix}")
            if name in ("Heartbeat", "OffsetCommit", "LeaveGroup"):
                return Arrow(lane, ("coordinator",), f"{name}{suffix}")
            return Arrow(lane, (), name)
        return Arrow("coordinator", (), name)

    def tables(self, state: GroupState) -> list[Table]:
        group = state.group
        members = "; ".join(
            f"{m.memberId}{'*' if m.memberId == group.leaderId else ''}"
            f"{'[' + m.groupInstanceId + ']' if m.groupInstanceId else ''}→{describe(m.assignment)}"
            for m in group.members
        )
        stored = (
            "-"
            if group.stored is None
            else f"gen {group.stored.generationId}: "
            + (", ".join(f"{m.memberId}→{describe(m.assignment)}" for m in group.stored.members) or "no members")
        )
        coordinator = Table(
            "group coordinator (* = leader)",
            ["state", "generation", "members → assignment", "pending", "awaiting sync", "stored record"],
            [
                [
                    group.state,
                    str(group.generationId),
                    members or "-",
                    describe(group.pendingMembers),
                    describe(group.pendingSyncMembers),
                    stored,
                ]
            ],
        )
        rows = []
        for c, me in enumerate(state.consumers):
            waiting = me.request.api if me.request else (f"{me.response.api} response" if me.response else "-")
            generation = "-" if me.generationId == NO_GENERATION else str(me.generationId)
            rows.append([self.consumers[c], me.phase, me.memberId or "-", generation, describe(me.owned), waiting])
        consumers = Table("consumers", ["", "phase", "memberId", "generation", "owned", "in flight"], rows)
        return [coordinator, consumers]
