"""How a streams-group trace is drawn: a lane for the group coordinator and one per stream thread;
tables for the group's epochs and target assignment, its members, and the threads."""

from __future__ import annotations

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table
from kmc.models.streams_group.assignor import task_key
from kmc.models.streams_group.state import NONE, StreamsGroupState, TasksTuple, group_state


def tasks_text(tasks: TasksTuple | None) -> str:
    """Active tasks, then standby tasks after a bar: ``0_0 0_1 | 0_1``."""
    if tasks is None:
        return "unchanged"
    active = " ".join(sorted(tasks.activeTasks, key=task_key)) or "-"
    return active if not tasks.standbyTasks else f"{active} | {' '.join(sorted(tasks.standbyTasks, key=task_key))}"


class StreamsGroupDrawing(Drawing):
    """Lanes: the group coordinator and one per stream thread."""

    def __init__(self, consumers: int) -> None:
        self.threads = [f"thread {c}" for c in range(consumers)]

    def lanes(self) -> list[str]:
        return ["group coordinator", *self.threads]

    def arrow(self, action: Action, before: StreamsGroupState, after: StreamsGroupState) -> Arrow:
        args = action.args
        error = args.get("error", NONE)
        suffix = "" if error == NONE else f" → {error}"
        if "consumer" not in args:
            return Arrow("group coordinator", (), f"{action.name} {args['memberId']}")
        lane = self.threads[args["consumer"]]
        if action.name == "SendHeartbeat":
            hb = after.clients[args["consumer"]].request
            assert hb is not None
            return Arrow(
                lane,
                ("group coordinator",),
                f"StreamsGroupHeartbeat(epoch {hb.memberEpoch}, owned {tasks_text(hb.ownedTasks)})",
            )
        if action.name == "HandleHeartbeat":
            return Arrow("group coordinator", (), f"handle StreamsGroupHeartbeat{suffix}")
        if action.name == "ReceiveHeartbeat":
            response = before.clients[args["consumer"]].response
            assert response is not None
            return Arrow(
                "group coordinator",
                (lane,),
                f"response(epoch {response.memberEpoch}, tasks {tasks_text(response.assignment)}){suffix}",
            )
        if action.name == "HeartbeatResponseLost":
            return Arrow("group coordinator", (), f"response to {lane} lost")
        return Arrow(lane, (), action.name)

    def tables(self, state: StreamsGroupState) -> list[Table]:
        g = state.group
        target = "; ".join(f"{m}→{tasks_text(t)}" for m, t in g.targetAssignment) or "-"
        group = Table(
            "streams group",
            ["state", "group epoch", "assignment epoch", "target assignment"],
            [[group_state(g) if g.groupEpoch else "-", str(g.groupEpoch), str(g.assignmentEpoch), target]],
        )
        members = Table(
            "members",
            ["memberId", "process", "epoch", "previous", "state", "assigned", "pending revocation"],
            [
                [
                    m.memberId,
                    m.processId,
                    str(m.memberEpoch),
                    str(m.previousMemberEpoch),
                    m.state,
                    tasks_text(m.assignedTasks),
                    tasks_text(m.tasksPendingRevocation),
                ]
                for m in g.members
            ]
            or [["-", "", "", "", "", "", ""]],
        )
        threads = Table(
            "stream threads",
            ["", "phase", "epoch", "running", "assignment", "reconciling", "in flight"],
            [
                [
                    self.threads[c],
                    me.phase,
                    str(me.memberEpoch),
                    tasks_text(me.owned),
                    tasks_text(me.assignment),
                    "-" if me.reconciling is None else tasks_text(me.reconciling),
                    "heartbeat" if me.request else ("response" if me.response else "-"),
                ]
                for c, me in enumerate(state.clients)
            ],
        )
        return [group, members, threads]
