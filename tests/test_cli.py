"""The kmc command: verdicts, exit codes, JSON, and one clear line for every kind of bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, TESTS


def test_check_holds_json(kmc, toy: str, tmp_path: Path) -> None:
    code, out, err = kmc("check", f"{toy}:TwoPhaseCommit", "--json", "--out", tmp_path)
    assert code == 0, err
    data = json.loads(out)
    assert data["verdict"] == "holds"
    assert data["complete"] is True
    assert data["distinct_states"] == 62
    assert data["depth"] == 8
    assert data["violations"] == []
    assert {"generated_states", "elapsed_s"} <= set(data)


def test_check_violated_json_and_trace(kmc, toy: str, tmp_path: Path) -> None:
    code, out, _ = kmc("check", f"{toy}:TwoPhaseCommit", "-p", "buggy", "--json", "--out", tmp_path)
    assert code == 1
    data = json.loads(out)
    assert data["verdict"] == "violated"
    assert data["complete"] is False
    [violation] = data["violations"]
    assert violation["property"] == "Consistent"
    assert violation["trace_length"] == 5
    trace = Path(violation["trace"])
    assert trace == tmp_path / "buggy-Consistent.itf.json"
    assert kmc("replay", trace)[0] == 0


def test_check_human_output_prints_the_trace(kmc, toy: str, tmp_path: Path) -> None:
    code, out, _ = kmc("check", f"{toy}:CounterGrid", "--set", "limit=2", "--out", tmp_path)
    assert code == 1
    assert "VIOLATED Bounded (invariant): shortest trace of 3 states" in out
    assert "State 2: Inc" in out
    assert "verdict: violated" in out


def test_bounded_run_and_require_complete(kmc, toy: str, tmp_path: Path) -> None:
    code, out, _ = kmc("check", f"{toy}:CounterGrid", "--max-depth", "2", "--json", "--out", tmp_path)
    assert code == 0
    data = json.loads(out)
    assert data["complete"] is False and data["bound_reason"] == "max depth 2"
    code, _, _ = kmc("check", f"{toy}:CounterGrid", "--max-depth", "2", "--require-complete", "--out", tmp_path)
    assert code == 3
    code, _, _ = kmc("check", f"{toy}:CounterGrid", "--require-complete", "--out", tmp_path)
    assert code == 0


def test_simulation_is_reproducible_from_its_seed(kmc, toy: str, tmp_path: Path) -> None:
    args = ("check", f"{toy}:TwoPhaseCommit", "-p", "buggy", "--engine", "simulate", "--json")
    code1, out1, _ = kmc(*args, "--seed", "7", "--out", tmp_path / "a")
    code2, out2, _ = kmc(*args, "--seed", "7", "--out", tmp_path / "b")
    assert code1 == code2 == 1
    one, two = json.loads(out1), json.loads(out2)
    assert one["seed"] == 7
    assert one["violations"][0]["trace_length"] == two["violations"][0]["trace_length"]
    a = json.loads((tmp_path / "a" / "buggy-Consistent.itf.json").read_text())
    b = json.loads((tmp_path / "b" / "buggy-Consistent.itf.json").read_text())
    assert a["states"] == b["states"]
    assert kmc("replay", tmp_path / "a" / "buggy-Consistent.itf.json")[0] == 0


def test_simulation_prints_a_seed_when_none_given(kmc, toy: str, tmp_path: Path) -> None:
    code, out, _ = kmc("check", f"{toy}:CounterGrid", "--engine", "simulate", "--walks", "5", "--out", tmp_path)
    assert code == 0
    assert "rerun with --seed" in out
    assert "holds within bounds only" in out


def test_spec_file_adds_properties(kmc, toy: str, tmp_path: Path) -> None:
    spec = tmp_path / "mine.py"
    spec.write_text("from kmc.checker import invariant\n\n@invariant\ndef XNeverThree(s):\n    return s.x != 3\n")
    code, out, _ = kmc("check", f"{toy}:CounterGrid", "--spec", spec, "-P", "XNeverThree", "--json", "--out", tmp_path)
    assert code == 1
    assert json.loads(out)["violations"][0]["trace_length"] == 4


def test_list_shows_models_presets_properties_and_keys(kmc) -> None:
    code, out, _ = kmc("list", "--json")
    assert code == 0
    models = {m["model"]: m for m in json.loads(out)}
    rep = models["replication"]
    assert set(rep["presets"]) == {"truncate-to-hw", "kip-101", "kip-279", "kip-320-first-try", "kip-320"}
    assert [p["name"] for p in rep["properties"]] == ["WeakIsr", "StrongIsr", "LeaderInIsr", "LogMatching"]
    assert {c["key"]: c["default"] for c in rep["config"]}["replicas"] == 2
    strong = next(p for p in rep["properties"] if p["name"] == "StrongIsr")
    assert strong["doc"] == "Everything below any presumed leader's high watermark is on every member of the true ISR."
    exactly = next(p for p in models["consumer-delivery"]["properties"] if p["name"] == "ExactlyOnce")
    assert exactly["doc"] == (
        "Each input record below the committed offset has its output seen exactly once (or is being processed by "
        "a running consumer, not yet written), and no record above it more than once: at-least-once and "
        "at-most-once together."
    )


LIST_REPLICATION_AT_100 = """\
replication: partition replication as in the TLA+ spec hachikuji/kafka-specification
  presets: (default kip-320)
    truncate-to-hw     before KIP-101 (< 0.11): a new follower truncates to its high watermark
    kip-101            KIP-101 (0.11): truncation by leader epoch (OffsetsForLeaderEpoch)
    kip-279            KIP-279 (2.0): truncate after the last offset whose record matches the
                       leader's
    kip-320-first-try  the first KIP-320 draft: truncate on a fetch error, fetches checked by last
                       fetched epoch
    kip-320            KIP-320 (2.1): fetches and truncation fenced by the current leader epoch
  properties:
    WeakIsr      invariant  Every presumed leader's own ISR holds exactly its log up to its high
                            watermark.
    StrongIsr    invariant  Everything below any presumed leader's high watermark is on every member
                            of the true ISR.
    LeaderInIsr  invariant  The leader in ZooKeeper is a member of the ISR (vacuous before the first
                            election).
    LogMatching  invariant  Two replicas hold the same records at every offset below both of their
                            high watermarks.
  config:
    replicas          int, default 2: Replicas: the replication factor
    log_size          int, default 2: LogSize: the most records a replica's log holds
    max_records       int, default 2: MaxRecords: how many records producers write in all
    max_leader_epoch  int, default 2: MaxLeaderEpoch: the largest leader epoch (epochs 0..max are
                      handed out)
    truncation        hw|leader_epoch|matching_offset|on_fetch|fenced, default fenced: what a new
                      follower does to its log
    fetch_fencing     none|last_fetched_epoch|current_leader_epoch, default current_leader_epoch:
                      what a follower's fetch is checked against
    hw_advance        isr_offsets|epoch_match|current_epoch, default current_epoch: when the leader
                      advances the high watermark
    isr_rules         offsets|epoch_match|current_epoch, default current_epoch: when the leader
                      shrinks or expands the ISR
  symmetry: yes (--symmetry)

"""


def test_list_wraps_each_description_whole_under_its_column(kmc, monkeypatch: pytest.MonkeyPatch) -> None:
    """Names padded to the model's longest, each description's first paragraph wrapped to the
    terminal's width (COLUMNS here) and indented under its column."""
    monkeypatch.setenv("COLUMNS", "100")
    assert kmc("list", "replication") == (0, LIST_REPLICATION_AT_100, "")


def test_list_puts_a_name_too_long_for_its_column_on_a_line_of_its_own(kmc, monkeypatch: pytest.MonkeyPatch) -> None:
    """consumer-delivery's longest preset name would leave its text less than half of 100 columns."""
    monkeypatch.setenv("COLUMNS", "100")
    code, out, _ = kmc("list", "consumer-delivery")
    assert code == 0
    lines = out.splitlines()
    at = lines.index("    commit-after-processing-kip-848-pre-kafka-20332")
    assert lines[at - 1 : at + 3] == [
        "                                                  (Kafka 4.3), no faults: nothing is processed twice",
        "    commit-after-processing-kip-848-pre-kafka-20332",
        "                                                  commit after processing with the KIP-848 consumer",
        "                                                  of 4.2.0, no faults: the background thread revokes",
    ]
    assert (
        lines[at + 6] == "    commit-after-processing-kip-848-pre-kip-1251  before KIP-1251: a commit sent before the"
    )


@pytest.mark.parametrize("columns", [60, 100, 200])
def test_list_cuts_no_description_and_keeps_to_the_width(kmc, monkeypatch: pytest.MonkeyPatch, columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    code, out, _ = kmc("list")
    assert code == 0
    too_wide = [line for line in out.splitlines() if len(line) > columns]
    assert all(len(line.split()[-1]) > 30 for line in too_wide), too_wide  # a word longer than a text column
    flat = " ".join(out.split())
    code, listed, _ = kmc("list", "--json")
    for model in json.loads(listed):
        for prop in model["properties"]:
            assert f"{prop['name']} {prop['kind']} {prop['doc']}" in flat
        for name, preset in model["presets"].items():
            assert f"{name} {' '.join(preset['description'].split())}" in flat


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


BAD_INPUT = [
    (("check", "no-such-model"), "unknown model 'no-such-model'"),
    (("check", "replication", "--preset", "kip-999"), "unknown preset 'kip-999'"),
    (("check", "replication", "--property", "Nope"), "unknown property 'Nope'"),
    (("check", "replication", "--set", "brokers=3"), "unknown config key 'brokers'"),
    (("check", "replication", "--set", "replicas=two"), "bad value for replicas"),
    (("check", "replication", "--set", "replicas=0"), "below the minimum 1"),
    (("check", "replication", "--set", "truncation=sometimes"), "bad value for truncation"),
    (("check", "replication", "--set", "replicas"), "--set expects key=value"),
    (("check", "replication", "--engine", "quantum"), "unknown engine 'quantum'"),
    (("check", "replication", "--no-such-flag"), "No such option"),
    (("check", "replication", "--store", "tape"), "store must be one of states, fingerprints, got 'tape'"),
    (("replay", "/nonexistent/trace.itf.json"), "trace file not found"),
]


@pytest.mark.parametrize(("args", "message"), BAD_INPUT)
def test_bad_input_is_one_line_and_exit_2(kmc, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    code, _, err = kmc(*args, "--out", tmp_path) if args[0] == "check" else kmc(*args)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_spec_file_that_fails_to_import(kmc, tmp_path: Path) -> None:
    spec = _write(tmp_path, "broken.py", "import nonexistent_module_xyz\n")
    code, _, err = kmc("check", "replication", "--spec", spec, "--out", tmp_path)
    assert code == 2
    assert "failed to import (line 1): ModuleNotFoundError" in err
    assert len(err.strip().splitlines()) == 1


def test_spec_file_without_properties(kmc, tmp_path: Path) -> None:
    spec = _write(tmp_path, "empty.py", "X = 1\n")
    code, _, err = kmc("check", "replication", "--spec", spec, "--out", tmp_path)
    assert code == 2 and "defines no properties" in err


def test_property_that_raises(kmc, toy: str, tmp_path: Path) -> None:
    spec = _write(
        tmp_path,
        "raises.py",
        "from kmc.checker import invariant\n\n@invariant\ndef Oops(s):\n    return {}[s.x]\n",
    )
    code, _, err = kmc("check", f"{toy}:CounterGrid", "--spec", spec, "-P", "Oops", "--out", tmp_path)
    assert code == 2
    assert "property Oops raised KeyError: 0 -- in state Grid(x=0, y=0)" in err
    assert len(err.strip().splitlines()) == 1


def test_model_that_raises(kmc, toy: str, tmp_path: Path) -> None:
    code, _, err = kmc("check", f"{toy}:Crashy", "--deadlock", "--out", tmp_path)
    assert code == 2 and "raised KeyError in successors()" in err and "in state 2" in err


def test_nondeterministic_model(kmc, toy: str, tmp_path: Path) -> None:
    code, _, err = kmc("check", f"{toy}:Flaky", "--deadlock", "--out", tmp_path)
    assert code == 2 and "different results in two calls on the same state" in err


def test_malformed_traces(kmc, tmp_path: Path) -> None:
    cases = {
        "notjson.itf.json": "{ this is not json",
        "nometa.itf.json": json.dumps({"states": [{}]}),
        "nostates.itf.json": json.dumps({"#meta": {"model": "replication"}, "states": []}),
        "noaction.itf.json": json.dumps({"#meta": {"model": "replication"}, "states": [{}, {"#meta": {}}]}),
    }
    for name, text in cases.items():
        code, _, err = kmc("replay", _write(tmp_path, name, text))
        assert code == 2, name
        assert "malformed trace" in err, name
        assert len(err.strip().splitlines()) == 1


def test_trace_that_does_not_replay(kmc, toy: str, tmp_path: Path) -> None:
    _, out, _ = kmc("check", f"{toy}:TwoPhaseCommit", "-p", "buggy", "--json", "--out", tmp_path)
    path = Path(json.loads(out)["violations"][0]["trace"])
    doc = json.loads(path.read_text())
    doc["states"][2]["participants"]["#tup"][0] = "committed"
    path.write_text(json.dumps(doc))
    code, _, err = kmc("replay", path)
    assert code == 2
    assert "trace does not replay: step 2" in err
    doc["states"][2]["#meta"]["action"]["name"] = "Teleport"
    path.write_text(json.dumps(doc))
    code, _, err = kmc("replay", path)
    assert code == 2 and "action Teleport(" in err and "is not enabled in state 1" in err


def test_show_prints_only_changed_fields(kmc, toy: str, tmp_path: Path) -> None:
    kmc("check", f"{toy}:TwoPhaseCommit", "-p", "buggy", "--out", tmp_path)
    code, out, _ = kmc("show", tmp_path / "buggy-Consistent.itf.json")
    assert code == 0
    lines = out.splitlines()
    assert lines[1] == "State 0: Init"
    assert "  coordinator = init" in lines
    step_lines = [line for line in lines if line.startswith("  participants[")]
    assert len(step_lines) == 3  # prepare, abort and commit each change one participant
    assert any(line.startswith("  coordinator: init -> committed") for line in lines)


def test_installed_entry_point_runs(tmp_path: Path) -> None:
    """The real `kmc` executable, as a user runs it (also covers a fresh PYTHONHASHSEED)."""
    exe = Path(sys.executable).parent / "kmc"
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    done = subprocess.run(
        [
            str(exe),
            "check",
            "replication",
            "--preset",
            "kip-101",
            "--property",
            "StrongIsr",
            "--json",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["violations"][0]["trace_length"] == 12
    bad = subprocess.run([str(exe), "check", "nope"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_coverage_in_text_json_and_report(kmc, toy: str, tmp_path: Path) -> None:
    """Every action of the model with its counts, the vacuous ones flagged, in all three outputs."""
    model = f"{toy}:TwoPhaseCommit"
    code, out, _ = kmc("check", model, "--coverage", "--no-progress", "--out", tmp_path, "--render", tmp_path / "r")
    assert code == 0
    assert "CoordinatorCommit" in out and "enabled in" in out and "exercised" in out
    report = next((tmp_path / "r").glob("*-report.html")).read_text()
    assert "<h2>coverage</h2>" in report and "CoordinatorAbort" in report
    code, out, _ = kmc("check", model, "--json", "--out", tmp_path)
    doc = json.loads(out)
    assert doc["coverage"]["actions"]["Prepare"][1] > 0 and doc["vacuity"] == []
    spec = _write(
        tmp_path,
        "never.py",
        "from kmc.checker import step\n\n"
        "@step(trigger=lambda s, a, t: a.name == 'Teleport')\ndef NoTeleport(s, a, t):\n    return True\n",
    )
    code, out, _ = kmc(
        "check", model, "--spec", spec, "-P", "NoTeleport", "--json", "--fail-on-vacuity", "--out", tmp_path
    )
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] == "vacuous"
    assert any("NoTeleport was never exercised" in line for line in doc["vacuity"])


def test_a_spec_redefining_a_built_in_property_is_refused(kmc, toy: str, tmp_path: Path) -> None:
    spec = _write(
        tmp_path, "mine.py", "from kmc.checker import invariant\n\n@invariant\ndef Consistent(s):\n    return True\n"
    )
    code, out, err = kmc("check", f"{toy}:TwoPhaseCommit", "--spec", spec, "--out", tmp_path, "--no-progress")
    assert (code, out) == (2, "")
    assert err.strip() == (
        f"kmc: error: spec file {spec} defines the property Consistent again: model two-phase has it; "
        "give each property its own name"
    )


def test_a_spec_defining_one_name_twice_is_refused(kmc, toy: str, tmp_path: Path) -> None:
    body = "from kmc.checker import invariant\n\n"
    body += (
        "@invariant(name='Mine')\ndef a(s):\n    return True\n\n@invariant(name='Mine')\ndef b(s):\n    return True\n"
    )
    spec = _write(tmp_path, "twice.py", body)
    code, _, err = kmc("check", f"{toy}:TwoPhaseCommit", "--spec", spec, "--out", tmp_path, "--no-progress")
    assert code == 2
    assert (
        err.strip() == f"kmc: error: spec file {spec} defines the property Mine twice; give each property its own name"
    )


def test_engines_are_imported_when_used_and_registered_under_their_names() -> None:
    """`kmc` starts without z3 or Hypothesis; each registered engine is the class of that name."""
    code = (
        "import sys, kmc.checker.cli.app\n"
        "heavy = {'z3', 'hypothesis', 'kmc.checker.engines.symbolic.bmc', 'kmc.checker.engines.hypothesis'}\n"
        "assert not heavy & set(sys.modules)\n"
        "from kmc.checker.engines import ENGINES\n"
        "assert [cls.name for cls in ENGINES.values()] == list(ENGINES) == "
        "['bfs', 'simulate', 'spark', 'hypothesis', 'bmc']\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_outputs_get_the_umask_permissions(kmc, tmp_path: Path) -> None:
    """A trace, chart or report is as readable as any new file, not owner-only like a temporary file."""
    import os

    trace = ROOT / "counterexamples" / "replication" / "truncate-to-hw-StrongIsr.itf.json"
    previous = os.umask(0o022)
    try:
        assert kmc("render", trace, "-o", tmp_path / "chart.dot")[0] == 0
    finally:
        os.umask(previous)
    assert (tmp_path / "chart.dot").stat().st_mode & 0o777 == 0o644


def test_a_reader_that_goes_away_does_not_change_the_exit_code(tmp_path: Path) -> None:
    """`kmc list | head -1`: the command's own exit code, and nothing on stderr, after the pipe closes
    (the output is larger than the pipe's buffer, so later writes meet the closed pipe)."""
    traces = sorted(str(p) for p in (ROOT / "counterexamples").glob("*/*.itf.json"))
    doc = json.loads(Path(traces[-1]).read_text())
    doc["states"] = doc["states"][:-1]  # replays, but no longer shows its violation: exit 1
    (tmp_path / "short.itf.json").write_text(json.dumps(doc))
    kmc_command = Path(sys.executable).parent / "kmc"
    for args, code in ((["list"], 0), (["replay", *traces, str(tmp_path / "short.itf.json")], 1)):
        run = subprocess.Popen([kmc_command, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert run.stdout is not None and run.stderr is not None
        assert run.stdout.readline()
        run.stdout.close()
        assert (run.wait(timeout=120), run.stderr.read()) == (code, b""), args[0]


def test_another_engine_never_replaces_a_shorter_trace(kmc, toy: str, tmp_path: Path) -> None:
    """bfs writes the shortest trace; a simulation of the same model, config and property writes its
    own beside it (the engine in the name) and says so; a bfs run after a longer simulation replaces it."""
    model = f"{toy}:TwoPhaseCommit"
    shortest = tmp_path / "buggy-Consistent.itf.json"
    assert kmc("check", model, "-p", "buggy", "--out", tmp_path, "--no-progress")[0] == 1
    written = shortest.read_text()
    code, out, _ = kmc(
        "check", model, "-p", "buggy", "--engine", "simulate", "--seed", "7", "--out", tmp_path, "--no-progress"
    )
    assert code == 1
    assert shortest.read_text() == written
    assert (tmp_path / "buggy-Consistent.simulate.itf.json").is_file()
    assert "as short or shorter: kept" in out
    assert "buggy-Consistent.simulate.itf.json" in out
    # the other way round: a longer simulation's trace is replaced by bfs's, with a word
    shortest.unlink()
    (tmp_path / "buggy-Consistent.simulate.itf.json").rename(shortest)
    simulated = json.loads(shortest.read_text())
    code, out, _ = kmc("check", model, "-p", "buggy", "--out", tmp_path, "--no-progress")
    assert code == 1
    assert len(simulated["states"]) > len(json.loads(written)["states"])  # seed 7 walks a longer way
    assert "longer trace" in out and "is replaced by this one" in out
    assert shortest.read_text() == written


def test_a_search_that_stopped_early_says_what_it_did_not_reach_not_what_never_happens(kmc, tmp_path: Path) -> None:
    """Stopped at its first violation, bfs has not reached every action: its warnings say 'not taken
    before the search stopped', where a complete search says 'never taken'."""
    args = ("check", "group-kip848", "-p", "no-release-wait", "-P", "NoDoubleClientAssignment", "--json")
    code, out, _ = kmc(*args, "--out", tmp_path, "--no-progress")
    assert code == 1
    doc = json.loads(out)
    assert doc["complete"] is False
    assert doc["vacuity"] == ["action RevokePartitions was not taken before the search stopped"]


def test_help_shows_square_brackets_as_written(kmc) -> None:  # type: ignore[no-untyped-def]
    """The help is rendered as rich markup, where [[check]] would vanish unless escaped."""
    code, out, _ = kmc("ci", "--help")
    assert code == 0 and "A TOML suite of [[check]] entries." in " ".join(out.split())
