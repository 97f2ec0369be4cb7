"""How a kraft-quorum trace is drawn: a lane per voter (and observer); tables for each replica's
role, epoch, vote, log and high watermark."""

from __future__ import annotations

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.models.kraft_quorum.state import (
    CANDIDATE,
    LEADER_CHANGE,
    NONE,
    PROSPECTIVE,
    VOTERS,
    QuorumState,
)

_MARK = {LEADER_CHANGE: "*", VOTERS: "V"}


class KraftQuorumDrawing(Drawing):
    """Lanes: a client and one per replica. Tables: every replica's quorum state and log, the network;
    with KIP-853 in play, each replica's directory id and voter set too."""

    def __init__(self, voters: int, observers: int = 0, keys: bool = False) -> None:
        self.voters = [f"voter {v}" for v in range(voters)] + [f"observer {voters + o}" for o in range(observers)]
        self.keys = keys

    def lanes(self) -> list[str]:
        return ["client", *self.voters]

    def arrow(self, action: Action, before: QuorumState, after: QuorumState) -> Arrow:
        args, name = action.args, action.name
        if name == "RequestVote":
            c, v = args["candidate"], args["voter"]
            granted = v in after.voters[c].votes or after.voters[c].role != before.voters[c].role
            kind = "PreVote" if args["preVote"] else "Vote"
            note = f"{kind}(epoch {before.voters[c].epoch})" + (" granted" if granted else " refused")
            return Arrow(self.voters[c], (self.voters[v],), note)
        if name == "BeginQuorumEpoch":
            leader = args["leader"]
            note = f"BeginQuorumEpoch({before.voters[leader].epoch})"
            return Arrow(self.voters[leader], (self.voters[args["voter"]],), note)
        if name == "Fetch":
            f = args["follower"]
            return Arrow(self.voters[f], (self.voters[args["leader"]],), f"Fetch(offset {len(before.voters[f].log)})")
        if name == "ClientWrite":
            return Arrow("client", (self.voters[args["leader"]],), "write")
        if name in ("AddVoter", "RemoveVoter"):
            return Arrow(self.voters[args["leader"]], (self.voters[args["voter"]],), f"{name}({args['voter']})")
        voter = args.get("voter", args.get("leader", 0))
        return Arrow(self.voters[voter], (), name)

    def tables(self, state: QuorumState) -> list[Table]:
        rows = []
        for v, me in enumerate(state.voters):
            log = " ".join(f"{o}:e{r.epoch}{_MARK.get(r.kind, '')}" for o, r in enumerate(me.log))
            rows.append(
                [
                    self.voters[v] + (" (cut off)" if v in state.isolated else ""),
                    me.role,
                    str(me.epoch),
                    "-" if me.votedId == NONE else str(me.votedId),
                    "-" if me.leaderId == NONE else str(me.leaderId),
                    log or "(empty)",
                    str(me.highWatermark),
                    describe(me.votes) if me.role in (PROSPECTIVE, CANDIDATE) else "-",
                    " ".join(str(o) for o in me.endOffsets) or "-",
                ]
            )
            if self.keys:
                voter_set = next((r.voters for r in reversed(me.log) if r.kind == VOTERS), None)  # type: ignore[union-attr]
                shown = "bootstrap" if voter_set is None else " ".join(f"{i}/{d}" for i, d in sorted(voter_set))
                rows[-1] += [str(me.directoryId), shown]
        columns = ["", "state", "epoch", "voted", "leader", "log", "HW", "votes", "end offsets"]
        if self.keys:
            columns += ["directory", "voter set (id/directory)"]
        voters = Table("replicas (log = offset:epoch, * = LeaderChangeMessage, V = VotersRecord)", columns, rows)
        committed = " ".join(f"{o}:e{c.epoch}@{c.commitEpoch}" for o, c in enumerate(state.committed)) or "-"
        history = Table("committed (offset:epoch@committed in epoch)", ["records"], [[committed]])
        return [voters, history]
