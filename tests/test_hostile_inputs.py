"""The hostile-input battery: bad and edge inputs across every command, as a table.

Each case (hostile_cases.py) runs the CLI in-process (``kmc.checker.cli.app.main``) and must end in
exit 2 with exactly one ``kmc: error:`` line on stderr -- or, where the input is valid and the
verdict a violation or a failed CI entry, exit 1 -- never a traceback and never a "holds".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import default_sigint
from hostile_cases import CASES as COMMAND_CASES
from hostile_cases import HOLDS_VERDICT, TPC, Case
from hostile_cases_cluster import CLUSTER_CASES
from kmc.checker.cli.app import main

CASES = [*COMMAND_CASES, *CLUSTER_CASES]


@pytest.fixture(scope="module")
def valid_trace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("trace")
    assert main(["check", TPC, "-p", "buggy", "--out", str(out), "--no-progress", "--no-trace"]) == 1
    path = out / "buggy-Consistent.itf.json"
    return path, json.loads(path.read_text())


def _materialise(c: Case, tmp: Path, trace: tuple[Path, dict]) -> list[str]:
    for rel, content in c.files.items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if callable(content):
            content = json.dumps(content(json.loads(json.dumps(trace[1]))))
        elif isinstance(content, str):
            content = content.replace("{tmp}", str(tmp))
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    if "{tmp}/t.itf.json" in " ".join(c.argv) + str(c.files.get("suite.toml", "")) and "t.itf.json" not in c.files:
        (tmp / "t.itf.json").write_text(json.dumps(trace[1]))
    return [a.replace("{tmp}", str(tmp)).replace("{trace}", str(trace[0])) for a in c.argv]


def test_the_battery_is_large_and_distinct() -> None:
    assert len(CASES) >= 200
    assert len({c.name for c in CASES}) == len(CASES)
    assert len({(c.argv, tuple(sorted(map(str, c.files.items())))) for c in CASES}) == len(CASES)


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_hostile_input(c: Case, tmp_path: Path, valid_trace, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    argv = _materialise(c, tmp_path, valid_trace)
    if c.argv[:1] == ("check",) and "--out" not in argv:
        argv += ["--out", str(tmp_path / "out")]
    if c.argv[:1] == ("check",):
        argv += ["--no-progress"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == c.code, (out, err)
    assert "Traceback" not in out + err
    assert not HOLDS_VERDICT.search(out + err), out
    if c.code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kmc: error:"), err
        assert c.says.replace("{tmp}", str(tmp_path)) in lines[0]
        if "--json" in argv:
            assert json.loads(out)["verdict"] == "error"
    else:
        assert c.says in out + err


@pytest.mark.parametrize(("sig", "code", "why"), [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_prints_partial_statistics_and_exits_128_plus_it(
    tmp_path: Path, sig: signal.Signals, code: int, why: str
) -> None:
    """A separate process, so the signal reaches a real search: once its progress line shows it is
    exploring, Ctrl-C (or SIGTERM, as a service manager or `kill` sends); it prints the partial counts
    and "interrupted" and exits 128 + the signal's number."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # 9,985,570 states: a minute or more, so the first progress line (after 1 s) comes well before the end
    argv = [
        sys.executable,
        "-m",
        "kmc.checker.cli",
        "check",
        "replication",
        "--preset",
        "kip-320",
        "--set",
        "replicas=3",
        "--set",
        "max_leader_epoch=3",
        "--progress-every",
        "1",
        "--out",
        str(tmp_path),
    ]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=default_sigint
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the plain progress line, printed after 1 s of search
    assert "distinct" in first, first
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, (out, err)
    assert f"kmc: interrupted ({why})" in err and f"verdict: interrupted ({why})" in out
    assert "distinct states" in out and not HOLDS_VERDICT.search(out)
    assert "Traceback" not in out + err


@pytest.mark.parametrize(("sig", "code", "why"), [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_ends_conform_with_kafkas_jvm_inside(sig: signal.Signals, code: int, why: str) -> None:
    """The JVM that runs Kafka's classes inside kmc leaves SIGINT and SIGTERM to kmc (-Xrs): a signal
    mid-table ends `kmc conform` with "interrupted", not with the JVM gone from under it."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    argv = [sys.executable, "-m", "kmc.checker.cli", "conform", "assignors", "--progress-every", "1"]  # 30 s or more
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=default_sigint
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the first progress line: Kafka's assignors are being called
    assert "distinct" in first, first
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, (out, err)
    assert f"kmc: interrupted ({why})" in err
    assert "JVMNotRunning" not in err and "internal error" not in err and "Traceback" not in out + err


def test_an_interrupt_lost_in_a_callback_is_delivered_again() -> None:
    """SIGTERM whose exception lands in a garbage-collector callback (Python ignores exceptions there,
    and Hypothesis registers one) still reaches the command: the interrupts module raises it again.
    The callback sends the signal itself, so the first delivery is always the one lost."""
    script = (
        "import gc, os, signal, sys, time\n"
        "from kmc.checker import interrupts\n"
        "interrupts.install()\n"
        "sent = []\n"
        "def callback(phase, info):\n"
        "    if phase == 'start' and not sent:\n"
        "        sent.append(1)\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(0.05)  # the handler runs here, inside the callback: its exception is ignored\n"
        "gc.callbacks.append(callback)\n"
        "try:\n"
        "    for _ in range(300):\n"
        "        gc.collect()\n"
        "        time.sleep(0.01)\n"
        "except KeyboardInterrupt:\n"
        "    print('reached the command:', interrupts.reason())\n"
        "    sys.exit(interrupts.exit_code())\n"
        "print('never interrupted')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "reached the command: SIGTERM", (done.stdout, done.stderr)
    assert done.returncode == 143


@pytest.mark.parametrize(("engine", "extra"), [("hypothesis", "--examples=100000"), ("bmc", "--depth=40")])
def test_sigterm_ends_every_engine_with_its_partial_statistics(engine: str, extra: str, tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "kmc.checker.cli", "check", "replication", "--preset", "kip-320", "--set"]
    argv += ["replicas=3", "--engine", engine, extra, "--no-progress", "--out", str(tmp_path)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(8)  # well into the search (a minute or more uninterrupted)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 143, (out, err)
    assert "kmc: interrupted (SIGTERM)" in err and "verdict: interrupted (SIGTERM)" in out
    assert "Traceback" not in out + err


LIBRARY_THAT_SWALLOWS_SIGTERM = '''
import os, signal, time
from kmc.checker import Action, Model, invariant


@invariant
def Anything(s) -> bool:
    return True


class Swallows(Model):
    """A step that calls into a library which, as confluent-kafka's C code does, turns the
    interrupt raised inside it into an error of its own."""

    name = "swallows"

    def init_states(self):
        return [0]

    def successors(self, s):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt:
            raise TypeError("expected configuration property name as type unicode string") from None
        return [(Action("Tick"), s + 1)]
'''


def test_an_error_a_library_raises_while_sigterm_unwinds_is_the_interrupt(tmp_path: Path) -> None:
    model = tmp_path / "swallows.py"
    model.write_text(LIBRARY_THAT_SWALLOWS_SIGTERM)
    argv = [sys.executable, "-m", "kmc.checker.cli", "check", f"{model}:Swallows", "--spec", str(model)]
    argv.append("--no-progress")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 143, (done.stdout, done.stderr)
    assert done.stderr.strip().splitlines()[-1] == "kmc: interrupted (SIGTERM)"
    assert "internal error" not in done.stderr and "TypeError" not in done.stderr
