"""Stable 64-bit fingerprints of states.

A fingerprint is xxh3_64 of a canonical byte encoding, so it is the same in every process,
under every PYTHONHASHSEED and on every machine. Python's own ``hash()`` is not: it is salted
for str and bytes and, for None, depends on memory addresses.
"""

from __future__ import annotations

import dataclasses
import enum
import struct
from collections.abc import Mapping
from typing import Any

import xxhash

_pack_int = struct.Struct("<q").pack


def _encode(value: Any, out: list[bytes]) -> None:
    kind = type(value)
    if kind is int:
        if -(2**63) <= value < 2**63:
            out.append(b"i" + _pack_int(value))
        else:
            text = str(value).encode()
            out.append(b"I" + _pack_int(len(text)) + text)
    elif kind is bool:
        out.append(b"T" if value else b"F")
    elif kind is str:
        data = value.encode()
        out.append(b"s" + _pack_int(len(data)) + data)
    elif value is None:
        out.append(b"N")
    elif isinstance(value, tuple):
        # NamedTuples and plain tuples alike: a record's identity is its field values in order.
        out.append(b"(" + _pack_int(len(value)))
        for item in value:
            _encode(item, out)
    elif isinstance(value, frozenset | set):
        parts = sorted(canonical_bytes(item) for item in value)
        out.append(b"{" + _pack_int(len(parts)))
        out.extend(parts)
    elif isinstance(value, Mapping):
        items = sorted((canonical_bytes(k), canonical_bytes(v)) for k, v in value.items())
        out.append(b"<" + _pack_int(len(items)))
        for key, val in items:
            out.append(key)
            out.append(val)
    elif isinstance(value, enum.Enum):
        _encode(f"{kind.__name__}.{value.name}", out)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        out.append(b"(" + _pack_int(len(fields)))
        for field in fields:
            _encode(getattr(value, field.name), out)
    elif kind is bytes:
        out.append(b"b" + _pack_int(len(value)) + value)
    elif kind is float:
        out.append(b"f" + struct.pack("<d", value))
    elif isinstance(value, int):  # IntEnum and other int subclasses
        _encode(int(value), out)
    else:
        raise TypeError(
            f"cannot fingerprint a value of type {kind.__name__}: states must be built from "
            "tuples, NamedTuples, frozen dataclasses, frozensets, ints, bools, strs and None"
        )


def canonical_bytes(value: Any) -> bytes:
    """The canonical encoding: equal values give equal bytes, sets and maps in sorted order."""
    out: list[bytes] = []
    _encode(value, out)
    return b"".join(out)


def fingerprint(value: Any) -> int:
    """A 64-bit unsigned fingerprint of the value's canonical encoding."""
    return xxhash.xxh3_64_intdigest(canonical_bytes(value))


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate that two distinct states shared a 64-bit fingerprint."""
    return distinct * max(generated - distinct, 0) / 2.0**64
