"""What a driver is: how one model's actions become requests to a real broker, and how the broker's
answers and reports are read back in the model's terms. One per model, written once, like a mapping."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kmc.checker.model import Action, Model
from kmc.cluster.drive.session import Session


@dataclass
class Difference:
    """One field where the broker and the model's next state disagree, both in the model's terms."""

    field: str
    model: Any
    broker: Any

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "model": self.model, "broker": self.broker}


@dataclass
class Performed:
    """What one step did on the cluster: the requests sent (in Kafka's names) and what the broker
    answered, beside what the model's next state says it answers (both in the model's terms)."""

    requests: list[str] = field(default_factory=list)
    answered: dict[str, Any] = field(default_factory=dict)
    expected: dict[str, Any] = field(default_factory=dict)
    deferred: bool = False
    """The broker takes this step together with the trace's next ones (a verification, a completion):
    its state is compared after the last of them."""


class Driver(Protocol):
    """Drives one model's traces on a broker. Built for one trace (``model`` configured as the trace
    says) on a session whose cluster runs with ``settings``."""

    model_name: str
    settings: Mapping[str, str]
    """server.properties the drive needs (timers that must not fire unless the trace says so); a
    driver whose needs differ by release also has ``settings_for(release)``, and one that cannot speak
    to every release ``check_release(release, model)``, which refuses it."""
    not_driven: Mapping[str, str]
    """Actions the driver cannot perform, each with the reason (checked before a cluster starts)."""
    unseen: tuple[str, ...]
    """State fields the broker cannot show: held by the driver (the client's) or not compared."""
    unseen_properties: Mapping[str, str]
    """Properties that read state the broker does not show, each with the reason: a drive that agrees
    cannot confirm their violation."""
    settle_s: float
    """How long a step's report may take to show a request the broker handles in the background
    (a parked JoinGroup): the report is read again until it agrees or this passes."""
    epochs: EpochNames
    """How the model's epochs are named on this broker (learned during the drive)."""

    def __init__(self, session: Session, model: Model, initial: Any) -> None: ...

    def setup(self) -> None:
        """Create what the trace's initial state assumes (topics, a group id of its own)."""
        ...

    def perform(self, action: Action, before: Any, after: Any) -> Performed:
        """Do on the cluster what ``action`` stands for, from ``before`` to ``after``."""
        ...

    def expected(self, state: Any) -> dict[str, Any]:
        """What the broker would report of a model state: the projection, in the model's terms."""
        ...

    def observed(self) -> dict[str, Any]:
        """What the broker reports now, mapped into the model's terms (its member ids, partitions)."""
        ...

    def close(self) -> None:
        """Leave the cluster as another drive may find it (connections closed)."""
        ...


@dataclass
class EpochNames:
    """The broker's epochs for the model's: an order-preserving renaming learned as epochs appear.

    The broker bumps an epoch where the model does not (the first subscription to a topic bumps a
    KIP-848 group's epoch once more), so equal numbers are not required; what the protocol's
    decisions read -- which epoch is newer, which two are the same -- is. Epochs 0 and below (join,
    leave, none) are the same on both sides."""

    known: dict[int, int] = field(default_factory=dict)

    def agree(self, model: int, broker: int) -> bool:
        if model <= 0 or broker <= 0:
            return model == broker
        if model in self.known:
            return self.known[model] == broker
        for m, b in self.known.items():
            if (m < model) != (b < broker) or b == broker:
                return False
        self.known[model] = broker
        return True

    def broker(self, model: int) -> int:
        """The broker's epoch for a model epoch, to send in a request (0 and below as they are)."""
        return model if model <= 0 else self.known.get(model, model)


def differences(
    expected: Mapping[str, Any], got: Mapping[str, Any], prefix: str = "", epochs: EpochNames | None = None
) -> list[Difference]:
    """The fields where two projections differ, named by their path; fields named ``*Epoch`` are
    compared through ``epochs`` when it is given."""
    found: list[Difference] = []
    for key in sorted(set(expected) | set(got), key=str):
        want, have = expected.get(key, "(absent)"), got.get(key, "(absent)")
        if isinstance(want, Mapping) and isinstance(have, Mapping):
            found.extend(differences(want, have, f"{prefix}{key}.", epochs))
        elif epochs is not None and str(key).endswith("Epoch") and isinstance(want, int) and isinstance(have, int):
            if not epochs.agree(want, have):
                found.append(Difference(f"{prefix}{key}", want, have))
        elif want != have:
            found.append(Difference(f"{prefix}{key}", want, have))
    return found
