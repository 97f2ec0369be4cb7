"""What a search on Spark is: its settings, and what an executor needs to rebuild the model and
its properties (built once per Python worker)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from kmc.checker.model import Model
from kmc.checker.properties import PropertySet, select_properties
from kmc.checker.registry import load_model_class
from kmc.checker.search.kernel import PropertyChecks
from kmc.checker.search.observers import Coverage
from kmc.checker.storage.fingerprint import fingerprint


@dataclass(frozen=True)
class SparkOptions:
    master: str = "local[*]"
    partitions: int | None = None
    """Shards of the visited set; default: one per core Spark reports (at least 2)."""
    checkpoint: str | None = None
    """Keep each completed level in this directory so the run can be resumed."""
    resume: bool = False
    driver_memory: str = "2g"
    verbose: bool = False
    """Leave Spark's own logging at WARN (and its UI on) instead of quiet."""
    save_interval_s: float = 60.0
    """Without ``checkpoint``, how often a level is saved, to restart from if an executor is lost."""
    max_depth: int | None = None
    max_states: int | None = None
    symmetry: bool = False
    deadlock: bool = False
    keep_going: bool = False

    @property
    def save_every_level(self) -> bool:
        """A checkpoint holds every completed level; otherwise one is saved every ``save_interval_s``."""
        return self.checkpoint is not None


@dataclass(frozen=True)
class Job:
    """What an executor needs to rebuild the model and its properties: small and picklable."""

    model_ref: str
    config: dict[str, Any]
    spec_files: tuple[str, ...]
    property_names: tuple[str, ...]
    symmetry: bool
    deadlock: bool
    partitions: int
    workdir: str
    key: bytes = field(default=b"", repr=False)
    """The user's checkpoint key: every file of the work directory carries an HMAC made with it."""

    def signature(self) -> dict[str, Any]:
        sig = asdict(self)
        sig.pop("workdir")
        sig.pop("key")
        return sig


# -- executor side ------------------------------------------------------------------------------
_BUILT: dict[str, tuple[Model, list[tuple[str, Any]], list[tuple[str, Any]], Any]] = {}
"""Per job (its signature): the model, its bound properties and its key function, in this worker."""
_PROPS: dict[str, PropertySet] = {}


def built(job: Job) -> tuple[Model, list[tuple[str, Any]], list[tuple[str, Any]], Any]:
    """The model, invariants, step properties and key function, built once per Python worker."""
    key = json.dumps(job.signature(), sort_keys=True, default=str)
    if key not in _BUILT:
        cls = load_model_class(job.model_ref)
        model = cls.build(None, job.config)
        props = select_properties(cls, job.spec_files, job.property_names)
        checks = PropertyChecks(model, props)
        invariants, steps = checks.invariants, checks.steps
        if job.symmetry:
            canon = model.symmetry
            keyfn = lambda s: fingerprint(canon(s))  # noqa: E731
        else:
            keyfn = fingerprint
        _BUILT[key] = (model, invariants, steps, keyfn)
        _PROPS[key] = props
    return _BUILT[key]


def coverage_counter(job: Job) -> Coverage:
    """A fresh coverage counter for one level of this task's work (summed by every task)."""
    model = built(job)[0]
    return Coverage(model, _PROPS[json.dumps(job.signature(), sort_keys=True, default=str)])
