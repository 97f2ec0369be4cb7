"""Fingerprints are stable across processes and hash seeds."""

from __future__ import annotations

import dataclasses
import enum
import importlib
import os
import shutil
import subprocess
import sys
import sysconfig
from array import array
from typing import Any, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kmc.checker import fingerprint
from kmc.checker.storage.fingerprint import ACCELERATED, canonical_bytes

fingerprint_module = importlib.import_module("kmc.checker.storage.fingerprint")


class Member(NamedTuple):
    memberId: str
    owned: frozenset[tuple[str, int]]


SAMPLE = (
    "Stable",
    3,
    None,
    True,
    frozenset({"consumer-1", "consumer-2", "consumer-3", "a", "zz"}),
    (Member("m-1", frozenset({("orders", 0), ("orders", 1)})), Member("m-2", frozenset())),
    frozenset({frozenset({1, 9, 17}), frozenset({0, 8})}),
    -(2**70),
)

SCRIPT = """
import sys
sys.path.insert(0, {tests!r})
from test_fingerprint import SAMPLE
from kmc.checker import fingerprint
print(fingerprint(SAMPLE))
"""


def test_equal_values_equal_fingerprints() -> None:
    a = frozenset(range(0, 40, 8))
    b = frozenset(reversed(range(0, 40, 8)))
    assert fingerprint((a, "x")) == fingerprint((b, "x"))
    assert fingerprint((1, 2)) != fingerprint((2, 1))
    assert fingerprint(("1",)) != fingerprint((1,))
    assert fingerprint(True) == fingerprint(1)  # equal values, equal fingerprints
    assert fingerprint((True, "a")) == fingerprint((1, "a"))
    assert fingerprint(((1,), 2)) != fingerprint((1, (2,)))
    assert fingerprint((Level.HIGH, "a")) == fingerprint((2, "a")) == fingerprint((2.0, "a"))
    assert fingerprint(({1, 2}, {"k": 1})) == fingerprint(({2, 1}, {"k": True}))
    assert 0 <= fingerprint(SAMPLE) < 2**64


def test_same_fingerprint_in_every_process_and_hash_seed() -> None:
    tests = os.path.dirname(os.path.abspath(__file__))
    seen = set()
    for seed in ["0", "1", "12345", "random"]:
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", SCRIPT.format(tests=tests)], env=env, capture_output=True, text=True, check=True
        )
        seen.add(int(out.stdout))
    assert seen == {fingerprint(SAMPLE)}


def test_unsupported_values_are_rejected() -> None:
    with pytest.raises(TypeError, match="cannot fingerprint"):
        canonical_bytes((1, object()))


class Phase(enum.Enum):
    STABLE = "Stable"
    EMPTY = "Empty"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass(frozen=True)
class Offsets:
    logEndOffset: int
    highWatermark: int
    isr: frozenset[int]


leaves = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.booleans(),
    st.none(),
    st.text(max_size=6),
    st.binary(max_size=6),
    st.floats(allow_nan=False),
    st.sampled_from(list(Phase) + list(Level)),
)
hashables: st.SearchStrategy[Any] = st.deferred(
    lambda: (
        leaves
        | st.tuples(hashables, hashables)
        | st.lists(hashables, max_size=3).map(tuple)
        | st.frozensets(hashables, max_size=3)
        | st.builds(Member, st.text(max_size=3), st.frozensets(st.tuples(st.text(max_size=2), st.integers(0, 3))))
        | st.builds(Offsets, st.integers(0, 5), st.integers(-1, 5), st.frozensets(st.integers(0, 3)))
    )
)


@st.composite
def values(draw: st.DrawFn) -> Any:
    """Hashable values, or a tuple of the unhashable containers a state may also hold."""
    if draw(st.booleans()):
        return draw(hashables)
    return (draw(st.sets(hashables, max_size=4)), draw(st.dictionaries(st.text(max_size=2), hashables, max_size=3)))


@pytest.mark.skipif(not ACCELERATED, reason="the C extension is not in use (not built, or KMC_PURE_PYTHON is set)")
@settings(max_examples=600, deadline=None)
@given(values())
def test_c_extension_encodes_as_python_does(value: Any) -> None:
    assert canonical_bytes(value) == fingerprint_module._encode_python(value)


def test_c_extension_is_built_where_a_compiler_is() -> None:
    """`pip install` builds it if it can; this catches a build that silently stopped working."""
    compiler = sysconfig.get_config_var("CC") or "cc"
    if shutil.which(compiler.split()[0]) is None or os.environ.get("KMC_PURE_PYTHON"):
        pytest.skip("no C compiler here: fingerprints use the pure-Python encoder")
    assert ACCELERATED


@pytest.mark.skipif(not ACCELERATED, reason="the C extension is not in use (not built, or KMC_PURE_PYTHON is set)")
@settings(max_examples=600, deadline=None)
@given(values())
def test_c_fingerprint_is_the_python_one(value: Any) -> None:
    assert fingerprint(value) == fingerprint_module._hash_python(value)
    assert fingerprint((value, value, "x" * 40)) == fingerprint_module._hash_python((value, value, "x" * 40))


@settings(max_examples=300, deadline=None)
@given(hashables, hashables)
def test_fingerprints_differ_where_values_do(a: Any, b: Any) -> None:
    """Equal values, equal fingerprints; unequal ones (that Python does not count as equal), different
    ones, with the probability of a 64-bit collision: never in these examples."""
    if a == b:
        assert fingerprint(a) == fingerprint(b)
    elif fingerprint_module._hash_python(a) == fingerprint_module._hash_python(b):
        assert canonical_bytes(a) == canonical_bytes(b)  # the same value as the encoding sees it


def test_fingerprints_pinned() -> None:
    """The numbers themselves, in C and in Python: a change to them changes every checkpoint's files."""
    pinned = {
        0: 0xF490368ABA8BFEAC,
        -1: 0x940A46006555DDBE,
        "Stable": 0xAF85490842AA717B,
        (1, 2): 0x4FCD47A15FEAF39,
        frozenset({1, 2}): 0x9B78CD51A4BC848B,
        None: 0xD6E8FEB86659FD93,
        2**70: 0xBE3BC9652F166B90,
        1.5: 0x633F3DA17586B8F5,
    }
    assert {k: fingerprint(k) for k in pinned} == pinned
    assert {k: fingerprint_module._hash_python(k) for k in pinned} == pinned


@dataclasses.dataclass
class Mutable:
    """Not frozen: its encoding changes with it, so no encoding of it may be kept."""

    offset: int


def test_encodings_of_parts_that_can_change_are_not_reused() -> None:
    """The C encoder reuses the encodings of tuples it met, and the C fingerprint their hashes (by
    identity); a tuple holding a set, a mapping or a mutable object, at any depth, must be
    encoded and hashed afresh each time."""
    members, config, cursor = {1, 2}, {"k": 1}, Mutable(3)
    part = ("members", members, "config", config, "cursor", cursor, "padding" * 8)
    nested = ("replica", ("partition", part))
    before = [fingerprint(("state", part)), canonical_bytes(("state", part)), fingerprint(("state", nested))]
    members.add(3)
    config["k"] = 2
    cursor.offset = 4
    after = [fingerprint(("state", part)), canonical_bytes(("state", part)), fingerprint(("state", nested))]
    assert after[0] != before[0]
    assert after[2] == fingerprint_module._hash_python(("state", nested)) != before[2]
    assert after[1] == fingerprint_module._encode_python(("state", part)) != before[1]
    shared = ("log", tuple(range(10)))  # immutable: reused, and still the same bytes
    assert fingerprint(("a", shared)) == fingerprint(("a", shared)) == fingerprint(("a", ("log", tuple(range(10)))))


@pytest.mark.parametrize("accelerated", [False, True])
def test_candidates_keep_the_least_parent_and_its_successor(accelerated: bool) -> None:
    if accelerated and not ACCELERATED:
        pytest.skip("the C extension is not in use")
    gathered = fingerprint_module.candidates() if accelerated else fingerprint_module.Candidates()
    a1, a2, b, c = ("s", 1), ("s", 1), ("s", 2), ("s", 3)  # a1 == a2, different objects
    gathered.add([("x", b), ("y", a1)], 7)
    gathered.add([("x", a2), ("z", c)], 5)  # a smaller parent of a: it and its a2 win
    gathered.add([("x", a1), ("x", b)], 9)  # larger parents: nothing changes
    assert len(gathered) == 3
    fps, parents, states = gathered.take()
    assert list(array("Q", fps)) == [fingerprint(b), fingerprint(a1), fingerprint(c)]
    assert list(array("Q", parents)) == [7, 5, 5]
    assert states == [b, a2, c] and states[1] is a2


@pytest.mark.parametrize("accelerated", [False, True])
def test_visited_fingerprints_keep_each_first_occurrence_and_its_parent(accelerated: bool) -> None:
    from kmc.checker.storage import visited

    if accelerated and visited.VisitedFingerprints is visited.PythonVisitedFingerprints:
        pytest.skip("the C extension is not in use")
    kept = visited.VisitedFingerprints() if accelerated else visited.PythonVisitedFingerprints()
    words = array("Q", [5, 0, 7, 5, 2**64 - 1, 0, 9])  # 0 is a fingerprint too
    new = kept.add_new(words.tobytes(), array("Q", range(7)).tobytes())
    assert list(array("q", new)) == [0, 1, 2, 4, 6]
    assert len(kept) == 5 and 0 in kept and 8 not in kept
    assert [kept.parent_of(fp) for fp in (5, 0, 7, 2**64 - 1, 9)] == [0, 1, 2, 4, 6]
    assert not kept.any_new(array("Q", [5, 0]).tobytes()) and kept.any_new(array("Q", [5, 8]).tobytes())
    many = array("Q", range(1, 200_001))  # grows the table many times
    assert len(array("q", kept.add_new(many.tobytes(), many.tobytes()))) == 200_000 - 3  # 5, 7, 9 kept
    assert len(kept) == 200_002 and kept.parent_of(150_000) == 150_000 and kept.parent_of(7) == 2
    with pytest.raises(KeyError):
        kept.parent_of(10**9)
    with pytest.raises(ValueError):
        kept.add_new(words.tobytes(), b"")


@pytest.mark.parametrize("accelerated", [False, True])
def test_visited_fingerprints_as_the_search_uses_them(accelerated: bool) -> None:
    """add(fp, parent), visited[fp] (None for an initial state), del visited[fp]: the one-process
    search's fingerprint store; deletions must not lose the fingerprints that probed past them."""
    from kmc.checker.storage import visited

    if accelerated and not visited.IN_C:
        pytest.skip("the C extension is not in use")
    kept = visited.VisitedFingerprints() if accelerated else visited.PythonVisitedFingerprints()
    assert kept.add(7, None) and not kept.add(7, 3) and kept[7] is None
    colliding = [1024 * i + 5 for i in range(1, 60)]  # one home slot in a small table: long probes
    for fp in colliding:
        assert kept.add(fp, 7)
    for fp in colliding[::3]:
        del kept[fp]
    assert [fp in kept for fp in colliding] == [i % 3 != 0 for i in range(len(colliding))]
    assert all(kept[fp] == 7 for fp in colliding[1::3])
    assert len(kept) == 1 + len(colliding) - len(colliding[::3])
    with pytest.raises(KeyError):
        del kept[colliding[0]]


def test_a_state_bound_with_fingerprints_counts_as_with_states() -> None:
    from kmc.checker import BfsOptions, bfs
    from kmc.checker.properties import PropertySet
    from toy_models import CounterGrid

    model = CounterGrid.build(None, {"n": 10})
    exact = bfs(model, PropertySet(), BfsOptions(max_states=20))
    kept = bfs(model, PropertySet(), BfsOptions(max_states=20, store="fingerprints"))
    assert (
        (kept.stats.distinct_states, kept.stats.generated_states, kept.bound_reason)
        == (
            exact.stats.distinct_states,
            exact.stats.generated_states,
            exact.bound_reason,
        )
        == (20, exact.stats.generated_states, "max states 20")
    )
