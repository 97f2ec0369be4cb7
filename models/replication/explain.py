"""Why a replication counterexample is a Kafka bug, in a sentence the HTML report prints: which
committed record, committed at which step, a broker dropped after which step, and why that broker
matters (the ISR in ZooKeeper, from which the controller elects the next leader). Derived from the
states alone, so it holds for any trace of the model, not only the checked-in ones."""

from __future__ import annotations

from kmc.checker.drawing import describe, step_text
from kmc.checker.result import Trace
from kmc.models.replication.state import Record, ReplicationState

Log = tuple[Record, ...]


def explain(violated: str, trace: Trace) -> str | None:
    """The sentence for StrongIsr, WeakIsr and LogMatching; None for the other properties."""
    if violated in ("StrongIsr", "WeakIsr"):
        return _committed_record_missing(trace, in_zookeeper=violated == "StrongIsr")
    if violated == "LogMatching":
        return _logs_diverge(trace)
    return None


def _has(log: Log, offset: int, record: Record) -> bool:
    return offset < len(log) and log[offset] == record


def _first_gap(log: Log, leader_log: Log, hw: int) -> int | None:
    """The first offset below ``hw`` where ``log`` lacks the leader's record, if any."""
    for offset in range(min(hw, len(leader_log))):
        if not _has(log, offset, leader_log[offset]):
            return offset
    return None


def _what_is_there(log: Log, offset: int) -> str:
    """What a log holds at an offset instead of the record it should."""
    if offset >= len(log):
        return f"its log now ends at offset {len(log)}"
    other = log[offset]
    return f"it holds record {other.id} of leader epoch {other.epoch} at that offset instead"


def _committed_at(states: list[ReplicationState], offset: int, record: Record) -> tuple[int, int] | None:
    """(step, broker): the first state where a broker that leads in its own view has ``record`` at
    ``offset`` below its high watermark -- Kafka's definition of committed."""
    for k, s in enumerate(states):
        for r, st in enumerate(s.replicaState):
            if st.leader == r and st.hw > offset and _has(s.replicaLog[r], offset, record):
                return k, r
    return None


def _dropped_at(states: list[ReplicationState], broker: int, offset: int, record: Record) -> int | None:
    """The last step after which ``broker`` no longer has ``record`` at ``offset``; None if it never had it."""
    for k in range(len(states) - 1, 0, -1):
        if _has(states[k - 1].replicaLog[broker], offset, record) and not _has(
            states[k].replicaLog[broker], offset, record
        ):
            return k
    return None


def _committed_record_missing(trace: Trace, in_zookeeper: bool) -> str | None:
    """StrongIsr (the ISR in ZooKeeper) and WeakIsr (the leader's own ISR): a member lacks a record
    below a leader's high watermark."""
    states: list[ReplicationState] = trace.states
    last, before = states[-1], states[-2] if len(states) > 1 else states[-1]
    gaps = []  # (leader, member, offset)
    for r, st in enumerate(last.replicaState):
        if not st.hw or st.leader != r:
            continue
        leader_log = last.replicaLog[r]
        if len(leader_log) < st.hw:
            return (
                f"Broker {r} leads in its own view with a high watermark of {st.hw}, but its log ends at offset "
                f"{len(leader_log)}: records it counted as committed are gone from the leader itself."
            )
        isr = last.quorumState.isr if in_zookeeper else st.isr
        for member in sorted(isr):
            offset = _first_gap(last.replicaLog[member], leader_log, st.hw)
            if offset is not None:
                gaps.append((r, member, offset))
    if not gaps:
        return None
    # The gap the last step opened, if one: that is the step the reader is looking at.
    leader, member, offset = next(
        (g for g in gaps if last.replicaLog[g[1]] != before.replicaLog[g[1]]),
        gaps[0],
    )
    record = last.replicaLog[leader][offset]
    hw = last.replicaState[leader].hw
    what = f"Record {record.id} (offset {offset}, leader epoch {record.epoch})"
    committed = _committed_at(states, offset, record)
    if committed is not None:
        k, by = committed
        said = f"{what} was committed at {step_text(trace, k)}, when broker {by}'s high watermark passed it."
    else:
        said = f"{what} is below broker {leader}'s high watermark {hw}, so it is committed."
    dropped = _dropped_at(states, member, offset, record)
    log = last.replicaLog[member]
    if dropped is not None:
        said += f" Broker {member} dropped it at {step_text(trace, dropped)}: {_what_is_there(log, offset)}."
    else:
        said += f" Broker {member} never had it: {_what_is_there(log, offset)}."
    if in_zookeeper:
        said += (
            f" Yet broker {member} is in the ISR in ZooKeeper, {describe(last.quorumState.isr)}: if the controller "
            "elects it leader, the committed record is lost"
        )
    else:
        said += (
            f" Yet broker {leader}, the leader in its own view, still counts broker {member} in its ISR, "
            f"{describe(last.replicaState[leader].isr)}: an in-sync replica without a committed record"
        )
    holders = [b for b, other in enumerate(last.replicaLog) if _has(other, offset, record)]
    if not holders:
        said += "; no replica has it any more."
    else:
        said += f"; only {_brokers(holders)} still {'has' if len(holders) == 1 else 'have'} it."
    spec_words = "“presumed leader” is a broker that believes it is the leader"
    if in_zookeeper:
        spec_words += ", and its “true ISR” is the ISR in ZooKeeper"
    return f"{said} (In the TLA+ specification's words, a {spec_words}.)"


def _brokers(ids: list[int]) -> str:
    if len(ids) == 1:
        return f"broker {ids[0]}"
    return "brokers " + ", ".join(str(b) for b in ids[:-1]) + f" and {ids[-1]}"


def _held(logs: tuple[Log, ...], broker: int, offset: int) -> str:
    """What a broker's log holds at an offset, in words."""
    log = logs[broker]
    if offset >= len(log):
        return f"broker {broker} has no record there"
    return f"broker {broker} holds record {log[offset].id} of leader epoch {log[offset].epoch}"


def _logs_diverge(trace: Trace) -> str | None:
    """LogMatching: two replicas hold different records at an offset below both high watermarks."""
    states: list[ReplicationState] = trace.states
    last = states[-1]
    logs, replicas = last.replicaLog, last.replicaState
    for a in range(len(logs)):
        for b in range(a + 1, len(logs)):
            common = min(replicas[a].hw, replicas[b].hw)
            offset = next(
                (o for o in range(common) if o >= len(logs[a]) or o >= len(logs[b]) or logs[a][o] != logs[b][o]),
                None,
            )
            if offset is None:
                continue
            changed = next(
                (
                    k
                    for k in range(len(states) - 1, 0, -1)
                    if any(
                        states[k].replicaLog[x][offset : offset + 1] != states[k - 1].replicaLog[x][offset : offset + 1]
                        for x in (a, b)
                    )
                ),
                None,
            )

            said = (
                f"At offset {offset}, below both high watermarks ({replicas[a].hw} on broker {a}, "
                f"{replicas[b].hw} on broker {b}), {_held(logs, a, offset)} and {_held(logs, b, offset)}"
            )
            if changed is not None:
                said += f": the logs diverged there at {step_text(trace, changed)}"
            return said + ": the two replicas disagree on a committed record."
    return None
