"""The `transactions` model against Kafka's ``TransactionMetadata`` and ``TransactionState``.

Kafka's request validation (``TransactionCoordinator``) is Scala in the broker and is not driven
here; what the kafka-transaction-coordinator jar decides on its own is which state transitions are
legal (``TransactionState.validPreviousStates``, checked by ``prepareTransitionTo``), what each
transition does to the producer id and epochs (``prepareIncrementProducerEpoch``,
``prepareProducerIdRotation``, ``prepareFenceProducerEpoch``, ``prepareAddPartitions``,
``prepareAbortOrCommit``, ``prepareComplete``) and whether the result may be installed
(``completeTransitionTo``). Which producer id a rotation allocates, and whether the coordinator
rotates at all, is the Scala coordinator's choice: the model's is passed in.

At every step that changes the coordinator's metadata, a real ``TransactionMetadata`` is built
from the model's metadata before the step, the same prepare method is called with the inputs the
coordinator would pass, the transit is completed, and the resulting (state, producerId,
producerEpoch, lastProducerEpoch, topicPartitions, prevProducerId, nextProducerId) -- or Kafka's
exception -- is compared with
the model's metadata after the step. Every reachable metadata is also asked, for each target
state, whether the transition is legal, and whether it allows expiration.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kmc.checker.conformance.oracle import Comparison, Oracle
from kmc.checker.model import Action
from kmc.models.transactions import coordinator as tcm
from kmc.models.transactions.coordinator import EXPIRATION_ALLOWED, STATES, VALID_PREVIOUS_STATES, TxnMeta
from kmc.models.transactions.model import TransactionsModel, TransactionsState
from kmc.models.transactions.state import request_in_flight

from . import jvm

PKG = "org.apache.kafka.coordinator.transaction."
TRANSACTIONAL_ID = "txn"
TOPIC = "t"
NOW = 1000
"""Every timestamp the model does not track: a transaction's start time is NOW except in Empty (-1)."""
TIMEOUT_MS = 60000

_STEP_METHOD = {
    "HandleInitProducerId": "init",
    "FenceAppendFails": "failed fence",
    "HandleAddPartitionsToTxn": "add",
    "HandleVerifyPartition": "add",
    "HandleEndTxn": "end",
    "WriteTxnCompletion": "complete",
    "TxnTimeout": "timeout",
    "AbortTimedOutTransaction": "timeout",
}


class TransactionStateOracle(Oracle):
    name = "transaction-state"
    model_name = "transactions"
    reference = (PKG + "TransactionMetadata", PKG + "TransactionState", PKG + "TxnTransitMetadata")
    description = "Kafka's TransactionMetadata makes the coordinator's transitions and epoch bumps the model makes"

    def __init__(self, model: TransactionsModel, release: str | None = None) -> None:  # type: ignore[override]
        super().__init__(model, release)
        self.release = jvm.start(self.release)
        self.Metadata = jvm.jclass(PKG + "TransactionMetadata")
        state_enum = jvm.jclass(PKG + "TransactionState")
        self.states = {str(s.stateName()): s for s in state_enum.values()}
        self.names = {str(v.stateName()): k for k, v in self.states.items()}
        self.TopicPartition = jvm.jclass("org.apache.kafka.common.TopicPartition")
        self.HashSet = jvm.jclass("java.util.HashSet")
        self.Optional = jvm.jclass("java.util.Optional")
        self.Short = jvm.jclass("java.lang.Short")
        import jpype

        self.JShort = jpype.JShort
        tv = jvm.jclass("org.apache.kafka.server.common.TransactionVersion")
        self.tv = tv.fromFeatureLevel(model.config.transaction_version)
        self.tv2 = bool(self.tv.supportsEpochBump())
        self.tv0 = tv.TV_0
        """A new transactional id's metadata starts at transaction version 0 (handleInitProducerId)."""

    # -- building Kafka's metadata from the model's ----------------------------------------------
    def _partitions(self, partitions: frozenset[int]) -> Any:
        out = self.HashSet()
        for p in sorted(partitions):
            out.add(self.TopicPartition(TOPIC, p))
        return out

    def _metadata(self, meta: TxnMeta) -> Any:
        start = -1 if meta.state == tcm.EMPTY else NOW
        return self.Metadata(
            TRANSACTIONAL_ID,
            meta.producerId,
            meta.prevProducerId,
            meta.nextProducerId,
            meta.producerEpoch,
            meta.lastProducerEpoch,
            TIMEOUT_MS,
            self.states[meta.state],
            self._partitions(meta.topicPartitions),
            start,
            NOW,
            self.tv,
        )

    def _result(self, md: Any, transit: Any) -> tuple:
        return self._fields(md, int(transit.nextProducerId()))

    @staticmethod
    def _fields(md: Any, next_producer_id: int) -> tuple:
        parts = frozenset(int(tp.partition()) for tp in md.topicPartitions())
        state = str(md.state().stateName())
        epochs = (int(md.producerEpoch()), int(md.lastProducerEpoch()))
        ids = (int(md.prevProducerId()), next_producer_id)
        return (state, int(md.producerId()), *epochs, parts, *ids)

    @staticmethod
    def _ours(meta: TxnMeta) -> tuple:
        epochs = (meta.producerEpoch, meta.lastProducerEpoch)
        ids = (meta.prevProducerId, meta.nextProducerId)
        return (meta.state, meta.producerId, *epochs, meta.topicPartitions, *ids)

    def _kafka(
        self,
        kind: str,
        before: TxnMeta | None,
        action: Action,
        after: TxnMeta,
        expected_epoch: int = -1,
        failed_fence: bool = False,
    ) -> tuple | str:
        """Ask Kafka's metadata for the transition the coordinator makes for this request;
        ``expected_epoch`` is the epoch an InitProducerId carries (KIP-360), -1 for none;
        ``failed_fence`` is the metadata's hasFailedEpochFence (KAFKA-9666). The coordinator's own
        choices -- a new producer id on exhaustion -- are read from ``after``."""
        try:
            if before is None:  # a new transactional id: handleInitProducerId creates it in Empty
                empty = self.states[tcm.EMPTY]
                md = self.Metadata(
                    TRANSACTIONAL_ID,
                    tcm.PRODUCER_ID,
                    -1,
                    -1,
                    -1,
                    -1,
                    TIMEOUT_MS,
                    empty,
                    self.HashSet(),
                    -1,
                    NOW,
                    self.tv0,
                )
            else:
                md = self._metadata(before)
                md.hasFailedEpochFence(failed_fence)
            state = str(md.state().stateName())
            if kind == "failed fence":
                return self._result(md, self._install_fence(md))
            if kind == "timeout" and not self.model.config.kafka_6119:  # the abort alone, at the same epoch
                transit = md.prepareAbortOrCommit(
                    self.states[tcm.PREPARE_ABORT], self.tv, after.nextProducerId, NOW, False
                )
            elif (kind == "init" and state == tcm.ONGOING) or kind == "timeout":
                transit = self._fence_and_abort(md, after.nextProducerId)
                if transit is None:  # the abort overflowed: the fence it left in memory, nothing prepared
                    assert before is not None
                    return self._fields(md, before.nextProducerId)
            elif kind == "init" and before is not None and after.producerId != before.producerId:
                transit = md.prepareProducerIdRotation(after.producerId, TIMEOUT_MS, NOW, expected_epoch != -1)
            elif kind == "init":
                expected = self.Optional.empty()
                if expected_epoch != -1:
                    expected = self.Optional.of(self.Short.valueOf(self.JShort(expected_epoch)))
                transit = md.prepareIncrementProducerEpoch(TIMEOUT_MS, expected, NOW)
            elif kind == "add":
                added = self._partitions(frozenset({action.args["partition"]}))
                transit = md.prepareAddPartitions(added, NOW, self.tv)
            elif kind == "end":
                target = tcm.PREPARE_COMMIT if action.args["commit"] else tcm.PREPARE_ABORT
                empty = state != tcm.ONGOING
                transit = md.prepareAbortOrCommit(self.states[target], self.tv, after.nextProducerId, NOW, empty)
            else:
                transit = md.prepareComplete(NOW)
            md.completeTransitionTo(transit)
            return self._result(md, transit)
        except Exception as exc:  # a Kafka exception is Kafka's answer
            if jvm.is_java_exception(exc):
                return jvm.java_exception_text(exc)
            raise

    def _install_fence(self, md: Any) -> Any:
        """Prepare the epoch fence and drop it as pending, as endTransaction does; under transaction
        version 1 (or 2 before KAFKA-19367) the fenced epoch is installed in memory. That is all a
        fence whose append to __transaction_state failed leaves behind."""
        fence = md.prepareFenceProducerEpoch()
        md.pendingState(self.Optional.empty())
        if not (self.tv2 and self.model.config.kafka_19367):
            md.setProducerEpoch(fence.producerEpoch())
            md.setLastProducerEpoch(-1)
        return fence

    def _fence_and_abort(self, md: Any, next_producer_id: int) -> Any | None:
        """What abortTimedOutTransactions and InitProducerId on an open transaction do: the fence
        installed (``_install_fence``), then the abort prepared instead of it; under version 2 before
        KAFKA-19367 the abort bumped the installed epoch again. None when that bump passes
        Short.MaxValue: prepareTransitionTo throws before KAFKA-20090 (4.3.0, whose metadata keeps an
        abort at Short.MaxValue), and the installed fence is all that is left."""
        self._install_fence(md)
        if self.tv2 and int(md.producerEpoch()) == tcm.SHORT_MAX_VALUE and not self.model.config.kafka_20090:
            return None
        return md.prepareAbortOrCommit(self.states[tcm.PREPARE_ABORT], self.tv, next_producer_id, NOW, False)

    # -- the comparisons -----------------------------------------------------------------------
    def compare_step(
        self, state: TransactionsState, action: Action, next_state: TransactionsState
    ) -> Iterator[Comparison]:
        kind = _STEP_METHOD.get(action.name)
        before, after = state.coordinator.metadata, next_state.coordinator.metadata
        if kind is None or after is None or before == after:
            return
        expected = -1
        if kind == "init":
            client = action.args["client"]
            request = request_in_flight(state, "InitProducerId", client)
            assert request is not None, "an InitProducerId was handled with none in flight"
            expected = request.producerEpoch
        theirs = self._kafka(kind, before, action, after, expected, state.coordinator.hasFailedEpochFence)
        inputs = {"before": self._ours(before) if before else None, "action": repr(action)}
        yield Comparison(f"{kind} transition", self._ours(after), theirs, inputs)

    def compare_state(self, state: TransactionsState) -> Iterator[Comparison]:
        meta = state.coordinator.metadata
        if meta is None:
            return
        kafka_state = self.states[meta.state]
        for target in STATES:
            ours = meta.state in VALID_PREVIOUS_STATES[target]
            theirs = bool(self.states[target].validPreviousStates().contains(kafka_state))
            yield Comparison(f"legal {meta.state} -> {target}", ours, theirs, {"state": meta.state})
        yield Comparison(
            "isExpirationAllowed",
            meta.state in EXPIRATION_ALLOWED,
            bool(kafka_state.isExpirationAllowed()),
            {"state": meta.state},
        )
