from __future__ import annotations

import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
sys.path.insert(0, str(TESTS))

from kmc.checker.cli.app import main  # noqa: E402


def default_sigint() -> None:
    """A child's Ctrl-C as a terminal gives it (``preexec_fn``): a test run in the background inherits
    SIGINT ignored, and a child that starts with it ignored never sees the SIGINT a test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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
def runs() -> Iterator[Path]:
    """A folder for a module's clusters that their node users can pass through (pytest's own
    temporary folders are private)."""
    base = Path(tempfile.mkdtemp(prefix="kmc-cluster-tests-"))
    base.chmod(0o711)
    yield base
    shutil.rmtree(base, ignore_errors=True)


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


def walk_checking_kept_steps(warm: Any, fresh: Any, every: int = 8) -> tuple[set[Any], set[str]]:
    """Search warm's whole space (within its bounds); at every `every`-th state its successors, worked
    out from what it keeps, must equal in order those of `fresh()`, a model that has kept nothing.
    Returns the states seen and the action names taken."""
    seen = set(warm.init_states())
    frontier = list(seen)
    taken: set[str] = set()
    for n, s in enumerate(frontier):
        if not warm.within_bounds(s):
            continue
        steps = warm.successors(s)
        if n % every == 0:
            assert steps == fresh().successors(s), s
        for action, t in steps:
            taken.add(action.name)
            if t not in seen:
                seen.add(t)
                frontier.append(t)
    return seen, taken
