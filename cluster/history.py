"""A run's history: every operation of the workload and every fault, as JSON lines, in the order they
happened -- the record the checkers read, in the shape of Jepsen's Kafka workload.

Each line is one event::

    {"index": 7, "time": 1.532, "process": 2, "type": "invoke", "f": "send", "value": [["send", "t-0", 41]]}
    {"index": 9, "time": 1.547, "process": 2, "type": "ok", "f": "send", "value": [["send", "t-0", [17, 41]]]}

* ``time``: seconds since the run began (monotonic); ``index``: the event's place in the file.
* ``process``: the client that did it (an int), or ``"nemesis"`` for a fault.
* ``type``: ``invoke`` when an operation starts; then ``ok`` (it happened), ``fail`` (it did not)
  or ``info`` (unknown: a timeout, a crash -- it may or may not have happened). A fault is one
  ``info`` event.
* ``f`` and ``value``: as Jepsen's Kafka workload names them. ``send`` is a list of micro-ops
  ``["send", key, value]`` (a key is a topic-partition, ``"t-0"``), completed as ``["send", key,
  [offset, value]]``; ``poll`` is ``[["poll", {key: [[offset, value], ...]}]]``; ``txn`` is a
  transaction: sends and polls in one list, committed when ``ok``, aborted when ``fail``. The
  consumer's own operations are ``subscribe`` and ``assign``; faults are named as the fault kinds
  and the steps that undo them (faults.py: ``crash``, ``restart``, ``pause``, ``resume``,
  ``partition``, ``heal``, ``lose-disk``, ``lose-controller-disk``, ``rejoin``, ...), with their
  targets as the value.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kmc.checker.errors import UserError

TYPES = ("invoke", "ok", "fail", "info")
NEMESIS = "nemesis"


@dataclass(frozen=True)
class Event:
    index: int
    time: float
    process: int | str
    type: str
    f: str
    value: Any = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "index": self.index,
            "time": round(self.time, 6),
            "process": self.process,
            "type": self.type,
            "f": self.f,
            "value": self.value,
        }
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass
class History:
    """The history being written: thread-safe, each event on disk as soon as it is recorded."""

    path: Path
    start: float = field(default_factory=time.monotonic)
    events: list[Event] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _out: TextIO | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._out = open(self.path, "w")  # noqa: SIM115 - kept open for the run, closed by close()

    def record(self, process: int | str, type: str, f: str, value: Any = None, error: str | None = None) -> Event:
        if type not in TYPES:
            raise ValueError(type)
        with self._lock:
            event = Event(len(self.events), time.monotonic() - self.start, process, type, f, value, error)
            self.events.append(event)
            if self._out is not None:
                self._out.write(json.dumps(event.to_json()) + "\n")
                self._out.flush()
        return event

    def fault(self, f: str, value: Any = None) -> Event:
        return self.record(NEMESIS, "info", f, value)

    def close(self) -> None:
        with self._lock:
            if self._out is not None:
                self._out.close()
                self._out = None


def read_history(path: Path | str) -> list[Event]:
    """A history file, every line checked: one clear error for a file that is not a history."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise UserError(f"history not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read history {path}: {exc}") from None
    return list(_events(path, lines))


def _events(path: Path, lines: list[str]) -> Iterator[Event]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError:
            raise UserError(f"{path}:{number}: not a history: the line is not JSON") from None
        if not isinstance(raw, dict) or raw.get("type") not in TYPES or not isinstance(raw.get("f"), str):
            raise UserError(f"{path}:{number}: not a history event (it needs type in {', '.join(TYPES)} and f)")
        if not isinstance(raw.get("time"), int | float) or not isinstance(raw.get("process"), int | str):
            raise UserError(f"{path}:{number}: a history event needs a numeric time and a process")
        if not isinstance(raw.get("index", 0), int) or isinstance(raw.get("index"), bool):
            raise UserError(f"{path}:{number}: a history event's index is a whole number")
        if raw["process"] != NEMESIS and (problem := malformed(raw["f"], raw.get("value"))) is not None:
            raise UserError(f"{path}:{number}: not a history event: {problem}")
        yield Event(
            int(raw.get("index", number - 1)),
            float(raw["time"]),
            raw["process"],
            raw["type"],
            raw["f"],
            raw.get("value"),
            raw.get("error"),
        )


def _number(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def malformed(f: str, value: Any) -> str | None:
    """Why a client operation's value is not shaped as the checkers read it (None: it is)."""
    if f not in ("send", "poll", "txn"):
        return None
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(op, list) and op for op in value):
        return f"a {f}'s value is a list of micro-operations"
    for op in value:
        if op[0] == "send":
            written = op[2] if len(op) == 3 else None
            pair = isinstance(written, list) and len(written) == 2 and _number(written[1])
            if len(op) != 3 or not isinstance(op[1], str) or not (_number(written) or pair):
                return 'a send is ["send", key, value] or ["send", key, [offset, value]]'
        elif op[0] == "poll":
            reads = op[1] if len(op) == 2 else {}
            records = reads.values() if isinstance(reads, dict) else [None]
            if not all(isinstance(r, list) and all(_record(x) for x in r) for r in records):
                return 'a poll is ["poll", {key: [[offset, value, leaderEpoch], ...]}]'
        else:
            return f"unknown micro-operation {op[0]!r}"
    return None


def _record(x: Any) -> bool:
    return isinstance(x, list) and len(x) == 3 and all(_number(n) for n in x)
