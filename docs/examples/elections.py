"""Leader elections of one Kafka partition: the first model of docs/writing-a-model.md."""

from dataclasses import dataclass
from typing import NamedTuple

from kmc.checker import Action, Model, Preset, param


class Partition(NamedTuple):
    leader: int
    leaderEpoch: int
    isr: frozenset[int]


@dataclass(frozen=True)
class ElectionsConfig:
    replicas: int = param(3, "the replication factor", min=2, max=5)
    max_leader_epoch: int = param(3, "the largest leader epoch", min=0)
    unclean_leader_election: bool = param(False, "elect a replica outside the ISR when the leader is alone in it")


PRESETS = {"unclean": Preset("unclean.leader.election.enable=true", {"unclean_leader_election": True})}


class Elections(Model):
    name = "elections"
    description = "leader elections from the ISR"
    Config = ElectionsConfig
    presets = PRESETS
    spec_modules = ("elections_specs",)  # elections_specs.py, next to this file
    actions = ("ShrinkIsr", "ExpandIsr", "ElectLeader", "UncleanElectLeader")

    def init_states(self):
        return [Partition(leader=0, leaderEpoch=0, isr=frozenset(range(self.config.replicas)))]

    def successors(self, s):
        for r in sorted(s.isr - {s.leader}):  # a follower falls behind
            yield Action("ShrinkIsr", replica=r), s._replace(isr=s.isr - {r})
        for r in range(self.config.replicas):  # a follower catches up
            if r not in s.isr:
                yield Action("ExpandIsr", replica=r), s._replace(isr=s.isr | {r})
        if s.leaderEpoch == self.config.max_leader_epoch:
            return
        for r in sorted(s.isr - {s.leader}):  # the leader fails: the controller elects from the ISR
            yield Action("ElectLeader", leader=r), Partition(r, s.leaderEpoch + 1, s.isr - {s.leader})
        if self.config.unclean_leader_election and s.isr == {s.leader}:
            for r in range(self.config.replicas):  # no one else in the ISR: any live replica
                if r != s.leader:
                    yield Action("UncleanElectLeader", leader=r), Partition(r, s.leaderEpoch + 1, frozenset({r}))

    def inactive_actions(self):
        return () if self.config.unclean_leader_election else ("UncleanElectLeader",)
