"""The distribution kafka-model-checker installs the import name `kmc` and the `kmc` command, as docs/ci.md uses it."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from conftest import ROOT
from kmc.checker.storage.fingerprint import ACCELERATED

CI_DOC = ROOT / "docs" / "ci.md"


def test_the_distribution_name_is_ours() -> None:
    """`kmc` on PyPI is another project: the distribution is named so that `pip install NAME` cannot fetch it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "kafka-model-checker"
    assert project["scripts"] == {"kmc": "kmc.checker.cli.app:main"}


def source_copy(tmp_path: Path) -> Path:
    """The checkout's sources in a folder of their own: a build writes its build/ there, not here."""
    ignored = shutil.ignore_patterns(".git", ".venv", "kmc-out", "build", "lib", "*.so", "__pycache__", "*.egg-info")
    return Path(shutil.copytree(ROOT, tmp_path / "source", ignore=ignored))


def test_wheel_holds_only_the_kmc_package(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source_copy(tmp_path))],
        check=True,
        capture_output=True,
    )
    [wheel] = list(tmp_path.glob("kafka_model_checker-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = "-".join(wheel.name.split("-")[:2]) + ".dist-info"  # kafka_model_checker-0.1.0-cp311-...
    tops = {name.split("/")[0] for name in names}
    assert tops == {"kmc", dist_info}
    for module in (
        "kmc/checker/engines/bfs/memory.py",
        "kmc/checker/engines/spark/engine.py",
        "kmc/models/replication/model.py",
        "kmc/specs/replication.py",
    ):
        assert module in names
    if ACCELERATED:  # built here, so built into the wheel too
        assert any(name.startswith("kmc/checker/storage/_canonical.") for name in names)
        assert any(name.startswith("kmc/models/replication/_successors.") for name in names)
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "kmc = kmc.checker.cli.app:main" in entry_points
    assert "replication = kmc.models.replication.model:ReplicationModel" in entry_points


def test_every_package_is_installed() -> None:
    """Every folder of the toolkit with an __init__.py is a package pyproject.toml lists, so none is left
    out of a wheel (an editable install would find it anyway)."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = set()
    for name, folder in setuptools["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            found.add(".".join([name, *init.parent.relative_to(ROOT / folder).parts]))
    assert sorted(found) == sorted(setuptools["packages"])


def fenced(text: str, tag: str) -> list[str]:
    return re.findall(rf"^```{tag}\n(.*?)^```$", text, re.M | re.S)


def test_the_ci_workflow_runs_on_an_installed_copy(tmp_path: Path) -> None:
    """docs/ci.md's workflow, its `run:` steps as written, in a repository of one's own outside this checkout.

    `pip install` puts the toolkit into a directory of its own (`--target`, without dependencies,
    which this interpreter already has), put first on PYTHONPATH and PATH, so neither the editable
    install of the checkout nor its `kmc` command can stand in for the installed one.
    """
    doc = CI_DOC.read_text()
    [workflow] = fenced(doc, "yaml")
    runs = re.findall(r"^\s*- run: (.+)$", workflow, re.M)
    assert [run.split()[:2] for run in runs] == [["pip", "install"], ["kmc", "ci"]]

    repo, site = tmp_path / "repo", tmp_path / "site"
    repo.mkdir()
    toolkit = re.search(r"path: ([\w.-]+) }", workflow)[1]
    (repo / toolkit).symlink_to(source_copy(tmp_path), target_is_directory=True)
    entries = [block for block in fenced(doc, "toml") if "[[check]]" in block and "conform" not in block]
    assert sum(block.count("[[check]]") for block in entries) == 3
    suite = re.search(r"kmc ci (\S+)", runs[1])[1]
    (repo / suite).write_text("\n".join(entries))
    for replay in re.findall(r'^replay = "([^"]+)"', "\n".join(entries), re.M):
        (repo / replay).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "counterexamples" / replay, repo / replay)

    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if Path(p).resolve() != Path(sys.executable).parent]
    env = {**os.environ, "PYTHONPATH": str(site), "PATH": os.pathsep.join([str(site / "bin"), *path])}
    install = runs[0].split("#")[0].split()[2:]
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), *install]
    subprocess.run(pip, cwd=repo, check=True, capture_output=True)
    where = (
        subprocess.run(["kmc", "--help"], cwd=repo, env=env, capture_output=True, text=True, check=True).returncode,
        shutil.which("kmc", path=env["PATH"]),
    )
    assert where == (0, str(site / "bin" / "kmc"))
    probe = "import kmc.checker.cli.app as cli, kmc.models.replication.model as m; print(cli.__file__, m.__file__)"
    imported = subprocess.run(
        [sys.executable, "-c", probe], cwd=repo, env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert all(Path(f).is_relative_to(site) for f in imported), imported

    ci = subprocess.run(["bash", "-c", runs[1]], cwd=repo, env=env, capture_output=True, text=True)
    assert ci.returncode == 0, ci.stdout + ci.stderr
    report = (repo / "kmc-report.xml").read_text()
    assert 'tests="3"' in report and 'failures="0"' in report, report
    assert "KIP-320 holds" in ci.stdout


def setup_py() -> ModuleType:
    """setup.py as a module (it calls setup() only when run as a script, as pip's build runs it)."""
    spec = importlib.util.spec_from_file_location("kmc_setup_py", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    cwd = os.getcwd()
    os.chdir(ROOT)  # its source paths are relative to the repository, as pip runs it
    try:
        spec.loader.exec_module(module)
    finally:
        os.chdir(cwd)
    return module


def test_every_c_source_belongs_to_an_extension() -> None:
    """A C file no extension lists would be dead code the tests never build."""
    listed = {Path(source) for extension in setup_py().EXTENSIONS for source in extension.sources}
    on_disk = {path.relative_to(ROOT) for folder in ("checker", "models") for path in (ROOT / folder).rglob("*.c")}
    assert on_disk == listed


def test_every_c_extension_is_built_where_a_compiler_is() -> None:
    """Each extension setup.py lists is optional, so a compile error only shows as a silent fall back
    to the Python: here it fails instead (the C twins of the models, the coverage counts, the encoder)."""
    compiler = sysconfig.get_config_var("CC") or "cc"
    if shutil.which(compiler.split()[0]) is None:
        pytest.skip("no C compiler here: every extension falls back to its Python")
    modules = [extension.name for extension in setup_py().EXTENSIONS]
    assert "kmc.checker.storage._canonical" in modules and "kmc.checker.search._counts" in modules
    for module in modules:
        importlib.import_module(module)  # ImportError: it did not build
