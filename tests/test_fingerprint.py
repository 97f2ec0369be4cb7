"""Fingerprints are stable across processes and hash seeds."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import NamedTuple

import pytest
from kmc.checker import fingerprint
from kmc.checker.fingerprint import canonical_bytes


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
