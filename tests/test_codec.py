"""The level codec: every model's states come back equal, of the same types and with the same
fingerprints; parts shared in a level stay shared; what the fast path does not know goes through
pickle; damaged bytes are an error, never a crash."""

from __future__ import annotations

import enum
import pickle
from dataclasses import dataclass
from typing import Any, NamedTuple

import pytest
from kmc.checker.registry import load_model_class, registered_models
from kmc.checker.search.kernel import expand, initial_states
from kmc.checker.storage import codec as codec_module
from kmc.checker.storage.codec import OtherFormError, StateCodec
from kmc.checker.storage.fingerprint import fingerprint


def alike(a: Any, b: Any) -> bool:
    """Equal, and of the same type all the way down (True is not 1, a NamedTuple not a tuple)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(alike(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, frozenset):
        return a == b and all(any(alike(x, y) for y in b if x == y) for x in a)
    return bool(a == b)


def first_states(name: str, count: int) -> list[Any]:
    """The model's first ``count`` states in breadth-first order (the default configuration)."""
    cls = load_model_class(name)
    model = cls(cls.make_config(None, {}))
    seen: set[int] = set()
    level, states = [], []
    for s in initial_states(model):
        if fingerprint(s) not in seen:
            seen.add(fingerprint(s))
            level.append(s)
    while level and len(states) < count:
        states.extend(level)
        nxt = []
        for s in level:
            for _a, t in expand(model, s):
                if fingerprint(t) not in seen:
                    seen.add(fingerprint(t))
                    nxt.append(t)
        level = nxt
    return states[:count]


@pytest.mark.parametrize("name", sorted(registered_models()))
def test_every_models_states_come_back_alike(name: str) -> None:
    states = first_states(name, 3000)
    codec = StateCodec()
    data = codec.encode(states)
    back = codec.decode(data)
    assert len(back) == len(states)
    assert all(alike(s, t) for s, t in zip(states, back, strict=True))
    assert [fingerprint(s) for s in back] == [fingerprint(s) for s in states]
    assert codec.decode(data, list(codec.types)) == back  # with the table saved beside the bytes


class Replica(NamedTuple):
    log: tuple[int, ...]
    isr: frozenset[int]
    leader: bool


class Colour(enum.IntEnum):
    RED = 1


@dataclass(frozen=True)
class Note:
    text: str


@pytest.mark.skipif(not codec_module.ACCELERATED, reason="the C codec was not built")
def test_shared_parts_are_written_once_and_come_back_shared() -> None:
    log = (1, 2, 3)
    a, b = Replica(log, frozenset({0, 1}), True), Replica(log, frozenset({0}), False)
    codec = StateCodec()
    one = codec.encode([a])
    both = codec.encode([a, b])
    assert len(both) < 2 * len(one)  # b's log is a reference to a's
    x, y = codec.decode(both)
    assert x.log is y.log
    assert len(codec.encode([a] * 1000)) < 1000 * 3  # a repeated state is a reference each time
    assert codec.types == [Replica]


def test_values_off_the_fast_path_go_through_pickle() -> None:
    states = [(Colour.RED, 2**70, -(2**63), 2**63 - 1, 1.5, Note("n"), "é", b"\x00", None, True, 1, ())]
    codec = StateCodec()
    back = codec.decode(codec.encode(states))
    assert all(alike(s, t) for s, t in zip(states, back, strict=True))
    assert type(back[0][0]) is Colour and type(back[0][5]) is Note


@pytest.mark.skipif(not codec_module.ACCELERATED, reason="the C codec was not built")
@pytest.mark.parametrize("cut", [1, 5, 17, -1])
def test_damaged_bytes_are_an_error(cut: int) -> None:
    codec = StateCodec()
    data = codec.encode([Replica((1, 2), frozenset({3}), True), ("a", "a")])
    with pytest.raises(ValueError, match="not a level written by this codec"):
        codec.decode(data[:cut])
    with pytest.raises(ValueError, match="not a level written by this codec"):
        codec.decode(data + b"\x00")
    with pytest.raises(ValueError, match="not a level written by this codec"):
        codec.decode(b"\x01\x08\x05")  # a reference to nothing yet


@pytest.mark.skipif(not codec_module.ACCELERATED, reason="the C codec was not built")
def test_it_is_smaller_than_pickle_on_a_level() -> None:
    states = first_states("replication", 20000)[-5000:]
    encoded = StateCodec().encode(states)
    assert len(encoded) < len(pickle.dumps(states, protocol=pickle.HIGHEST_PROTOCOL))


def test_a_packed_level_unpacks_in_a_codec_that_never_met_its_classes() -> None:
    """A worker's slice goes to another process: it carries the classes it was written with, even
    those the writing codec first met while packing it."""
    states = first_states("kraft-replication", 500)
    writer, reader = StateCodec(), StateCodec()
    assert all(alike(s, t) for s, t in zip(states, reader.unpack(writer.pack(states)), strict=True))
    assert reader.unpack(writer.pack(states[:10])) == states[:10]  # the writer's table is no longer empty


@pytest.mark.skipif(not codec_module.ACCELERATED, reason="the C codec was not built")
def test_what_only_looks_like_a_named_tuple_goes_through_pickle() -> None:
    """A C struct sequence keeps fields beyond its items, a lone surrogate has no UTF-8, a value the
    fallback writes twice is one object again, and a fallback that empties the list it is given
    changes nothing."""
    import time

    codec = StateCodec()
    stamp = time.gmtime(0)
    note = Note("shared")
    (back,) = codec.decode(codec.encode([(stamp, "\ud800", note, note)]))
    assert back[0] == stamp and back[0].tm_zone == stamp.tm_zone and back[1] == "\ud800"
    assert back[2] is back[3] and codec.types == []

    states: list[Any] = []

    class Emptying:
        def __reduce__(self) -> tuple[Any, ...]:
            states.clear()
            return (str, ("x",))

    states.extend([(Emptying(), "y" * 10, ("z",)), ("w",)])
    assert codec.decode(codec.encode(states)) == [("x", "y" * 10, ("z",)), ("w",)]
    with pytest.raises(TypeError, match="NamedTuple class"):
        codec.decode(codec.encode([stamp]), [type(stamp)])


def test_bytes_of_another_form_are_refused_not_misread() -> None:
    """A checkpoint written by a build with the C codec and resumed by one without it, or the other
    way round, names both forms."""
    packed = StateCodec().pack(first_states("replication", 10))
    other = StateCodec()
    other.form = "statecodec-0"
    with pytest.raises(OtherFormError, match="'statecodec-0'"):
        other.unpack(packed)
