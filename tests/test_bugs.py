"""`kmc bugs`: every bug a model declares is backed by the suite (its traces replay there, its fixed
preset is checked there to hold), every JIRA a preset names is in the catalogue, and docs/bugs.md is
the command's output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kmc.checker.cli.bugs import catalogue, markdown
from kmc.checker.model import release_tuple
from kmc.checker.properties import model_properties
from kmc.checker.registry import registered_models

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "counterexamples" / "suite.toml"
PRESET_JIRA = re.compile(r"kafka-([0-9]{3,})")


@pytest.fixture(scope="module")
def rows():
    return catalogue(registered_models(), SUITE)


def test_every_bug_is_backed_by_the_suite(rows) -> None:
    """Each violated property has a suite entry with the trace and its length, and each fixed preset
    an exhaustive suite entry that holds every property the bug violates: `kmc ci` checks them all."""
    unbacked = [
        f"{row.model} {row.bug.key} {row.bug.preset}: "
        + ", ".join(
            [f"{r.property} has no replayed trace" for r in row.reproductions if r.trace is None]
            + (
                [f"fixed preset {row.bug.fixed_preset} not checked"]
                if row.bug.fixed_preset and not row.fixed_checked
                else []
            )
        )
        for row in rows
        if not row.checked
    ]
    assert unbacked == []
    for row in rows:
        for r in row.reproductions:
            assert (SUITE.parent / r.trace).is_file(), r.trace


def test_every_bug_names_presets_and_properties_of_its_model() -> None:
    for name, cls in registered_models().items():
        properties = {p.name for p in model_properties(cls)}
        for bug in cls.bugs:
            cls.make_config(bug.preset, bug.settings)
            if bug.fixed_preset is not None:
                cls.make_config(bug.fixed_preset, bug.fixed_settings)
            assert set(bug.violates) <= properties, (name, bug.key)
            for release in (bug.since, bug.fixed_in):
                if release is not None:
                    release_tuple(release)
            if bug.since is not None and bug.fixed_in is not None:
                assert release_tuple(bug.since) < release_tuple(bug.fixed_in), (name, bug.key)


def test_every_preset_named_after_a_jira_is_in_the_catalogue() -> None:
    """A preset named after a JIRA (pre-kafka-NNNN, kafka-NNNN, static-kafka-NNNN) claims it: the
    model's catalogue must list that JIRA."""
    missing = []
    for name, cls in registered_models().items():
        listed = {key for bug in cls.bugs for key in (bug.key, *bug.also)}
        for preset_name in cls.presets:
            missing += [
                f"{name} {preset_name}: KAFKA-{number}"
                for number in PRESET_JIRA.findall(preset_name)
                if f"KAFKA-{number}" not in listed
            ]
    assert missing == []


def test_docs_bugs_md_is_the_command_output(kmc) -> None:
    code, out, _ = kmc("bugs", "--markdown", "--suite", SUITE)
    assert code == 0
    assert (ROOT / "docs" / "bugs.md").read_text() == out, "regenerate: kmc bugs --markdown > docs/bugs.md"


def test_filters_by_model_release_and_component(kmc) -> None:
    code, out, _ = kmc("bugs", "--model", "replication", "--release", "2.0.0", "--json", "--suite", SUITE)
    assert code == 0
    assert [row["key"] for row in json.loads(out)] == ["KAFKA-6880"]
    code, out, _ = kmc("bugs", "--model", "replication", "--release", "0.11", "--json", "--suite", SUITE)
    assert [row["key"] for row in json.loads(out)] == ["KAFKA-6361"]
    code, out, _ = kmc("bugs", "--component", "controller", "--json", "--suite", SUITE)
    rows = json.loads(out)
    assert {(row["model"], row["key"]) for row in rows} == {
        ("zk-controller", "KAFKA-6082"),
        ("zk-controller", "KIP-380"),
        ("zk-controller", "KAFKA-1120"),
        ("kraft-replication", "KAFKA-15584"),
        ("kraft-replication", "KAFKA-14154"),
        ("kraft-replication", "finding"),
    }


def test_the_text_names_the_trace_and_the_fixed_state_count(kmc) -> None:
    code, out, _ = kmc("bugs", "--model", "replication", "--suite", SUITE)
    assert code == 0
    assert (
        "KAFKA-6880 (KIP-320)  replication · replication · 2.0.0 until 2.1.0, which fixed it\n"
        "    A zombie leader's answer lets a follower take its truncation point from a leader of another epoch; with "
        "three replicas a committed record is lost (fixed by KIP-320's fencing).\n"
        "    --preset kip-279 --set replicas=3 violates StrongIsr (shortest trace: 11 states)  "
        f"{SUITE.parent / 'replication/kip-279-c8f8ece6-StrongIsr.itf.json'}\n"
        "    fixed: --preset kip-320 --set replicas=3 holds (737,794 states)\n"
    ) in out
    code, one, _ = kmc("bugs", "kip-320", "--model", "replication", "--suite", SUITE)
    assert code == 0 and [line for line in one.splitlines() if line and not line.startswith(" ")] == [
        "KAFKA-6880 (KIP-320)  replication · replication · 2.0.0 until 2.1.0, which fixed it",
        "KIP-320  replication · replication · no release: fixed before 2.1.0 shipped",
        "2 bugs in 1 model (1 JIRA, 1 KIP, 0 findings of the models); 2 shortest traces; 0 driven on real brokers",
    ]
    assert out.rstrip().endswith(
        "4 bugs in 1 model (3 JIRAs, 1 KIP, 0 findings of the models); 5 shortest traces; 0 driven on real brokers"
    )


def test_a_claim_the_suite_does_not_back_is_reported_as_such(tmp_path: Path) -> None:
    """A suite without the fixed preset's exhaustive check, and without one trace, leaves the row
    unchecked and says so in the page."""
    text = SUITE.read_text()
    kept = [t for t in text.split("[[check]]") if 'preset = "kip-279"' not in t or "replicas = 3" in t]
    suite = tmp_path / "suite.toml"
    suite.write_text("[[check]]".join(kept))
    rows = catalogue({"replication": registered_models()["replication"]}, suite)
    by_key = {row.bug.key: row for row in rows}
    assert not by_key["KAFKA-6361"].checked and by_key["KAFKA-6361"].fixed_states is None
    assert "`--preset kip-279` holds (not in the suite)" in markdown(rows)
    assert by_key["KAFKA-6880"].checked


def test_drives_on_real_brokers_are_listed_by_release(rows) -> None:
    driven = {(row.model, row.bug.preset): row for row in rows if row.drives}
    assert driven, "no bug lists a drive on a real broker"
    for row in driven.values():
        versions = [release_tuple(d.kafka_version) for d in row.drives]
        assert versions == sorted(versions)


def test_bad_input_is_one_line_and_exit_2(kmc) -> None:
    code, _, err = kmc("bugs", "--component", "nowhere", "--suite", SUITE)
    assert code == 2 and err.startswith("kmc: error: unknown component 'nowhere'; components: ")
    code, _, err = kmc("bugs", "--release", "4.x", "--suite", SUITE)
    assert (code, err) == (2, "kmc: error: --release: not a release: '4.x' (write it as 3.3.0)\n")
    code, _, err = kmc("bugs", "KAFKA-1", "--suite", SUITE)
    assert (code, err) == (
        2,
        "kmc: error: no bug KAFKA-1 in the catalogue (kmc bugs lists them; a finding of the models has no key)\n",
    )
    code, _, err = kmc("bugs", "--suite", "nowhere.toml")
    assert (code, err) == (2, "kmc: error: suite file not found: nowhere.toml (give one with --suite, or --no-suite)\n")


def test_release_numbers_compare_as_releases() -> None:
    assert release_tuple("3.3") == release_tuple("3.3.0") < release_tuple("3.10.0")
    with pytest.raises(ValueError):
        release_tuple("3.3.0-rc1")
