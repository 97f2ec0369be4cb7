"""`kmc ci`: expected verdicts, failures for changed verdicts, and the JUnit report."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import default_sigint

SUITE = """
[[check]]
name = "2PC holds"
model = "{toy}:TwoPhaseCommit"
expect = "holds-complete"
expect_distinct_states = 62

[[check]]
name = "buggy 2PC is caught"
model = "{toy}:TwoPhaseCommit"
preset = "buggy"
expect = "violated"
expect_property = "Consistent"
expect_trace_length = 5
"""

STALE = """
[[check]]
name = "a bug that is no longer there"
model = "{toy}:TwoPhaseCommit"
preset = "correct"
expect = "violated"

[[check]]
name = "a count that changed"
model = "{toy}:CounterGrid"
expect = "holds"
expect_distinct_states = 17

[[check]]
name = "bounded is not complete"
model = "{toy}:CounterGrid"
max_depth = 2
expect = "holds-complete"
"""


def test_suite_passes_and_writes_junit(kmc, toy: str, tmp_path: Path) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE.format(toy=toy))
    junit = tmp_path / "report.xml"
    code, out, _ = kmc("ci", suite, "--junit", junit, "--out", tmp_path / "traces")
    assert code == 0, out
    assert out.strip().splitlines()[-1] == "2 passed, 0 failed"
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuite"
    assert root.get("tests") == "2" and root.get("failures") == "0"
    assert [c.get("name") for c in root.iter("testcase")] == ["2PC holds", "buggy 2PC is caught"]
    assert (tmp_path / "traces" / "two-phase" / "buggy-Consistent.itf.json").exists()


def test_suite_fails_on_every_kind_of_changed_verdict(kmc, toy: str, tmp_path: Path) -> None:
    suite = tmp_path / "stale.toml"
    suite.write_text(STALE.format(toy=toy))
    junit = tmp_path / "report.xml"
    code, out, _ = kmc("ci", suite, "--junit", junit)
    assert code == 1
    assert "expected a violation, none found (complete run, 62 states)" in out
    assert "expected 17 distinct states, got 16" in out
    assert "expected a complete run, it was bounded (max depth 2)" in out
    assert out.strip().splitlines()[-1] == "0 passed, 3 failed"
    root = ET.parse(junit).getroot()
    assert root.get("failures") == "3"
    failures = [c.find("failure") for c in root.iter("testcase")]
    assert all(f is not None and f.get("message") for f in failures)


def test_suite_replays_stored_traces(kmc, toy: str, tmp_path: Path) -> None:
    kmc("check", f"{toy}:TwoPhaseCommit", "-p", "buggy", "--out", tmp_path)
    trace = tmp_path / "buggy-Consistent.itf.json"
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE.format(toy=toy) + 'replay = "buggy-Consistent.itf.json"\n')
    assert kmc("ci", suite)[0] == 0
    trace.write_text(trace.read_text().replace('"Prepare"', '"Teleport"'))
    code, out, _ = kmc("ci", suite)
    assert code == 1 and "trace does not replay" in out


STORED = """
[[check]]
name = "buggy 2PC, from its stored trace"
model = "{toy}:TwoPhaseCommit"
preset = "{preset}"
search = false
expect = "violated"
expect_property = "Consistent"
expect_trace_length = {length}
replay = "buggy-Consistent.itf.json"
"""


def test_suite_judges_a_stored_trace_without_searching(kmc, toy: str, tmp_path: Path) -> None:
    kmc("check", f"{toy}:TwoPhaseCommit", "-p", "buggy", "--out", tmp_path)
    suite = tmp_path / "stored.toml"
    suite.write_text(STORED.format(toy=toy, preset="buggy", length=5))
    code, out, _ = kmc("ci", suite)
    assert code == 0, out
    assert "violated: Consistent at state 5 of the stored trace (replayed, not searched)" in out
    suite.write_text(STORED.format(toy=toy, preset="buggy", length=4))
    code, out, _ = kmc("ci", suite)
    assert code == 1 and "expected a trace of 4 states, the stored one has 5" in out
    suite.write_text(STORED.format(toy=toy, preset="correct", length=5))
    code, out, err = kmc("ci", suite)
    assert (code, out) == (2, "")  # the suite contradicts itself: refused before anything runs
    assert err.strip().endswith("buggy-Consistent.itf.json was recorded on preset buggy, the entry checks correct")


def test_malformed_suites_are_bad_input(kmc, tmp_path: Path) -> None:
    cases = {
        "empty.toml": "",
        "syntax.toml": "[[check]\nmodel=",
        "noexpect.toml": '[[check]]\nname = "n"\nmodel = "replication"\n',
        "unknown.toml": '[[check]]\nname = "n"\nmodel = "replication"\nexpect = "holds"\nspeed = 3\n',
        "nosearch.toml": '[[check]]\nname = "n"\nmodel = "replication"\nexpect = "holds"\nsearch = false\n',
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        code, _, err = kmc("ci", path)
        assert code == 2, name
        assert len(err.strip().splitlines()) == 1, name


def test_entries_run_in_parallel_give_the_same_outcomes_in_the_suite_order(kmc, toy: str, tmp_path: Path) -> None:
    suite = tmp_path / "mixed.toml"
    suite.write_text(SUITE.format(toy=toy) + STALE.format(toy=toy))
    one, many = tmp_path / "one.xml", tmp_path / "many.xml"
    code, out_one, _ = kmc("ci", suite, "--junit", one)
    assert code == 1 and out_one.strip().splitlines()[-1] == "2 passed, 3 failed"
    # the `kmc` command itself, as CI runs it: a fresh process that forks its workers
    run = subprocess.run(
        [
            Path(sys.executable).parent / "kmc",
            "ci",
            suite,
            "--junit",
            many,
            "--jobs",
            "3",
            "--out",
            tmp_path / "traces",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    code, out_many = run.returncode, run.stdout
    assert code == 1 and out_many.strip().splitlines()[-1] == "2 passed, 3 failed", run.stderr

    def lines(out: str) -> list[str]:
        return sorted(re.sub(r"\[[0-9.]+ s\]", "", line) for line in out.splitlines()[:-1])

    assert lines(out_many) == lines(out_one)

    def cases(junit: Path) -> list[tuple[str | None, bool]]:
        return [(c.get("name"), c.find("failure") is None) for c in ET.parse(junit).getroot().iter("testcase")]

    assert cases(many) == cases(one)
    assert [name for name, _ in cases(many)][:2] == ["2PC holds", "buggy 2PC is caught"]
    assert (tmp_path / "traces" / "two-phase" / "buggy-Consistent.itf.json").exists()  # written by a worker


def test_model_picks_the_entries_of_one_model(kmc, toy: str, tmp_path: Path) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text(STALE.format(toy=toy))
    code, out, _ = kmc("ci", suite, "--model", "TwoPhaseCommit")
    assert code == 1 and out.strip().splitlines()[-1] == "0 passed, 1 failed"
    assert "a bug that is no longer there" in out and "a count that changed" not in out
    code, out, _ = kmc("ci", suite, "--model", "CounterGrid", "--model", "TwoPhaseCommit")
    assert out.strip().splitlines()[-1] == "0 passed, 3 failed"
    code, _, err = kmc("ci", suite, "--model", "replication")
    assert code == 2 and "has no entry of model 'replication'" in err and "CounterGrid" in err


@pytest.mark.parametrize(("sig", "code", "why"), [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_ends_the_whole_suite_not_just_its_entry(
    tmp_path: Path, sig: signal.Signals, code: int, why: str
) -> None:
    """Ctrl-C or SIGTERM during an entry ends `kmc ci` with 'interrupted' and 130/143: the entry it
    cut short is not judged a failure, and the entries after it do not run."""
    suite = tmp_path / "suite.toml"
    suite.write_text(
        '[[check]]\nname = "quick"\nmodel = "replication"\npreset = "kip-279"\nexpect = "holds-complete"\n\n'
        '[[check]]\nname = "long"\nmodel = "replication"\npreset = "kip-320"\n'
        'set = { replicas = 3, max_leader_epoch = 3 }\nexpect = "holds-complete"\n\n'
        '[[check]]\nname = "never reached"\nmodel = "replication"\npreset = "kip-279"\nexpect = "holds-complete"\n'
    )
    argv = [sys.executable, "-m", "kmc.checker.cli", "ci", str(suite)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=default_sigint
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("PASS  quick"), first
    time.sleep(1.0)  # well inside the long entry (about a minute)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, (out, err)
    assert f"kmc: interrupted ({why})" in err
    assert "long" not in out and "never reached" not in out and "Traceback" not in out + err


def test_the_suite_page_names_every_engine_setting() -> None:
    """docs/ci.md lists the engine settings a suite entry takes: exactly those the engines declare."""
    from kmc.checker.engines.settings import all_options

    page = (Path(__file__).resolve().parents[1] / "docs" / "ci.md").read_text()
    paragraph = page[page.index("every engine\nsetting of the one table") : page.index("A setting the entry's engine")]
    named = set(re.findall(r"`([a-z_]+)`", paragraph))
    assert named == {spec.toml_key for spec in all_options().values()}
