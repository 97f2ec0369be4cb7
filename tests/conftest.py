from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))

from kmc.checker.cli import main  # noqa: E402


@pytest.fixture
def toy() -> str:
    """The path of the toy models file, as the CLI names models of one's own."""
    return str(TESTS / "toy_models.py")


@pytest.fixture
def kmc(capsys: pytest.CaptureFixture[str]):
    """Run the kmc CLI in-process: returns (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run
