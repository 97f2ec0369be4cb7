"""How a producer trace is drawn: lanes for the client and the two brokers; tables for the client's
batches, each broker's log and producer state, and the requests in flight."""

from __future__ import annotations

from kmc.checker import Action
from kmc.checker.drawing import Arrow, Drawing, Table, describe
from kmc.models.producer.broker import (
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NONE,
    Batch,
    ProducerStateEntry,
)
from kmc.models.producer.state import ClientBatch, ProducerState, high_watermark


# -- how traces are drawn --------------------------------------------------------------------------
def _batch(b: Batch) -> str:
    if b.producerId == NO_PRODUCER_ID:
        return f"r{b.record}"
    return f"r{b.record}(p{b.producerId} e{b.producerEpoch} s{b.baseSequence})"


def _client_batch(b: ClientBatch) -> str:
    sequence = f"/s{b.baseSequence}" if b.baseSequence != NO_SEQUENCE else ""
    return f"r{b.record}{sequence}" + ("*" if b.inFlight else "")


def _entry(e: ProducerStateEntry) -> str:
    cached = " ".join(f"s{m.lastSeq}@{m.lastOffset}" for m in e.batchMetadata)
    return f"p{e.producerId} e{e.producerEpoch} [{cached}]"


class ProducerDrawing(Drawing):
    """Lanes: the producer and both brokers. Tables: the client's sequences and batches, each
    replica's log and producer state (epoch and cached batches), what the application was told."""

    BROKERS = ("broker 0", "broker 1")

    def lanes(self) -> list[str]:
        return ["producer", *self.BROKERS]

    def arrow(self, action: Action, before: ProducerState, after: ProducerState) -> Arrow:
        a, name = action.args, action.name
        if name == "SendProduce":
            req = after.requests[-1]
            return Arrow("producer", (self.BROKERS[req.broker],), f"Produce {_batch(req.batch)}")
        if name == "HandleProduce":
            outcome = a["outcome"]
            note = f"r{a['record']}: " + ("appended" if outcome == NONE else outcome.lower().replace("_", " "))
            return Arrow(self.BROKERS[a["broker"]], ("producer",), note)
        if name == "HandleProduceResponse":
            return Arrow("producer", (), f"r{a['record']} {a['error']}")
        if name == "Disconnect":
            return Arrow("producer", (), f"connection {a['connection']} drops")
        if name == "BumpEpoch":
            return Arrow("producer", (), f"bump to p{a['producerId']} e{a['producerEpoch']}")
        if name == "Replicate":
            leader = 1 - a["follower"]
            return Arrow(self.BROKERS[leader], (self.BROKERS[a["follower"]],), f"Fetch offset {a['offset']}")
        if name == "ElectLeader":
            old = 1 - a["broker"]
            return Arrow(self.BROKERS[a["broker"]], (self.BROKERS[old],), f"leader, epoch {a['leaderEpoch']}")
        if name == "DeleteRecords":
            return Arrow(self.BROKERS[a["broker"]], (), f"log start offset {a['logStartOffset']}")
        if name == "ExpireProducer":
            return Arrow(self.BROKERS[a["broker"]], (), f"expire producer {a['producerId']}")
        return Arrow("producer")

    def tables(self, state: ProducerState) -> list[Table]:
        c = state.client
        batches = " ".join(_client_batch(b) for b in c.batches)
        client = Table(
            "producer (* = in flight)",
            ["producerId", "epoch", "nextSequence", "lastAckedSequence", "batches", "bump", "acked", "failed"],
            [
                [
                    str(c.producerId),
                    str(c.producerEpoch),
                    str(c.nextSequence),
                    str(c.lastAckedSequence),
                    batches or "-",
                    "yes" if c.epochBumpRequired else "-",
                    describe(state.acked),
                    describe(state.failed),
                ]
            ],
        )
        rows = []
        hw = high_watermark(state)
        for b, r in enumerate(state.replicas):
            log = " ".join(f"{o}:{_batch(x)}" for o, x in enumerate(r.log)) or "(empty)"
            cache = "; ".join(_entry(e) for e in r.producers)
            role = f"leader e{state.leaderEpoch}" if b == state.leader else "follower"
            rows.append([f"broker {b}", role, log, str(r.logStartOffset), str(hw), cache or "-"])
        replicas = Table(
            "replicas (log = offset:record(producerId epoch sequence))",
            ["", "role", "log", "logStartOffset", "HW", "producer state"],
            rows,
        )
        return [client, replicas]
