"""Before another C twin is written: what compiling a model's own Python buys, and a compiled visited set.

A copy of the toolkit is made in a temporary folder, its model modules compiled there with Cython
(any Python) or mypyc (Python that type-checks), and the same search run side by side, in turns,
with the pure Python of this checkout, the compiled copy and (where the model has one) its C twin:

    pip install cython mypy            # not dependencies of the toolkit: only this benchmark uses them
    python benchmarks/compiled_models.py --rounds 3

A second measurement holds the fingerprint search's visited set, a Python dict of fingerprint ->
parent, against a compiled open-addressing table of 16-byte entries, on replication's kip-320 with
3 replicas (737,794 states). Results: benchmarks/results/compiled-models-<date>.json, and
docs/performance.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = [
    # model, preset, sets, modules to compile (the model's own), compile with mypyc too
    (
        "transactions",
        None,
        [],
        ["transactions/model.py", "transactions/coordinator.py", "transactions/log.py", "transactions/state.py"],
        False,
    ),
    ("group-kip848", "kip-848", [], ["group_kip848/model.py"], False),
    ("replication", "kip-320", ["replicas=3"], ["replication/model.py", "replication/state.py"], True),
]
CYTHON = """
import sys
from setuptools import setup
from Cython.Build import cythonize
setup(ext_modules=cythonize(sys.argv[1:], compiler_directives={"language_level": 3}, quiet=True),
      script_args=["build_ext", "--inplace", "-q"])
"""
VISITED = """
import gc, resource, sys, time
from kmc.checker.storage.fingerprint import fingerprint
from kmc.models.replication.model import ReplicationModel
model = ReplicationModel.build("kip-320", {"replicas": 3})
gc.disable()
start, inits = time.perf_counter(), list(model.init_states())
frontier = [(s, fingerprint(s)) for s in inits]
if sys.argv[1] == "dict":
    parents = {k: 0 for _s, k in frontier}
    def add(key, parent):
        size = len(parents)
        parents.setdefault(key, parent)
        return len(parents) != size
    count = lambda: len(parents)
else:
    from fingerprint_set import FingerprintSet
    visited = FingerprintSet(1 << 16)
    for _s, k in frontier:
        visited.add(k, 0)
    add, count = visited.add, lambda: len(visited)
while frontier:
    following = []
    for s, k in frontier:
        for _a, t in model.successors(s):
            f = fingerprint(t)
            if add(f, k):
                following.append((t, f))
    frontier = following
print(count(), time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""
FINGERPRINT_SET = """
# cython: language_level=3, boundscheck=False, wraparound=False
from libc.stdlib cimport calloc, free
from libc.stdint cimport uint64_t

cdef class FingerprintSet:
    cdef uint64_t *keys
    cdef uint64_t *parents
    cdef size_t mask, count
    def __cinit__(self, size_t capacity=1 << 20):
        cdef size_t n = 1
        while n < capacity * 2:
            n <<= 1
        self.keys = <uint64_t *>calloc(n, sizeof(uint64_t))
        self.parents = <uint64_t *>calloc(n, sizeof(uint64_t))
        self.mask, self.count = n - 1, 0
    def __dealloc__(self):
        free(self.keys)
        free(self.parents)
    cdef void grow(self):
        cdef uint64_t *old_keys = self.keys
        cdef uint64_t *old_parents = self.parents
        cdef size_t old = self.mask + 1, i, j
        self.keys = <uint64_t *>calloc(2 * old, sizeof(uint64_t))
        self.parents = <uint64_t *>calloc(2 * old, sizeof(uint64_t))
        self.mask = 2 * old - 1
        for i in range(old):
            if old_keys[i]:
                j = old_keys[i] & self.mask
                while self.keys[j]:
                    j = (j + 1) & self.mask
                self.keys[j], self.parents[j] = old_keys[i], old_parents[i]
        free(old_keys)
        free(old_parents)
    cpdef bint add(self, uint64_t key, uint64_t parent):
        if key == 0:
            key = 1
        if (self.count + 1) * 2 > self.mask:
            self.grow()
        cdef size_t j = key & self.mask
        while self.keys[j]:
            if self.keys[j] == key:
                return False
            j = (j + 1) & self.mask
        self.keys[j], self.parents[j] = key, parent
        self.count += 1
        return True
    def __len__(self):
        return self.count
"""


def compiled_copy(work: Path, modules: list[str], compiler: str) -> Path:
    """The toolkit under work/<compiler>/kmc, with ``modules`` (paths under models/) compiled."""
    site = work / compiler
    if not (site / "kmc").exists():
        (site / "kmc").mkdir(parents=True)
        (site / "kmc" / "__init__.py").write_text("")
        for folder in ("checker", "models", "specs", "oracles"):
            shutil.copytree(ROOT / folder, site / "kmc" / folder, ignore=shutil.ignore_patterns("__pycache__"))
    paths = [f"kmc/models/{m}" for m in modules]
    if compiler == "cython":
        subprocess.run([sys.executable, "-c", CYTHON, *paths], cwd=site, check=True, capture_output=True)
    else:
        done = subprocess.run(["mypyc", "--ignore-missing-imports", *paths], cwd=site, capture_output=True, text=True)
        if done.returncode:
            errors = [line for line in done.stdout.splitlines() if ": error:" in line]
            raise RuntimeError(f"mypyc refuses {', '.join(modules)}: {len(errors)} type errors")
    return site


def timed(argv: list[str], env: dict[str, str]) -> float:
    done = subprocess.run(
        [sys.executable, "-m", "kmc.checker.cli", *argv, "--json", "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    return json.loads(done.stdout)["elapsed_s"]


def env_with(path: Path | None = None, pure: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KMC_PURE_PYTHON")}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    if pure:
        env["KMC_PURE_PYTHON"] = "1"
    return env


def measure_models(work: Path, rounds: int) -> list[dict]:
    out = []
    for model, preset, sets, modules, mypyc in CASES:
        argv = [
            "check",
            model,
            *(["--preset", preset] if preset else []),
            *(a for s in sets for a in ("--set", s)),
            "--out",
            str(work / "out"),
        ]
        runs: dict[str, dict[str, object]] = {"python": {"env": env_with(pure=True)}}
        runs["cython"] = {"env": env_with(compiled_copy(work, modules, "cython"), pure=True)}
        if mypyc:
            try:
                runs["mypyc"] = {"env": env_with(compiled_copy(work, modules, "mypyc"), pure=True)}
            except RuntimeError as exc:
                runs["mypyc"] = {"refused": str(exc)}
        if model in ("replication", "kraft-replication", "kraft-quorum", "group"):
            runs["c twin"] = {"env": env_with()}
        times: dict[str, list[float]] = {name: [] for name, run in runs.items() if "env" in run}
        for _round in range(rounds):
            for name in times:
                times[name].append(timed(argv, runs[name]["env"]))  # type: ignore[arg-type]
        medians = {name: statistics.median(t) for name, t in times.items()}
        row = {
            "model": model,
            "preset": preset,
            "sets": sets,
            "median_s": medians,
            "vs_python": {n: round(m / medians["python"], 3) for n, m in medians.items()},
            "refused": {n: r["refused"] for n, r in runs.items() if "refused" in r},
        }
        print(json.dumps(row))
        out.append(row)
    return out


def measure_visited(work: Path, rounds: int) -> dict:
    folder = work / "visited"
    folder.mkdir(exist_ok=True)
    (folder / "fingerprint_set.pyx").write_text(FINGERPRINT_SET)
    subprocess.run([sys.executable, "-c", CYTHON, "fingerprint_set.pyx"], cwd=folder, check=True, capture_output=True)
    results: dict[str, list[tuple[int, float, int]]] = {"dict": [], "compiled": []}
    for _round in range(rounds):
        for kind in results:
            done = subprocess.run(
                [sys.executable, "-c", VISITED, kind],
                cwd=folder,
                capture_output=True,
                text=True,
                check=True,
                env={**env_with(), "PYTHONPATH": str(folder)},
            )
            states, seconds, peak = done.stdout.split()
            results[kind].append((int(states), float(seconds), int(peak)))
    row = {
        kind: {
            "states": runs[0][0],
            "median_s": statistics.median(r[1] for r in runs),
            "peak_mib": statistics.median(r[2] for r in runs) / 2**20,
        }
        for kind, runs in results.items()
    }
    print(json.dumps(row))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for tool in ("cython", "mypyc"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed here: pip install cython mypy (this benchmark only)")
    with tempfile.TemporaryDirectory(prefix="kmc-compiled-") as tmp:
        work = Path(tmp)
        report = {"models": measure_models(work, args.rounds), "visited_set": measure_visited(work, args.rounds)}
    day = datetime.date.today().isoformat()
    results = ROOT / "benchmarks" / "results" / f"compiled-models-{day}.json"
    results.write_text(json.dumps(report, indent=2) + "\n")
    print(f"-> {results}")


if __name__ == "__main__":
    main()
