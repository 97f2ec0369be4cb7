"""Checkpoints of a bfs search on several processes (``--workers N --checkpoint DIR``).

Before each level is expanded, the directory holds everything a resumed run needs, named with
its SHA-256 in ``meta.json`` (authenticated with the user's checkpoint key, as the other engines'
checkpoints are): the visited set, one ``visited-L.npy`` per level (its new fingerprints and their
parents: only what the level added is written), the level about to be expanded, one
``frontier-L-W.pkl`` per worker (each written by its worker, in the level's order), and the
violations found so far. A resumed run deals the level out to as many workers as it is given.

The one-process search's checkpoints have another shape (its visited set spills as sorted runs):
``meta.json`` names which search wrote it, and each refuses the other's with a line saying so.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
from pathlib import Path
from typing import Any

import numpy as np
from kmc.checker.errors import UserError
from kmc.checker.result import Violation
from kmc.checker.storage.checkpoint import (
    check_resumable,
    checkpoint_key,
    load_meta,
    save_meta,
    unpack_resumed,
    write_atomically,
)
from kmc.checker.storage.codec import StateCodec
from kmc.checker.storage.fpset import check_digest, combined_digest, remove_files

FORMAT = 2
"""Bumped whenever these files change shape; a checkpoint of another format is refused."""
SAME = "model, config, properties, symmetry and deadlock"


def digest_of(payload: bytes) -> str:
    return combined_digest([hashlib.sha256(payload).digest()])


def write_frontier(path: Path, states: list[Any], codec: StateCodec) -> list[Any]:
    """A worker's slice of the level, in the codec's form: [name, count, digest]."""
    payload = codec.pack(states)
    write_atomically(path, lambda fh: fh.write(payload))
    return [path.name, len(states), digest_of(payload)]


def refuse_other_search(directory: str | Path, workers: int) -> None:
    """A checkpoint written by the other kind of bfs search is refused before it is read."""
    path = Path(directory) / "meta.json"
    try:
        parallel = "workers" in (json.loads(path.read_text()).get("job") or {})
    except (OSError, ValueError, AttributeError):
        return  # the search that loads it names what is wrong
    if parallel and workers == 1:
        raise UserError(
            f"--resume {directory}: the checkpoint was written by bfs --workers: resume it with --workers 2 or more"
        )
    if not parallel and workers > 1:
        raise UserError(
            f"--resume {directory}: the checkpoint was written by bfs on one process: resume it without --workers"
        )


class LevelCheckpoint:
    """The checkpoint directory of one search: what it wrote, and ``save``/``load``."""

    def __init__(self, directory: str | Path, job: dict[str, Any], resume: bool) -> None:
        self.directory = Path(directory)
        self.job = {**job, "workers": True}
        self.key = checkpoint_key("bfs")
        if resume:
            check_resumable(self.directory, FORMAT, self.key)
        else:
            self.directory.mkdir(parents=True, exist_ok=True)
        self.visited_files: list[list[Any]] = []

    def own_files(self) -> list[Path]:
        patterns = ("visited-*.npy", "frontier-*.pkl", "violations-*.pkl")
        return [p for pattern in patterns for p in self.directory.glob(pattern)]

    def start_afresh(self) -> None:
        remove_files([*self.own_files(), self.directory / "meta.json"])  # an earlier run's checkpoint

    def frontier_path(self, level: int, worker: int) -> Path:
        return self.directory / f"frontier-{level}-{worker}.pkl"

    def add_visited(self, level: int, fps: np.ndarray, parents: np.ndarray) -> None:
        """What a level added to the visited set."""
        buffer = io.BytesIO()
        np.save(buffer, np.stack([fps, parents]))
        payload = buffer.getvalue()
        path = self.directory / f"visited-{level}.npy"
        write_atomically(path, lambda fh: fh.write(payload))
        self.visited_files = [f for f in self.visited_files if f[0] != path.name]
        self.visited_files.append([path.name, len(fps), digest_of(payload)])

    def save(self, level: int, progress: dict[str, Any], frontier: list[list[Any]], found: list[Violation]) -> None:
        """meta.json naming every file of the level about to be expanded; then the others go."""
        violations = None
        if found:
            payload = pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL)
            path = self.directory / f"violations-{level}.pkl"
            write_atomically(path, lambda fh: fh.write(payload))
            violations = [path.name, len(found), digest_of(payload)]
        files = {"visited": self.visited_files, "frontier": frontier, "violations": violations}
        save_meta(self.directory, self.key, FORMAT, self.job, {**progress, "files": files})
        named = {
            name for name, _count, _digest in [*self.visited_files, *frontier, *([violations] if violations else [])]
        }
        remove_files(p for p in self.own_files() if p.name not in named)

    def load(self) -> tuple[dict[str, Any], np.ndarray, np.ndarray, list[Any], list[Violation]]:
        """The progress, the visited set (sorted) with parents, the level's states in order, the violations."""
        progress = load_meta(self.directory, self.key, FORMAT, self.job, SAME)
        try:
            files = progress["files"]
            tables = [self.read(entry, lambda data: np.load(io.BytesIO(data))) for entry in files["visited"]]
            self.visited_files = [list(entry) for entry in files["visited"]]
            states: list[Any] = []
            codec = StateCodec()
            for entry in files["frontier"]:
                states.extend(self.read(entry, lambda data: unpack_resumed(codec, data)))
            found = self.read(files["violations"], pickle.loads) if files["violations"] else []
        except (KeyError, TypeError, ValueError) as exc:
            raise UserError(f"--resume {self.directory}: meta.json is malformed ({exc})") from None
        fps = np.concatenate([t[0] for t in tables]) if tables else np.empty(0, dtype=np.uint64)
        parents = np.concatenate([t[1] for t in tables]) if tables else np.empty(0, dtype=np.uint64)
        order = np.argsort(fps, kind="stable")
        named = {entry[0] for entry in [*files["visited"], *files["frontier"], files["violations"]] if entry}
        remove_files(p for p in self.own_files() if p.name not in named)  # left by a run stopped mid-level
        return progress, fps[order], parents[order], states, found

    def read(self, entry: list[Any], parse: Any) -> Any:
        """A file meta.json names, once its digest checks out (never loaded otherwise)."""
        name, _count, digest = entry
        path = self.directory / Path(str(name)).name
        check_digest([path], str(digest))
        return parse(path.read_bytes())
