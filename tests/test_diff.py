"""`kmc diff`: the shortest step one configuration takes that the other does not, each way, and the
properties whose verdicts differ, on the KIP pairs docs/diff.md shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kmc.checker.diff import Side, same_shape, step_difference
from kmc.checker.traces.itf import action_to_json, format_action


def _step(model: str, taker: str, other: str, **sets: object) -> tuple[str, int, list[str], bool]:
    """The step difference ``taker`` -> ``other``: its action, the trace's length, the fields whose
    values after that step differ between the two (or, when the other cannot take the action at all,
    the fields the step changes), and whether the other can take it."""
    a, b = Side(model, taker, dict(sets)), Side(model, other, dict(sets))
    found = step_difference(a, b, 200_000)
    assert found.trace is not None
    action = found.trace.actions[-1]
    after = found.trace.states[-1]
    before = found.trace.states[-2]
    theirs = [t for act, t in found.other_steps if act == action]
    compared = theirs[0] if theirs else before  # the other cannot take it: the fields the step changes
    fields = sorted(name for name in after._fields if getattr(after, name) != getattr(compared, name))
    return format_action(action_to_json(action)), len(found.trace), fields, bool(theirs)


def test_kip_101_keeps_the_record_truncating_to_the_hw_drops(kmc, tmp_path: Path) -> None:
    code, out, _ = kmc("diff", "replication", "--preset", "truncate-to-hw", "--preset", "kip-101", "--out", tmp_path)
    assert code == 1
    trace = tmp_path / "diff-truncate-to-hw-a-step.itf.json"
    assert (
        "step difference: --preset truncate-to-hw allows, --preset kip-101 forbids: after 6 steps both can take, "
        f"--preset truncate-to-hw takes a step --preset kip-101 does not -> {trace}\n"
    ) in out
    assert (
        "  step 7, BecomeFollower(replica=0, leader=1, leaderEpoch=1):\n"
        "    field                        before               --preset truncate-to-hw  --preset kip-101\n"
        "   *replicaLog[0]                ({id: 0, epoch: 0})  ()                       ({id: 0, epoch: 0})\n"
        "    replicaState[0].leaderEpoch  0                    1                        1\n"
        "    replicaState[0].leader       0                    1                        1\n"
        "    (* where the two differ)\n"
    ) in out
    assert out.endswith(
        "verdict difference (3 properties):\n"
        "    property     --preset truncate-to-hw  --preset kip-101\n"
        "    WeakIsr      violated (9 states)      violated (12 states)\n"
        "    StrongIsr    violated (10 states)     violated (12 states)\n"
        "    LogMatching  violated (15 states)     holds\n"
        f"  each violation's shortest trace -> {tmp_path}/\n"
    )
    for trace in ("diff-truncate-to-hw-a-step.itf.json", "diff-kip-101-b-step.itf.json"):
        code, replayed, _ = kmc("replay", tmp_path / trace)
        assert code == 0 and replayed.startswith(f"{tmp_path / trace}: replays on replication (8 states)")
    assert kmc("replay", tmp_path / "truncate-to-hw-LogMatching.itf.json")[0] == 0


@pytest.mark.parametrize(
    ("model", "a", "b", "expected"),
    [
        # KIP-996: an election timeout starts a pre-vote (Prospective) instead of an election.
        ("kraft-quorum", "kip-595", "kip-996", ("ElectionTimeout(voter=0)", 2, ["voters"], True)),
        # KIP-966: fencing the leader puts it in the ELR.
        ("kraft-replication", "pre-kip-966", "kip-966", ("FenceBroker(broker=0)", 2, ["controller"], True)),
        # KIP-429: a cooperative consumer rejoins keeping its partitions and claims them.
        ("group", "eager-range", "cooperative-sticky", ("SendJoinGroup(consumer=0)", 17, ["consumers"], True)),
        # KIP-890 part 2: the producer adds a partition by producing to it, not by AddPartitionsToTxn.
        (
            "transactions",
            "kip-890-part-1",
            "kip-890-part-2",
            ("AddPartitionsToTxn(client=0, partition=0)", 6, ["clients", "network"], False),
        ),
    ],
)
def test_the_first_step_a_kip_changes(model: str, a: str, b: str, expected: tuple) -> None:
    assert _step(model, a, b) == expected


def test_the_other_way_round_kip_890_part_2_produces_without_adding_first() -> None:
    assert _step("transactions", "kip-890-part-2", "kip-890-part-1") == (
        "Produce(client=0, partition=0)",
        6,
        ["clients", "network"],
        False,
    )


def test_configurations_that_behave_alike_exit_0(kmc, tmp_path: Path) -> None:
    """The exemption of a lone voter (KAFKA-16144) changes nothing in a quorum of three."""
    code, out, _ = kmc(
        "diff",
        "kraft-quorum",
        "--set",
        "max_epoch=1",
        "--set-a",
        "single_voter_exemption=true",
        "--set-b",
        "single_voter_exemption=false",
        "--json",
        "--out",
        tmp_path,
    )
    assert code == 0
    doc = json.loads(out)
    assert [(d["trace_length"], d["distinct_states"]) for d in doc["step_differences"]] == [(None, 27982)] * 2
    assert doc["verdict_differences"] == []


def test_configurations_of_different_shapes_compare_verdicts_only() -> None:
    from kmc.checker.registry import load_model_class

    cls = load_model_class("replication")
    assert same_shape(cls.build("kip-320", {"replicas": 2}), cls.build("kip-320", {"replicas": 3})) == (
        "their initial states differ (the configurations differ in replicas), so no state of one is a state of the "
        "other: only the verdicts are compared"
    )


def test_the_same_configuration_twice_is_bad_input(kmc) -> None:
    code, _, err = kmc("diff", "replication", "--preset", "kip-320", "--set-a", "replicas=2")
    assert (code, err) == (
        2,
        "kmc: error: --preset kip-320 --set replicas=2 and --preset kip-320 are the same configuration of "
        "replication: give two presets (--preset A --preset B) or settings for each side (--set-a k=v, --set-b k=v)\n",
    )
    code, _, err = kmc("diff", "replication", "-p", "kip-320", "-p", "kip-279", "-p", "kip-101")
    assert (code, err) == (2, "kmc: error: kmc diff compares two configurations: give --preset at most twice\n")


def test_one_configuration_is_bad_input_and_a_cut_short_search_is_no_proof(kmc, tmp_path: Path) -> None:
    code, _, err = kmc("diff", "replication", "--preset", "kip-101")
    assert (code, err) == (
        2,
        "kmc: error: kmc diff compares two configurations, and one --preset (kip-101) names one: give a second "
        "--preset, or settings for one side (--set-a k=v or --set-b k=v)\n",
    )
    code, out, _ = kmc(
        "diff",
        "replication",
        "-p",
        "truncate-to-hw",
        "-p",
        "kip-279",
        "--max-states",
        "1000",
        "--only",
        "verdicts",
        "--out",
        tmp_path,
    )
    assert code == 0 and out.endswith(
        "verdict difference: none found, but --preset truncate-to-hw's search stopped at max states 1000 and "
        "--preset kip-279's search stopped at max states 1000: not a proof that they agree\n"
    )


def test_only_steps_in_json_says_the_verdicts_were_not_computed(kmc, tmp_path: Path) -> None:
    code, out, err = kmc(
        "diff", "replication", "-p", "truncate-to-hw", "-p", "kip-101", "--only", "steps", "--json", "--out", tmp_path
    )
    assert (code, err) == (1, "")
    doc = json.loads(out)
    assert [d["trace_length"] for d in doc["step_differences"]] == [8, 8]
    assert (doc["verdict_differences"], doc["verdict_searches"]) == (None, None)
