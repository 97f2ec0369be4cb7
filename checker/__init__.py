"""kmc.checker: the engine. It knows nothing about Kafka; models and specs import it."""

from .bfs import BfsOptions, bfs
from .errors import UserError
from .fingerprint import canonical_bytes, fingerprint
from .liveness import SF, WF, Fairness
from .model import Action, Model, Preset, param
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
    "Fairness",
    "Model",
    "Preset",
    "Property",
    "PropertySet",
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
