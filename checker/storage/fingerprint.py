"""Stable 64-bit fingerprints of states.

A fingerprint is xxh3_64 of a canonical byte encoding, so it is the same in every process,
under every PYTHONHASHSEED and on every machine. Python's own ``hash()`` is not: it is salted
for str and bytes and, for None, depends on memory addresses.

The encoding is a function of the value as Python compares it: values that are equal (==) encode
to the same bytes (so ``True`` and ``1`` do, as they do as dictionary keys, and so do an IntEnum
member and its int), sets and maps are encoded in sorted order, and NamedTuples encode as the
tuples they are.

The types states are mostly made of (tuples, frozensets, ints, strs, None) are encoded by a small
C extension, ``_canonical``, when it was built (``pip install`` compiles it where a C compiler is
found); the pure-Python encoder below gives the same bytes, handles every other type, and is used
for everything when the extension is missing or ``KMC_PURE_PYTHON=1`` is set. In Python, the
encodings of the parts states share (logs, member records, sets) are cached; in C, those of the
recently met tuples and frozensets, by identity (a successor shares most parts with its siblings).
"""

from __future__ import annotations

import dataclasses
import enum
import struct
from array import array
from collections.abc import Mapping
from typing import Any

import xxhash
from kmc.checker.extension import c_extension

_pack_len = struct.Struct("<I").pack
_pack_int = struct.Struct("<q").pack
_SMALL_INTS = {i: b"i" + _pack_int(i) for i in range(-16, 1024)}
_CACHE_LIMIT = 1 << 18
_cache: dict[Any, bytes] = {}


def _int(value: int) -> bytes:
    if -(2**63) <= value < 2**63:
        return b"i" + _pack_int(value)
    text = str(value).encode()
    return b"I" + _pack_len(len(text)) + text


def _encode_python(value: Any) -> bytes:
    kind = type(value)
    if kind is int or kind is bool:
        encoded = _SMALL_INTS.get(value)
        return encoded if encoded is not None else _int(int(value))
    if kind is str:
        data = value.encode()
        return b"s" + _pack_len(len(data)) + data
    if value is None:
        return b"N"
    try:
        cached = _cache.get(value)
        hashable = True
    except TypeError:  # unhashable: a set or a mapping, or a tuple holding one
        cached = None
        hashable = False
    if cached is not None:
        return cached
    if isinstance(value, tuple):
        encoded = b"(" + _pack_len(len(value)) + b"".join([_encode(item) for item in value])
    elif isinstance(value, frozenset | set):
        encoded = b"{" + _pack_len(len(value)) + b"".join(sorted([_encode(item) for item in value]))
    elif isinstance(value, Mapping):
        items = sorted([_encode(k) + _encode(v) for k, v in value.items()])
        encoded = b"<" + _pack_len(len(items)) + b"".join(items)
    elif isinstance(value, int):  # IntEnum, other int subclasses: equal to an int, encoded as one
        return _encode(int(value))
    elif isinstance(value, str):  # StrEnum and other str subclasses, likewise
        return _encode(str.__str__(value))
    elif isinstance(value, enum.Enum):
        encoded = b"e" + _encode(f"{kind.__name__}.{value.name}")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        encoded = b"(" + _pack_len(len(fields)) + b"".join([_encode(getattr(value, f.name)) for f in fields])
    elif kind is float:
        return _encode(int(value)) if value.is_integer() else b"f" + struct.pack("<d", value)
    elif kind is bytes:
        return b"b" + _pack_len(len(value)) + value
    else:
        raise TypeError(
            f"cannot fingerprint a value of type {kind.__name__}: states must be built from "
            "tuples, NamedTuples, frozen dataclasses, frozensets, ints, bools, strs and None"
        )
    if hashable:
        if len(_cache) >= _CACHE_LIMIT:
            _cache.clear()
        _cache[value] = encoded
    return encoded


class Candidates:
    """Per fingerprint of a successor, the least parent that generated it and the successor that
    parent gave, first met first: what a Spark task sends a level's owners. ``add(successors,
    parent)`` offers a state's successors; ``take()`` gives the fingerprints and parents (native
    uint64 bytes) and the states. The C extension's ``Candidates`` does the same with one hash table;
    this one also takes successors whose key the caller computed (``offer``)."""

    def __init__(self) -> None:
        self.parent_of: dict[int, int] = {}
        self.state_of: dict[int, Any] = {}

    def __len__(self) -> int:
        return len(self.parent_of)

    def add(self, successors: list[tuple[Any, Any]], parent: int) -> None:
        for _action, state in successors:
            self.offer(fingerprint(state), parent, state)

    def offer(self, fp: int, parent: int, state: Any) -> None:
        """One successor whose key the caller computed (a symmetric one, say)."""
        seen = self.parent_of.get(fp)
        if seen is None or parent < seen:  # the least parent: every attempt keeps the same
            self.parent_of[fp] = parent
            self.state_of[fp] = state

    def take(self) -> tuple[bytes, bytes, list[Any]]:
        fps, parents = array("Q", self.parent_of), array("Q", self.parent_of.values())
        return fps.tobytes(), parents.tobytes(), list(self.state_of.values())  # both dicts, one order


_c = c_extension("kmc.checker.storage._canonical")
ACCELERATED = _c is not None
"""Whether fingerprints are computed by the C extension (the bytes are the same either way)."""

if _c is None:
    _encode = _encode_python

    def canonical_bytes(value: Any) -> bytes:
        """The canonical encoding: equal values give equal bytes, sets and maps in sorted order."""
        if type(value) is not tuple and isinstance(value, tuple):  # a whole state: its parts are cached
            return b"(" + _pack_len(len(value)) + b"".join([_encode(item) for item in value])
        return _encode(value)

    def fingerprint(value: Any) -> int:
        """A 64-bit unsigned fingerprint of the value's canonical encoding."""
        return xxhash.xxh3_64_intdigest(canonical_bytes(value))

    def candidates() -> Any:
        """A level's candidates (see `Candidates`)."""
        return Candidates()

else:
    _c_encode, _c_fingerprint, _c_candidates = _c.encode, _c.fingerprint, _c.Candidates

    def canonical_bytes(value: Any) -> bytes:
        """The canonical encoding: equal values give equal bytes, sets and maps in sorted order."""
        return _c_encode(value, _encode_python)  # Python's only for the types C leaves to it

    _encode = canonical_bytes

    def fingerprint(value: Any) -> int:
        """A 64-bit unsigned fingerprint of the value's canonical encoding."""
        return _c_fingerprint(value, _encode_python)  # hashed where C wrote it: no bytes object

    def candidates() -> Any:
        """A level's candidates (see `Candidates`), gathered in C."""
        return _c_candidates(_encode_python)


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate that two distinct states shared a 64-bit fingerprint."""
    return distinct * max(generated - distinct, 0) / 2.0**64
