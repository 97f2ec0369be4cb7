"""Properties of the `consumer-delivery` model: the delivery guarantees, over what was processed
and what a read_committed consumer of the output sees.

"Committed" is the group's committed offset for the input partition: the records below it are the
ones the group will never read again. The output counts are how often each input record's output
is visible to a read_committed consumer (all of it, for a non-transactional producer).
"""

from __future__ import annotations

from kmc.checker import Action, eventually, invariant, step
from kmc.models.consumer_delivery.model import ILLEGAL_GENERATION, STABLE, STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID
from kmc.models.consumer_delivery.state import NO_OFFSET, STOPPED, DeliveryState


def _committed(s: DeliveryState) -> int:
    return max(s.coordinator.committedOffset, 0)


@invariant
def AtMostOnce(s: DeliveryState) -> bool:
    """No input record's output is seen twice by a read_committed consumer of the output (for a
    non-transactional producer: no record is processed twice)."""
    return all(n <= 1 for n in s.output)


def _in_hand(s: DeliveryState) -> set[int]:
    """The records a running consumer has polled and is processing: not lost yet."""
    return {me.fetched for me in s.consumers if me.phase != STOPPED and me.fetched != NO_OFFSET}


@invariant
def AtLeastOnce(s: DeliveryState) -> bool:
    """Every input record below the committed offset has its output seen by a read_committed
    consumer, or is being processed by a running consumer: the group never moves past a record
    that nobody will process."""
    in_hand = _in_hand(s)
    return all(n >= 1 or o in in_hand for o, n in enumerate(s.output[: _committed(s)]))


@invariant
def ExactlyOnce(s: DeliveryState) -> bool:
    """Each input record below the committed offset has its output seen exactly once (or is being
    processed by a running consumer, not yet written), and no record above it more than once:
    at-least-once and at-most-once together."""
    committed, in_hand = _committed(s), _in_hand(s)
    below = all(n == 1 or (n == 0 and o in in_hand) for o, n in enumerate(s.output[:committed]))
    return below and all(n <= 1 for n in s.output[committed:])


@invariant
def ProcessedAtMostOnce(s: DeliveryState) -> bool:
    """No input record is processed twice: side effects outside Kafka. Exactly-once covers what
    read_committed consumers see, not this: a transaction that aborts is processed again."""
    return all(n <= 1 for n in s.processed)


@step
def NoFalseCommitFencing(s: DeliveryState, action: Action, t: DeliveryState) -> bool:
    """A commit is rejected only from a consumer the group has moved past: never from the member
    that holds the partition, with an epoch it was given while holding it (KIP-1251's
    ``assignmentEpoch <= clientEpoch <= brokerEpoch``). Classic groups have one generation for all
    members; this speaks of KIP-848 member epochs."""
    if action.name not in ("OffsetCommit", "SendOffsetsToTransaction"):
        return True
    if action.args["error"] not in (STALE_MEMBER_EPOCH, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID):
        return True  # accepted, or fenced as a producer (PRODUCER_FENCED), not as a member
    coord = s.coordinator
    member_id, epoch = action.args["memberId"], action.args["generationId"]
    current = next((m.memberEpoch for m in coord.members if m.memberId == member_id), None)
    if coord.state != STABLE or current is None or coord.holder != member_id:
        return True
    return not (coord.assignmentEpoch <= epoch <= current)


@eventually
def EventuallyAllCommitted(s: DeliveryState, model) -> bool:  # type: ignore[no-untyped-def]
    """Progress: the committed offset reaches the end of the input (every fair behaviour, after
    its finitely many faults, commits everything)."""
    return s.coordinator.committedOffset == model.config.records
