"""The streams group's server-side assignor, as Kafka's ``StickyTaskAssignor`` (4.3) decides: active
tasks stay with their previous member while it is under its quota, then go to a member whose process
held them as standby, then to the least-loaded process; standby tasks go to the previous active or
standby member when its process does not hold the task, else to the least-loaded process that does
not. Ties, which Kafka leaves to hash order, go to the smallest process and member id here."""

from __future__ import annotations

from dataclasses import dataclass, field

from kmc.models.streams_group.state import TasksTuple


def task_name(subtopology: int, partition: int) -> str:
    return f"{subtopology}_{partition}"


def task_key(task: str) -> tuple[int, int]:
    """(subtopology, partition) of a task named ``subtopology_partition``."""
    subtopology, partition = task.split("_")
    return int(subtopology), int(partition)


@dataclass
class _Process:
    members: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    """Tasks (active and standby) given to each member so far."""
    tasks: set[str] = field(default_factory=set)

    def load(self) -> float:
        return sum(self.counts.values()) / len(self.members)

    def least_loaded_member(self) -> str:
        return min(self.members, key=lambda m: (self.counts[m], m))


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
        # the per-member figure is recomputed from what is left


class _Assignment:
    def __init__(self, members: list[tuple[str, str, TasksTuple]], tasks: list[str], standby_replicas: int) -> None:
        self.process_of = {m: p for m, p, _ in members}
        self.processes: dict[str, _Process] = {}
        for m, p, _ in members:
            self.processes.setdefault(p, _Process([])).members.append(m)
            self.processes[p].counts[m] = 0
        self.previous_active = {t: m for m, _, prev in members for t in prev.activeTasks}
        self.previous_standby: dict[str, list[str]] = {}
        for m, _, prev in members:
            for t in sorted(prev.standbyTasks):
                self.previous_standby.setdefault(t, []).append(m)
        self.active: dict[str, set[str]] = {m: set() for m, _, _ in members}
        self.standby: dict[str, set[str]] = {m: set() for m, _, _ in members}
        self.active_quota = _Quota(len(tasks), len(members))
        self.total_quota = _Quota(len(tasks) * (1 + standby_replicas), len(members))

    def give(self, member: str, task: str, active: bool) -> None:
        process = self.processes[self.process_of[member]]
        process.counts[member] += 1
        process.tasks.add(task)
        (self.active if active else self.standby)[member].add(task)
        if active:
            self.active_quota.taken(process.counts[member])
        self.total_quota.taken(process.counts[member])

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

    def least_loaded_process(self, skipping: set[str]) -> str | None:
        left = [p for p in self.processes if p not in skipping]
        return min(left, key=lambda p: (self.processes[p].load(), p)) if left else None


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
        lambda t: a.previous_active.get(t) if a.previous_active.get(t) in a.process_of else None,
        lambda t: a.previous_with_least_load([m for m in a.previous_standby.get(t, []) if m in a.process_of], None),
    ):
        still = []
        for t in left:
            m = previous(t)
            if m is not None and a.under_quota(m, a.active_quota):
                a.give(m, t, active=True)
            else:
                still.append(t)
        left = still
    for t in sorted(left, key=task_key):
        p = a.least_loaded_process(set())
        assert p is not None
        a.give(a.processes[p].least_loaded_member(), t, active=True)


def _assign_standby(a: _Assignment, tasks: list[str], replicas: int) -> None:
    to_least_loaded: list[tuple[str, int]] = []
    for t in sorted(tasks, key=lambda t: (task_key(t)[1], task_key(t)[0]), reverse=True):
        for i in range(replicas):
            m = a.previous_active.get(t)
            if m in a.process_of and t not in a.processes[a.process_of[m]].tasks and a.under_quota(m, a.total_quota):
                a.give(m, t, active=False)
                continue
            prev = [m for m in a.previous_standby.get(t, []) if m in a.process_of]
            m = a.previous_with_least_load(prev, t) if prev else None
            if m is not None and a.under_quota(m, a.total_quota):
                a.give(m, t, active=False)
                continue
            to_least_loaded.append((t, replicas - i))
            break
    for t, remaining in sorted(to_least_loaded, key=lambda x: task_key(x[0]), reverse=True):
        for _ in range(remaining):
            skipping: set[str] = set()
            while (p := a.least_loaded_process(skipping)) is not None and t in a.processes[p].tasks:
                skipping.add(p)
            if p is None:
                break  # not enough capacity: Kafka logs a warning and assigns fewer standbys
            a.give(a.processes[p].least_loaded_member(), t, active=False)
