"""The C twins name a state type's fields only by the constants generated from the NamedTuples
(models/common/c_fields.py): the headers are what the NamedTuples say, and no C file reads or
builds a field by a bare number."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT
from kmc.models.common import c_fields

BARE_FIELD = re.compile(r"PyTuple_GET_ITEM\(\s*[\w>.-]+,\s*\d+\s*\)|tuples_put\([^,]+,\s*\d+\s*,|items\[\d+\]")
"""A field read by its position (``PyTuple_GET_ITEM(s, 3)``), replaced by it (``tuples_put(t, 3, v)``)
or built into an array of a bare size (``items[4]``)."""


@pytest.mark.parametrize("model", sorted(c_fields.PREFIXES))
def test_the_header_is_what_the_namedtuples_say(model: str) -> None:
    path = c_fields.path_of(model)
    assert path.read_text() == c_fields.header(model), f"{path} is stale: run python -m kmc.models.common.c_fields"


def test_the_check_fails_on_a_stale_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A header that drifted from its NamedTuples is found (a test of the check)."""
    stale = tmp_path / "fields.h"
    swapped = c_fields.header("replication").replace("REC_ID, REC_EPOCH", "REC_EPOCH, REC_ID")
    assert swapped != c_fields.header("replication")
    stale.write_text(swapped)
    real = c_fields.path_of
    monkeypatch.setattr(c_fields, "path_of", lambda model: stale if model == "replication" else real(model))
    assert c_fields.main(["--check"]) == 1


@pytest.mark.parametrize("model", sorted(c_fields.PREFIXES))
def test_no_field_is_named_by_a_bare_number(model: str) -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "models" / model / "_c").glob("*.[ch]"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if BARE_FIELD.search(line)
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("model", sorted(c_fields.PREFIXES))
def test_every_twin_includes_its_fields(model: str) -> None:
    headers = [p.read_text() for p in (ROOT / "models" / model / "_c").glob("*.[ch]")]
    assert any('#include "fields.h"' in text for text in headers)
