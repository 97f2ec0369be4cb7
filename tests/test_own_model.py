"""A first model of one's own, end to end: the examples of docs/writing-a-model.md checked, their
traces replayed and rendered after the folder moved, their suite run from anywhere, and every
mistake a newcomer makes reported in one line with exit code 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT
from kmc.checker import Check
from kmc.checker.cli.suite import load_suite, run_suite

EXAMPLES = ROOT / "docs" / "examples"
ELECTIONS = f"{EXAMPLES / 'elections.py'}:Elections"


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    """A copy of docs/examples (model, spec module, spec file, suite, stored trace) to move about."""
    folder = tmp_path / "project"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kmc: error: "), err
    return lines[0]


def test_the_example_model_holds_with_its_spec_module() -> None:
    result = Check(ELECTIONS).run()
    assert result.properties == ["LeaderInIsr", "ElectedFromIsr"]
    assert (result.verdict, result.complete, result.stats.distinct_states, result.stats.depth) == ("holds", True, 36, 7)


def test_the_example_spec_file_adds_its_properties() -> None:
    result = Check(ELECTIONS, spec_files=[EXAMPLES / "my_props.py"]).run()
    assert result.properties == ["LeaderInIsr", "IsrWithinReplicas", "ElectedFromIsr", "LeaderEpochNeverDecreases"]
    assert result.verdict == "holds" and result.stats.distinct_states == 36


def test_an_unclean_election_violates_elected_from_isr() -> None:
    result = Check(ELECTIONS, preset="unclean").run()
    [violation] = result.violations
    assert violation.property == "ElectedFromIsr" and violation.trace_length == 4
    assert [a.name for a in violation.trace.actions[1:]] == ["ShrinkIsr", "ShrinkIsr", "UncleanElectLeader"]


def test_kmc_list_shows_the_spec_modules_properties(kmc) -> None:
    code, out, err = kmc("list", ELECTIONS, "--json")
    assert code == 0, err
    [entry] = json.loads(out)
    assert [p["name"] for p in entry["properties"]] == ["LeaderInIsr", "ElectedFromIsr"]


def test_a_trace_names_its_model_relative_to_itself_and_replays_after_the_folder_moves(
    kmc, examples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(examples)
    code, _out, err = kmc("check", "elections.py:Elections", "-p", "unclean", "--out", "out/traces", "--no-trace")
    assert code == 1, err
    trace = examples / "out" / "traces" / "unclean-ElectedFromIsr.itf.json"
    assert json.loads(trace.read_text())["#meta"]["model_ref"] == "../../elections.py:Elections"
    moved = tmp_path / "elsewhere" / "checkout"
    moved.parent.mkdir()
    shutil.move(examples, moved)
    monkeypatch.chdir(tmp_path)
    moved_trace = moved / "out" / "traces" / trace.name
    code, out, err = kmc("replay", moved_trace)
    assert (code, out.strip()) == (0, f"{moved_trace}: replays on elections (4 states), ElectedFromIsr violated"), err
    code, out, err = kmc("render", moved_trace, "-o", tmp_path / "unclean.svg")
    assert code == 0, err
    assert (tmp_path / "unclean.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
    code, out, err = kmc("show", moved_trace)
    assert code == 0 and "State 3: UncleanElectLeader(leader=1)" in out, err


def test_the_checked_in_trace_stores_a_relative_model_ref() -> None:
    meta = json.loads((EXAMPLES / "traces" / "unclean-ElectedFromIsr.itf.json").read_text())["#meta"]
    assert meta["model_ref"] == "../elections.py:Elections"
    assert (meta["model"], meta["preset"], meta["property"]) == ("elections", "unclean", "ElectedFromIsr")


def test_the_example_suite_passes_from_any_directory_after_the_folder_moves(
    kmc, examples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    moved = tmp_path / "ci-checkout"
    shutil.move(examples, moved)
    monkeypatch.chdir(tmp_path)
    code, out, err = kmc("ci", moved / "suite.toml", "--out", tmp_path / "ci-out")
    assert code == 0, out + err
    assert out.splitlines()[-1] == "2 passed, 0 failed"
    assert "holds: 36 distinct states, depth 7, every action taken and property exercised" in out
    written = tmp_path / "ci-out" / "elections" / "unclean-ElectedFromIsr.itf.json"
    ref = json.loads(written.read_text())["#meta"]["model_ref"]
    assert (written.parent / ref.rpartition(":")[0]).resolve() == (moved / "elections.py").resolve()
    assert kmc("replay", written)[0] == 0


def test_an_old_trace_with_an_absolute_model_ref_still_replays(kmc, examples: Path, tmp_path: Path) -> None:
    doc = json.loads((examples / "traces" / "unclean-ElectedFromIsr.itf.json").read_text())
    doc["#meta"]["model_ref"] = f"{examples / 'elections.py'}:Elections"
    old = tmp_path / "old.itf.json"
    old.write_text(json.dumps(doc))
    assert kmc("replay", old)[0] == 0


def test_a_trace_whose_model_file_stayed_behind_says_which_file(kmc, examples: Path, tmp_path: Path) -> None:
    trace = tmp_path / "alone.itf.json"
    shutil.copy(examples / "traces" / "unclean-ElectedFromIsr.itf.json", trace)
    code, _out, err = kmc("replay", trace)
    assert code == 2
    assert _one_error_line(err) == (
        f"kmc: error: model file not found: {(tmp_path.parent / 'elections.py').resolve()} "
        "(named by the trace's '#meta'.model_ref, relative to the trace's folder; "
        "for a trace copied alone, give its model with --model file.py:Class)"
    )


def test_a_trace_copied_alone_replays_shows_and_renders_with_its_model_given(
    kmc, examples: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "alone.itf.json"
    shutil.copy(examples / "traces" / "unclean-ElectedFromIsr.itf.json", trace)
    model = f"{examples / 'elections.py'}:Elections"
    code, out, _ = kmc("replay", trace, "--model", model)
    assert (code, out) == (0, f"{trace}: replays on elections (4 states), ElectedFromIsr violated\n")
    code, out, _ = kmc("show", trace, "--model", model)
    assert code == 0 and out.startswith("elections --preset unclean: ElectedFromIsr violated\nState 0: Init\n")
    assert "not replayed" not in out
    code, out, _ = kmc("render", trace, "--model", model, "-o", tmp_path / "alone.svg")
    assert code == 0 and (tmp_path / "alone.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


def test_a_model_given_for_a_trace_must_be_the_trace_s_model(kmc, examples: Path) -> None:
    code, _out, err = kmc("replay", examples / "traces" / "unclean-ElectedFromIsr.itf.json", "--model", "replication")
    assert (code, _one_error_line(err)) == (
        2,
        "kmc: error: the trace is of model elections, but --model replication is model replication",
    )


def test_a_suite_names_model_and_spec_relative_to_itself(examples: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (examples / "sub").mkdir()
    suite = examples / "sub" / "suite.toml"
    suite.write_text(
        '[[check]]\nname = "elections"\nmodel = "../elections.py:Elections"\n'
        'spec = ["../my_props.py"]\nexpect = "holds-complete"\n'
        "expect_distinct_states = 36\n"
    )
    monkeypatch.chdir(examples.parent)
    [entry] = load_suite(suite)
    assert entry.name == "elections"
    [outcome] = run_suite([entry])
    assert outcome.ok, outcome.message
    assert outcome.result is not None and len(outcome.result.properties) == 4


def test_module_class_in_a_suite_is_found_on_sys_path_only(
    kmc, examples: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``module:Class`` is imported from sys.path (PYTHONPATH), never from the suite's folder: the
    error says how to make it found."""
    suite = examples / "modules.toml"
    suite.write_text(
        '[[check]]\nname = "elections"\nmodel = "elections_by_module:Elections"\nexpect = "holds-complete"\n'
    )
    (examples / "elections_by_module.py").write_text((examples / "elections.py").read_text())
    monkeypatch.chdir(tmp_path)
    code, _out, err = kmc("ci", suite)
    assert code == 2
    assert _one_error_line(err) == (
        f"kmc: error: {suite} check #1: cannot import model module 'elections_by_module': it is not on sys.path; "
        "install its package, add its folder to PYTHONPATH, or name the file: elections_by_module.py:Class"
    )
    monkeypatch.syspath_prepend(str(examples))  # as PYTHONPATH does
    code, out, err = kmc("ci", suite)
    assert code == 0, out + err
    assert "holds: 36 distinct states" in out


def test_a_check_with_no_properties_is_an_error(kmc, examples: Path) -> None:
    source = (examples / "elections.py").read_text().replace('spec_modules = ("elections_specs",)', "")
    (examples / "bare.py").write_text(source)
    code, out, err = kmc("check", f"{examples / 'bare.py'}:Elections", "--out", examples / "out")
    assert code == 2 and "holds" not in out
    assert _one_error_line(err).startswith(
        "kmc: error: model elections has no properties to check: give --spec FILE (in a suite: spec = [...]), "
        "or name a module of @invariant/@step functions in the model's spec_modules"
    )
    suite = examples / "bare.toml"
    suite.write_text('[[check]]\nname = "elections"\nmodel = "bare.py:Elections"\nexpect = "holds"\n')
    code, out, err = kmc("ci", suite)
    assert code == 2 and "has no properties to check" in _one_error_line(err)
    code, out, err = kmc("check", f"{examples / 'bare.py'}:Elections", "--deadlock", "--out", examples / "out")
    assert code == 0 and "verdict: holds (complete" in out, err  # a deadlock check alone is a check


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (
            ("isr=frozenset(range(self.config.replicas))", "isr=set(range(self.config.replicas))"),
            "model elections: an initial state: Partition.isr is a set, which is mutable: use a frozenset",
        ),
        (
            ("s._replace(isr=s.isr - {r})", "s._replace(isr=list(s.isr - {r}))"),
            "model elections: a successor of an initial state: Partition.isr is a list, which is mutable: use a tuple",
        ),
        (
            ('spec_modules = ("elections_specs",)', 'spec_modules = ("election_specs",)'),
            "model elections names spec module 'election_specs' in spec_modules, but there is no election_specs.py "
            "next to {folder}/elections.py or on sys.path (PYTHONPATH)",
        ),
        (
            ('spec_modules = ("elections_specs",)', 'spec_modules = "elections_specs"'),
            "model elections: spec_modules must be a tuple of module names, e.g. spec_modules = ('elections_specs',)",
        ),
        (("from typing import NamedTuple", "from typing import NamedTuples"), "failed to import (line 4): ImportError"),
        (
            ('spec_modules = ("elections_specs",)', 'spec_modules = ("elections_specs", "json")'),
            "model elections: spec module json (",  # the standard library's: it has no property
        ),
    ],
    ids=[
        "set-state",
        "list-successor",
        "spec-module-missing",
        "spec-modules-a-string",
        "model-fails-to-import",
        "spec-module-without-properties",
    ],
)
def test_mistakes_in_a_model_are_one_line(kmc, examples: Path, edit: tuple[str, str], says: str) -> None:
    model = examples / "elections.py"
    source = model.read_text()
    assert edit[0] in source
    model.write_text(source.replace(edit[0], edit[1]))
    code, out, err = kmc("check", f"{model}:Elections", "--out", examples / "out")
    assert code == 2 and "holds" not in out
    assert says.format(folder=examples) in _one_error_line(err)


def test_missing_files_and_attributes_are_named(kmc, examples: Path) -> None:
    code, _out, err = kmc("check", f"{examples / 'nope.py'}:Elections")
    assert (code, _one_error_line(err)) == (2, f"kmc: error: model file not found: {examples / 'nope.py'}")
    code, _out, err = kmc("check", f"{examples / 'elections.py'}:Election")
    assert (code, _one_error_line(err)) == (
        2,
        f"kmc: error: {examples / 'elections.py'} has no attribute 'Election': its Model classes are Elections",
    )
    code, _out, err = kmc("check", ELECTIONS, "--spec", examples / "nope.py")
    assert (code, _one_error_line(err)) == (2, f"kmc: error: spec file not found: {examples / 'nope.py'}")


def test_debug_keeps_exit_code_2_for_bad_input(kmc, examples: Path) -> None:
    code, _out, err = kmc("check", f"{examples / 'nope.py'}:Elections", "--debug")
    assert code == 2
    assert err.startswith("Traceback (most recent call last):")
    assert err.strip().splitlines()[-1] == f"kmc: error: model file not found: {examples / 'nope.py'}"
    code, _out, err = kmc("check", ELECTIONS, "--no-such-option", "--debug")
    assert code == 2 and err.strip().splitlines()[-1].startswith("kmc: error: No such option")


def test_a_trace_keeps_its_property_docstring_and_spec_file_when_the_folder_moves(kmc, examples: Path) -> None:
    """A report explains a property of one's own spec file after the project moved: the trace carries
    the docstring and names the spec file relative to itself."""
    (examples / "first.py").write_text(
        "from kmc.checker import step\n\n\n@step\ndef NoSecondElection(s, action, t) -> bool:\n"
        '    """A partition keeps its first leader epoch."""\n    return t.leaderEpoch == s.leaderEpoch\n'
    )
    model = f"{examples / 'elections.py'}:Elections"
    code, out, err = kmc(
        "check", model, "--spec", examples / "first.py", "-P", "NoSecondElection", "--out", examples / "traces"
    )
    assert code == 1, out + err
    [trace] = (examples / "traces").glob("*NoSecondElection*.itf.json")
    meta = json.loads(trace.read_text())["#meta"]
    assert meta["property_doc"] == "A partition keeps its first leader epoch."
    assert meta["spec_files"] == ["../first.py"]
    moved = examples.parent / "moved"
    examples.rename(moved)
    html = moved / "report.html"
    code, out, err = kmc("render", moved / "traces" / trace.name, "-o", html)
    assert code == 0, out + err
    assert "A partition keeps its first leader epoch." in html.read_text()
