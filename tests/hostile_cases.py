"""The hostile-input battery's cases: bad and edge inputs across every command, as data.

A case is a command line with placeholders ({tmp}: the case's directory, {toy}: the toy models
file, {trace}: a valid toy trace), the files to create first, the exit code it must end in and the
words its one error line must hold. test_hostile_inputs.py runs them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kmc.checker.engines import ENGINES
from kmc.checker.engines.settings import all_options, takes
from kmc.checker.model import config_keys
from kmc.checker.registry import registered_models

TESTS = Path(__file__).resolve().parent
HOLDS_VERDICT = re.compile(r"verdict: holds|holds \(complete|holds within|\"verdict\": \"holds")
"""A claim that the properties hold: never the answer to bad input."""
TOY = str(TESTS / "toy_models.py")
TPC = f"{TOY}:TwoPhaseCommit"
GRID = f"{TOY}:CounterGrid"


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    code: int = 2
    files: dict[str, Any] = field(default_factory=dict)
    """Relative path -> text, bytes, or a function of the valid trace document giving a document."""
    says: str = ""
    """A fragment the error line (or, for exit 1, the output) must contain."""


def case(name: str, *argv: str, code: int = 2, files: dict[str, Any] | None = None, says: str = "") -> Case:
    return Case(name, argv, code, files or {}, says)


# -- check: config values, generated from every model's config keys --------------------------------
def _config_cases() -> list[Case]:
    out = []
    for model, cls in registered_models().items():
        for key in config_keys(cls.Config):
            kind = key.type_name
            if kind == "int":
                out.append(case(f"{model}-{key.name}-not-int", "check", model, "--set", f"{key.name}=many"))
                if key.min is not None:
                    out.append(
                        case(
                            f"{model}-{key.name}-below-min",
                            "check",
                            model,
                            "--set",
                            f"{key.name}={key.min - 1}",
                            says="below the minimum",
                        )
                    )
            elif kind == "bool":
                out.append(case(f"{model}-{key.name}-not-bool", "check", model, "--set", f"{key.name}=maybe"))
            elif "|" in kind or key.choices:
                out.append(case(f"{model}-{key.name}-bad-choice", "check", model, "--set", f"{key.name}=bogus"))
        out.append(case(f"{model}-unknown-key", "check", model, "--set", "no_such_key=1", says="unknown config key"))
        out.append(case(f"{model}-unknown-preset", "check", model, "--preset", "kip-0", says="unknown preset"))
        out.append(case(f"{model}-unknown-property", "check", model, "-P", "NoSuchProperty", says="unknown property"))
        out.append(case(f"{model}-property-twice", "check", model, "-P", "X", "-P", "X", says="asked for twice"))
        keys = config_keys(cls.Config)
        ints = [key for key in keys if key.type_name == "int"]
        bools = [key for key in keys if key.type_name == "bool"]
        if ints:
            for label, value in (("underscore", "1_0"), ("arabic-digits", "\u0663"), ("float", "2.0")):
                says = "decimal digits"
                out.append(case(f"{model}-int-{label}", "check", model, "--set", f"{ints[0].name}={value}", says=says))
        if bools:
            for value in ("1", "yes", "on"):
                name = f"{model}-bool-{value}"
                out.append(case(name, "check", model, "--set", f"{bools[0].name}={value}", says="true or false"))
    return out


# -- check: a setting given to an engine that does not take it --------------------------------------
_VALUES = {
    "store": "fingerprints",
    "seed": "1",
    "depth": "3",
    "walks": "2",
    "examples": "2",
    "steps": "2",
    "database": "{tmp}/db",
    "master": "local[1]",
    "partitions": "2",
    "checkpoint": "{tmp}/ck",
    "resume": "{tmp}/ck",
    "driver_memory": "1g",
    "memory": "64m",
    "max_depth": "2",
    "max_states": "9",
    "workers": "2",
}
_FLAGS = {"guide": "--no-guide"}


def _engine_cases() -> list[Case]:
    out = []
    for engine_name, engine in ENGINES.items():
        for name, spec in all_options().items():
            if takes(engine, spec):
                continue
            flag = _FLAGS.get(name, spec.cli_flag)
            argv = ["check", TPC, "--engine", engine_name, flag]
            if spec.kind is not bool:
                argv.append(_VALUES[name])
            out.append(case(f"{engine_name}-refuses-{name}", *argv, says=f"the {engine_name} engine does not take"))
    return out


_OWN_MODEL = """from dataclasses import dataclass
from typing import NamedTuple

from kmc.checker import Action, Model, invariant


class S(NamedTuple):
    n: int
    log: object


@dataclass
class D:
    n: int


class O:
    pass


class M(Model):
    name = 'm'

    def init_states(self):
        return [{state}]

    def successors(self, s):
        if isinstance(s, S) and s.n < 3:
            yield Action("Next"), S(s.n + 1, s.log)


@invariant
def Fine(s) -> bool:
    return True
"""

CHECK_CASES = [
    case("no-model", "check"),
    case("unknown-model", "check", "no-such-model", says="unknown model"),
    case("unknown-engine", "check", TPC, "--engine", "quantum", says="unknown engine"),
    case("empty-engine", "check", TPC, "--engine", ""),
    case("unknown-flag", "check", TPC, "--no-such-flag"),
    case("progress-every-zero", "check", TPC, "--progress-every", "0", says="a number of seconds above 0, not 0"),
    case("progress-every-word", "check", TPC, "--progress-every", "often", says="'--progress-every'"),
    case("conform-progress-every-negative", "conform", "assignors", "--progress-every", "-1", says="above 0, not -1"),
    case("set-without-equals", "check", TPC, "--set", "participants", says="--set expects key=value"),
    case("set-empty-key", "check", TPC, "--set", "=3"),
    case("set-duplicate-key", "check", TPC, "--set", "participants=2", "--set", "participants=3", says="given twice"),
    case("set-above-max", "check", TPC, "--set", "participants=9", says="above the maximum"),
    case("set-float", "check", TPC, "--set", "participants=2.5"),
    case("set-huge", "check", TPC, "--set", f"participants={10**30}"),
    case("max-depth-zero", "check", TPC, "--max-depth", "0"),
    case("max-depth-negative", "check", TPC, "--max-depth", "-3"),
    case("max-depth-text", "check", TPC, "--max-depth", "deep"),
    case("max-states-zero", "check", TPC, "--max-states", "0"),
    case("store-tape", "check", TPC, "--store", "tape", says="store must be one of"),
    case("store-empty", "check", TPC, "--store", ""),
    case("seed-negative", "check", TPC, "--engine", "simulate", "--seed", "-1"),
    case("seed-huge", "check", TPC, "--engine", "simulate", "--seed", str(2**70)),
    case("walks-zero", "check", TPC, "--engine", "simulate", "--walks", "0"),
    case("depth-zero", "check", TPC, "--engine", "simulate", "--depth", "0"),
    case("examples-zero", "check", TPC, "--engine", "hypothesis", "--examples", "0"),
    case("steps-zero", "check", TPC, "--engine", "hypothesis", "--steps", "0"),
    case("partitions-zero", "check", TPC, "--engine", "spark", "--partitions", "0"),
    case("partitions-huge", "check", TPC, "--engine", "spark", "--partitions", str(10**9), says="at most 4096"),
    case("master-garbage", "check", TPC, "--engine", "spark", "--spark-master", "garbage", says="bad --spark-master"),
    case("master-no-port", "check", TPC, "--engine", "spark", "--spark-master", "spark://localhost"),
    case("master-bad-port", "check", TPC, "--engine", "spark", "--spark-master", "spark://localhost:99999"),
    case("master-empty-host", "check", TPC, "--engine", "spark", "--spark-master", "spark://:7077"),
    case("master-local-zero", "check", TPC, "--engine", "spark", "--spark-master", "local[0]"),
    case(
        "master-unreachable",
        "check",
        TPC,
        "--engine",
        "spark",
        "--spark-master",
        "spark://127.0.0.1:9",
        says="cannot reach the Spark master",
    ),
    case("driver-memory-bad", "check", TPC, "--engine", "spark", "--driver-memory", "lots", says="--driver-memory"),
    case("resume-missing-dir", "check", TPC, "--engine", "spark", "--resume", "{tmp}/nope", says="--resume"),
    case("max-states-underscore", "check", TPC, "--max-states", "1_0", says="decimal digits"),
    case("max-depth-arabic-digits", "check", TPC, "--max-depth", "\u0663", says="decimal digits"),
    case("walks-float", "check", TPC, "--engine", "simulate", "--walks", "2.5", says="decimal digits"),
    case(
        "database-is-a-file",
        "check",
        TPC,
        "--engine",
        "hypothesis",
        "--database",
        "{tmp}/f",
        files={"f": "x"},
        says="exists and is not a directory",
    ),
    case(
        "checkpoint-is-a-file",
        "check",
        TPC,
        "--checkpoint",
        "{tmp}/f",
        files={"f": "x"},
        says="exists and is not a directory",
    ),
    case(
        "resume-is-a-file", "check", TPC, "--resume", "{tmp}/f", files={"f": "x"}, says="exists and is not a directory"
    ),
    case(
        "resume-no-meta",
        "check",
        TPC,
        "--engine",
        "spark",
        "--resume",
        "{tmp}/ck",
        files={"ck/x": "x"},
        says="meta.json is missing",
    ),
    case(
        "resume-meta-not-json",
        "check",
        TPC,
        "--engine",
        "spark",
        "--resume",
        "{tmp}/ck",
        files={"ck/meta.json": "{nope"},
        says="unreadable",
    ),
    case(
        "resume-meta-forged",
        "check",
        TPC,
        "--engine",
        "spark",
        "--resume",
        "{tmp}/ck",
        files={"ck/meta.json": json.dumps({"format": 5, "job": {}, "progress": {}, "mac": "00"})},
        says="not written by your kmc",
    ),
    case(
        "resume-meta-unsigned",
        "check",
        TPC,
        "--engine",
        "spark",
        "--resume",
        "{tmp}/ck",
        files={"ck/meta.json": json.dumps({"format": 5, "job": {}, "progress": {}})},
        says="authentication",
    ),
    case(
        "checkpoint-and-resume-differ",
        "check",
        TPC,
        "--engine",
        "spark",
        "--checkpoint",
        "{tmp}/a",
        "--resume",
        "{tmp}/b",
        files={"b/x": ""},
        says="different directories",
    ),
    case("coverage-with-bmc", "check", "replication", "--engine", "bmc", "--coverage", says="observes no states"),
    case("vacuity-with-bmc", "check", "replication", "--engine", "bmc", "--fail-on-vacuity"),
    case("bmc-without-encoding", "check", TPC, "--engine", "bmc", says="symbolic"),
    case("symmetry-without-symmetry", "check", f"{TOY}:Ring", "--symmetry", "--deadlock", says="defines no symmetry"),
    # models of one's own
    case("model-file-missing", "check", "{tmp}/nope.py:Model"),
    case("model-class-missing", "check", f"{TOY}:NoSuchClass", says="has no attribute 'NoSuchClass'"),
    case("model-not-a-model", "check", f"{TOY}:TwoPhase", says="is not a kmc Model class"),
    case("model-module-missing", "check", "no_such_module_xyz:Model", says="cannot import model module"),
    case("model-file-syntax-error", "check", "{tmp}/m.py:M", files={"m.py": "def (:\n"}, says="failed to import"),
    case("model-successors-raise", "check", f"{TOY}:Crashy", "--deadlock", says="raised KeyError in successors()"),
    case(
        "model-nondeterministic", "check", f"{TOY}:Flaky", "--deadlock", says="successors() returned different results"
    ),
    case(
        "model-init-raises",
        "check",
        "{tmp}/m.py:M",
        "--deadlock",
        files={
            "m.py": (
                "from kmc.checker import Model\nclass M(Model):\n    name = 'm'\n"
                "    def init_states(self):\n        raise RuntimeError('no')\n"
            )
        },
        says="in init_states()",
    ),
    case("model-no-properties", "check", f"{TOY}:Ring", says="model ring has no properties to check: give --spec"),
    case(
        "model-file-fails-to-import",
        "check",
        "{tmp}/m.py:M",
        files={"m.py": "import no_such_helper_xyz\n"},
        says="model file {tmp}/m.py failed to import (line 1): ModuleNotFoundError",
    ),
    case("model-file-not-found-named", "check", "{tmp}/nope.py:M", says="model file not found: {tmp}/nope.py"),
    *(
        case(
            f"model-state-{name}",
            "check",
            "{tmp}/m.py:M",
            "--spec",
            "{tmp}/m.py",
            files={"m.py": _OWN_MODEL.format(state=state)},
            says=says,
        )
        for name, state, says in [
            ("list", "S(0, [])", "model m: an initial state: S.log is a list, which is mutable: use a tuple"),
            ("set", "S(0, {1})", "model m: an initial state: S.log is a set, which is mutable: use a frozenset"),
            ("dict", "S(0, {})", "model m: an initial state: S.log is a dict, which is mutable"),
            ("nested", "S(0, ((1, [2]),))", "S.log[0][1] is a list"),
            ("dataclass", "D(0)", "D is a dataclass (D) that is not frozen: declare it @dataclass(frozen=True)"),
            ("object", "O()", "O is an object of class O, compared by identity"),
        ]
    ),
    case(
        "model-state-list-later",
        "check",
        "{tmp}/m.py:M",
        "--spec",
        "{tmp}/m.py",
        files={
            "m.py": _OWN_MODEL.format(state="S(0, ())").replace(
                "S(s.n + 1, s.log)", "S(s.n + 1, [1] if s.n == 2 else s.log)"
            )
        },
        says="model m: a state reached from S(n=2, log=()): S.log is a list, which is mutable: use a tuple",
    ),
    case(
        "model-state-object-later-fingerprints",
        "check",
        "{tmp}/m.py:M",
        "--spec",
        "{tmp}/m.py",
        "--store",
        "fingerprints",
        files={
            "m.py": _OWN_MODEL.format(state="S(0, ())").replace(
                "S(s.n + 1, s.log)", "S(s.n + 1, O() if s.n == 2 else s.log)"
            )
        },
        says="model m: a state reached from S(n=2, log=()): S.log is an object of class O, compared by identity",
    ),
    case(
        "spec-module-missing",
        "check",
        "{tmp}/m.py:M",
        files={
            "m.py": _OWN_MODEL.format(state="S(0, ())").replace(
                "name = 'm'", "name = 'm'\n    spec_modules = ('m_specs',)"
            )
        },
        says="model m names spec module 'm_specs' in spec_modules, but there is no m_specs.py next to",
    ),
    case(
        "spec-module-fails",
        "check",
        "{tmp}/m.py:M",
        files={
            "m.py": _OWN_MODEL.format(state="S(0, ())").replace(
                "name = 'm'", "name = 'm'\n    spec_modules = ('m_specs',)"
            ),
            "m_specs.py": "x = 1 / 0\n",
        },
        says="spec file {tmp}/m_specs.py failed to import (line 1): ZeroDivisionError",
    ),
    case(
        "spec-modules-a-string",
        "check",
        "{tmp}/m.py:M",
        files={
            "m.py": _OWN_MODEL.format(state="S(0, ())").replace(
                "name = 'm'", "name = 'm'\n    spec_modules = 'm_specs'"
            )
        },
        says="spec_modules must be a tuple of module names, e.g. spec_modules = ('m_specs',)",
    ),
    # outputs, checked before the search
    case("out-is-a-file", "check", TPC, "--out", "{tmp}/f", files={"f": "x"}, says="not a directory"),
    case("out-under-a-file", "check", TPC, "--out", "{tmp}/f/sub", files={"f": "x"}, says="not a directory"),
    case("junit-is-a-dir", "check", TPC, "--junit", "{tmp}/d", files={"d/x": ""}, says="is a directory"),
    case("junit-not-xml", "check", TPC, "--junit", "{tmp}/report.txt", says="use one of .xml"),
    case("junit-under-a-file", "check", TPC, "--junit", "{tmp}/f/r.xml", files={"f": "x"}),
    case("render-is-a-file", "check", TPC, "--render", "{tmp}/f", files={"f": "x"}, says="not a directory"),
    # --json errors are JSON too
    case("json-unknown-model", "check", "nope", "--json", says="unknown model"),
    case("json-bad-set", "check", TPC, "--set", "participants=x", "--json"),
    # valid inputs whose verdict is a violation: exit 1
    case("violation-buggy-2pc", "check", TPC, "-p", "buggy", code=1, says="VIOLATED Consistent"),
    case("violation-json", "check", TPC, "-p", "buggy", "--json", code=1, says='"verdict": "violated"'),
    case("violation-simulate", "check", TPC, "-p", "buggy", "--engine", "simulate", "--seed", "3", code=1),
    case("violation-deadlock", "check", GRID, "--set", "n=1", "--deadlock", code=1, says="Deadlock"),
    case(
        "vacuity-fails",
        "check",
        TPC,
        "--spec",
        "{tmp}/s.py",
        "-P",
        "Guarded",
        "--fail-on-vacuity",
        code=1,
        files={
            "s.py": "from kmc.checker import invariant\n@invariant(guard=lambda s: s.coordinator == 'x')\n"
            "def Guarded(s):\n    return True\n"
        },
        says="never exercised",
    ),
]

SPEC_BODIES = {
    "returns-str": "return 'yes'",
    "returns-none": "return None",
    "returns-int-one": "return 1",
    "returns-int-zero": "return 0",
    "returns-empty-list": "return []",
    "returns-float": "return 1.0",
    "returns-empty-str": "return ''",
    "returns-tuple": "return (True,)",
    "returns-set": "return {True}",
    "raises-zero-division": "return 1 / 0 == 0",
    "raises-key-error": "return {}['x']",
    "raises-attribute-error": "return s.no_such_field",
    "raises-recursion": "import sys; sys.setrecursionlimit(50); f = lambda n: f(n + 1); return f(0)",
}


def _spec_cases() -> list[Case]:
    out = []
    for name, body in SPEC_BODIES.items():
        text = f"from kmc.checker import invariant\n\n@invariant\ndef Odd(s):\n    {body}\n"
        out.append(
            case(
                f"spec-{name}",
                "check",
                TPC,
                "--spec",
                "{tmp}/s.py",
                "-P",
                "Odd",
                files={"s.py": text},
                says="property Odd",
            )
        )
        step_text = f"from kmc.checker import step\n\n@step\ndef OddStep(s, a, t):\n    {body}\n"
        out.append(
            case(
                f"step-spec-{name}",
                "check",
                TPC,
                "--spec",
                "{tmp}/s.py",
                "-P",
                "OddStep",
                files={"s.py": step_text},
                says="property OddStep",
            )
        )
    out += [
        case("spec-missing", "check", TPC, "--spec", "{tmp}/none.py", says="spec file not found"),
        case("spec-is-dir", "check", TPC, "--spec", "{tmp}/d", files={"d/x": ""}, says="spec file not found"),
        case("spec-syntax-error", "check", TPC, "--spec", "{tmp}/s.py", files={"s.py": "def f(:\n"}),
        case("spec-import-error", "check", TPC, "--spec", "{tmp}/s.py", files={"s.py": "import nope_xyz\n"}),
        case("spec-raises-at-import", "check", TPC, "--spec", "{tmp}/s.py", files={"s.py": "raise ValueError('x')\n"}),
        case("spec-exits-at-import", "check", TPC, "--spec", "{tmp}/s.py", files={"s.py": "raise SystemExit(0)\n"}),
        case(
            "spec-keyboard-at-import", "check", TPC, "--spec", "{tmp}/s.py", files={"s.py": "import sys\nsys.exit(3)\n"}
        ),
        case("spec-empty", "check", TPC, "--spec", "{tmp}/s.py", files={"s.py": ""}, says="defines no properties"),
        case("spec-binary", "check", TPC, "--spec", "{tmp}/s.py", files={"s.py": b"\x00\xff\xfe"}),
        case("spec-not-python", "check", TPC, "--spec", "{tmp}/s.txt", files={"s.txt": "hello"}),
        case(
            "spec-wrong-arity",
            "check",
            TPC,
            "--spec",
            "{tmp}/s.py",
            files={"s.py": ("from kmc.checker import invariant\n@invariant\ndef Two(s, t):\n    return True\n")},
            says="must take",
        ),
        case(
            "spec-step-wrong-arity",
            "check",
            TPC,
            "--spec",
            "{tmp}/s.py",
            files={"s.py": ("from kmc.checker import step\n@step\ndef One(s):\n    return True\n")},
            says="must take",
        ),
        case(
            "spec-guard-returns-str",
            "check",
            TPC,
            "--spec",
            "{tmp}/s.py",
            "-P",
            "G",
            files={
                "s.py": (
                    "from kmc.checker import invariant\n@invariant(guard=lambda s: 'yes')\ndef G(s):\n    return True\n"
                )
            },
            says="G (guard)",
        ),
        case(
            "spec-violated",
            "check",
            TPC,
            "--spec",
            "{tmp}/s.py",
            "-P",
            "NeverCommit",
            code=1,
            files={
                "s.py": (
                    "from kmc.checker import invariant\n@invariant\ndef NeverCommit(s):\n"
                    "    return s.coordinator != 'committed'\n"
                )
            },
            says="VIOLATED NeverCommit",
        ),
    ]
    return out


# -- traces: replay, show, render ----------------------------------------------------------------
def _drop_meta(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "#meta"}


def _drop_meta_ref(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if k != "model_ref"}


def _set_meta(key: str, value: Any):
    return lambda doc: {**doc, "#meta": {**doc["#meta"], key: value}}


def _mangle_state(index: int, var: str, value: Any):
    def mangle(doc: dict) -> dict:
        states = [dict(s) for s in doc["states"]]
        states[index][var] = value
        return {**doc, "states": states}

    return mangle


def _mangle_action(index: int, action: Any):
    def mangle(doc: dict) -> dict:
        states = [dict(s) for s in doc["states"]]
        states[index]["#meta"] = {**states[index]["#meta"], "action": action}
        return {**doc, "states": states}

    return mangle


TRACE_FAULTS: dict[str, Any] = {
    "empty-file": "",
    "not-json": "{ this is not json",
    "json-list": "[1, 2, 3]",
    "json-number": "42",
    "binary": b"\x89PNG\r\n\x1a\n\x00\x00",
    "no-meta": _drop_meta,
    "no-states": lambda doc: {"#meta": doc["#meta"]},
    "empty-states": lambda doc: {**doc, "states": []},
    "states-not-list": lambda doc: {**doc, "states": {"a": 1}},
    "meta-not-object": lambda doc: {**doc, "#meta": "meta"},
    "unknown-model": lambda doc: {**doc, "#meta": {**_drop_meta_ref(doc["#meta"]), "model": "no-such-model"}},
    "model-ref-disagrees": _set_meta("model", "replication"),
    "config-not-object": _set_meta("config", [1, 2]),
    "config-unknown-key": _set_meta("config", {"brokers": 3}),
    "config-bad-value": _set_meta("config", {"participants": "many"}),
    "config-out-of-range": _set_meta("config", {"participants": 99}),
    "model-ref-missing-file": _set_meta("model_ref", "/nonexistent/m.py:M"),
    "model-ref-no-class": _set_meta("model_ref", "m.py:"),
    "state0-changed": _mangle_state(0, "coordinator", "committed"),
    "state-var-missing": lambda doc: {**doc, "states": [{"#meta": {}}, *doc["states"][1:]]},
    "later-state-changed": _mangle_state(2, "coordinator", "aborted"),
    "action-not-enabled": _mangle_action(1, {"name": "CoordinatorCommit", "args": {}}),
    "action-unknown": _mangle_action(1, {"name": "Teleport", "args": {}}),
    "action-missing": lambda doc: {**doc, "states": [doc["states"][0], {**doc["states"][1], "#meta": {}}]},
    "action-not-object": _mangle_action(1, "Prepare"),
    "loop-not-int": lambda doc: {**doc, "loop": "x"},
    "loop-out-of-range": lambda doc: {**doc, "loop": 99},
    "bigint-malformed": _mangle_state(0, "participants", {"#bigint": "twelve"}),
    "property-unknown": _set_meta("property", "NoSuchProperty"),
}


def _trace_cases() -> list[Case]:
    out = []
    for fault, make in TRACE_FAULTS.items():
        files = {"t.itf.json": make}
        out.append(case(f"replay-{fault}", "replay", "{tmp}/t.itf.json", files=files))
        if fault in ("empty-file", "not-json", "no-meta", "no-states", "binary", "states-not-list"):
            out.append(case(f"show-{fault}", "show", "{tmp}/t.itf.json", files=files))
            out.append(case(f"render-{fault}", "render", "{tmp}/t.itf.json", "-o", "{tmp}/o.svg", files=files))
    out += [
        case("replay-missing", "replay", "{tmp}/none.itf.json", says="trace file not found"),
        case("replay-dir", "replay", "{tmp}/d", files={"d/x": ""}),
        case("replay-second-bad", "replay", "{trace}", "{tmp}/none.itf.json", says="trace file not found"),
        case("show-missing", "show", "{tmp}/none.itf.json"),
        case("render-bad-suffix", "render", "{trace}", "-o", "{tmp}/o.gif", says="use one of"),
        case("render-no-suffix", "render", "{trace}", "-o", "{tmp}/o"),
        case("render-output-is-dir", "render", "{trace}", "-o", "{tmp}/d.svg", files={"d.svg/x": ""}),
        case("render-output-under-file", "render", "{trace}", "-o", "{tmp}/f/o.svg", files={"f": "x"}),
        case("render-no-output", "render", "{trace}"),
        case(
            "replay-model-ref-relative",
            "replay",
            "{tmp}/t.itf.json",
            files={"t.itf.json": _set_meta("model_ref", "../moved/m.py:M")},
            says="model file not found: ",
        ),
        case(
            "replay-model-ref-not-a-string",
            "replay",
            "{tmp}/t.itf.json",
            files={"t.itf.json": _set_meta("model_ref", 5)},
            says="'#meta'.model_ref must be a string",
        ),
    ]
    return out


# -- ci suites ------------------------------------------------------------------------------------
ENTRY = f'[[check]]\nname = "e"\nmodel = "{TPC}"\n'


def suite(text: str, name: str, code: int = 2, says: str = "", **extra: Any) -> Case:
    files = {"suite.toml": text, **extra}
    return case(f"ci-{name}", "ci", "{tmp}/suite.toml", code=code, files=files, says=says)


STORED = ENTRY + 'preset = "buggy"\nexpect = "violated"\nsearch = false\nreplay = "{tmp}/t.itf.json"\n'

CI_CASES = [
    case("ci-missing", "ci", "{tmp}/none.toml", says="suite file not found"),
    case("ci-dir", "ci", "{tmp}/d", files={"d/x": ""}),
    suite("", "empty", says="at least one [[check]]"),
    suite("[[check]\n", "malformed-toml", says="malformed suite"),
    suite(b"\xff\xfe\x00", "binary"),
    suite("[check]\nmodel = 'x'\n", "check-not-array"),
    suite("check = 3\n", "check-number"),
    suite("colour = 'red'\n" + ENTRY + 'expect = "holds"\n', "unknown-top-key", says="unknown top-level key"),
    suite("fail_on_vacuity = 'yes'\n" + ENTRY + 'expect = "holds"\n', "vacuity-top-not-bool"),
    suite(ENTRY + 'expect = "holds"\ncolour = "red"\n', "unknown-key", says="unknown key"),
    suite('[[check]]\nexpect = "holds"\n', "no-model", says="'model' is required"),
    suite(ENTRY, "no-expect", says="'expect' must be one of"),
    suite(ENTRY + 'expect = "fine"\n', "bad-expect"),
    suite(ENTRY + "expect = 1\n", "expect-int", says="wrong type"),
    suite('[[check]]\nmodel = "nope"\nexpect = "holds"\n', "unknown-model", says="unknown model"),
    suite(ENTRY + 'expect = "holds"\npreset = "nope"\n', "unknown-preset", says="unknown preset"),
    suite(ENTRY + 'expect = "holds"\nengine = "quantum"\n', "unknown-engine", says="unknown engine"),
    suite(ENTRY + 'expect = "holds"\nproperties = "Consistent"\n', "properties-str"),
    suite(ENTRY + 'expect = "holds"\nproperties = [1]\n', "properties-int"),
    suite(ENTRY + 'expect = "holds"\nproperties = ["Nope"]\n', "properties-unknown", says="unknown property"),
    suite(ENTRY + 'expect = "holds"\nset = "participants=2"\n', "set-not-table"),
    suite(ENTRY + 'expect = "holds"\nset = { participants = "x" }\n', "set-bad-value", says="bad value"),
    suite(ENTRY + 'expect = "holds"\nset = { nope = 1 }\n', "set-unknown-key", says="unknown config key"),
    suite(ENTRY + 'expect = "holds"\nmax_depth = "3"\n', "max-depth-str", says="must be an integer"),
    suite(ENTRY + 'expect = "holds"\nmax_depth = 0\n', "max-depth-zero", says="at least 1"),
    suite(ENTRY + 'expect = "holds"\nmax_states = -1\n', "max-states-negative"),
    suite(ENTRY + 'expect = "holds"\nmax_states = 2.5\n', "max-states-float"),
    suite(ENTRY + 'expect = "holds"\nsymmetry = "yes"\n', "symmetry-str", says="true or false"),
    suite(ENTRY + 'expect = "holds"\ncontinue = 1\n', "continue-int"),
    suite(ENTRY + 'expect = "holds"\nstore = "tape"\n', "store-bad"),
    suite(ENTRY + 'expect = "holds"\nwalks = 5\n', "walks-on-bfs", says="does not take --walks"),
    suite(ENTRY + 'expect = "holds"\nengine = "simulate"\nmax_depth = 5\n', "max-depth-on-simulate"),
    suite(ENTRY + 'expect = "holds"\nengine = "simulate"\nseed = "x"\n', "seed-str"),
    suite(ENTRY + 'expect = "holds"\nengine = "hypothesis"\nexamples = 0\n', "examples-zero"),
    suite(ENTRY + 'expect = "holds"\nengine = "spark"\npartitions = 100000\n', "partitions-huge"),
    suite(ENTRY + 'expect = "holds"\nfail_on_vacuity = "yes"\n', "vacuity-str"),
    suite(ENTRY + 'expect = "holds"\nexpect_vacuous = "Prepare"\n', "expect-vacuous-str"),
    suite(ENTRY + 'expect = "holds"\nexpect_vacuous = [""]\n', "expect-vacuous-empty-name"),
    suite(ENTRY + 'expect = "violated"\nexpect_property = 3\n', "expect-property-int"),
    suite(ENTRY + 'expect = "violated"\nexpect_property = [3]\n', "expect-property-list-int"),
    suite(ENTRY + 'expect = "violated"\nexpect_trace_length = 0\n', "trace-length-zero"),
    suite(ENTRY + 'expect = "holds"\nexpect_distinct_states = "62"\n', "states-str"),
    suite(ENTRY + 'expect = "holds"\nreplay = "{tmp}/t.itf.json"\n', "replay-with-holds", says="needs expect"),
    suite(ENTRY + 'expect = "violated"\nsearch = false\n', "search-false-no-replay", says="needs a 'replay'"),
    suite(ENTRY + 'expect = "violated"\nreplay = "none.itf.json"\n', "replay-missing", says="replay trace not found"),
    suite(ENTRY + 'expect = "holds"\nspec = ["none.py"]\n', "spec-missing", says="spec file not found"),
    suite(ENTRY + 'expect = "holds"\noracles = ["x"]\n', "oracles-without-conform", says="goes with"),
    suite(ENTRY + 'expect = "holds"\n' + ENTRY + 'expect = "holds"\n', "duplicate-names", says="already named"),
    suite(ENTRY + 'expect = "holds"\nengine = "bmc"\nfail_on_vacuity = true\n', "vacuity-on-bmc"),
    suite(ENTRY + 'expect = "conforms"\nconform = "yes"\n', "conform-str"),
    suite(ENTRY + 'expect = "holds"\nconform = true\n', "conform-bad-expect"),
    suite(ENTRY + 'expect = "conforms"\nconform = true\nwalks = 3\n', "conform-engine-option"),
    # valid suites whose entries fail: exit 1
    suite(
        ENTRY + 'preset = "correct"\nexpect = "violated"\n',
        "expected-violation-gone",
        code=1,
        says="expected a violation, none found",
    ),
    suite(ENTRY + 'preset = "buggy"\nexpect = "holds"\n', "unexpected-violation", code=1, says="violated"),
    suite(ENTRY + 'expect = "holds-complete"\nmax_depth = 2\n', "bounded-not-complete", code=1),
    suite(ENTRY + 'expect = "holds"\nexpect_distinct_states = 61\n', "count-changed", code=1, says="62"),
    suite(STORED.replace('"buggy"', '"correct"'), "replay-other-preset", says="recorded on preset buggy"),
    suite(STORED + "set = { participants = 2 }\n", "replay-other-config", says="another config"),
    suite(
        STORED + 'properties = ["Consistent"]\nexpect_trace_length = 9\n',
        "replay-wrong-length",
        code=1,
        says="expected a trace of 9 states",
    ),
    suite(STORED + 'expect_property = "Other"\n', "replay-other-property", says="the entry expects Other violated"),
    suite(ENTRY + 'expect = "holds"\nexpect_property = "Consistent"\n', "holds-with-expect-property", says="goes with"),
    suite(f'[[check]]\nmodel = "{TPC}"\nexpect = "holds"\n', "no-name", says="an entry needs a name"),
    suite(
        STORED,
        "replay-truncated",
        code=1,
        says="no longer shows",
        **{"t.itf.json": lambda doc: {**doc, "states": doc["states"][:-1]}},
    ),
    suite(
        STORED.replace("search = false\n", ""),
        "replay-and-search-other-model",
        says="was recorded on model counter-grid",
        **{"t.itf.json": _set_meta("model", "counter-grid")},
    ),
    suite(
        ENTRY + 'expect = "holds"\nproperties = ["Consistent"]\nexpect_vacuous = ["Prepare"]\nfail_on_vacuity = true\n',
        "stale-expect-vacuous",
        code=1,
        says="but it was taken",
    ),
    suite(
        ENTRY + 'expect = "holds"\nexpect_vacuous = ["Teleport"]\nfail_on_vacuity = true\n',
        "expect-vacuous-unknown",
        code=1,
        says="no action or property",
    ),
]

OTHER_CASES = [
    case("conform-resume-missing", "conform", "group-kip848", "--resume", "{tmp}/none", says="no such directory"),
    case(
        "conform-checkpoint-and-resume-differ",
        "conform",
        "group-kip848",
        "--checkpoint",
        "{tmp}/a",
        "--resume",
        "{tmp}/b",
        files={"b/x": ""},
        says="name different directories",
    ),
    case("conform-resume-not-a-checkpoint", "conform", "group-kip848", "--resume", "{tmp}/d", files={"d/x": ""}),
    case("list-unknown-model", "list", "nope", says="unknown model"),
    case("list-unknown-flag", "list", "--nope"),
    case("graph-no-field", "graph", "replication", "-o", "{tmp}/g.svg"),
    case("graph-bad-suffix", "graph", "replication", "--field", "x", "-o", "{tmp}/g.gif"),
    case("prove-unknown-invariant", "prove", "replication", "-i", "Nope"),
    case("prove-no-invariant", "prove", "replication"),
    case("prove-lemma-file-missing", "prove", "replication", "-i", "LeaderInIsr", "--lemmas", "{tmp}/none.py"),
    case("unknown-command", "frobnicate"),
    case("ci-no-suite", "ci"),
    case("conform-unknown-target", "conform", "no-such-model"),
]

CASES: list[Case] = [
    *_config_cases(),
    *_engine_cases(),
    *CHECK_CASES,
    *_spec_cases(),
    *_trace_cases(),
    *CI_CASES,
    *OTHER_CASES,
]
