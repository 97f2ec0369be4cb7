"""The `share-group` model's records against Kafka's ``InFlightState`` (kafka-server, Kafka 4.2 and
later): the per-record state machine of a share partition.

At every step that changes a record, a Kafka ``InFlightState`` is built with the record's state
before the step -- its state, delivery count and owner, the acquisition lock it holds (an
``AcquisitionLockTimerTask``, run when the model's lock has expired) and, when a write of a new state
is in flight, that transition started again -- and asked what the step asks ``SharePartition`` to
ask it: ``tryUpdateState`` for an acquisition (ACQUIRED, one more delivery) or a lock's timeout
(AVAILABLE, or ARCHIVED before the SPSO), ``startStateTransition`` for an acknowledgement,
``completeStateTransition`` for the write's answer, ``archive`` for a log-start move. Compared: the
record's state, delivery count, owner and whether a transition is still in flight. The rules of the
releases before the fixes (the model's ``kafka_18084`` and ``kafka_19476_*`` flags off) are the
model's alone: the pinned release has every fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.checker.model import Action
from kmc.models.share_group.model import ShareGroupModel
from kmc.models.share_group.state import (
    ACCEPT,
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    EMPTY_MEMBER_ID,
    NO_TIMER,
    NONE,
    REJECT,
    InFlightState,
    ShareGroupState,
)

from . import jvm

FETCH = "org.apache.kafka.server.share.fetch."
LOCK_DURATION_MS = 30_000
FLAGS = ("kafka_18084", "kafka_19476_terminal", "kafka_19476_expired_lock", "kafka_19476_cancelled_lock", "kafka_19972")
TARGET = {ACCEPT: ACKNOWLEDGED, REJECT: ARCHIVED}
"""The state an acknowledgement asks for (RELEASE asks for AVAILABLE; Kafka archives at the limit)."""


class InFlightStateOracle(Oracle):
    name = "in-flight-state"
    model_name = "share-group"
    reference = (FETCH + "InFlightState", FETCH + "AcquisitionLockTimerTask")
    description = (
        "each record's transitions as Kafka's InFlightState makes them (acquire, acknowledge, commit or roll "
        "back, time out, archive)"
    )

    model: ShareGroupModel

    def unsupported(self) -> str | None:
        off = [flag for flag in FLAGS if not getattr(self.model.config, flag)]
        if off:
            return f"{', '.join(off)} off: the rules before those fixes are the model's alone (Kafka has every fix)"
        return None

    def __init__(self, model: ShareGroupModel, release: str | None = None) -> None:
        super().__init__(model, release)
        if self.unsupported() is not None:
            return
        self.InFlight = jvm.jclass(FETCH + "InFlightState")  # public in kafka-server from Kafka 4.2
        self.RecordState = jvm.jclass(FETCH + "RecordState")
        self.Ops = jvm.jclass(FETCH + "DeliveryCountOps")
        self.Task = jvm.jclass(FETCH + "AcquisitionLockTimerTask")
        self.Time = jvm.jclass("org.apache.kafka.common.utils.Time")
        self.metrics = jvm.jclass("org.apache.kafka.server.share.metrics.SharePartitionMetrics")("kmc", "t", 0)
        self.handler = _no_timeout_handler()
        self.limit = model.config.delivery_count_limit

    # -- building Kafka's record from the model's -------------------------------------------------
    def _record(self, s: ShareGroupState, r: InFlightState, offset: int) -> Any:
        """A Kafka InFlightState as the model's record is: its lock attached (run if it has expired),
        and its transition in flight started again."""
        base = r.rollback if r.rollback is not None else r
        ifs = self.InFlight(self.RecordState.valueOf(base.state), base.deliveryCount, base.memberId)
        if r.timer != NO_TIMER:
            task = self.Task(
                self.Time.SYSTEM, LOCK_DURATION_MS, base.memberId, offset, offset, self.handler, self.metrics
            )
            ifs.updateAcquisitionLockTimeoutTask(task)
            if s.timers[r.timer].expired:
                task.run()
        if r.rollback is not None:
            ack = next((w.ackType for w in s.writes if offset in w.offsets), None)
            requested = TARGET.get(ack or "", AVAILABLE)
            ifs.startStateTransition(self.RecordState.valueOf(requested), self.Ops.NO_OP, self.limit, EMPTY_MEMBER_ID)
            if r.terminal:  # a log-start move archived it while its release was being written
                ifs.archive()
        return ifs

    @staticmethod
    def _ours(r: InFlightState) -> tuple[str, int, str, bool]:
        return (r.state, r.deliveryCount, r.memberId, r.rollback is not None)

    # -- the comparisons -------------------------------------------------------------------------
    def compare_step(self, state: ShareGroupState, action: Action, next_state: ShareGroupState) -> Iterator[Comparison]:
        name, args = action.name, action.args
        for offset, (before, after) in enumerate(zip(state.records, next_state.records, strict=True)):
            if self._ours(before) == self._ours(after) and before.terminal == after.terminal:
                continue
            question, theirs = self._ask(state, name, args, offset, before)
            if question is None:
                continue
            inputs = {"before": self._ours(before), "action": repr(action), "offset": offset}
            yield Comparison(question, self._ours(after), theirs, inputs)

    def _ask(
        self, s: ShareGroupState, name: str, args: dict[str, Any], offset: int, r: InFlightState
    ) -> tuple[str | None, Any]:
        """The question this step asks Kafka about record ``offset``, and Kafka's answer (or the
        exception it threw)."""
        record_state, ops = self.RecordState, self.Ops
        question = None
        try:
            ifs = self._record(s, r, offset)
            if (name == "ShareFetch" and args["first"] < 0) or name == "LogStartOffsetMove":
                question = "archive on a log-start move"
                ifs.archive()
            elif name == "ShareFetch":
                question = "acquire"
                ifs.tryUpdateState(record_state.ACQUIRED, ops.INCREASE, self.limit, f"m{args['consumer']}")
            elif name == "ShareAcknowledge" and args["error"] == NONE:
                question = f"startStateTransition({args['acknowledgeType']})"
                requested = TARGET.get(args["acknowledgeType"], AVAILABLE)
                ifs.startStateTransition(record_state.valueOf(requested), ops.NO_OP, self.limit, EMPTY_MEMBER_ID)
            elif name == "WriteShareGroupStateResponse" and args["kind"] == "acknowledge":
                question = f"completeStateTransition({args['error'] == NONE})"
                ifs.completeStateTransition(args["error"] == NONE)
            elif name == "ShareSessionRelease":
                question = "startStateTransition on a session's release"
                requested = ARCHIVED if offset < s.startOffset else AVAILABLE
                ifs.startStateTransition(record_state.valueOf(requested), ops.NO_OP, self.limit, EMPTY_MEMBER_ID)
            elif name == "AcquisitionLockTimeout":
                question = "tryUpdateState on a lock's timeout"
                requested = ARCHIVED if offset < s.startOffset else AVAILABLE
                ifs.tryUpdateState(record_state.valueOf(requested), ops.NO_OP, self.limit, EMPTY_MEMBER_ID)
                ifs.cancelAndClearAcquisitionLockTimeoutTask()
            else:
                return None, None
        except Exception as exc:  # a Kafka exception is Kafka's answer
            if jvm.is_java_exception(exc):
                return question or name, (jvm.java_exception_text(exc), -1, "", False)
            raise
        return question, (
            str(ifs.state().name()),
            int(ifs.deliveryCount()),
            str(ifs.memberId()),
            bool(ifs.hasOngoingStateTransition()),
        )


def _no_timeout_handler() -> Any:
    """The lock's timeout handler: the model's own step (AcquisitionLockTimeout) does what it does."""
    import jpype

    @jpype.JImplements(FETCH + "AcquisitionLockTimeoutHandler")
    class NoTimeoutHandler:
        @jpype.JOverride
        def handle(self, memberId: Any, firstOffset: Any, lastOffset: Any, timerTask: Any) -> None:
            return None

    return NoTimeoutHandler()
