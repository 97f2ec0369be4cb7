"""The docs run as written: every `console` block of README.md and docs/ is executed and its output checked.

In a fenced block tagged `console`, a line starting with `$ ` is a command (continued on the next
line after a trailing backslash), run with bash from the repository root (a copy of its files, so
that whatever a command writes is seen) with `.venv/bin` first on PATH; the lines after it, up to
the next command, must appear in its stdout+stderr in that order, whitespace collapsed (`...`
lines are ignored). A command exits 0 unless it ends with `# exit N`. A block right after
`<!-- doc-test: skip: REASON -->` is not run. Shell blocks of any other tag are refused, so a
command cannot sit in the docs unchecked.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_TAGS = {"bash", "sh", "shell", "sh-session", "zsh", "shell-session"}
EXAMPLE_DOCS = ("docs/writing-a-model.md", "docs/writing-a-property.md")
SKIP = re.compile(r"<!--\s*doc-test:\s*skip\b(?::(?P<reason>.*?))?\s*-->")
EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")
FENCE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\s`]*)")
# An indented block whose lines are commands: write it as a console block (or text, for a synopsis).
INDENTED_COMMAND = re.compile(r"^ {4,}(\$ |kmc |make |python3? |pip |\.venv/|pytest )")
TIMEOUT_S = 300


@dataclass
class Command:
    line: str
    exit_code: int
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    path: Path
    lineno: int  # of the opening fence, 1-based
    info: str
    body: list[str]
    skip: str | None  # the skip comment's reason ("" when given without one), None when not skipped

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.lineno}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, each with the skip comment right before it, if any."""
    found: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, start = m["fence"], i
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence[0] * len(fence)):
            j += 1
        previous = next((lines[k].strip() for k in range(start - 1, -1, -1) if lines[k].strip()), "")
        skip = SKIP.fullmatch(previous)
        reason = (skip["reason"] or "").strip() if skip else None
        found.append(Block(path, start + 1, m["info"].lower(), lines[start + 1 : j], reason))
        i = j + 1
    return found


def commands(block: Block) -> list[Command]:
    """The commands of a console block with the output lines each must print."""
    parsed: list[Command] = []
    lines = iter(block.body)
    for line in lines:
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\"):
                command = command[:-1] + "\n" + next(lines, "")
            m = EXIT.search(command)
            parsed.append(Command(command, int(m[1]) if m else 0))
        elif line.strip() and line.strip() != "..." and parsed:
            parsed[-1].expected.append(line)
    return parsed


def collapse(text: str) -> str:
    return " ".join(text.split())


def indented_commands(path: Path) -> list[int]:
    """Line numbers of indented (unfenced) code lines that are shell commands."""
    hits, inside_fence, fence = [], False, ""
    lines = path.read_text().splitlines()
    for n, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if inside_fence:
            inside_fence = not line.strip().startswith(fence)
        elif m:
            inside_fence, fence = True, m["fence"][0] * len(m["fence"])
        elif INDENTED_COMMAND.match(line):
            previous = lines[n - 2] if n > 1 else ""
            if not previous.strip() or INDENTED_COMMAND.match(previous):  # a code block, not a list item's text
                hits.append(n)
    return hits


ALL_BLOCKS = [b for doc in DOCS for b in blocks(doc)]
CONSOLE = [b for b in ALL_BLOCKS if b.info == "console"]


def test_the_docs_have_console_blocks() -> None:
    """The parser finds the blocks (a change of convention cannot make the test below vacuous)."""
    assert len([b for b in CONSOLE if b.skip is None]) >= 20
    assert {b.path.name for b in CONSOLE} >= {"README.md", "getting-started.md", "cli.md"}


def test_no_shell_block_outside_console() -> None:
    offending = [f"{b.id}: ```{b.info} (write it as ```console: run here)" for b in ALL_BLOCKS if b.info in SHELL_TAGS]
    offending += [
        f"{doc.relative_to(ROOT)}:{n}: an indented command (write it as a ```console block)"
        for doc in DOCS
        for n in indented_commands(doc)
    ]
    assert not offending, "\n".join(offending)


def test_every_skip_has_a_reason() -> None:
    offending = [b.id for b in ALL_BLOCKS if b.skip is not None and not b.skip]
    assert not offending, f"<!-- doc-test: skip: REASON --> without a reason before {', '.join(offending)}"


def test_every_skip_is_before_a_console_block() -> None:
    offending = [b.id for b in ALL_BLOCKS if b.skip is not None and b.info != "console"]
    assert not offending, f"a skip comment before a block that is not run anyway: {', '.join(offending)}"


def test_every_console_block_has_a_command() -> None:
    offending = [b.id for b in CONSOLE if not commands(b)]
    assert not offending, f"console blocks without a `$ ` line: {', '.join(offending)}"


@pytest.mark.parametrize("doc", EXAMPLE_DOCS)
def test_python_blocks_are_in_docs_examples(doc: str) -> None:
    """Each python block of the guides is a verbatim part of a file under docs/examples/, which the tests run."""
    examples = [p.read_text() for p in sorted((ROOT / "docs" / "examples").rglob("*")) if p.is_file()]
    missing = [
        b.id
        for b in blocks(ROOT / doc)
        if b.info == "python" and not any("\n".join(b.body) in text for text in examples)
    ]
    assert not missing, f"python blocks not found verbatim under docs/examples/: {', '.join(missing)}"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository's files (tracked and not ignored) in a git repository of its own: the doc
    commands run there, so `git status` shows whatever they write, and nothing edited in the repository meanwhile."""
    copy = tmp_path_factory.mktemp("checkout")
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    git(copy, "init", "-q")
    git(copy, "add", "-A")
    git(copy, "-c", "user.name=docs", "-c", "user.email=docs@localhost", "commit", "-q", "-m", "docs")
    return copy


def git(where: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=where, capture_output=True, text=True, check=True).stdout


def status(root: Path) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=all")


# A command shown on several pages runs once; each page's expected lines are checked against its output.
RUNS: dict[str, subprocess.CompletedProcess[str]] = {}


def run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    key = re.sub(r"\s+#[^'\"]*$", "", command)
    if key not in RUNS:
        env = {
            **os.environ,
            "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "COLUMNS": "200",
        }
        RUNS[key] = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=TIMEOUT_S,
        )
    return RUNS[key]


@pytest.mark.parametrize("block", [b for b in CONSOLE if b.skip is None], ids=lambda b: b.id)
def test_console_block_runs_as_written(block: Block, checkout: Path) -> None:
    git(checkout, "add", "-A")  # whatever an earlier block wrote is not this one's doing
    git(checkout, "-c", "user.name=docs", "-c", "user.email=docs@localhost", "commit", "-q", "--allow-empty", "-m", "-")
    for command in commands(block):
        done = run(command.line, checkout)
        where = f"{block.id}\n$ {command.line}\n--- output (exit {done.returncode}) ---\n{done.stdout}"
        assert done.returncode == command.exit_code, (
            f"exit {done.returncode}, the doc says {command.exit_code}: {where}"
        )
        output, at = collapse(done.stdout), 0
        for expected in command.expected:
            found = output.find(collapse(expected), at)
            assert found >= 0, f"expected line not found (in this order): {expected.strip()!r}\n{where}"
            at = found + len(collapse(expected))
    changed = status(checkout)
    assert not changed, f"{block.id} changed what git tracks (write outputs under kmc-out/):\n{changed}"
