"""The assignors held to Kafka's own: ``assignors`` (a table of inputs) and ``group-assignment``
(every assignment the group model's leader computes).

Both ask ``ConsumerPartitionAssignor.assign(Cluster, GroupSubscription)`` of kafka-clients'
``RangeAssignor``, ``RoundRobinAssignor``, ``StickyAssignor`` and ``CooperativeStickyAssignor``
with the facts a :class:`~kmc.models.group.assignors.Member` carries:

* topics -> ``Subscription.topics``; static members -> ``setGroupInstanceId``; no rack;
* ownedPartitions and generation -> ``Subscription.ownedPartitions`` and ``generationId`` (what
  ``CooperativeStickyAssignor`` reads), and for ``StickyAssignor`` also its user data (its own V1
  schema: the partitions by topic, then the generation), which is all it reads; a member with no
  owned partitions and no generation sends no user data, as a consumer that never had an assignment;
* the subscriptions map is a ``java.util.HashMap`` filled in the members' order, as
  ``ConsumerCoordinator.onLeaderElected`` fills it from the JoinGroup response;
* the ``Cluster`` has every partition of the layout (a topic with no partition has no metadata).

A sticky assignor keeps state between calls (``maxGeneration`` only grows), so each question gets a
fresh instance: the answer is that of a leader's first assignment with this assignor object.
Kafka's ``IllegalStateException``/``NullPointerException`` is compared by its class name and, for
the former, its message; ours is :class:`~kmc.models.group.assignors.AssignorStateError` (and its
``AssignorNullPointerError``), written the same way.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from kmc.checker.conformance.oracle import Comparison, InputOracle, Oracle
from kmc.checker.errors import UserError
from kmc.checker.model import Action, Model, State
from kmc.models.group.assignors import (
    NO_GENERATION,
    STRATEGIES,
    AssignorStateError,
    Member,
    TopicPartition,
    assign,
)
from kmc.oracles import jvm

Answer = tuple[tuple[str, tuple[TopicPartition, ...]], ...] | str
"""An assignment as (member id, sorted partitions) pairs sorted by member id, or an exception's text."""

ASSIGNOR_CLASSES = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}

# -- The exhaustive table (shared with tests/test_assignors.py) ------------------------------------
SUBSCRIPTIONS = (("t0",), ("t1",), ("t0", "t1"))
LAYOUTS = [(a, b) for a in range(1, 5) for b in range(0, 5 - a)]
"""(partitions of t0, partitions of t1), at most 4 in all; t1 has none when b == 0."""


def layout_of(a: int, b: int) -> dict[str, int]:
    return {"t0": a, "t1": b} if b else {"t0": a}


def every_input(max_partitions: int = 4) -> Iterator[tuple[list[Member], dict[str, int]]]:
    """1-3 members with every subscription, every exclusive ownership of the partitions, every
    member static or dynamic, and the first member either current or one generation behind
    (layouts of at most ``max_partitions`` partitions)."""
    for a, b in LAYOUTS:
        if a + b > max_partitions:
            continue
        layout = layout_of(a, b)
        parts = [(t, p) for t, n in layout.items() for p in range(n)]
        for count in (1, 2, 3):
            for subs in itertools.product(SUBSCRIPTIONS, repeat=count):
                for owners in itertools.product(range(count + 1), repeat=len(parts)):
                    for stale_first, static_first in itertools.product((False, True), repeat=2):
                        if count == 1 and stale_first:
                            continue
                        members = []
                        for i in range(count):
                            owned = tuple(tp for tp, o in zip(parts, owners, strict=True) if o == i)
                            generation = 4 if (i == 0 and stale_first) else 5
                            instance = "z-static" if (i == 0 and static_first) else None
                            members.append(Member(f"m{i}", subs[i], owned, generation, instance))
                        yield members, layout


EXHAUSTIVE_INPUTS = 151_140
"""Inputs of :func:`every_input`: per layout of P partitions and c members, 3^c subscriptions,
(c + 1)^P ownerships, 2 or 4 variants."""


def generated_inputs(examples: int, seed: int) -> list[tuple[list[Member], dict[str, int]]]:
    """``examples`` larger inputs drawn by Hypothesis with a fixed seed: up to 8 members with ids
    drawn from a pool (so hash order differs from id order), 4 topics, 6 partitions per topic,
    overlapping owned partitions (also of unsubscribed topics), generations -1..3, static members."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    topics = ("t0", "t1", "t2", "t3")

    @st.composite
    def groups(draw: st.DrawFn) -> tuple[list[Member], dict[str, int]]:
        layout = {t: draw(st.integers(0, 6)) for t in topics}
        parts = [(t, p) for t in topics for p in range(layout[t])]
        ids = draw(st.lists(st.integers(0, 99), min_size=1, max_size=8, unique=True))
        instances = iter(draw(st.permutations([f"i{k}" for k in range(8)])))
        members = []
        for n in ids:
            subscribed = tuple(sorted(draw(st.sets(st.sampled_from(topics), min_size=1))))
            owned = tuple(draw(st.lists(st.sampled_from(parts), unique=True, max_size=8))) if parts else ()
            generation = draw(st.integers(-1, 3))
            instance = next(instances) if draw(st.booleans()) else None
            members.append(Member(f"consumer-{n}", subscribed, owned, generation, instance))
        return members, layout

    drawn: list[tuple[list[Member], dict[str, int]]] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(groups())
    def collect(group: tuple[list[Member], dict[str, int]]) -> None:
        drawn.append(group)

    collect()
    return drawn


# -- Asking Kafka ----------------------------------------------------------------------------------
def sticky_user_data(owned: Sequence[TopicPartition], generation: int) -> bytes:
    """``StickyAssignor``'s subscription user data, schema V1: [topic, [partition]] then generation."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in owned:
        by_topic.setdefault(topic, []).append(p)
    out = [struct.pack(">i", len(by_topic))]
    for topic, partitions in by_topic.items():
        name = topic.encode()
        out.append(struct.pack(">h", len(name)) + name)
        out.append(struct.pack(f">i{len(partitions)}i", len(partitions), *partitions))
    out.append(struct.pack(">i", generation))
    return b"".join(out)


def our_answer(strategy: str, members: Sequence[Member], layout: Mapping[str, int]) -> Answer:
    try:
        result = assign(strategy, members, layout)
    except AssignorStateError as exc:
        if exc.java_exception == "IllegalStateException":
            return f"{exc.java_exception}: {exc}"
        return exc.java_exception
    return tuple(sorted((m, tuple(sorted(parts))) for m, parts in result.items()))


class KafkaAssignors:
    """Calls kafka-clients' assignors through JPype, with the Java objects that do not change
    between questions (clusters per layout, topic lists, partitions) built once."""

    def __init__(self, release: str | None) -> None:
        self.release = jvm.start(release)
        j = jvm.jclass
        self.Subscription = j("org.apache.kafka.clients.consumer.ConsumerPartitionAssignor$Subscription")
        self.GroupSubscription = j("org.apache.kafka.clients.consumer.ConsumerPartitionAssignor$GroupSubscription")
        self.HashMap = j("java.util.HashMap")
        self.ArrayList = j("java.util.ArrayList")
        self.Arrays = j("java.util.Arrays")
        self.Optional = j("java.util.Optional")
        self.ByteBuffer = j("java.nio.ByteBuffer")
        self.TopicPartition = j("org.apache.kafka.common.TopicPartition")
        self.classes = {s: j(name) for s, name in ASSIGNOR_CLASSES.items()}
        self.stateless = {s: self.classes[s]() for s in ("range", "roundrobin")}
        self.no_rack = self.Optional.empty()
        self._clusters: dict[tuple[tuple[str, int], ...], Any] = {}
        self._topic_lists: dict[tuple[str, ...], Any] = {}
        self._partitions: dict[TopicPartition, Any] = {}
        self._instances: dict[str, Any] = {}
        self._subscriptions: dict[tuple[bool, Member], tuple[Any, Any]] = {}
        self.exception_type = j("java.lang.Exception")

    def cluster(self, layout: Mapping[str, int]) -> Any:
        key = tuple(sorted(layout.items()))
        cluster = self._clusters.get(key)
        if cluster is None:
            j = jvm.jclass
            Node, PartitionInfo = j("org.apache.kafka.common.Node"), j("org.apache.kafka.common.PartitionInfo")
            no_nodes = jvm.jclass("java.lang.reflect.Array").newInstance(Node, 0)
            infos = self.ArrayList()
            for topic, count in key:
                for p in range(count):
                    infos.add(PartitionInfo(topic, p, Node.noNode(), no_nodes, no_nodes))
            HashSet = j("java.util.HashSet")
            cluster = j("org.apache.kafka.common.Cluster")("kmc", self.ArrayList(), infos, HashSet(), HashSet())
            self._clusters[key] = cluster
        return cluster

    def topic_list(self, topics: tuple[str, ...]) -> Any:
        found = self._topic_lists.get(topics)
        if found is None:
            found = self._topic_lists[topics] = self.Arrays.asList(topics)
        return found

    def partition_list(self, parts: Sequence[TopicPartition]) -> Any:
        out = self.ArrayList()
        for tp in parts:
            jtp = self._partitions.get(tp)
            if jtp is None:
                jtp = self._partitions[tp] = self.TopicPartition(tp[0], tp[1])
            out.add(jtp)
        return out

    def subscription(self, strategy: str, m: Member) -> Any:
        """The member's ``Subscription``, built once per (member, user data or not): building one
        through JPype costs more than the assignment. A cached ``StickyAssignor`` user data buffer
        is rewound before each use (the assignor reads it to its end)."""
        sticky = strategy == "sticky"
        cached = self._subscriptions.get((sticky, m))
        if cached is not None:
            sub, user_data = cached
            if user_data is not None:
                user_data.rewind()
            return sub
        user_data = None
        if sticky and (m.ownedPartitions or m.generation != NO_GENERATION):
            user_data = self.ByteBuffer.wrap(sticky_user_data(m.ownedPartitions, m.generation))
        sub = self.Subscription(
            self.topic_list(m.topics), user_data, self.partition_list(m.ownedPartitions), m.generation, self.no_rack
        )
        if m.groupInstanceId is not None:
            instance = self._instances.get(m.groupInstanceId)
            if instance is None:
                instance = self._instances[m.groupInstanceId] = self.Optional.of(m.groupInstanceId)
            sub.setGroupInstanceId(instance)
        if len(self._subscriptions) >= 200_000:
            self._subscriptions.clear()
        self._subscriptions[(sticky, m)] = (sub, user_data)
        return sub

    def answer(self, strategy: str, members: Sequence[Member], layout: Mapping[str, int]) -> Answer:
        subscriptions = self.HashMap()
        for m in members:
            subscriptions.put(m.memberId, self.subscription(strategy, m))
        assignor = self.stateless.get(strategy) or self.classes[strategy]()
        try:
            result = assignor.assign(self.cluster(layout), self.GroupSubscription(subscriptions))
        except self.exception_type as exc:
            name = exc.getClass().getSimpleName()
            return jvm.java_exception_text(exc) if name == "IllegalStateException" else name
        return _parse_group_assignment(str(result.groupAssignment()))


def _parse_group_assignment(text: str) -> tuple[tuple[str, tuple[TopicPartition, ...]], ...]:
    """Read ``{member=Assignment(partitions=[t-0, ...], userDataSize=0), ...}`` (one call into Java for
    the whole answer instead of one per partition; topic and member names here have no ``=,[]``)."""
    out = []
    body = text[1:-1]
    for entry in body.split("), ") if body else ():
        member, _, rest = entry.partition("=Assignment(partitions=[")
        listed = rest[: rest.index("]")]
        parts = []
        for item in listed.split(", ") if listed else ():
            topic, _, p = item.rpartition("-")
            parts.append((topic, int(p)))
        out.append((member, tuple(sorted(parts))))
    return tuple(sorted(out))


def _inputs(strategy: str, members: Sequence[Member], layout: Mapping[str, int]) -> dict[str, Any]:
    return {
        "strategy": strategy,
        "partitions_per_topic": dict(layout),
        "members": [
            {
                "memberId": m.memberId,
                "topics": list(m.topics),
                "ownedPartitions": [list(tp) for tp in m.ownedPartitions],
                "generation": m.generation,
                "groupInstanceId": m.groupInstanceId,
            }
            for m in members
        ],
    }


# -- assignors: the table --------------------------------------------------------------------------
class AssignorOracle(InputOracle):
    """``--set strategy=range|roundrobin|sticky|cooperative-sticky|all``, ``table=exhaustive|hypothesis|
    both``, ``max_partitions=P`` (exhaustive layouts of at most P partitions, 1-4, default 4),
    ``hypothesis_examples=N`` (default 300), ``seed=S`` (default 0)."""

    name = "assignors"
    reference = tuple(ASSIGNOR_CLASSES.values())
    description = "kafka-clients' assignors give the assignment kmc.models.group.assignors.assign gives"
    SETTINGS = ("strategy", "table", "max_partitions", "hypothesis_examples", "seed")

    def __init__(self, release: str | None = None, settings: Mapping[str, str] | None = None) -> None:
        super().__init__(release, settings)
        unknown = sorted(set(self.settings) - set(self.SETTINGS))
        if unknown:
            raise UserError(f"assignors: unknown setting(s) {', '.join(unknown)}; settings: {', '.join(self.SETTINGS)}")
        strategy = self.settings.get("strategy", "all")
        if strategy != "all" and strategy not in STRATEGIES:
            raise UserError(f"assignors: strategy must be one of {', '.join(STRATEGIES)} or all, not {strategy!r}")
        self.strategies = STRATEGIES if strategy == "all" else (strategy,)
        self.table = self.settings.get("table", "both")
        if self.table not in ("exhaustive", "hypothesis", "both"):
            raise UserError(f"assignors: table must be exhaustive, hypothesis or both, not {self.table!r}")
        try:
            self.examples = int(self.settings.get("hypothesis_examples", "300"))
            self.seed = int(self.settings.get("seed", "0"))
            self.max_partitions = int(self.settings.get("max_partitions", "4"))
        except ValueError:
            raise UserError("assignors: hypothesis_examples, seed and max_partitions must be integers") from None
        if not 1 <= self.max_partitions <= 4:
            raise UserError(f"assignors: max_partitions must be 1-4, not {self.max_partitions}")
        self.kafka = KafkaAssignors(release)

    def cases(self) -> Iterator[tuple[str, Any]]:
        if self.table in ("exhaustive", "both"):
            for members, layout in every_input(self.max_partitions):
                for strategy in self.strategies:
                    yield f"{strategy} (exhaustive)", (strategy, members, layout)
        if self.table in ("hypothesis", "both"):
            for members, layout in generated_inputs(self.examples, self.seed):
                for strategy in self.strategies:
                    yield f"{strategy} (hypothesis)", (strategy, members, layout)

    def ours(self, strategy: str, members: Sequence[Member], layout: Mapping[str, int]) -> Answer:
        """Our answer (a seam for tests that break it)."""
        return our_answer(strategy, members, layout)

    def compare(self, case: Any) -> Iterable[Comparison]:
        strategy, members, layout = case
        yield Comparison(
            question=f"{strategy} assignment",
            ours=self.ours(strategy, members, layout),
            theirs=self.kafka.answer(strategy, members, layout),
            inputs=_inputs(strategy, members, layout),
        )


# -- group-assignment: the group model's leader ----------------------------------------------------
class GroupAssignmentOracle(Oracle):
    """At each step where the group leader receives its JoinGroup response and computes the
    assignment it sends in SyncGroup, ask Kafka's assignor of the configured strategy."""

    name = "group-assignment"
    model_name = "group"
    reference = tuple(ASSIGNOR_CLASSES.values())
    description = "the assignment the group leader sends in SyncGroup is the one Kafka's assignor computes"

    def __init__(self, model: Model, release: str | None = None) -> None:
        super().__init__(model, release)
        self.kafka = KafkaAssignors(release)

    def unsupported(self) -> str | None:
        config = self.model.config  # type: ignore[attr-defined]
        if config.assignor in ("sticky", "cooperative-sticky") and not config.sanitise_owned_partitions:
            return (
                "sanitise_owned_partitions=false is the sticky assignors before KAFKA-12984; "
                f"Kafka {self.kafka.release} always sanitises"
            )
        if config.assignor in ("sticky", "cooperative-sticky") and not config.keep_uncontested_older_claims:
            return (
                "keep_uncontested_older_claims=false is the sticky assignors before KAFKA-14639; "
                f"Kafka {self.kafka.release} keeps them"
            )
        return None

    def compare_step(self, state: State, action: Action, next_state: State) -> Iterator[Comparison]:
        if not isinstance(action, Action) or action.name != "ReceiveJoinGroup":
            return
        c = action.args.get("consumer")
        consumers = [c] if isinstance(c, int) else range(len(state.consumers))  # type: ignore[attr-defined]
        for index in consumers:
            before = state.consumers[index]  # type: ignore[attr-defined]
            response = before.response
            if response is None or response.api != "JoinGroup" or response.error != "NONE":
                continue
            if response.leaderId != response.memberId or not response.members:
                continue
            request = next_state.consumers[index].request  # type: ignore[attr-defined]
            members = [
                Member(member_id, ("t",), tuple(("t", p) for p in meta[0]), meta[1], instance)
                for member_id, instance, meta in response.members
            ]
            layout = {"t": self.model.config.partitions}  # type: ignore[attr-defined]
            strategy = self.model.config.assignor  # type: ignore[attr-defined]
            if request is None:  # the leader threw: the assignor, or the client's validation of its answer
                ours = our_answer(strategy, members, layout)
            else:
                ours = tuple(sorted((m, tuple(("t", p) for p in sorted(parts))) for m, parts in request.assignment))
            yield Comparison(
                question=f"{strategy} assignment of the leader",
                ours=ours,
                theirs=self.kafka.answer(strategy, members, layout),
                inputs=_inputs(strategy, members, layout),
            )
