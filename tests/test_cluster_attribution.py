"""Whose doing a duplicate is, from the headers of the batches that hold its two copies."""

from __future__ import annotations

from kmc.cluster.attribution import ProducerBatch, attribute, blame, longest_copies, parse_batches


def header(base: int, last: int, seq: int, pid: int, epoch: int, leader_epoch: int = 1) -> str:
    """One batch line as DumpLogSegments prints it."""
    last_seq = seq + last - base if seq >= 0 else -1
    return (
        f"baseOffset: {base} lastOffset: {last} count: {last - base + 1} baseSequence: {seq} lastSequence: {last_seq} "
        f"producerId: {pid} producerEpoch: {epoch} partitionLeaderEpoch: {leader_epoch} isTransactional: false "
        "isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1 size: 75 magic: 2 "
        "compresscodec: none crc: 1 isvalid: true"
    )


def batch(base: int, last: int, seq: int, pid: int, epoch: int) -> ProducerBatch:
    return ProducerBatch(base, last, seq, seq + last - base if seq >= 0 else -1, pid, epoch, 1, False, False)


def test_the_longest_copy_of_each_partition_is_read() -> None:
    files = {"/n1/kmc-0/0.log": ("kmc-0", 1), "/n2/kmc-0/0.log": ("kmc-0", 2)}
    text = "\n".join(
        [
            "Dumping /n1/kmc-0/0.log",
            "Log starting offset: 0",
            header(0, 1, 0, 7, 0),
            "Dumping /n2/kmc-0/0.log",
            "Log starting offset: 0",
            header(0, 1, 0, 7, 0),
            header(2, 4, 2, 7, 0),
        ]
    )
    copies = parse_batches(text, files)
    assert [len(copies[("kmc-0", n)]) for n in (1, 2)] == [1, 2]
    assert longest_copies(copies)["kmc-0"] == [batch(0, 1, 0, 7, 0), batch(2, 4, 2, 7, 0)]


def test_a_resend_under_a_bumped_epoch_is_the_client_s() -> None:
    # Values 10 and 11 written at offsets 0-1 (epoch 3, sequences 0-1) and again at 2-4 with value 12
    # (epoch 4, its sequences from 0 again): the broker could not know them.
    batches = {"kmc-0": [batch(0, 1, 0, 1000, 3), batch(2, 4, 0, 1000, 4)]}
    [found] = attribute({"kmc-0": {10: [0, 2], 11: [1, 3]}}, batches)
    assert (found.by, found.values) == ("client", 2)
    assert found.describe() == (
        "2 value(s) of kmc-0 written twice, at offsets 0-1, by producerId 1000 at producerEpoch 3, sequences 0-1, "
        "leader epoch 1, and again at offsets 2-4, by producerId 1000 at producerEpoch 4, sequences 0-2, leader "
        "epoch 1: the client sent them again after bumping its producer epoch, which starts the sequences again "
        "at 0; the broker deduplicates only within one epoch"
    )


def test_the_same_sequence_twice_in_one_epoch_is_the_broker_s() -> None:
    by, reason = blame(batch(0, 1, 5, 1000, 3), batch(7, 8, 5, 1000, 3), 0, 7)
    assert (by, reason) == ("broker", "the broker appended the same sequences of one producer twice within one epoch")
    assert blame(batch(0, 1, 5, 1000, 3), batch(7, 8, 9, 1000, 3), 0, 7)[0] == "client"


def test_without_idempotence_or_across_producer_ids_it_is_the_client_s() -> None:
    assert blame(batch(0, 0, -1, -1, -1), batch(1, 1, -1, -1, -1), 0, 1)[1].startswith("the producer is not idempotent")
    assert blame(batch(0, 0, 0, 1, 0), batch(1, 1, 0, 2, 0), 0, 1)[1].startswith("the second copies came from another")


def test_a_copy_whose_segment_is_gone_is_not_attributed() -> None:
    assert attribute({"kmc-0": {10: [0, 9]}}, {"kmc-0": [batch(0, 1, 0, 1, 0)]}) == []
