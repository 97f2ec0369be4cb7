"""Stable 64-bit fingerprints of states, and their canonical byte encoding.

A fingerprint is a 64-bit hash of the value's structure: an int is mixed with a tag, a str or
bytes is hashed over its 8-byte words, a tuple folds its items' fingerprints in order (xxHash64's
round), a set or a map sums its items' mixed fingerprints, and MurmurHash3's finalizer mixes each
result. It is the same in every process, under every PYTHONHASHSEED and on every machine. Python's
own ``hash()`` is not: it is salted for str and bytes and, for None, depends on memory addresses.

Both are functions of the value as Python compares it: values that are equal (==) get the same
fingerprint and the same bytes (so ``True`` and ``1`` do, as they do as dictionary keys, and so do
an IntEnum member and its int), the order a set holds its items in does not matter, and
NamedTuples and frozen dataclasses count as the tuples of their fields.

The types states are mostly made of (tuples, frozensets, ints, strs, None) are fingerprinted by a
small C extension, ``_fingerprint``, when it was built (``pip install`` compiles it where a C
compiler is found), and encoded by another, ``_canonical``; the pure-Python functions below give
the same numbers and bytes, handle every other type, and are used for everything when the
extensions are missing or ``KMC_PURE_PYTHON=1`` is set. The fingerprints of the parts states share
(logs, member records, sets) are cached: in Python by value, in C those of the recently met tuples
and frozensets by identity (a successor shares most parts with its siblings).
"""

from __future__ import annotations

import dataclasses
import enum
import struct
from array import array
from collections.abc import Mapping
from typing import Any

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
        raise _unsupported(kind)
    if hashable:
        _remember(_cache, value, encoded)
    return encoded


def _unsupported(kind: type) -> TypeError:
    return TypeError(
        f"cannot fingerprint a value of type {kind.__name__}: states must be built from "
        "tuples, NamedTuples, frozen dataclasses, frozensets, ints, bools, strs and None"
    )


def _remember(cache: dict[Any, Any], value: Any, result: Any) -> None:
    """Keep what a part computed to, in a cache emptied when it is full."""
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[value] = result


_M64 = (1 << 64) - 1
_P1, _P2 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F
_TAG_INT, _TAG_STR, _TAG_BYTES = 0x165667B19E3779F9, 0x27D4EB2F165667C5, 0x85EBCA77C2B2AE63
_TAG_NONE, _TAG_TUPLE, _TAG_SET, _TAG_SET_ITEM = (
    0xD6E8FEB86659FD93,
    0xA0761D6478BD642F,
    0xE7037ED1A0B428DB,
    0x8EBC6AF09C88C6E3,
)
_TAG_MAP, _TAG_MAP_ITEM = 0x589965CC75374CC3, 0x1D8E4E27C47D124F
_TAG_BIG_INT, _TAG_FLOAT, _TAG_ENUM = 0xEB44ACCAB455D165, 0x9FB21C651E98DF25, 0xC0A6F0E5C1F5D9A7
_hash_cache: dict[Any, int] = {}


def _mix(h: int) -> int:
    """MurmurHash3's finalizer."""
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _M64
    return h ^ (h >> 33)


def _fold(acc: int, item: int) -> int:
    """One item folded into an ordered accumulator (xxHash64's round)."""
    acc = (acc + item * _P2) & _M64
    return (((acc << 31) | (acc >> 33)) & _M64) * _P1 & _M64


def _hash_bytes(data: bytes, tag: int) -> int:
    acc = (tag + len(data) * _P1) & _M64
    for i in range(0, len(data), 8):
        acc = _fold(acc, int.from_bytes(data[i : i + 8], "little"))
    return _mix(acc)


def _hash_items(hashes: list[int], tag: int, item_tag: int) -> int:
    """A set's or a map's: the sum of its items' mixed fingerprints, whatever their order."""
    total = sum(_mix(h ^ item_tag) for h in hashes) & _M64
    return _mix(total ^ ((tag + len(hashes) * _P1) & _M64))


def _hash_tuple(items: Any) -> int:
    items = list(items)
    acc = (_TAG_TUPLE + len(items) * _P1) & _M64
    for item in items:
        acc = _fold(acc, _hash_python(item))
    return _mix(acc)


def _hash_python(value: Any) -> int:
    """The fingerprint, in Python: the C extension's numbers, for every type a state may hold."""
    kind = type(value)
    if kind is int or kind is bool:
        if -(2**63) <= value < 2**63:
            return _mix((value & _M64) ^ _TAG_INT)
        return _hash_bytes(str(value).encode(), _TAG_BIG_INT)
    if kind is str:
        return _hash_bytes(value.encode(), _TAG_STR)
    if value is None:
        return _TAG_NONE
    try:
        cached = _hash_cache.get(value)
        hashable = True
    except TypeError:  # unhashable: a set or a mapping, or a tuple holding one
        cached, hashable = None, False
    if cached is not None:
        return cached
    if isinstance(value, tuple):
        hashed = _hash_tuple(value)
    elif isinstance(value, frozenset | set):
        hashed = _hash_items([_hash_python(item) for item in value], _TAG_SET, _TAG_SET_ITEM)
    elif isinstance(value, Mapping):
        pairs = [_fold(_fold(_TAG_MAP_ITEM, _hash_python(k)), _hash_python(v)) for k, v in value.items()]
        hashed = _hash_items(pairs, _TAG_MAP, _TAG_MAP_ITEM)
    elif isinstance(value, int):  # IntEnum, other int subclasses: equal to an int, hashed as one
        return _hash_python(int(value))
    elif isinstance(value, str):  # StrEnum and other str subclasses, likewise
        return _hash_python(str.__str__(value))
    elif isinstance(value, enum.Enum):
        hashed = _hash_bytes(f"{kind.__name__}.{value.name}".encode(), _TAG_ENUM)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        hashed = _hash_tuple(getattr(value, f.name) for f in dataclasses.fields(value))
    elif kind is float:
        return _hash_python(int(value)) if value.is_integer() else _hash_bytes(struct.pack("<d", value), _TAG_FLOAT)
    elif kind is bytes:
        return _hash_bytes(value, _TAG_BYTES)
    else:
        raise _unsupported(kind)
    if hashable:
        _remember(_hash_cache, value, hashed)
    return hashed


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
_fingerprints = c_extension("kmc.checker.storage._fingerprint")
ACCELERATED = _c is not None and _fingerprints is not None
"""Whether fingerprints and encodings are computed by the C extensions (the numbers and bytes are the
same either way)."""

if _c is None:
    _encode = _encode_python

    def canonical_bytes(value: Any) -> bytes:
        """The canonical encoding: equal values give equal bytes, sets and maps in sorted order."""
        if type(value) is not tuple and isinstance(value, tuple):  # a whole state: its parts are cached
            return b"(" + _pack_len(len(value)) + b"".join([_encode(item) for item in value])
        return _encode(value)

else:
    _c_encode = _c.encode

    def canonical_bytes(value: Any) -> bytes:
        """The canonical encoding: equal values give equal bytes, sets and maps in sorted order."""
        return _c_encode(value, _encode_python)  # Python's only for the types C leaves to it

    _encode = canonical_bytes

if _fingerprints is None:
    fingerprint = _hash_python

    def candidates() -> Any:
        """A level's candidates (see `Candidates`)."""
        return Candidates()

else:
    _fingerprints.set_fallback(_hash_python)  # for the types C leaves to Python
    fingerprint = _fingerprints.fingerprint
    """A 64-bit unsigned fingerprint of the value (see the module's docstring)."""

    def candidates() -> Any:
        """A level's candidates (see `Candidates`), gathered in C."""
        return _fingerprints.Candidates()


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate that two distinct states shared a 64-bit fingerprint."""
    return distinct * max(generated - distinct, 0) / 2.0**64
