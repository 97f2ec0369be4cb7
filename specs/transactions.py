"""Properties of the `transactions` model: what Kafka's exactly-once delivery promises consumers.

"Visible" is what a read_committed consumer can fetch: data below the last stable offset whose
transaction ended with a COMMIT marker (the aborted-transaction index removes the rest). Records
carry, as ghosts, the application's transaction they were sent in; markers carry the coordinator's
decision (its PrepareCommit or PrepareAbort) they were written for.
"""

from __future__ import annotations

from kmc.checker import Action, invariant, leads_to, step
from kmc.models.transactions.coordinator import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    ONGOING,
    PREPARE_ABORT,
    PREPARE_COMMIT,
    is_valid_transition,
)
from kmc.models.transactions.log import closing_markers, last_stable_offset, read_committed
from kmc.models.transactions.model import (
    ABORTABLE_ERROR,
    FATAL_ERROR,
    UNINITIALIZED,
    TransactionsModel,
    TransactionsState,
    producers_stopped,
)


def _fates(s: TransactionsState) -> dict[int, list[tuple[int, int]]]:
    """Application transaction -> [(partition, decision closing its record, or -1 while open)]."""
    out: dict[int, list[tuple[int, int]]] = {}
    for i, p in enumerate(s.partitions):
        closing = closing_markers(p)
        for offset, batch in enumerate(p.log):
            if not batch.control:
                decision = p.log[closing[offset]].txn if closing[offset] != -1 else -1
                out.setdefault(batch.txn, []).append((i, decision))
    return out


@invariant
def AtomicVisibility(s: TransactionsState) -> bool:
    """All of a transaction's records are decided by one coordinator decision: once one is closed by
    a marker, every other is closed by the same decision or is still open on a partition whose
    marker of that decision is yet to be written. Otherwise some of it is committed and some aborted,
    or it is committed in two pieces (a torn transaction)."""
    for records in _fates(s).values():
        decided = {d for _, d in records if d != -1}
        if len(decided) > 1:
            return False
        if not decided:
            continue
        [d] = decided
        decision = s.decisions[d]
        for partition, closed in records:
            if closed == -1:
                written = any(b.control and b.txn == d for b in s.partitions[partition].log)
                if partition not in decision.partitions or written:
                    return False
    return True


@invariant
def AbortedNeverVisible(s: TransactionsState) -> bool:
    """A read_committed consumer never sees a record of a transaction the producer aborted (or that
    failed): neither in what a fetch would return now nor in what the consumer was given."""
    if any(b.txn in s.aborted for p in s.partitions for _, b in read_committed(p)):
        return False
    return all(p.log[o].txn not in s.aborted for p, got in zip(s.partitions, s.consumed, strict=True) for o in got)


@invariant
def ReadCommittedSeesOnlyCommitted(s: TransactionsState) -> bool:
    """Every record the read_committed consumer was given belongs to a transaction that committed:
    none of an open transaction, none of an aborted one."""
    for p, got in zip(s.partitions, s.consumed, strict=True):
        if not got:
            continue
        closing = closing_markers(p)
        if any(closing[o] == -1 or not p.log[closing[o]].commit for o in got):
            return False
    return True


@invariant
def ReadCommittedBoundedByLso(s: TransactionsState) -> bool:
    """A read_committed consumer never fetches past the LSO, and the LSO never passes the HW."""
    return all(
        pos <= last_stable_offset(p) <= len(p.log) for p, pos in zip(s.partitions, s.consumerPositions, strict=True)
    )


@invariant
def OpenTransactionKnownToCoordinator(s: TransactionsState) -> bool:
    """A transaction open on a partition is one the coordinator will close: its metadata is Ongoing
    with the partition, or prepared with the partition's marker still to be acknowledged. Otherwise
    nothing will ever write its marker and the partition's LSO hangs (a hanging transaction)."""
    co = s.coordinator
    meta = co.metadata
    for i, p in enumerate(s.partitions):
        if p.currentTxnFirstOffset == -1:
            continue
        if meta is None:
            return False
        if meta.state == ONGOING and i in meta.topicPartitions:
            continue
        if meta.state in (PREPARE_COMMIT, PREPARE_ABORT) and i in co.pendingMarkers:
            continue
        return False
    return True


@invariant
def CoordinatorEpochNeverRegresses(s: TransactionsState) -> bool:
    """The markers in a partition's log carry non-decreasing coordinator epochs: once a new
    coordinator has written, its predecessor's late markers are refused (TRANSACTION_COORDINATOR_FENCED)."""
    for p in s.partitions:
        newest = -1
        for b in p.log:
            if b.control:
                if b.coordinatorEpoch < newest:
                    return False
                newest = b.coordinatorEpoch
    return True


@step
def LegalCoordinatorTransition(s: TransactionsState, action: Action, t: TransactionsState) -> bool:
    """Every change of the coordinator's state is one TransactionState allows, and the producer epoch
    never goes back (a rotation on epoch exhaustion starts again at 0 under a newer producer id)."""
    before, after = s.transactionLog, t.transactionLog
    if before is None or after is None or before == after:
        return True
    if before.state != after.state and not is_valid_transition(before.state, after.state):
        return False
    if after.state == before.state and before.state not in (ONGOING,) and action.name != "HandleInitProducerId":
        return False
    return (after.producerId, after.producerEpoch) >= (before.producerId, before.producerEpoch)


@invariant
def UniqueLiveProducerIdentity(s: TransactionsState) -> bool:
    """No two producers that are not fenced hold the same producer id and epoch."""
    held = [(c.producerId, c.producerEpoch) for c in s.clients if c.producerId != -1 and c.state != FATAL_ERROR]
    return len(held) == len(set(held))


@invariant
def FencedOnlyByANewerProducer(s: TransactionsState) -> bool:
    """A producer is fenced (a fatal error) only by another incarnation of its transactional id or by
    the coordinator aborting its transaction on a timeout, never by answers to its own requests."""
    for c, client in enumerate(s.clients):
        if client.state != FATAL_ERROR:
            continue
        other = any(o.state != UNINITIALIZED for i, o in enumerate(s.clients) if i != c)
        if not (other or s.txnTimeouts > 0):
            return False
    return True


def _lone_producer_without_faults(s: TransactionsState) -> bool:
    return len(s.clients) == 1 and not (s.requestTimeouts or s.txnTimeouts or s.failovers) and s.nextTxn > 0


@invariant(guard=_lone_producer_without_faults)
def TransactionFailsOnlyByAFault(s: TransactionsState) -> bool:
    """A lone producer whose requests never time out, under a coordinator that neither times its
    transactions out nor fails over, never sees an error: every transaction it ends commits."""
    if not _lone_producer_without_faults(s):
        return True
    return all(c.state not in (ABORTABLE_ERROR, FATAL_ERROR) for c in s.clients)


def _prepared(s: TransactionsState) -> bool:
    meta = s.coordinator.metadata
    return meta is not None and meta.state in (PREPARE_COMMIT, PREPARE_ABORT)


@leads_to(_prepared)
def TransactionCompletes(s: TransactionsState) -> bool:
    """A transaction the coordinator prepared is completed (CompleteCommit or CompleteAbort)."""
    meta = s.coordinator.metadata
    return meta is not None and meta.state in (COMPLETE_COMMIT, COMPLETE_ABORT)


def _producers_stopped(s: TransactionsState, model: TransactionsModel) -> bool:
    return producers_stopped(s, model.config.max_transactions)


@leads_to(_producers_stopped)
def LastStableOffsetAdvances(s: TransactionsState) -> bool:
    """Once producers stop, every partition's LSO reaches its high watermark (no transaction hangs)."""
    return all(last_stable_offset(p) == len(p.log) for p in s.partitions)
