"""The streams group's server-side assignor, as Kafka's ``StickyTaskAssignor`` (4.3) decides: active
tasks stay with their previous member while it is under its quota, then go to a member whose process
held them as standby, then to the least-loaded process; standby tasks go to the previous active or
standby member when its process does not hold the task, else to the least-loaded process that does
not. Where loads tie, the choice is the one Kafka's heaps make: processes and members enter them in
id order (the order of Kafka's hash maps for these ids), and ``HeapQueue`` breaks ties as
``java.util.PriorityQueue`` does."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kmc.models.streams_group.state import TasksTuple

T = TypeVar("T")


def task_name(subtopology: int, partition: int) -> str:
    return f"{subtopology}_{partition}"


def task_key(task: str) -> tuple[int, int]:
    """(subtopology, partition) of a task named ``subtopology_partition``."""
    subtopology, partition = task.split("_")
    return int(subtopology), int(partition)


def by_subtopology(tasks: frozenset[str]) -> dict[str, list[int]]:
    """The tasks' partitions by subtopology id, as Kafka's task maps and TaskIds lists hold them."""
    out: dict[str, list[int]] = {}
    for task in sorted(tasks, key=task_key):
        subtopology, partition = task_key(task)
        out.setdefault(str(subtopology), []).append(partition)
    return out


class HeapQueue(Generic[T]):
    """A binary min-heap whose order among equal keys is ``java.util.PriorityQueue``'s: an element moves up
    past a strictly greater parent only, and down to a strictly smaller child, the left one on a tie."""

    def __init__(self, key: Callable[[T], float]) -> None:
        self.key = key
        self.items: list[T] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def add(self, x: T) -> None:
        items, key = self.items, self.key
        items.append(x)
        k = len(items) - 1
        while k > 0:
            parent = (k - 1) >> 1
            if key(x) >= key(items[parent]):
                break
            items[k] = items[parent]
            k = parent
        items[k] = x

    def poll(self) -> T | None:
        items, key = self.items, self.key
        if not items:
            return None
        result, last = items[0], items.pop()
        n = len(items)
        if n:
            k, half = 0, n >> 1
            while k < half:
                child = 2 * k + 1
                if child + 1 < n and key(items[child]) > key(items[child + 1]):
                    child += 1
                if key(last) <= key(items[child]):
                    break
                items[k] = items[child]
                k = child
            items[k] = last
        return result


@dataclass
class _Process:
    """``ProcessState``: its members' task counts, its tasks, and the heap of its members by load."""

    members: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    tasks: set[str] = field(default_factory=set)
    by_load: HeapQueue[str] | None = None
    """Built when a task goes to the least-loaded member; dropped when one goes to a chosen member."""

    def load(self) -> float:
        return sum(self.counts.values()) / len(self.members)

    def least_loaded_member(self) -> str:
        """``addTaskToLeastLoadedMember``'s choice; the caller then counts the task."""
        if len(self.members) == 1:
            return self.members[0]
        if self.by_load is None:
            self.by_load = HeapQueue(lambda m: self.counts[m])
            for m in self.members:
                self.by_load.add(m)
        member = self.by_load.poll()
        assert member is not None
        return member


@dataclass
class _Quota:
    """``computeTasksPerMember``: tasks per member, recomputed each time a member reaches it."""

    tasks: int
    members: int

    def per_member(self) -> int:
        return 0 if self.members == 0 else -(-self.tasks // self.members)

    def taken(self, count: int) -> None:
        if count == self.per_member():
            self.members -= 1
            self.tasks -= count


class _Assignment:
    def __init__(self, members: list[tuple[str, str, TasksTuple]], tasks: list[str], standby_replicas: int) -> None:
        ordered = sorted(members)
        self.process_of = {m: p for m, p, _ in ordered}
        self.processes: dict[str, _Process] = {}
        for m, p, _ in ordered:
            self.processes.setdefault(p, _Process([])).members.append(m)
            self.processes[p].counts[m] = 0
        self.previous_active = {t: m for m, _, prev in ordered for t in prev.activeTasks}
        self.previous_standby: dict[str, list[str]] = {}
        for m, _, prev in ordered:
            for t in sorted(prev.standbyTasks):
                self.previous_standby.setdefault(t, []).append(m)
        self.active: dict[str, set[str]] = {m: set() for m, _, _ in ordered}
        self.standby: dict[str, set[str]] = {m: set() for m, _, _ in ordered}
        self.active_quota = _Quota(len(tasks), len(members))
        self.total_quota = _Quota(len(tasks) * (1 + standby_replicas), len(members))

    def give(self, member: str, task: str, active: bool, chosen: bool = True) -> int:
        """Count the task on the member (``addTask`` when the member was chosen, which drops the process's
        heap of members); its new task count."""
        process = self.processes[self.process_of[member]]
        process.counts[member] += 1
        process.tasks.add(task)
        (self.active if active else self.standby)[member].add(task)
        if chosen:
            process.by_load = None
        elif process.by_load is not None:
            process.by_load.add(member)  # back in the heap with its new count
        return process.counts[member]

    def give_to_least_loaded(self, process: str, task: str, active: bool) -> int:
        return self.give(self.processes[process].least_loaded_member(), task, active, chosen=False)

    def under_quota(self, member: str, quota: _Quota) -> bool:
        return self.processes[self.process_of[member]].counts[member] < quota.per_member()

    def previous_with_least_load(self, members: list[str], standby_task: str | None) -> str | None:
        """``findPrevMemberWithLeastLoad`` as in 4.3: the first candidate is replaced only by one whose
        process and member loads are both lower (KAFKA-20899 changed this in 4.2.2 and 4.4.0)."""
        candidate: str | None = None
        best = (float("inf"), float("inf"))
        for m in members:
            process = self.processes[self.process_of[m]]
            if standby_task is not None and standby_task in process.tasks:
                continue
            load = (process.load(), process.counts[m])
            if candidate is None or (load[0] < best[0] and load[1] < best[1]):
                candidate, best = m, load
        return candidate

    def process_queue(self) -> HeapQueue[str]:
        queue: HeapQueue[str] = HeapQueue(lambda p: self.processes[p].load())
        for p in sorted(self.processes):
            queue.add(p)
        return queue


def assign(
    members: list[tuple[str, str, TasksTuple]], tasks: list[str], standby_replicas: int
) -> dict[str, TasksTuple]:
    """``StickyTaskAssignor.assign``: ``members`` as (memberId, processId, previous target), the tasks of
    every subtopology (all stateful), and ``num.standby.replicas``."""
    if not members:
        return {}
    a = _Assignment(members, tasks, standby_replicas)
    _assign_active(a, tasks)
    if standby_replicas > 0:
        _assign_standby(a, tasks, standby_replicas)
    return {m: TasksTuple(frozenset(a.active[m]), frozenset(a.standby[m])) for m, _, _ in members}


def _assign_active(a: _Assignment, tasks: list[str]) -> None:
    left = sorted(tasks, key=lambda t: (task_key(t)[1], task_key(t)[0]))
    for previous in (
        lambda t: a.previous_active.get(t),
        lambda t: a.previous_with_least_load(a.previous_standby.get(t, []), None),
    ):
        still = []
        for t in left:
            m = previous(t)
            if m is not None and a.under_quota(m, a.active_quota):
                count = a.give(m, t, active=True)
                a.active_quota.taken(count)
                a.total_quota.taken(count)
            else:
                still.append(t)
        left = still
    queue = a.process_queue()
    for t in sorted(left, key=task_key):
        p = queue.poll()
        assert p is not None
        count = a.give_to_least_loaded(p, t, active=True)
        a.active_quota.taken(count)
        a.total_quota.taken(count)
        queue.add(p)


def _assign_standby(a: _Assignment, tasks: list[str], replicas: int) -> None:
    to_least_loaded: list[tuple[str, int]] = []
    for t in sorted(tasks, key=lambda t: (task_key(t)[1], task_key(t)[0]), reverse=True):
        for i in range(replicas):
            m = a.previous_active.get(t)
            if m is not None and t not in a.processes[a.process_of[m]].tasks and a.under_quota(m, a.total_quota):
                a.total_quota.taken(a.give(m, t, active=False))
                continue
            m = a.previous_with_least_load(a.previous_standby.get(t, []), t)
            if m is not None and a.under_quota(m, a.total_quota):
                a.total_quota.taken(a.give(m, t, active=False))
                continue
            to_least_loaded.append((t, replicas - i))
            break
    queue = a.process_queue()
    for t, remaining in sorted(to_least_loaded, key=lambda x: task_key(x[0]), reverse=True):
        for _ in range(remaining):
            if not _standby_to_least_loaded(a, queue, t):
                break  # not enough capacity: Kafka logs a warning and assigns fewer standbys


def _standby_to_least_loaded(a: _Assignment, queue: HeapQueue[str], task: str) -> bool:
    """``assignStandbyToMemberWithLeastLoad``: the least-loaded process that does not hold the task, the
    processes passed over going back into the queue after it."""
    p = queue.poll()
    if p is None:
        return False
    found = False
    if task not in a.processes[p].tasks:
        a.total_quota.taken(a.give_to_least_loaded(p, task, active=False))
        found = True
    elif queue:
        found = _standby_to_least_loaded(a, queue, task)
    queue.add(p)
    return found
