"""Output paths checked before the work, and files written atomically.

A search that runs for an hour must not fail at the end because ``--junit`` names a directory
that cannot be written; and a reader (or a crash) must never see half a file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from kmc.checker.errors import UserError


def _nearest_existing(path: Path) -> Path:
    here = path.absolute()
    while not here.exists() and here != here.parent:
        here = here.parent
    return here


def check_output_dir(path: Path, flag: str) -> None:
    """A directory the run will write into: it exists and is writable, or it can be created."""
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag} {path}: exists and is not a directory")
    base = _nearest_existing(path)
    if not base.is_dir():
        raise UserError(f"{flag} {path}: {base} is not a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {path}: {base} is not writable")


def check_output_file(path: Path, flag: str, suffixes: tuple[str, ...] = ()) -> None:
    """A file the run will write: not a directory, of a known kind, in a writable directory."""
    if str(path).strip() == "":
        raise UserError(f"{flag}: the path is empty")
    if path.is_dir():
        raise UserError(f"{flag} {path}: is a directory; give a file name")
    if suffixes and path.suffix.lower() not in suffixes:
        raise UserError(f"{flag} {path}: use one of {', '.join(suffixes)}")
    if path.exists() and not os.access(path, os.W_OK):
        raise UserError(f"{flag} {path}: is not writable")
    check_output_dir(path.parent if str(path.parent) else Path("."), flag)


def write_atomically(path: Path, data: bytes | str) -> None:
    """Write the whole file or nothing: a temporary file in the same directory, then a rename. The
    file gets the permissions any new file gets (the umask's), not the temporary file's owner-only."""
    payload = data.encode() if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    """The process's umask (reading it means setting it: set it straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
