"""What a mapping is: how one model's states show in a real cluster's logs."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Protocol

from kmc.checker.model import Model


class View(Protocol):
    offset: int

    def to_json(self) -> dict[str, Any]: ...


class Mapping(Protocol):
    """How one model's states show in the logs of a real cluster; one per model, written once."""

    model_name: str
    depth: int
    """Steps the search allows between two observed states by default."""
    invariants: tuple[str, ...]
    """The model's invariants that the projection determines: checked on every observed state."""

    def traces(self, observations: Any) -> dict[str, Sequence[View]]:
        """The observed traces this model explains (a partition's registrations, the quorum's leaders)."""
        ...

    def model(self, name: str, trace: Sequence[View], observations: Any) -> Model:
        """The model configured as the run was (brokers, min ISR, ELR, ...) with bounds that fit the trace."""
        ...

    def observe(self, view: View, trace: Sequence[View]) -> Hashable:
        """An observed state in the model's terms (its broker numbers, its epochs)."""
        ...

    def decisions(self, view: View) -> int:
        """How many decisions of the model the batch that made this observed state may hold (1 for
        a log that records each decision apart)."""
        ...

    def project(self, state: Any) -> Hashable | None:
        """What the logs would show of a model state; None where they show nothing."""
        ...

    def normalize(self, state: Any) -> Any:
        """The state with its fault counters reset: the bounds apply to one transition at a time."""
        ...

    def lift(self, model: Model, projection: Hashable) -> Any:
        """A model state with this projection (the rest as the initial state has it): what the
        determined invariants are evaluated on."""
        ...

    def snapshots(self, model: Model, observations: Any) -> list[tuple[str, Any]]:
        """Model states lifted from what the nodes hold at the end (their logs), labelled: the
        determined invariants are checked on them too."""
        ...

    def describe(self, projection: Hashable, trace: Sequence[View]) -> dict[str, Any]:
        """A projection in the cluster's own terms (broker ids), for reports and observed traces."""
        ...
