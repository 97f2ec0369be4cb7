"""The order in which ``java.util.HashMap`` and ``HashSet`` walk their keys, for ports of Kafka code.

Where Kafka walks a hash map and the walk decides the result (which member keeps a partition, which
partition goes first), a faithful port must walk the same order. A ``HashMap`` walks its buckets in
index order, a bucket from head to tail. The bucket is the key's ``hashCode``, spread
(``h ^ h >>> 16``) and masked by the table size, a power of two: 16 by default, or the one
``HashMap(int)`` rounds its argument up to (``tableSizeFor``). ``put`` appends to the bucket and
doubles the table once it holds more than 3/4 of its size; ``computeIfAbsent`` first doubles a table
already over that mark, then puts the new key at the head of its bucket. Doubling keeps the relative
order of the keys of a bucket.

:class:`JavaHashMap` and :class:`JavaHashSet` reproduce that, for keys hashed as Java hashes them:
``String`` (``str``), ``Integer`` (``int``), Kafka's ``TopicPartition`` (a ``(topic, partition)``
tuple), Kafka's ``Uuid`` (:class:`Uuid`) and the ``TopicIdPartition`` record of server-common
(:class:`TopicIdPartition`). Equality is Python's, which agrees with Java's ``equals`` for these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any, Generic, NamedTuple, TypeVar

K = TypeVar("K")
V = TypeVar("V")

MASK = 0xFFFFFFFF
DEFAULT_CAPACITY = 16
TREEIFY_THRESHOLD = 8
MIN_TREEIFY_CAPACITY = 64


class Uuid(NamedTuple):
    """Kafka's ``org.apache.kafka.common.Uuid``: two signed 64-bit halves."""

    mostSignificantBits: int
    leastSignificantBits: int


class TopicIdPartition(NamedTuple):
    """``org.apache.kafka.server.common.TopicIdPartition``, the record the share assignor keys by."""

    topicId: Uuid
    partitionId: int


@lru_cache(maxsize=65536)
def java_string_hash(text: str) -> int:
    """``String.hashCode`` as an unsigned 32-bit value (UTF-16 code units)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & MASK
    return h


def java_integer_hash(value: int) -> int:
    """``Integer.hashCode``: the value itself (unsigned 32-bit here)."""
    return value & MASK


def topic_partition_hash(tp: tuple[str, int]) -> int:
    """Kafka's ``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``."""
    return (31 * (31 + tp[1]) + java_string_hash(tp[0])) & MASK


def uuid_hash(uuid: Uuid) -> int:
    """Kafka's ``Uuid.hashCode``: the two halves xor-ed, then the high and low 32 bits xor-ed."""
    xor = (uuid.mostSignificantBits ^ uuid.leastSignificantBits) & 0xFFFFFFFFFFFFFFFF
    return ((xor >> 32) ^ xor) & MASK


def topic_id_partition_hash(tp: TopicIdPartition) -> int:
    """A record's ``hashCode`` folds its components as ``31 * h + component``, from 0:
    ``31 * topicId.hashCode() + partitionId``."""
    return (31 * uuid_hash(tp.topicId) + tp.partitionId) & MASK


_HASHES: dict[type, Callable[[Any], int]] = {
    str: java_string_hash,
    int: java_integer_hash,
    tuple: topic_partition_hash,
    Uuid: uuid_hash,
    TopicIdPartition: topic_id_partition_hash,
}


@lru_cache(maxsize=65536, typed=True)
def java_hash(key: Any) -> int:
    """The key's Java ``hashCode`` (unsigned 32-bit), chosen by the key's Python type."""
    return _HASHES[type(key)](key)


def spread(h: int) -> int:
    """``HashMap.hash``: the high half xor-ed into the low one, so small tables see it."""
    return h ^ (h >> 16)


def table_size_for(capacity: int) -> int:
    """``HashMap.tableSizeFor``: the power of two at least ``capacity`` (1 for 0 and 1)."""
    size = 1
    while size < capacity:
        size *= 2
    return size


class JavaHashMap(Generic[K, V]):
    """A ``java.util.HashMap``'s key order under ``put``, ``computeIfAbsent`` and ``remove``; values
    and lookups live in a dict. ``initial_capacity`` is the argument of ``HashMap(int)`` (None: the
    default constructor). A bucket Java would turn into a tree (9 keys, or 8 by ``computeIfAbsent``,
    in a table of 64 or more) raises rather than guess. Only non-empty buckets are stored."""

    __slots__ = ("_buckets", "_mask", "_threshold", "_values")

    def __init__(self, initial_capacity: int | None = None) -> None:
        size = DEFAULT_CAPACITY if initial_capacity is None else table_size_for(initial_capacity)
        self._mask = size - 1
        self._threshold = size * 3 // 4
        self._buckets: dict[int, list[tuple[int, K]]] = {}
        self._values: dict[K, V] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[K]:
        for index in sorted(self._buckets):
            for _, key in self._buckets[index]:
                yield key

    def snapshot(self) -> list[K]:
        """The keys in walk order, as a list (safe to remove from the map while reading it)."""
        buckets = self._buckets
        return [key for index in sorted(buckets) for _, key in buckets[index]]

    def items(self) -> list[tuple[K, V]]:
        """``entrySet()`` in walk order, as a list."""
        values = self._values
        return [(key, values[key]) for key in self.snapshot()]

    def get(self, key: K, default: V | None = None) -> V | None:
        return self._values.get(key, default)

    def __getitem__(self, key: K) -> V:
        return self._values[key]

    def put(self, key: K, value: V) -> None:
        """``put``: a new key goes to its bucket's tail; then the table doubles if over the mark."""
        if key in self._values:
            self._values[key] = value
            return
        h = spread(java_hash(key))
        bucket = self._buckets.setdefault(h & self._mask, [])
        bucket.append((h, key))
        self._values[key] = value
        if len(bucket) > TREEIFY_THRESHOLD:
            self._treeify()
        if len(self._values) > self._threshold:
            self._resize()

    def compute_if_absent(self, key: K, factory: Callable[[], V]) -> V:
        """``computeIfAbsent``: a table over the mark doubles first (even for a present key); a new
        key goes to its bucket's head, and the table does not double after it."""
        if len(self._values) > self._threshold:
            self._resize()
        if key in self._values:
            return self._values[key]
        value = factory()
        h = spread(java_hash(key))
        bucket = self._buckets.setdefault(h & self._mask, [])
        bucket.insert(0, (h, key))
        self._values[key] = value
        if len(bucket) >= TREEIFY_THRESHOLD:
            self._treeify()
        return value

    def remove(self, key: K) -> bool:
        """``remove``: whether the key was there (the table never shrinks)."""
        if key not in self._values:
            return False
        del self._values[key]
        index = spread(java_hash(key)) & self._mask
        bucket = self._buckets[index]
        for i, (_, k) in enumerate(bucket):
            if k == key:
                del bucket[i]
                break
        if not bucket:
            del self._buckets[index]
        return True

    def _treeify(self) -> None:
        # Java doubles a table under 64 buckets instead of making a tree of a long bucket
        if self._mask + 1 >= MIN_TREEIFY_CAPACITY:
            raise NotImplementedError("a HashMap bucket long enough to be a tree bin is not reproduced")
        self._resize()

    def _resize(self) -> None:
        size = (self._mask + 1) * 2
        buckets: dict[int, list[tuple[int, K]]] = {}
        for index in sorted(self._buckets):
            for h, k in self._buckets[index]:
                buckets.setdefault(h & (size - 1), []).append((h, k))
        self._buckets = buckets
        self._mask = size - 1
        self._threshold = size * 3 // 4


class JavaHashSet(JavaHashMap[K, None]):
    """A ``java.util.HashSet``: a ``HashMap`` whose keys are the elements."""

    __slots__ = ()

    def __init__(self, keys: Iterable[K] = (), initial_capacity: int | None = None) -> None:
        super().__init__(initial_capacity)
        for key in keys:
            self.add(key)

    def add(self, key: K) -> bool:
        """``add``: whether the key is new (``put`` order)."""
        if key in self._values:
            return False
        self.put(key, None)
        return True


def hash_set_capacity(size: int) -> int:
    """The capacity ``new HashSet<>(collection)`` asks for (JDK 17: at least 16, else size/.75 + 1)."""
    return max(int(size / 0.75) + 1, DEFAULT_CAPACITY)


def hash_order(keys: Iterable[Any]) -> tuple[Any, ...]:
    """The order a default ``HashMap`` walks these keys, put in this order."""
    return _hash_order(tuple(keys))


@lru_cache(maxsize=65536)
def _hash_order(keys: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(JavaHashSet(keys))
