"""kmc.checker: the engine. It knows nothing about Kafka; models and specs import it."""

from .bfs import BfsOptions, bfs
from .engine import Engine, EngineTask, SearchBounds
from .errors import UserError
from .fingerprint import canonical_bytes, fingerprint
from .liveness import SF, WF, Fairness
from .model import Action, Model, Preset, param
from .observe import Coverage, SearchObserver
from .properties import Property, PropertySet, eventually, invariant, leads_to, step
from .result import CheckResult, Stats, Status, Trace, Violation
from .runner import Check
from .simulation import SimulationOptions, simulate

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
    "param",
    "simulate",
    "step",
]
