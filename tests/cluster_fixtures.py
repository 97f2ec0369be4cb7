"""Metadata logs decoded from real campaigns (Kafka 4.3.1, three nodes), stored so that the
validation and the decoding are tested without starting a cluster: ``unclean`` (min ISR 1, unclean
election on: both followers cut off, the leader crashed, an unclean election, a stop) and
``faults`` (a seeded schedule of pauses, partitions and a crashed leader). The decoder's output is
kept as Kafka printed it, without its NO_OP records."""

from __future__ import annotations

import json
from pathlib import Path

from kmc.cluster.metadata import MetadataLog, parse
from kmc.cluster.observed import Observations, observations

DATA = Path(__file__).resolve().parent / "data" / "cluster"


def decoded(name: str) -> dict[int, MetadataLog]:
    text = (DATA / f"{name}-metadata.txt").read_text()
    files = {line[len("Dumping ") :] for line in text.splitlines() if line.startswith("Dumping ")}
    return parse(text, {path: int(path.split("/")[0].split("-")[1]) for path in files})


def observed(name: str) -> Observations:
    """The observations of a stored run, with its bootstrap voters and its nodes' settings."""
    run = json.loads((DATA / f"{name}-run.json").read_text())
    voters = tuple((node, directory) for node, directory in run["voters"])
    return observations(decoded(name), voters, run["settings"])
