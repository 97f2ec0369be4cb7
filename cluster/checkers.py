"""Checkers of a history: each a property with a name, as the models' properties are named, and each
finding naming the operations (history indexes) involved.

The final reads (``final-read_uncommitted``: what the log holds; ``final-read_committed``: what a
committed reader sees) are the ground truth for the end state; the consumers' polls for what was
seen along the way.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kmc.cluster.history import NEMESIS, Event

FINAL_LOG = "final-read_uncommitted"
FINAL_COMMITTED = "final-read_committed"


@dataclass(frozen=True)
class Finding:
    check: str
    message: str
    operations: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "message": self.message, "operations": list(self.operations)}


@dataclass
class Facts:
    """What the history says, indexed once for every checker."""

    sends: dict[int, tuple[str, int, int | None]] = field(default_factory=dict)
    """value -> (key, process, the index of its invoke)."""
    outcome: dict[int, tuple[str, int]] = field(default_factory=dict)
    """value -> (ok | fail | info, the index of the completion) of its send or transaction."""
    txn_of: dict[int, int] = field(default_factory=dict)
    """value -> the index of the invoke of the transaction it was sent in."""
    txns: dict[int, list[int]] = field(default_factory=dict)
    """transaction invoke index -> its values."""
    send_order: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    """process -> its values, in the order it sent them."""
    final: dict[str, dict[str, list[list[int]]]] = field(default_factory=dict)
    """final reader -> key -> [[offset, value, leader epoch], ...]."""
    final_index: dict[str, int] = field(default_factory=dict)
    polls: list[tuple[Event, str, list[list[int]]]] = field(default_factory=list)
    """Every poll of a workload consumer, by key."""

    @classmethod
    def of(cls, events: Iterable[Event]) -> Facts:
        facts = cls()
        invokes: dict[int | str, Event] = {}
        for event in events:
            if event.process == NEMESIS:
                continue
            if event.type == "invoke":
                invokes[event.process] = event
                facts._invoked(event)
            elif event.f in ("send", "txn"):
                facts._completed(event, invokes.get(event.process))
            elif event.f == "poll" and event.type == "ok":
                facts._polled(event)
        return facts

    def _invoked(self, event: Event) -> None:
        if event.f not in ("send", "txn"):
            return
        for op in event.value or []:
            if op[0] == "send":
                self.sends[op[2]] = (op[1], event.process, event.index)  # type: ignore[assignment]
                self.send_order[event.process].append(op[2])  # type: ignore[index]
                if event.f == "txn":
                    self.txn_of[op[2]] = event.index
                    self.txns.setdefault(event.index, []).append(op[2])

    def _completed(self, event: Event, invoke: Event | None) -> None:
        for op in event.value or []:
            if op[0] == "send":
                value = op[2][1] if isinstance(op[2], list) else op[2]
                self.outcome[value] = (event.type, event.index)

    def _polled(self, event: Event) -> None:
        for op in event.value or []:
            if op[0] != "poll" or len(op) < 2:
                continue
            for key, records in op[1].items():
                if isinstance(event.process, str) and event.process.startswith("final-"):
                    self.final.setdefault(event.process, {})[key] = records
                    self.final_index[event.process] = event.index
                else:
                    self.polls.append((event, key, records))


def acknowledged_write_lost(facts: Facts) -> list[Finding]:
    """Every send Kafka acknowledged (a committed transaction's too) is in the log at the end."""
    if FINAL_LOG not in facts.final:
        return []
    present = {record[1] for records in facts.final[FINAL_LOG].values() for record in records}
    lost = [v for v, (kind, _i) in facts.outcome.items() if kind == "ok" and v not in present]
    return [
        Finding(
            "AcknowledgedWriteNeverLost",
            f"value {v}, acknowledged, is not in the log at the end",
            (facts.sends[v][2], facts.outcome[v][1], facts.final_index[FINAL_LOG]),
        )
        for v in sorted(lost)
    ]


def duplicates(facts: Facts) -> dict[str, dict[int, list[int]]]:
    """Per partition, every value the log holds more than once, and its offsets."""
    found: dict[str, dict[int, list[int]]] = {}
    for key, records in facts.final.get(FINAL_LOG, {}).items():
        offsets: dict[int, list[int]] = defaultdict(list)
        for offset, value, _epoch in records:
            offsets[value].append(offset)
        twice = {value: at for value, at in sorted(offsets.items()) if len(at) > 1}
        if twice:
            found[key] = twice
    return found


def duplicated_in_log(facts: Facts) -> list[Finding]:
    """No value is in the log twice (the idempotent producer's promise)."""
    return [
        Finding(
            "NoDuplicates",
            f"value {value} is in {key} at offsets {at}",
            (facts.sends[value][2],) if value in facts.sends else (),
        )
        for key, values in duplicates(facts).items()
        for value, at in values.items()
    ]


def producer_order_broken(facts: Facts) -> list[Finding]:
    """Each producer's values are in the log in the order it sent them (idempotence keeps it)."""
    findings = []
    for key, records in facts.final.get(FINAL_LOG, {}).items():
        position = {value: offset for offset, value, _epoch in records}
        for process, values in facts.send_order.items():
            placed = [(position[v], v) for v in values if v in position and facts.sends[v][0] == key]
            for (o1, v1), (o2, v2) in itertools.pairwise(placed):
                if o2 < o1:
                    findings.append(
                        Finding(
                            "PerProducerOrder",
                            f"producer {process} sent {v1} before {v2}, but {key} "
                            f"holds {v2} at {o2} before {v1} at {o1}",
                            (facts.sends[v1][2], facts.sends[v2][2]),
                        )
                    )
    return findings


def aborted_read(facts: Facts, isolation: str) -> list[Finding]:
    """A read_committed reader never sees a record of an aborted transaction."""
    if isolation != "read_committed":
        return []
    aborted = {v for v, (kind, _i) in facts.outcome.items() if kind == "fail" and v in facts.txn_of}
    seen = [(event, v) for event, _key, records in facts.polls for _o, v, _e in records if v in aborted]
    committed_reader = facts.final.get(FINAL_COMMITTED, {})
    final_index = facts.final_index.get(FINAL_COMMITTED)
    seen += [(None, v) for records in committed_reader.values() for _o, v, _e in records if v in aborted]
    return [
        Finding(
            "AbortedNeverVisible",
            f"value {v} of an aborted transaction was read by a read_committed reader",
            tuple(i for i in (facts.txn_of[v], event.index if event else final_index) if i is not None),
        )
        for event, v in seen
    ]


def torn_transaction(facts: Facts) -> list[Finding]:
    """A committed transaction is seen whole or not at all by a read_committed reader."""
    if FINAL_COMMITTED not in facts.final:
        return []
    visible = {record[1] for records in facts.final[FINAL_COMMITTED].values() for record in records}
    findings = []
    for txn, values in facts.txns.items():
        shown = [v for v in values if v in visible]
        if shown and len(shown) != len(values):
            missing = sorted(set(values) - set(shown))
            findings.append(
                Finding(
                    "AtomicVisibility",
                    f"transaction {txn} is partly visible: {missing} missing",
                    (txn, facts.final_index[FINAL_COMMITTED]),
                )
            )
    return findings


def offsets_or_epochs_backwards(facts: Facts) -> list[Finding]:
    """A value is always at the same offset (at one of its copies, when the log holds it twice: the
    duplicate is NoDuplicates' finding), and leader epochs never go down along a partition's log."""
    findings = []
    where: dict[int, tuple[str, int, int]] = {}
    copies: dict[int, set[tuple[str, int]]] = defaultdict(set)
    for key, records in facts.final.get(FINAL_LOG, {}).items():
        for offset, value, _epoch in records:
            copies[value].add((key, offset))
    reads = [(event.index, key, records) for event, key, records in facts.polls]
    reads += [
        (facts.final_index[r], key, records) for r, by_key in facts.final.items() for key, records in by_key.items()
    ]
    for index, key, records in reads:
        for offset, value, _epoch in records:
            if len(copies[value]) > 1:
                if (key, offset) not in copies[value]:
                    at = ", ".join(f"{k}:{o}" for k, o in sorted(copies[value]))
                    message = f"value {value} was read at {key}:{offset}, and the log holds it at {at}"
                    findings.append(Finding("OffsetsStable", message, (index, facts.final_index[FINAL_LOG])))
                continue
            seen = where.setdefault(value, (key, offset, index))
            if seen[:2] != (key, offset):
                findings.append(
                    Finding(
                        "OffsetsStable",
                        f"value {value} was read at {seen[0]}:{seen[1]} and at {key}:{offset}",
                        (seen[2], index),
                    )
                )
    for key, records in facts.final.get(FINAL_LOG, {}).items():
        ordered = sorted(records)
        for (o1, _v1, e1), (o2, _v2, e2) in itertools.pairwise(ordered):
            if e1 >= 0 and e2 >= 0 and e2 < e1:
                findings.append(
                    Finding(
                        "LeaderEpochsMonotonic",
                        f"{key}: offset {o2} has leader epoch {e2} after offset {o1}'s {e1}",
                        (facts.final_index[FINAL_LOG],),
                    )
                )
    return findings


CHECKS: dict[str, Callable[..., list[Finding]]] = {
    "AcknowledgedWriteNeverLost": acknowledged_write_lost,
    "NoDuplicates": duplicated_in_log,
    "PerProducerOrder": producer_order_broken,
    "AbortedNeverVisible": aborted_read,
    "AtomicVisibility": torn_transaction,
    "OffsetsStable": offsets_or_epochs_backwards,
}


def applicable(idempotent: bool, transactional: bool, isolation: str) -> list[str]:
    """The checks the workload's configuration makes promises for (a duplicate without idempotence is
    what at-least-once allows, not a finding)."""
    names = ["AcknowledgedWriteNeverLost", "OffsetsStable"]
    if idempotent:
        names += ["NoDuplicates", "PerProducerOrder"]
    if transactional:
        names += ["AtomicVisibility"] + (["AbortedNeverVisible"] if isolation == "read_committed" else [])
    return names


def check_history(events: list[Event], names: Iterable[str], isolation: str = "read_committed") -> list[Finding]:
    facts = Facts.of(events)
    findings: list[Finding] = []
    for name in names:
        check = CHECKS[name]
        findings += check(facts, isolation) if name == "AbortedNeverVisible" else check(facts)
    return findings


def exercised(events: list[Event], names: Iterable[str]) -> dict[str, int]:
    """How much each check had to look at: a check that looked at nothing holds vacuously (a final
    read that never reached the end leaves AcknowledgedWriteNeverLost nothing to compare)."""
    facts = Facts.of(events)
    log = facts.final.get(FINAL_LOG, {})
    in_log = sum(len(records) for records in log.values())
    committed_read = FINAL_COMMITTED in facts.final
    acked = sum(1 for kind, _i in facts.outcome.values() if kind == "ok")
    aborted = sum(1 for v, (kind, _i) in facts.outcome.items() if kind == "fail" and v in facts.txn_of)
    reads = sum(len(records) for _event, _key, records in facts.polls) + in_log
    counts = {
        "AcknowledgedWriteNeverLost": acked if log else 0,
        "NoDuplicates": in_log,
        "PerProducerOrder": max(0, in_log - len(facts.send_order)),
        "AbortedNeverVisible": aborted if (committed_read or facts.polls) else 0,
        "AtomicVisibility": len(facts.txns) if committed_read else 0,
        "OffsetsStable": reads,
    }
    return {name: counts[name] for name in names}
