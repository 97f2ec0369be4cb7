"""The work directory of a search on Spark: each partition's frontier and visited shard per saved
level, the level's progress, and meta.json naming the saved level (under the user's HMAC)."""

from __future__ import annotations

import io
import json
import pickle
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kmc.checker.engines.spark.job import Job
from kmc.checker.errors import UserError
from kmc.checker.model import State
from kmc.checker.storage.checkpoint import (
    check_resumable,
    checkpoint_key,
    interned,
    load_meta,
    opened,
    save_meta,
    sealed,
    write_atomically,
)


def frontier_path(workdir: str, partition: int, level: int) -> Path:
    """The saved frontier of depth ``level`` that ``partition`` expands."""
    return Path(workdir) / f"frontier-{partition:05d}-{level:05d}.pkl"


def visited_path(workdir: str, partition: int, level: int) -> Path:
    return Path(workdir) / f"visited-{partition:05d}-{level:05d}.npz"


def saved_files(workdir: str, partitions: int, level: int) -> Iterator[Path]:
    for p in range(partitions):
        yield frontier_path(workdir, p, level)
        yield visited_path(workdir, p, level)


def await_files(paths: list[Path], check: Callable[[], None]) -> None:
    """Wait until every file exists. The tasks of a barrier stage all run at once, so they will;
    if one fails, Spark ends the stage and its other tasks with it. ``check``, called about once a
    second, raises to stop waiting (the stage was abandoned)."""
    delay = 0.001
    checked = time.monotonic()
    while paths := [p for p in paths if not p.exists()]:
        time.sleep(delay)
        delay = min(2 * delay, 0.02)
        if time.monotonic() - checked >= 1.0:
            check()
            checked = time.monotonic()


def write_states(path: Path, fps: list[int], states: list[State], key: bytes) -> None:
    # One pickle per file, parts the states share written once. Not the bfs engine's StateCodec: a
    # cluster's executors may run builds with and without its C extension, and pickle reads on all.
    import numpy as np

    piece = (np.array(fps, dtype=np.uint64), interned(states))
    payload = pickle.dumps(piece, protocol=pickle.HIGHEST_PROTOCOL)
    write_atomically(path, lambda fh: fh.write(sealed(key, payload)))


def read_states(path: Path, key: bytes) -> tuple[list[int], list[State]]:
    fps, states = pickle.loads(opened(key, path))  # authenticated above: this user's own file
    return fps.tolist(), states


def read_visited(workdir: str, partition: int, level: int, key: bytes) -> tuple[Any, Any]:
    import numpy as np

    path = visited_path(workdir, partition, level)
    with np.load(io.BytesIO(opened(key, path)), allow_pickle=False) as data:
        return data["fps"], data["parents"]


def write_visited(workdir: str, partition: int, level: int, fps: Any, parents: Any, key: bytes) -> None:
    import numpy as np

    buffer = io.BytesIO()
    np.savez(buffer, fps=fps, parents=parents)
    write_atomically(visited_path(workdir, partition, level), lambda fh: fh.write(sealed(key, buffer.getvalue())))


OWNER_FILE = "owner"
"""Names the stage that owns the work directory. Spark does not retry the stage itself (see
spark_context); the driver does, and a task of an abandoned stage (cancelled, but not yet
stopped), of a killed run or of a second kmc started on the same checkpoint stops before it writes
there again: it would otherwise save a level and delete the one the new stage is loading."""


def stage_id(run_id: str, stage: int) -> str:
    return f"{run_id}-{stage}"


def claim_workdir(workdir: str, stage: str) -> None:
    write_atomically(Path(workdir) / OWNER_FILE, lambda fh: fh.write(stage.encode()))


def workdir_owner(workdir: str) -> str:
    """The stage that owns the work directory ("" when none has claimed it)."""
    try:
        return (Path(workdir) / OWNER_FILE).read_text()
    except FileNotFoundError:
        return ""


def owns_workdir(workdir: str, stage: str) -> bool:
    return workdir_owner(workdir) == stage


def run_owns(workdir: str, run_id: str) -> bool:
    """Whether a stage of this run (any) still owns the work directory."""
    return workdir_owner(workdir).startswith(f"{run_id}-")


def taken_over(workdir: str) -> str:
    return (
        f"spark: another kmc run took over the work directory {workdir}; this one stops "
        "(one search per checkpoint directory)"
    )


def exchange_dir(workdir: str, run_id: str, stage: int) -> Path:
    """Where a stage's tasks exchange their files: a directory of its own, so files of an
    abandoned stage never mix in."""
    return Path(workdir) / f"exchange-{stage_id(run_id, stage)}"


RESCALE = "rescale"
"""A file the driver puts in the exchange directory when more slots than tasks are there."""


@dataclass
class LevelProgress:
    level: int = 1
    distinct: int = 0
    generated: int = 0
    levels: list[int] = field(default_factory=list)
    violations: list[list[Any]] = field(default_factory=list)
    done: bool = False
    bound_reason: str | None = None
    coverage: dict[str, Any] = field(default_factory=dict)
    """Coverage counts of the levels expanded so far (a resumed run continues them)."""
    probe_generated: int = 0
    probe_coverage: dict[str, Any] = field(default_factory=dict)
    """What expanding the level at a bound found: counted in this run's result only."""


CHECKPOINT_FORMAT = 5
"""Bumped whenever the files of a level change shape; a checkpoint of another format is refused."""


def save_level_meta(workdir: str, job: Job, prog: LevelProgress) -> None:
    save_meta(workdir, job.key, CHECKPOINT_FORMAT, job.signature(), asdict(prog))


def load_level_meta(workdir: str, job: Job) -> LevelProgress:
    same = "model, config, properties, symmetry, deadlock and partitions"
    progress = load_meta(workdir, job.key, CHECKPOINT_FORMAT, job.signature(), same)
    try:
        return LevelProgress(**progress)
    except TypeError as exc:
        raise UserError(f"--resume {workdir}: meta.json is malformed ({exc})") from None


def check_checkpoint(workdir: str) -> None:
    """A checkpoint directory whose meta.json exists, parses and carries this user's HMAC."""
    check_resumable(workdir, CHECKPOINT_FORMAT, checkpoint_key())


def parent_lookup(workdir: str, partitions: int, level: int, key: bytes) -> Any:
    import numpy as np

    shards: dict[int, tuple[Any, Any]] = {}

    def parent(fp: int) -> int | None:
        p = fp % partitions
        if p not in shards:
            shards[p] = read_visited(workdir, p, level, key)
        fps, parents = shards[p]
        i = int(np.searchsorted(fps, np.uint64(fp)))
        if i >= len(fps) or int(fps[i]) != fp:
            raise UserError(f"spark: fingerprint {fp:#x} missing from its visited shard (damaged work directory)")
        up = int(parents[i])
        return None if up == fp else up

    return parent


def write_progress(workdir: str, prog: LevelProgress) -> None:
    path = Path(workdir) / "progress.json"
    write_atomically(path, lambda fh: fh.write(json.dumps(asdict(prog), default=str).encode()))


def read_progress(workdir: str) -> LevelProgress | None:
    try:
        return LevelProgress(**json.loads((Path(workdir) / "progress.json").read_text()))
    except (OSError, ValueError, TypeError):
        return None
