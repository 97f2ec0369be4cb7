"""Why a kraft-replication counterexample is a Kafka bug, in a sentence the HTML report prints: the
acknowledged or committed record that is gone, the step that acknowledged or committed it, the step
where the broker that matters lost it (or that it never had it), and which brokers still hold it.
Derived from the states alone, so it holds for any trace of the model."""

from __future__ import annotations

from collections.abc import Callable

from kmc.checker.drawing import describe, step_text
from kmc.checker.result import Trace
from kmc.models.kraft_replication.state import NO_LEADER, KraftReplicationState, Record


def explain(violated: str, trace: Trace) -> str | None:
    """The sentence for AcknowledgedWriteNeverLost, LeaderCompleteness and LeaderCandidateCompleteness;
    None for the other properties."""
    if violated == "AcknowledgedWriteNeverLost":
        return _acknowledged_write_lost(trace)
    if violated in ("LeaderCompleteness", "LeaderCandidateCompleteness"):
        return _committed_record_missing(trace, candidates=violated == "LeaderCandidateCompleteness")
    return None


def _ids(s: KraftReplicationState, broker: int) -> set[int]:
    return {record.id for record in s.replicas[broker].log}


def _brokers(ids: list[int]) -> str:
    if len(ids) == 1:
        return f"broker {ids[0]}"
    return "brokers " + ", ".join(str(b) for b in ids[:-1]) + f" and {ids[-1]}"


def _lost_at(
    states: list[KraftReplicationState], broker: int, has: Callable[[KraftReplicationState, int], bool]
) -> int | None:
    """The last step after which ``broker`` no longer holds what ``has(state, broker)`` tests; None
    if it never held it."""
    for k in range(len(states) - 1, 0, -1):
        if has(states[k - 1], broker) and not has(states[k], broker):
            return k
    return None


def _leader_since(states: list[KraftReplicationState], leader: int) -> int:
    """The step at which the controller last made ``leader`` the partition's leader (0: from the start)."""
    for k in range(len(states) - 1, 0, -1):
        if states[k - 1].controller.leader != leader and states[k].controller.leader == leader:
            return k
    return 0


def _acknowledged_write_lost(trace: Trace) -> str | None:
    """AcknowledgedWriteNeverLost: a record the producer was told succeeded is not in the running
    leader's log."""
    states: list[KraftReplicationState] = trace.states
    last = states[-1]
    leader = last.controller.leader
    if leader == NO_LEADER or not last.replicas[leader].running:
        return None
    missing = sorted(last.acked - _ids(last, leader))
    if not missing:
        return None
    rid = missing[0]
    acked = next(k for k, s in enumerate(states) if rid in s.acked)
    said = f"Record {rid} was acknowledged to the producer at {step_text(trace, acked)}."
    since = _leader_since(states, leader)
    lost = _lost_at(states, leader, lambda s, b: rid in _ids(s, b))
    became = "the partition's leader from the start" if since == 0 else f"the leader at {step_text(trace, since)}"
    if lost is None:
        said += f" Broker {leader} never had it, and became {became}."
    elif lost < since:
        said += f" Broker {leader} lost it at {step_text(trace, lost)}, and became {became}, without it."
    else:
        said += f" Broker {leader}, {became}, lost it at {step_text(trace, lost)}."
    said += " The acknowledged write is not in the leader's log"
    holders = [b for b in range(len(last.replicas)) if b != leader and rid in _ids(last, b)]
    if holders:
        verb = "is" if len(holders) == 1 else "are"
        return f"{said}: it is only on {_brokers(holders)}, which {verb} not the leader."
    return f"{said}, nor on any other broker: it is gone."


def _committed_record_missing(trace: Trace, candidates: bool) -> str | None:
    """LeaderCompleteness (the elected leader) and LeaderCandidateCompleteness (every running member of
    the ISR and the ELR): a broker the controller elected, or may elect, lacks a committed record."""
    states: list[KraftReplicationState] = trace.states
    last = states[-1]
    committed, c = last.committed, last.controller
    if candidates:
        brokers = [b for b in c.replicas if (b in c.isr or b in c.elr) and last.replicas[b].running]
    else:
        brokers = [c.leader] if c.leader != NO_LEADER and last.replicas[c.leader].running else []
    for b in brokers:
        log = last.replicas[b].log
        offset = next((o for o, record in enumerate(committed) if o >= len(log) or log[o] != record), None)
        if offset is not None:
            break
    else:
        return None
    record: Record = committed[offset]
    committed_at = next(k for k, s in enumerate(states) if len(s.committed) > offset and s.committed[offset] == record)
    said = (
        f"Record {record.id} (offset {offset}, leader epoch {record.epoch}) was committed at "
        f"{step_text(trace, committed_at)}."
    )
    lost = _lost_at(states, b, lambda s, x: s.replicas[x].log[offset : offset + 1] == (record,))
    there = (
        f"its log ends at offset {len(log)}"
        if offset >= len(log)
        else f"it holds record {log[offset].id} of leader epoch {log[offset].epoch} at that offset"
    )
    said += f" Broker {b} {'never had it' if lost is None else f'lost it at {step_text(trace, lost)}'} ({there})"
    if not candidates:
        since = _leader_since(states, b)
        when = "from the start" if since == 0 else f"at {step_text(trace, since)}"
        return f"{said}, yet the controller made it the leader {when}: the committed record is lost."
    where = "ISR" if b in c.isr else "ELR"
    members = c.isr if b in c.isr else c.elr
    return (
        f"{said}, yet it is in the {where}, {describe(members)}, from which the controller elects the next leader: "
        "if it is elected, the committed record is lost."
    )
