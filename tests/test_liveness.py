"""Liveness under weak and strong fairness, with exact lasso shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TESTS
from kmc.checker import Check
from kmc.checker.result import Status

MUTEX = f"{TESTS / 'toy_models.py'}:LockMutex"
RING = f"{TESTS / 'toy_models.py'}:Ring"


def fairness_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "fair.py"
    path.write_text("from kmc.checker import WF, SF\n\nFAIRNESS = [" + ", ".join(lines) + "]\n")
    return path


def run(tmp_path: Path, props: list[str], *fairness: str, model: str = MUTEX, **overrides: int):
    specs = [fairness_file(tmp_path, *fairness)] if fairness else []
    return Check(model, overrides=overrides, property_names=props, spec_files=specs).run()


def names(trace) -> list[str]:  # type: ignore[no-untyped-def]
    return [a.name + str(a.args.get("proc", "")) for a in trace.actions[1:]]


def test_without_fairness_a_behaviour_may_stop_anywhere(tmp_path: Path) -> None:
    result = run(tmp_path, ["SomeoneEnters"])
    [violation] = result.violations
    assert violation.kind == "liveness"
    trace = violation.trace
    assert len(trace) == 1 and trace.loop == 0  # the initial state, stuttering forever


def test_weak_fairness_of_every_step_makes_someone_enter(tmp_path: Path) -> None:
    result = run(tmp_path, ["SomeoneEnters"], 'WF("*", each=True)')
    assert result.status is Status.HOLDS_COMPLETE


def test_weak_fairness_still_lets_a_process_starve(tmp_path: Path) -> None:
    result = run(tmp_path, ["NoStarvation"], 'WF("*", each=True)')
    [violation] = result.violations
    trace = violation.trace
    # process 0 requests; then, forever, process 1 requests, takes the lock and exits (back to state 1)
    assert names(trace) == ["Request0", "Request1", "Enter1"]
    assert trace.loop == 1
    assert trace.states[trace.loop].pc == ("waiting", "idle")
    assert trace.states[-1].pc == ("waiting", "critical")


def test_strong_fairness_of_enter_rules_out_starvation(tmp_path: Path) -> None:
    result = run(tmp_path, ["NoStarvation"], 'WF("*", each=True)', 'SF("Enter", each=True)')
    assert result.status is Status.HOLDS_COMPLETE
    assert result.complete


def test_fairness_of_the_family_is_weaker_than_of_each_member(tmp_path: Path) -> None:
    """SF(Enter) for the family is met by process 1 entering: process 0 can still starve."""
    result = run(tmp_path, ["NoStarvation"], 'WF("*", each=True)', 'SF("Enter")')
    assert [v.property for v in result.violations] == ["NoStarvation"]


def test_lasso_is_written_as_itf_with_loop_and_replays(kmc, tmp_path: Path) -> None:
    fair = fairness_file(tmp_path, 'WF("*", each=True)')
    code, out, _ = kmc("check", MUTEX, "-P", "NoStarvation", "--spec", fair, "--json", "--out", tmp_path)
    assert code == 1
    data = json.loads(out)
    [violation] = data["violations"]
    assert violation["kind"] == "liveness" and violation["trace_length"] == 4
    doc = json.loads(Path(violation["trace"]).read_text())
    assert doc["loop"] == 1
    code, out, _ = kmc("replay", violation["trace"])
    assert code == 0 and "loop back to state 1" in out
    assert kmc("render", violation["trace"], "-o", tmp_path / "lasso.dot")[0] == 0
    assert "loop back to step 1" in (tmp_path / "lasso.dot").read_text()


def test_trivially_true_and_bounded_verdicts_are_flagged(tmp_path: Path) -> None:
    spec = tmp_path / "triv.py"
    spec.write_text(
        "from kmc.checker import eventually, leads_to, WF\n\nFAIRNESS = [WF('*', each=True)]\n\n"
        "@eventually\ndef Started(s):\n    return True\n\n"
        "@leads_to(lambda s: s.lock == 7)\ndef Never(s):\n    return False\n"
    )
    result = Check(MUTEX, property_names=["Started", "Never"], spec_files=[spec]).run()
    assert result.status is Status.HOLDS_COMPLETE
    assert any("Started is trivially true" in w for w in result.warnings)
    assert any("Never is trivially true" in w for w in result.warnings)

    bounded = Check(MUTEX, property_names=["SomeoneEnters"], spec_files=[spec],
                    settings={"max_states": 4}).run()  # fmt: skip
    assert not bounded.complete
    assert any("a bound cut the graph" in w for w in bounded.warnings)


def test_other_engines_say_they_skip_liveness(tmp_path: Path) -> None:
    result = Check(MUTEX, property_names=["SomeoneEnters"], engine_name="simulate").run()
    assert any("checked by the bfs engine only" in w for w in result.warnings)


@pytest.mark.parametrize("processes", [2, 3, 4])
def test_starvation_lasso_with_more_processes(tmp_path: Path, processes: int) -> None:
    """Process 0 waits forever; weak fairness forces every other idle process to request, and at
    least one of them keeps taking the lock."""
    result = run(tmp_path, ["NoStarvation"], 'WF("*", each=True)', processes=processes)
    trace = result.violations[0].trace
    taken = names(trace)
    assert taken[0] == "Request0"
    assert {f"Request{i}" for i in range(processes)} <= set(taken)
    assert "Enter0" not in taken
    assert all(s.pc[0] == "waiting" for s in trace.states[1:])
    loop = taken[trace.loop :]
    assert any(name.startswith("Enter") for name in loop)  # the step back to the loop start is implied
