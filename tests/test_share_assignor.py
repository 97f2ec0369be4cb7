"""The share-group assignor port (models/share_group_membership/assignor.py) against Kafka's own
``SimpleAssignor``, called the way the group coordinator calls it: through the real
``ShareTargetAssignmentBuilder`` (which builds the ``GroupSpecImpl``, the members' ``TopicIds`` and the
``SubscribedTopicDescriberImpl``), on a real metadata image, with previous targets read back by
``Assignment.fromRecord`` and the subscription type from ``ModernGroup.subscriptionType``. Exhaustive
over the small inputs, then chained rounds and Hypothesis; a deliberately wrong member order must be
caught. The Java hash order helpers (models/common/java_order.py) are checked against the JDK too."""

from __future__ import annotations

import dataclasses
import itertools
import os
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kmc.checker.errors import UserError
from kmc.models.common import java_order
from kmc.models.common.java_order import JavaHashMap, TopicIdPartition, Uuid
from kmc.models.share_group_membership import assignor
from kmc.models.share_group_membership.assignor import TOPIC_IDS, Member, SimpleAssignorError, TopicPartition
from kmc.oracles import jvm
from kmc.oracles.share_group_membership import KafkaShareClasses as Kafka

Layout = Mapping[str, int]
Outcome = dict[str, frozenset[TopicPartition]] | str
Case = tuple[tuple[Member, ...], Layout, frozenset[TopicPartition]]

IDS = ("m0", "m1", "m2")
OTHER_IDS = (("Z", "a", "c"), ("Aa", "BB", "m1"))
"""Ids a default HashMap walks out of id order ("a", "c", "Z"), and two of equal String.hashCode."""
SUBSCRIPTIONS = tuple(frozenset(s) for s in ({"t0"}, {"t1"}, {"t0", "t1"}))
LAYOUTS: tuple[Layout, ...] = (
    {"t0": 1, "t1": 1},
    {"t0": 2, "t1": 1},
    {"t0": 1, "t1": 2},
    {"t0": 3},
    {"t0": 2, "t1": 2},
)
"""Topics t0/t1 of 1 or 2 partitions, and t0 of 3 alone (t1 then does not exist)."""


def pairs(layout: Layout) -> list[TopicPartition]:
    return [(t, p) for t, n in sorted(layout.items()) for p in range(n)]


def subsets(items: Sequence[TopicPartition], most: int | None = None) -> list[frozenset[TopicPartition]]:
    top = len(items) if most is None else most
    return [frozenset(c) for k in range(top + 1) for c in itertools.combinations(items, k)]


# -- Kafka: the share-group-membership oracle's classes ------------------------------------------
@pytest.fixture(scope="module")
def kafka() -> Kafka:
    if os.environ.get("KMC_SKIP_KAFKA") == "1":
        pytest.skip("needs Kafka's jars and a JDK")
    try:
        version = jvm.start()
    except UserError as exc:
        pytest.skip(str(exc))
    if jvm.release_tuple(version) < (4, 2):
        pytest.skip(f"Kafka {version}'s SimpleAssignor predates the 4.2+ builders this port follows")
    return Kafka()


# -- comparison ------------------------------------------------------------------------------------
def ours(members: Sequence[Member], layout: Layout, assignable: frozenset[TopicPartition]) -> Outcome:
    try:
        return assignor.assign(members, layout, assignable)
    except SimpleAssignorError as exc:
        return exc.java_exception


class MismatchError(AssertionError):
    pass


def describe(case: Case, mine: Outcome, theirs: Outcome) -> str:
    members, layout, assignable = case
    lines = [f"partitions={dict(layout)} assignable={sorted(assignable)}"]
    lines += [f"  {m}: subscribes {sorted(t)}, previous {sorted(p)}" for m, t, p in members]
    for who, outcome in (("ours ", mine), ("kafka", theirs)):
        shown = outcome if isinstance(outcome, str) else {m: sorted(ps) for m, ps in outcome.items()}
        lines.append(f"  {who}: {shown}")
    return "\n".join(lines)


def compare(kafka: Kafka, cases: Iterable[Case], mine: Callable[..., Outcome] = ours) -> Iterator[tuple[Case, Outcome]]:
    """Each case's agreed outcome; the first disagreement raises, naming the input and both answers."""
    for case in cases:
        theirs = kafka.assign(*case)
        answer = mine(*case)
        if answer != theirs:
            raise MismatchError("the port and Kafka disagree on\n" + describe(case, answer, theirs))
        yield case, theirs


def count(results: Iterable[Any]) -> int:
    return sum(1 for _ in results)


def members_of(ids: Sequence[str], subscriptions: Sequence[frozenset[str]], previous: Sequence[frozenset]) -> tuple:
    return tuple(zip(ids, subscriptions, previous, strict=False))


# -- exhaustive ------------------------------------------------------------------------------------
def every_case_with_arbitrary_previous(
    sizes: Iterable[int], layouts: Sequence[Layout], most: int | None = None
) -> Iterator[Case]:
    """Every subscription, assignable set and previous target (any subset of the partitions, of at
    most ``most`` of them), for groups of each size."""
    for layout in layouts:
        everything, previous_targets = subsets(pairs(layout)), subsets(pairs(layout), most)
        for n in sizes:
            for subs in itertools.product(SUBSCRIPTIONS, repeat=n):
                for assignable_ in everything:
                    for previous in itertools.product(previous_targets, repeat=n):
                        yield members_of(IDS, subs, previous), layout, assignable_


def test_one_and_two_members_with_any_previous_target(kafka: Kafka) -> None:
    """1 and 2 members, up to 3 partitions: every subscription, assignable set and previous targets."""
    cases = every_case_with_arbitrary_previous((1, 2), LAYOUTS[:4])
    assert count(compare(kafka, cases)) == 3 * (4 * 4 + 3 * 8 * 8) + 9 * (4 * 16 + 3 * 8 * 64)


def test_two_members_on_four_partitions_with_small_previous_targets(kafka: Kafka) -> None:
    """2 members on two topics of 2 partitions: previous targets of at most 2 partitions each."""
    cases = every_case_with_arbitrary_previous((2,), LAYOUTS[4:], most=2)
    assert count(compare(kafka, cases)) == 9 * 16 * 11**2


def test_three_members_with_any_small_previous_target(kafka: Kafka) -> None:
    """3 members: any previous targets over 2 partitions, or of at most one partition over 3."""
    cases = itertools.chain(
        every_case_with_arbitrary_previous((3,), LAYOUTS[:1]),
        every_case_with_arbitrary_previous((3,), LAYOUTS[1:2], most=1),
    )
    assert count(compare(kafka, cases)) == 27 * 4 * 4**3 + 27 * 8 * 4**3


def chained(kafka: Kafka, layout: Layout, ids: Sequence[str], rounds: int = 2) -> Iterator[tuple[Case, Outcome]]:
    """For every subscription and assignable set, rounds fed the previous round's targets: from
    none, and from those of a group where everyone read every topic and every partition was
    assignable (then subscriptions changed and some partitions lost their state)."""
    everything = frozenset(pairs(layout))
    start_case = (members_of(ids, SUBSCRIPTIONS[2:] * len(ids), [frozenset()] * len(ids)), layout, everything)
    ((_, start),) = compare(kafka, [start_case])
    assert not isinstance(start, str)
    starts = [[frozenset()] * len(ids), [start[m] for m in ids]]
    for subs in itertools.product(SUBSCRIPTIONS, repeat=len(ids)):
        for assignable_ in subsets(sorted(everything)):
            for previous in starts:
                for _ in range(rounds):
                    case = (members_of(ids, subs, previous), layout, assignable_)
                    ((_, outcome),) = compare(kafka, [case])
                    yield case, outcome
                    if isinstance(outcome, str):
                        break
                    previous = [outcome[m] for m in ids]


def test_three_members_chained_rounds(kafka: Kafka) -> None:
    """Three members on every layout, previous targets from earlier rounds (a fixed point or not)."""
    total = sum(count(chained(kafka, layout, IDS)) for layout in LAYOUTS)
    assert total > 27 * sum(2 ** sum(layout.values()) for layout in LAYOUTS) * 3


def test_member_ids_walked_out_of_their_order(kafka: Kafka) -> None:
    """Ids a HashMap walks in another order than theirs, or in one bucket: Kafka numbers members in
    the walk order, and so must the port."""
    assert java_order.hash_order(["Z", "a", "c"]) == ("a", "c", "Z")
    assert java_order.java_string_hash("Aa") == java_order.java_string_hash("BB")
    total = sum(count(chained(kafka, layout, ids)) for ids in OTHER_IDS for layout in LAYOUTS[1:3])
    assert total > 2 * 2 * 27 * 8


# -- Hypothesis ------------------------------------------------------------------------------------
@st.composite
def any_case(draw: st.DrawFn) -> Case:
    """Up to 3 members with any ids of IDS/OTHER_IDS, t0..t2 of 1-3 partitions or absent (a topic
    subscribed or previously assigned but deleted), any assignable set and previous targets."""
    ids = draw(st.sampled_from((IDS, *OTHER_IDS)))[: draw(st.integers(1, 3))]
    layout = {t: n for t in ("t0", "t1", "t2") if (n := draw(st.integers(0, 3)))}
    known = [(t, p) for t in ("t0", "t1", "t2") for p in range(3)]
    topic_sets = st.frozensets(st.sampled_from(("t0", "t1", "t2")), min_size=1)
    members = tuple((m, draw(topic_sets), draw(st.frozensets(st.sampled_from(known), max_size=4))) for m in sorted(ids))
    return members, layout, draw(st.frozensets(st.sampled_from(pairs(layout)))) if layout else frozenset()


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(case=any_case())
def test_hypothesis_inputs(kafka: Kafka, case: Case) -> None:
    count(compare(kafka, [case]))


# -- Kafka's quirks ---------------------------------------------------------------------------------
f = frozenset
QUIRKS: list[tuple[str, Case, Outcome]] = [
    (
        "a heterogeneous group keeps an old partition of a topic no member subscribes to",
        ((("m0", f({"t0"}), f({("t2", 0)})), ("m1", f({"t0", "t1"}), f())), {"t0": 1, "t1": 1, "t2": 1}, f()),
        {"m0": f({("t2", 0)}), "m1": f()},
    ),
    (
        "a homogeneous group drops it",
        ((("m0", f({"t0"}), f({("t2", 0)})), ("m1", f({"t0"}), f())), {"t0": 1, "t2": 1}, f({("t0", 0)})),
        {"m0": f({("t0", 0)}), "m1": f({("t0", 0)})},
    ),
    (
        "an old partition that is not assignable stays, is dealt to another member too, and the assignable one waits",
        ((("m0", f({"t0"}), f({("t0", 1)})), ("m1", f({"t0"}), f())), {"t0": 2}, f({("t0", 0)})),
        {"m0": f({("t0", 1)}), "m1": f({("t0", 1)})},
    ),
    (
        "the unfilled members run out while a partition wants more: Kafka's iterator throws",
        (
            (("m0", f({"t0", "t1"}), f()), ("m1", f({"t0", "t1"}), f({("t0", 0), ("t1", 0)}))),
            {"t0": 1, "t1": 1},
            f({("t0", 0)}),
        ),
        "NoSuchElementException",
    ),
]


@pytest.mark.parametrize(("quirk", "case", "expected"), QUIRKS, ids=[q[0] for q in QUIRKS])
def test_kafka_quirks_the_port_keeps(quirk: str, case: Case, expected: Outcome) -> None:
    assert ours(*case) == expected, quirk


def test_kafka_answers_so(kafka: Kafka) -> None:
    for quirk, case, expected in QUIRKS:
        assert kafka.assign(*case) == expected, quirk


# -- the comparison can fail ----------------------------------------------------------------------
def reversed_members(members: Sequence[Member], layout: Layout, assignable: frozenset[TopicPartition]) -> Outcome:
    """The port with the members numbered in reverse walk order (who gets the spare partitions)."""
    spec = assignor.groupSpec(members, layout, assignable)
    spec = dataclasses.replace(spec, memberIds=tuple(reversed(spec.memberIds)))
    builder = (
        assignor.SimpleHomogeneousAssignmentBuilder
        if spec.homogeneous
        else assignor.SimpleHeterogeneousAssignmentBuilder
    )
    try:
        return builder(spec).build()
    except SimpleAssignorError as exc:
        return exc.java_exception


def test_a_wrong_member_order_is_caught(kafka: Kafka) -> None:
    cases = every_case_with_arbitrary_previous((2,), LAYOUTS[:1])
    with pytest.raises(MismatchError, match=r"(?s)disagree on\npartitions=.*m1: subscribes.*ours :.*kafka:"):
        count(compare(kafka, cases, mine=reversed_members))


# -- Java's hash order -----------------------------------------------------------------------------
def test_java_hash_codes(kafka: Kafka) -> None:
    j = kafka.j
    uuids = [Uuid(1, 0), Uuid(-(2**63), 2**63 - 1), Uuid(-5, 123456789012345), Uuid(0x1234567890ABCDEF, -42)]
    for u in uuids:
        java_uuid = j("org.apache.kafka.common.Uuid")(u[0], u[1])
        assert java_order.java_hash(u) == int(java_uuid.hashCode()) & java_order.MASK
        for p in (0, 7, 2**31 - 1):
            record = j("org.apache.kafka.server.common.TopicIdPartition")(java_uuid, p)
            assert java_order.java_hash(TopicIdPartition(u, p)) == int(record.hashCode()) & java_order.MASK
    for tp in (("t0", 0), ("topic-é", 5), ("", 2**31 - 1)):
        java_tp = j("org.apache.kafka.common.TopicPartition")(tp[0], tp[1])
        assert java_order.java_hash(tp) == int(java_tp.hashCode()) & java_order.MASK
    for n in (0, 1, -1, 2**31 - 1, -(2**31)):
        assert java_order.java_hash(n) == int(j("java.lang.Integer")(n).hashCode()) & java_order.MASK


def test_java_hash_map_order(kafka: Kafka) -> None:
    """Random put/computeIfAbsent/remove sequences on maps of every initial capacity the assignor
    uses: the same walk order as java.util.HashMap's."""
    j, rng = kafka.j, random.Random(7)
    java_uuids = {u: j("org.apache.kafka.common.Uuid")(u[0], u[1]) for u in TOPIC_IDS.values()}
    by_bits = {u[0]: u for u in TOPIC_IDS.values()}
    record = j("org.apache.kafka.server.common.TopicIdPartition")
    kinds: list[tuple[list[Any], Callable[[Any], Any], Callable[[Any], Any]]] = [
        (list(range(40)), j("java.lang.Integer"), int),
        ([f"m{i}" for i in range(20)] + ["Aa", "BB", "Z", "a"], j("java.lang.String"), str),
        (
            [TopicIdPartition(u, p) for u in TOPIC_IDS.values() for p in range(12)],
            lambda k: record(java_uuids[k.topicId], k.partitionId),
            lambda k: TopicIdPartition(by_bits[int(k.topicId().getMostSignificantBits())], int(k.partitionId())),
        ),
    ]
    for pool, to_java, from_java in kinds:
        for capacity in (None, 0, 1, 2, 3, 4, 5, 6, 9, 16):
            mine: JavaHashMap[Any, int] = JavaHashMap(capacity)
            theirs = j("java.util.HashMap")() if capacity is None else j("java.util.HashMap")(capacity)
            for step in range(60):
                key, op = rng.choice(pool), rng.random()
                if op < 0.4:
                    mine.put(key, 1)
                    theirs.put(to_java(key), 1)
                elif op < 0.8:
                    mine.compute_if_absent(key, lambda: 1)
                    theirs.computeIfAbsent(to_java(key), lambda _: 1)
                else:
                    mine.remove(key)
                    theirs.remove(to_java(key))
                walked = [from_java(k) for k in theirs.keySet()]
                assert list(mine) == walked, (capacity, step, list(mine), walked)
