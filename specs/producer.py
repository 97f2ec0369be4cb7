"""Properties of the `producer` model: what the idempotent producer promises about one partition's log.

They speak of every replica's whole log, including the head that retention deleted: a consumer may
have read a duplicate or a reordered pair before it was deleted.
"""

from __future__ import annotations

from kmc.checker import eventually, invariant
from kmc.models.producer.model import NO_PRODUCER_ID, ProducerModel, ProducerState


@invariant
def NoDuplicates(s: ProducerState) -> bool:
    """No record is written twice to a partition's log."""
    for replica in s.replicas:
        records = [b.record for b in replica.log]
        if len(records) != len(set(records)):
            return False
    return True


@invariant
def PerProducerOrder(s: ProducerState) -> bool:
    """The records of one producer appear in a log in the order the application sent them (the
    first copy of each; a second copy is NoDuplicates' concern)."""
    for replica in s.replicas:
        seen: list[int] = []
        for b in replica.log:
            if b.record not in seen:
                seen.append(b.record)
        if seen != sorted(seen):
            return False
    return True


@invariant
def AcknowledgedSendNeverLost(s: ProducerState, model: ProducerModel) -> bool:
    """Every send the producer completed successfully is in the leader's log. With acks=all Kafka
    promises it; acks=1 promises less, and acks=0 promises nothing (no send is ever acknowledged)."""
    if model.config.acks == "0":
        return True
    records = {b.record for b in s.replicas[s.leader].log}
    return s.acked <= records


@invariant
def EpochFencing(s: ProducerState) -> bool:
    """A batch of an older producer epoch is never appended after a newer epoch's batch of the same
    producer id."""
    for replica in s.replicas:
        newest: dict[int, int] = {}
        for b in replica.log:
            if b.producerId == NO_PRODUCER_ID:
                continue
            if b.producerEpoch < newest.get(b.producerId, b.producerEpoch):
                return False
            newest[b.producerId] = max(newest.get(b.producerId, b.producerEpoch), b.producerEpoch)
    return True


@invariant
def SendFailsOnlyByTimeout(s: ProducerState, model: ProducerModel) -> bool:
    """An idempotent producer's send fails only once a batch reached delivery.timeout.ms: a healthy
    producer is never failed because a leader forgot its state (retention, expiry, a new leader)."""
    if not model.config.enable_idempotence:
        return True
    return not s.failed or s.timeouts > 0


@invariant
def ProducerNeverFatal(s: ProducerState) -> bool:
    """The producer never reaches a fatal error: nothing here fences it, so a fatal error would be a
    healthy producer made defunct by a broker that forgot its state (a transactional producer before
    KIP-360: every record it holds fails, and the application must close it)."""
    return not s.client.fatalError


@eventually
def EverySendCompletes(s: ProducerState) -> bool:
    """Every record the application sent is eventually acknowledged or reported failed: the client
    never retries forever (under weak fairness of the protocol's own steps; faults are bounded)."""
    return not s.client.batches
