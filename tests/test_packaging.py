"""Everything installs under the one import name `kmc`; nothing called models or specs lands in site-packages."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import ROOT
from kmc.checker.fingerprint import ACCELERATED


def test_wheel_holds_only_the_kmc_package(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )  # fmt: skip
    [wheel] = list(tmp_path.glob("kmc-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = "-".join(wheel.name.split("-")[:2]) + ".dist-info"  # kmc-0.1.0-cp311-...: the C encoder
    tops = {name.split("/")[0] for name in names}
    assert tops == {"kmc", dist_info}
    for module in (
        "kmc/checker/bfs.py",
        "kmc/checker/spark.py",
        "kmc/models/replication.py",
        "kmc/specs/replication.py",
    ):
        assert module in names
    if ACCELERATED:  # built here, so built into the wheel too
        assert any(name.startswith("kmc/checker/_canonical.") for name in names)
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "kmc = kmc.checker.cli:main" in entry_points
    assert "replication = kmc.models.replication:ReplicationModel" in entry_points
