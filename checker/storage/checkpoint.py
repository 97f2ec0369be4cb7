"""Checkpoint directories a search can be resumed from, authenticated with the user's own key.

A checkpoint holds ``meta.json`` -- what check it is, how far it got -- carrying an HMAC under a key
kept in ~/.config/kmc; the other files are either sealed with an HMAC of their own (spark) or named
in ``meta.json`` with their SHA-256 (bfs). A file is unpickled only after that check: a file written
by anyone else is never loaded. Shared by the engines that checkpoint (spark, bfs), with the
interning that makes Spark's pickled levels small and quick to load, and the reading of bfs's levels
(in the codec's form, which names itself).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from kmc.checker.errors import UserError
from kmc.checker.storage.codec import OtherFormError, StateCodec

MAC_BYTES = 32


def checkpoint_key(engine: str = "spark") -> bytes:
    """The user's key for checkpoint files, kept beside their config ($XDG_CONFIG_HOME/kmc, else
    ~/.config/kmc) and made on first use, readable by the user only. A checkpoint is unpickled only
    after its HMAC under this key checks out: a file written by anyone else is never loaded."""
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "kmc"
    path = base / "checkpoint.key"
    try:
        if not path.exists():
            base.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(os.urandom(32).hex().encode())
        key = bytes.fromhex(path.read_text().strip())
    except FileExistsError:
        key = bytes.fromhex(path.read_text().strip())
    except (OSError, ValueError) as exc:
        raise UserError(f"{engine}: cannot read or create the checkpoint key {path} ({exc})") from None
    if len(key) < 16:
        raise UserError(f"{engine}: the checkpoint key {path} is too short; delete it to make a new one")
    return key


def write_atomically(path: Path, write: Callable[[IO[bytes]], Any]) -> None:
    """Write through a temporary file renamed into place: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        write(fh)
    os.replace(tmp, path)


def sealed(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest() + payload


def opened(key: bytes, path: Path, engine: str = "spark") -> bytes:
    """The file's payload, once its HMAC proves this user's kmc wrote it; a UserError otherwise."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{engine}: {path} is missing (damaged work directory)") from None
    mac, payload = data[:MAC_BYTES], data[MAC_BYTES:]
    if len(data) < MAC_BYTES or not hmac.compare_digest(mac, hmac.new(key, payload, hashlib.sha256).digest()):
        raise UserError(
            f"{engine}: {path} is damaged or was not written by your kmc (its authentication code does not "
            "match your checkpoint key): refusing to load it; start the check again without --resume"
        )
    return payload


def meta_mac(key: bytes, doc: Mapping[str, Any]) -> str:
    body = json.dumps({k: v for k, v in doc.items() if k != "mac"}, sort_keys=True, default=str)
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def save_meta(workdir: str | Path, key: bytes, fmt: int, job: Mapping[str, Any], progress: Mapping[str, Any]) -> None:
    """``meta.json``: the checkpoint's format, the check it belongs to and how far it got, under the key's HMAC."""
    doc: dict[str, Any] = json.loads(json.dumps({"format": fmt, "job": job, "progress": progress}, default=str))
    doc["mac"] = meta_mac(key, doc)
    write_atomically(Path(workdir) / "meta.json", lambda fh: fh.write(json.dumps(doc, indent=1).encode()))


def _damaged(workdir: str | Path) -> UserError:
    return UserError(
        f"--resume {workdir}: meta.json is damaged or was not written by your kmc (its authentication code "
        "does not match your checkpoint key); start the check again without --resume"
    )


def load_meta(workdir: str | Path, key: bytes, fmt: int, job: Mapping[str, Any], same: str) -> dict[str, Any]:
    """The progress a checkpoint of this very check recorded; a UserError naming what is wrong
    otherwise. ``job`` names a ``model_ref`` and a ``config``; ``same`` lists what must match."""
    path = Path(workdir) / "meta.json"
    if not path.exists():
        raise UserError(f"--resume {workdir}: no checkpoint there (meta.json is missing)")
    doc = _read_meta(workdir, path)
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise UserError(
            f"--resume {workdir}: the checkpoint was written by another version of kmc "
            f"(format {doc.get('format', 1) if isinstance(doc, dict) else '?'}, this one reads {fmt}); "
            "start the check again without --resume"
        )
    if not isinstance(doc.get("mac"), str) or not hmac.compare_digest(doc["mac"], meta_mac(key, doc)):
        raise _damaged(workdir)
    if not isinstance(doc.get("job"), dict) or not isinstance(doc.get("progress"), dict):
        raise UserError(f"--resume {workdir}: meta.json is malformed")
    if doc["job"] != json.loads(json.dumps(job, default=str)):
        raise UserError(
            f"--resume {workdir}: the checkpoint is of a different check "
            f"({doc['job'].get('model_ref')} {doc['job'].get('config')}); rerun with the same {same}"
        )
    return doc["progress"]


def _read_meta(workdir: str | Path, path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UserError(f"--resume {workdir}: meta.json is unreadable ({' '.join(str(exc).split())})") from None


def check_resumable(workdir: str | Path, fmt: int, key: bytes) -> None:
    """A checkpoint directory whose meta.json exists, parses and carries this user's HMAC."""
    path = Path(workdir) / "meta.json"
    if not Path(workdir).is_dir():
        raise UserError(f"--resume {workdir}: no such directory")
    if not path.is_file():
        raise UserError(f"--resume {workdir}: no checkpoint there (meta.json is missing)")
    doc = _read_meta(workdir, path)
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        return  # load_meta names the format
    if not isinstance(doc.get("mac"), str) or not hmac.compare_digest(doc["mac"], meta_mac(key, doc)):
        raise _damaged(workdir)


@functools.cache
def _rebuildable(cls: type) -> bool:
    """A plain tuple or a NamedTuple: nothing but its items, so ``tuple.__new__`` remakes it."""
    return cls is tuple or (issubclass(cls, tuple) and hasattr(cls, "_fields") and cls.__dictoffset__ == 0)


def interned(states: list[Any]) -> list[Any]:
    """The states with equal top-level fields made one object, so the pickle writes each once.

    Successors of different parents often hold equal but distinct parts (a log, an ISR); pickle
    shares only identical objects. Only tuple states (NamedTuples included) are rebuilt, and a
    part is only replaced by one of its own type from the same field of the same class: equal
    tuples may hold different NamedTuples (a broker's session and the client's handler of it)."""
    pool: dict[Any, Any] = {}
    intern = pool.setdefault
    out = []
    for state in states:
        cls = type(state)
        if _rebuildable(cls):
            try:
                parts = [intern((cls, field, part), part) for field, part in enumerate(state)]
            except TypeError:  # an unhashable part: the state is kept as it is
                out.append(state)
                continue
            if list(map(type, parts)) != list(map(type, state)):  # equal, yet not alike: 1 and True
                alike = zip(state, parts, strict=True)
                parts = [shared if type(shared) is type(mine) else mine for mine, shared in alike]
            state = tuple.__new__(cls, parts)
        out.append(state)
    return out


def unpack_resumed(codec: StateCodec, packed: bytes) -> list[Any]:
    """A checkpoint's states; one error line if another build of kmc wrote them."""
    try:
        return codec.unpack(packed)
    except OtherFormError as exc:
        raise UserError(
            f"--resume: the checkpoint's levels are in the {exc.form!r} form and this kmc writes "
            f"{exc.own!r} (its C extensions were built for one and not the other, or "
            "KMC_PURE_PYTHON differs): resume with the build that wrote it, or start again"
        ) from None
