"""kmc.checker: the engine. It knows nothing about Kafka; models and specs import it."""

from kmc.checker.engines.api import Engine, EngineTask, SearchBounds
from kmc.checker.engines.bfs.engine import bfs
from kmc.checker.engines.bfs.options import BfsOptions
from kmc.checker.engines.simulate import SimulationOptions, simulate
from kmc.checker.errors import UserError
from kmc.checker.model import Action, KnownBug, Model, Preset, param
from kmc.checker.properties import Property, PropertySet, eventually, invariant, leads_to, lemma, step
from kmc.checker.result import CheckResult, Stats, Status, Trace, Violation
from kmc.checker.runner import Check
from kmc.checker.search.liveness import SF, WF, Fairness
from kmc.checker.search.observers import Coverage, SearchObserver
from kmc.checker.storage.fingerprint import canonical_bytes, fingerprint

__all__ = [
    "SF",
    "WF",
    "Action",
    "BfsOptions",
    "Check",
    "CheckResult",
    "Coverage",
    "Engine",
    "EngineTask",
    "Fairness",
    "KnownBug",
    "Model",
    "Preset",
    "Property",
    "PropertySet",
    "SearchBounds",
    "SearchObserver",
    "SimulationOptions",
    "Stats",
    "Status",
    "Trace",
    "UserError",
    "Violation",
    "bfs",
    "canonical_bytes",
    "eventually",
    "fingerprint",
    "invariant",
    "leads_to",
    "lemma",
    "param",
    "simulate",
    "step",
]
