from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium (Debian's) driven by Playwright, for the report and explorer pages."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (test dependency)")
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip("the system Chromium is not installed: apt-get install chromium")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()
