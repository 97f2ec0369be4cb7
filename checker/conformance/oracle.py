"""What an oracle is: a reference implementation asked the question a model's step decides
(:class:`Oracle`) or a table of inputs (:class:`InputOracle`), the answers compared
(:class:`Comparison`) and counted (:class:`Tally`). Oracles of one's own subclass these; the
engine knows nothing about where the answers come from."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kmc.checker.model import Action, Model, State

ORACLE_PREFIX = "Conforms-"
"""Property names of conformance checks: ``Conforms-<oracle name>``."""


@dataclass(frozen=True)
class Comparison:
    """One question both sides answered: the model's answer and the reference's."""

    question: str
    ours: Any
    theirs: Any
    inputs: Mapping[str, Any] = field(default_factory=dict)
    """What the reference was asked, for the mismatch report."""

    @property
    def agree(self) -> bool:
        return self.ours == self.theirs


class Oracle:
    """Answers the questions a model's steps decide, as a reference implementation decides them.

    Subclasses set ``name``, ``model_name`` and ``reference`` (what is called, e.g. Kafka classes),
    and implement :meth:`compare_step` (and, for questions a state alone decides,
    :meth:`compare_state`). A step the reference does not decide yields nothing.
    """

    name: ClassVar[str] = ""
    model_name: ClassVar[str] = ""
    reference: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    follows_paths: ClassVar[bool] = False
    """True for an oracle that rebuilds a step's state by replaying the path the search took to it
    (from the steps it was asked about before): such a run cannot be checkpointed and resumed."""

    def __init__(self, model: Model, release: str | None = None) -> None:
        self.model = model
        self.release = release
        """Which release of the reference to call (None: the pinned one)."""

    def unsupported(self) -> str | None:
        """Why this model config cannot be compared (one line), or None when it can."""
        return None

    def compare_step(self, state: State, action: Action, next_state: State) -> Iterable[Comparison]:
        return ()

    def compare_state(self, state: State) -> Iterable[Comparison]:
        return ()

    @classmethod
    def compares_states(cls) -> bool:
        return cls.compare_state is not Oracle.compare_state


class InputOracle:
    """Compares a pure function of the model (an assignor, say) on a table of inputs rather than
    along the model's steps: every case the oracle enumerates is asked of both sides."""

    name: ClassVar[str] = ""
    reference: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""

    def __init__(self, release: str | None = None, settings: Mapping[str, str] | None = None) -> None:
        self.release = release
        self.settings = dict(settings or {})
        """Options of the table (``--set key=value``), validated by the oracle."""

    def cases(self) -> Iterable[tuple[str, Any]]:
        """(label, input) pairs; the label is how a case is named in reports (e.g. its strategy)."""
        raise NotImplementedError

    def compare(self, case: Any) -> Iterable[Comparison]:
        raise NotImplementedError


@dataclass
class Tally:
    """What one oracle compared during a run."""

    oracle: str
    reference: tuple[str, ...]
    states: int = 0
    """States at which the oracle answered at least one question."""
    steps: int = 0
    """Steps at which the oracle answered at least one question."""
    comparisons: int = 0
    agreements: int = 0
    mismatches: int = 0
    by_question: Counter[str] = field(default_factory=Counter)
    by_action: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    """Time spent inside the oracle (asking the reference and reading our answer)."""
    first_mismatch: Comparison | None = None

    @property
    def per_second(self) -> float:
        return self.comparisons / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "oracle": self.oracle,
            "reference": list(self.reference),
            "states_compared": self.states,
            "steps_compared": self.steps,
            "comparisons": self.comparisons,
            "agreements": self.agreements,
            "mismatches": self.mismatches,
            "by_question": dict(sorted(self.by_question.items())),
            "by_action": dict(sorted(self.by_action.items())),
            "comparisons_per_s": round(self.per_second, 1),
            "first_mismatch": None if self.first_mismatch is None else mismatch_json(self.first_mismatch),
        }


def mismatch_json(c: Comparison) -> dict[str, Any]:
    return {
        "question": c.question,
        "ours": jsonable(c.ours),
        "theirs": jsonable(c.theirs),
        "inputs": jsonable(c.inputs),
    }


def jsonable(value: Any) -> Any:
    """A comparison value as plain JSON (sets sorted, tuples as lists)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, set | frozenset):
        return [jsonable(v) for v in sorted(value, key=repr)]
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)
