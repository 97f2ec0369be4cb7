"""A compact byte form of a list of states, for the levels a search holds or spills.

A level of a breadth-first search is most of what a fingerprint search holds: as Python objects a
state costs a few hundred bytes, though it shares most of its parts with its siblings. The codec
writes such a list as opcodes (``_c/statecodec.c``): ints as varints, a NamedTuple as its class's
number in the codec's table, and a part met before in the same list as a reference to it, so a
state costs a few dozen bytes and a microsecond each way. Decoding gives equal states of the same
types. Where the extension was not built, pickle does the same job, slower and larger.
"""

from __future__ import annotations

import pickle
from typing import Any

from kmc.checker.extension import c_extension

_c = c_extension("kmc.checker.storage._statecodec")
ACCELERATED = _c is not None


def _pickled(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


class OtherFormError(ValueError):
    """Packed bytes in a form this build does not write: another build's, with or without the C
    extension (a checkpoint resumed by a different build)."""

    def __init__(self, form: str, own: str) -> None:
        super().__init__(f"the states are in the {form!r} form and this kmc writes {own!r}")
        self.form = form
        self.own = own


class StateCodec:
    """Encodes and decodes lists of states; one codec per search, since its table of NamedTuple
    classes (filled as they are met) is what the bytes refer to."""

    form = "statecodec-1" if _c is not None else "pickle"
    """What the bytes are: a run resumed from another build's files must be told, not misread."""

    def __init__(self) -> None:
        self.types: list[type] = []

    if _c is not None:

        def encode(self, states: list[Any]) -> bytes:
            return _c.encode(states, self.types, _pickled)

        def decode(self, data: bytes | memoryview, types: list[type] | None = None) -> list[Any]:
            """The states ``encode`` wrote, with the class table they were written with (this
            codec's own unless ``types``, a copy saved beside the bytes, is given)."""
            return _c.decode(data, self.types if types is None else types, pickle.loads)

    else:

        def encode(self, states: list[Any]) -> bytes:
            return _pickled(states)

        def decode(self, data: bytes | memoryview, types: list[type] | None = None) -> list[Any]:
            return pickle.loads(data)  # bytes this run wrote, or a checkpoint's, checked before

    def pack(self, states: list[Any]) -> bytes:
        """The states with their form and the class table they need: bytes that another process's
        codec, or this search resumed, can ``unpack``."""
        encoded = self.encode(states)  # first: it may add classes to the table
        return _pickled((self.form, list(self.types), encoded))

    def unpack(self, data: bytes | memoryview) -> list[Any]:
        """What ``pack`` wrote; OtherFormError if another build wrote it."""
        form, types, encoded = pickle.loads(data)  # this search's own bytes, or a checkpoint's, checked before
        if form != self.form:
            raise OtherFormError(form, self.form)
        return self.decode(encoded, types)
