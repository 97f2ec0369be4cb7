"""README's model/preset table is `kmc list`'s: a model or preset added, renamed or removed fails here."""

from __future__ import annotations

import json
import re
from pathlib import Path

from kmc.checker.cli.app import main

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_table() -> dict[str, list[str]]:
    rows = {}
    for line in README.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = re.findall(r"`([^`]+)`", cells[2])
    return rows


def test_readme_table_equals_kmc_list(capsys) -> None:
    assert main(["list", "--json"]) == 0
    listed = {entry["model"]: list(entry["presets"]) for entry in json.loads(capsys.readouterr().out)}
    assert readme_table() == listed


def test_readme_starts_with_make_demo_and_make_test() -> None:
    """The first block a newcomer sees: the two commands CI runs, nothing before them but the title."""
    lines = [line for line in README.read_text().splitlines() if line.strip()]
    assert lines[0].startswith("# kmc")
    assert lines[1].startswith("<!-- doc-test: skip:")
    assert lines[2] == "```console"
    assert [line.split("#")[0].strip() for line in lines[3:5]] == ["$ make demo", "$ make test"]
    assert lines[5] == "```"
