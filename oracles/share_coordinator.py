"""The `share-group` model's persisted state held to Kafka's share coordinator.

When a write to the share coordinator succeeds (``WriteShareGroupStateResponse`` with no error), the
share coordinator merges the write's state batches into what it holds for the share partition
(``ShareCoordinatorShard``, through ``PersisterStateBatchCombiner``) and keeps the write's start
offset. The model's persisted state before the step becomes Kafka's batches -- one batch per record
the model has written, a record never written has none -- and ``PersisterStateBatchCombiner`` is
given them, the write's batches and its start offset; the records it returns at and past the start
offset, and the start offset, must be the model's after the step. A record the combiner holds no
batch for is, for the model, AVAILABLE with no delivery.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from kmc.checker import Action
from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.models.share_group.model import ShareGroupModel
from kmc.models.share_group.state import ACKNOWLEDGED, ACQUIRED, ARCHIVED, AVAILABLE, NONE, ShareGroupState

from . import jvm

COMBINER = "org.apache.kafka.coordinator.share.PersisterStateBatchCombiner"
BATCH = "org.apache.kafka.server.share.persister.PersisterStateBatch"

STATE_CODES = {AVAILABLE: 0, ACQUIRED: 1, ACKNOWLEDGED: 2, ARCHIVED: 4}
"""``RecordState`` as the share coordinator stores it (its ``id``)."""
STATE_NAMES = {code: name for name, code in STATE_CODES.items()}
NEVER_WRITTEN = (AVAILABLE, 0)


class MergeCall(NamedTuple):
    """What the share coordinator holds, what the write brings, and the write's start offset."""

    held: tuple[tuple[int, str, int], ...]
    written: tuple[tuple[int, str, int], ...]
    startOffset: int


class ShareCoordinatorOracle(Oracle):
    name = "share-coordinator"
    model_name = "share-group"
    reference = (COMBINER, BATCH)
    description = "each successful write is merged into the persisted state as the share coordinator merges it"

    model: ShareGroupModel

    def __init__(self, model: ShareGroupModel, release: str | None = None) -> None:  # type: ignore[override]
        super().__init__(model, release)
        self.release = jvm.start(self.release)
        self._combiner = jvm.jclass(COMBINER)
        self._batch = jvm.jclass(BATCH)
        self._array_list = jvm.jclass("java.util.ArrayList")
        self._merged: dict[MergeCall, tuple[tuple[tuple[str, int], ...], int] | str] = {}
        """Kafka's answers by call: the same write recurs in many states."""

    def compare_step(self, state: ShareGroupState, action: Action, next_state: ShareGroupState) -> Iterable[Comparison]:
        if action.name != "WriteShareGroupStateResponse" or action.args["error"] != NONE:
            return ()
        write = state.writes[0]
        held = tuple(
            (offset, st, count) for offset, (st, count) in enumerate(state.persisted) if (st, count) != NEVER_WRITTEN
        )
        call = MergeCall(held, write.batches, write.startOffset)
        theirs = self._merged.get(call)
        if theirs is None:
            theirs = self._merged[call] = self._ask(call)
        start = next_state.persistedStartOffset
        ours = (next_state.persisted[start:], start)
        inputs = call._asdict()
        if isinstance(theirs, str):
            return [Comparison("persisted", ours, theirs, inputs)]
        return [
            Comparison("persisted", ours[0], theirs[0], inputs),
            Comparison("persistedStartOffset", ours[1], theirs[1], inputs),
        ]

    def _ask(self, call: MergeCall) -> tuple[tuple[tuple[str, int], ...], int] | str:
        try:
            merged = self._combiner(self._batches(call.held), self._batches(call.written), call.startOffset)
            batches = list(merged.combineStateBatches())
        except Exception as exc:
            if jvm.is_java_exception(exc):
                return jvm.java_exception_text(exc)
            raise
        by_offset: dict[int, tuple[str, int]] = {}
        for b in batches:
            for offset in range(int(b.firstOffset()), int(b.lastOffset()) + 1):
                by_offset[offset] = (
                    STATE_NAMES.get(int(b.deliveryState()), str(b.deliveryState())),
                    int(b.deliveryCount()),
                )
        persisted = tuple(by_offset.get(o, NEVER_WRITTEN) for o in range(call.startOffset, self.model.config.records))
        return persisted, call.startOffset

    def _batches(self, batches: tuple[tuple[int, str, int], ...]) -> Any:
        java_byte, java_short = jvm.jclass("java.lang.Byte"), jvm.jclass("java.lang.Short")
        out = self._array_list()
        for offset, state, count in batches:
            out.add(self._batch(offset, offset, java_byte(STATE_CODES[state]), java_short(count)))
        return out
