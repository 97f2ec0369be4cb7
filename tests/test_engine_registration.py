"""Adding an engine touches its own module and one registration: the toy engine of toy_engines.py,
registered here and nowhere else, runs through the CLI (its option a flag of `kmc check`), a suite
(its option a TOML key) and the pytest helpers (a keyword argument), and other engines refuse it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kmc.checker.cli.suite import load_suite, run_suite
from kmc.checker.engines import ENGINES, register_engine, unregister_engine
from kmc.checker.errors import UserError
from kmc.checker.testing import assert_holds, assert_violates
from toy_engines import DepthFirstEngine

ENGINE = "toy-dfs"


@pytest.fixture
def toy_engine() -> Iterator[str]:
    register_engine(ENGINE, "toy_engines:DepthFirstEngine")
    try:
        yield ENGINE
    finally:
        unregister_engine(ENGINE)


def test_registered_by_one_line(toy_engine: str) -> None:
    assert ENGINES[toy_engine] is DepthFirstEngine
    with pytest.raises(UserError, match="already registered"):
        register_engine(toy_engine, "toy_engines:Other")


def test_through_the_cli(toy_engine: str, kmc, toy: str, tmp_path: Path) -> None:
    code, out, _ = kmc("check", f"{toy}:CounterGrid", "--engine", toy_engine, "--dfs-order", "last", "--out", tmp_path)
    assert code == 0 and "16 distinct states" in out and "holds (complete" in out  # the same count as bfs: (3+1)^2
    code, out, _ = kmc("check", f"{toy}:TwoPhaseCommit", "-p", "buggy", "--engine", toy_engine, "--out", tmp_path)
    assert code == 1 and "VIOLATED Consistent (invariant): trace of" in out  # not "shortest": it does not promise it
    code, _, err = kmc("check", f"{toy}:CounterGrid", "--engine", "bfs", "--dfs-order", "last", "--out", tmp_path)
    assert code == 2 and "the bfs engine does not take --dfs-order" in err
    code, _, err = kmc("check", f"{toy}:CounterGrid", "--engine", toy_engine, "--dfs-order", "middle")
    assert code == 2 and "dfs_order must be one of first, last" in err
    code, out, _ = kmc("check", "--help")
    assert "--dfs-order" in out and "toy-dfs" in out


def test_through_a_suite(toy_engine: str, toy: str, tmp_path: Path) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text(
        f'[[check]]\nname = "grid"\nmodel = "{toy}:CounterGrid"\nengine = "{toy_engine}"\ndfs_order = "last"\n'
        'expect = "holds-complete"\nexpect_distinct_states = 16\n'
        f'[[check]]\nname = "2pc"\nmodel = "{toy}:TwoPhaseCommit"\npreset = "buggy"\nengine = "{toy_engine}"\n'
        'expect = "violated"\nexpect_property = "Consistent"\n'
    )
    outcomes = run_suite(load_suite(suite))
    assert [(o.entry.name, o.ok) for o in outcomes] == [("grid", True), ("2pc", True)], [o.message for o in outcomes]


def test_through_the_pytest_helpers(toy_engine: str, toy: str, tmp_path: Path) -> None:
    result = assert_holds(f"{toy}:CounterGrid", engine=toy_engine, order="first", out=tmp_path)
    assert result.stats.distinct_states == 16
    assert_violates(f"{toy}:TwoPhaseCommit", "Consistent", preset="buggy", engine=toy_engine, out=tmp_path)


def test_unregistered_it_is_unknown(kmc, toy: str) -> None:
    code, _, err = kmc("check", f"{toy}:CounterGrid", "--engine", ENGINE)
    assert code == 2 and f"unknown engine {ENGINE!r}" in err
