"""How a share-group trace is drawn: lanes for the consumers, the share-partition leader's request
handler, its acquisition-lock timer and the share coordinator (the persister's answers); tables for
the in-flight records, the locks, the writes in flight and what is persisted."""

from __future__ import annotations

from typing import Any

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.models.share_group.state import NO_TIMER, InFlightState, ShareGroupState

HANDLER = "share-partition leader"
TIMER = "lock timer"
COORDINATOR = "share coordinator"


def _record(r: InFlightState) -> str:
    owner = f" {r.memberId}" if r.memberId else ""
    lock = f" T{r.timer}" if r.timer != NO_TIMER else ""
    writing = f" (writing; was {r.rollback.state})" if r.rollback is not None else ""
    return f"{r.state}{owner} d{r.deliveryCount}{lock}{writing}" + (" terminal" if r.terminal else "")


class ShareGroupDrawing(Drawing):
    """Lanes: each consumer, the leader's request handler, its lock timer, the share coordinator."""

    def __init__(self, model: Any) -> None:
        self.consumers = [f"consumer {c}" for c in range(model.config.consumers)]

    def lanes(self) -> list[str]:
        return [*self.consumers, HANDLER, TIMER, COORDINATOR]

    def arrow(self, action: Action, before: ShareGroupState, after: ShareGroupState) -> Arrow:
        a, name = action.args, action.name
        if name == "ShareFetch":
            if a["first"] < 0:
                note = f"ShareFetch: out of range, SPSO to the log start {after.logStartOffset}"
                return Arrow(self.consumers[a["consumer"]], (HANDLER,), note)
            span = f"{a['first']}" if a["first"] == a["last"] else f"{a['first']}-{a['last']}"
            return Arrow(self.consumers[a["consumer"]], (HANDLER,), f"ShareFetch: acquires {span}")
        if name == "ShareAcknowledge":
            note = f"{a['acknowledgeType']} {a['offset']}"
            if a["error"] != "NONE":
                note += f": {a['error']}"
            return Arrow(self.consumers[a["consumer"]], (HANDLER,), note)
        if name == "WriteShareGroupStateResponse":
            return Arrow(COORDINATOR, (HANDLER,), f"write ({a['kind']}): {a['error']}")
        if name == "AcquisitionLockExpire":
            return Arrow(TIMER, (), f"T{a['timer']} expires")
        if name == "AcquisitionLockTimeout":
            return Arrow(TIMER, (HANDLER,), f"T{a['timer']}'s timeout handler")
        if name == "LogStartOffsetMove":
            return Arrow(HANDLER, (), f"log start offset {a['logStartOffset']}")
        return Arrow(HANDLER)

    def tables(self, state: ShareGroupState) -> list[Table]:
        records = Table(
            f"share partition (SPSO {state.startOffset}, log start {state.logStartOffset})",
            ["offset", "in flight", "persisted"],
            [
                [str(o), _record(r), f"{state.persisted[o][0]} d{state.persisted[o][1]}"]
                for o, r in enumerate(state.records)
            ],
        )
        locks = Table(
            "acquisition locks",
            ["lock", "member", "records", "state"],
            [
                [
                    f"T{i}",
                    t.memberId,
                    f"{t.first}-{t.last}",
                    ", ".join(
                        word
                        for word, on in (("expired", t.expired), ("cancelled", t.cancelled), ("handled", t.handled))
                        if on
                    )
                    or "running",
                ]
                for i, t in enumerate(state.timers)
            ],
        )
        consumers = Table(
            "consumers",
            ["consumer", "holds (offset under lock)"],
            [
                [c, describe({f"{o}@T{t}" for o, t in held.held})]
                for c, held in zip(self.consumers, state.consumers, strict=True)
            ],
        )
        writes = Table(
            f"writes in flight (persisted SPSO {state.persistedStartOffset}; accepted {describe(state.accepted)})",
            ["kind", "records"],
            [[w.kind, " ".join(f"{o}:{st} d{d}" for o, st, d in w.batches)] for w in state.writes],
        )
        return [records, locks, consumers, writes]
