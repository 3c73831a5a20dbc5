"""The sticky task assignor of streams groups (`streams.assignor.StickyTaskAssignor` with
`ProcessState`), Kafka's only built-in streams assignor ("sticky").

Rules it keeps, as Kafka's:
- active tasks first stay with their previous owner while that member is under its quota
  (ceil(active tasks / members), recomputed as members fill up), then go to a previous
  standby holder (most caught-up first), then to the least-loaded process (load = tasks /
  members of the process), and within it to its least-loaded member;
- standby tasks (only for stateful subtopologies, `num.standby.replicas` each) never land
  on a process that already holds the task; they prefer the previous active owner, then
  previous standby holders, then the least-loaded process;
- tasks are ordered by (partition, subtopology) for sticky placement and by
  (subtopology, partition) for the rest.
Ties break as in Kafka: members and processes are visited in their Java HashMap order and
the load queues are Java PriorityQueues (`java_order`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.streams.java_order import PriorityQueue, hash_map_order
from groupcoord.coordinator.streams.tasks import Tasks, TasksTuple, tasks_of

NAME = "sticky"
TaskId = tuple[str, int]


class TaskAssignorError(Exception):
    """`TaskAssignorException`: answered as UNKNOWN_SERVER_ERROR."""


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """What the assignor sees of a member (`MemberMetadataAndStateImpl`)."""

    process_id: str
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    # Changelog offset sums per task, for ranking standby candidates.
    task_offsets: Mapping[TaskId, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SubtopologySpec:
    """`TopologyDescriber`: number of tasks and whether the subtopology has state."""

    num_tasks: int
    stateful: bool


def _by_load(a: _Process, b: _Process) -> int:
    """`Comparator.comparingDouble(ProcessState::load)`."""
    return (a.load > b.load) - (a.load < b.load)


def _by_count(a: list[Any], b: list[Any]) -> int:
    """`Map.Entry.comparingByValue()` over [member id, task count] entries."""
    return (a[1] > b[1]) - (a[1] < b[1])


class _Process:
    """`ProcessState`."""

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.capacity = 0
        self.task_count = 0
        self.load = float("inf")
        self.member_counts: dict[str, int] = {}
        self.active: dict[str, set[TaskId]] = {}
        self.standby: dict[str, set[TaskId]] = {}
        self.tasks: set[TaskId] = set()
        self.members_by_load: PriorityQueue[list[Any]] | None = None

    def add_member(self, member_id: str) -> None:
        self.member_counts[member_id] = 0
        self.capacity += 1
        self.load = -1 if self.capacity <= 0 else self.task_count / self.capacity

    def add_task(self, member_id: str, task: TaskId, active: bool) -> int:
        """`addTask`: a direct placement invalidates the members-by-load queue."""
        count = self._add(member_id, task, active)
        self.members_by_load = None
        return count

    def _add(self, member_id: str, task: TaskId, active: bool) -> int:
        self.task_count += 1
        self.tasks.add(task)
        (self.active if active else self.standby).setdefault(member_id, set()).add(task)
        self.member_counts[member_id] += 1
        self.load = -1 if self.capacity <= 0 else self.task_count / self.capacity
        return self.member_counts[member_id]

    def add_to_least_loaded_member(self, task: TaskId, active: bool) -> int:
        """`addTaskToLeastLoadedMember`, with its cached queue of [member, count]."""
        if not self.member_counts:
            return -1
        if len(self.member_counts) == 1:
            return self._add(next(iter(self.member_counts)), task, active)
        if self.members_by_load is None:
            self.members_by_load = PriorityQueue(_by_count)
            for member_id in hash_map_order(self.member_counts):
                self.members_by_load.add([member_id, self.member_counts[member_id]])
        entry = self.members_by_load.poll()
        assert entry is not None
        entry[1] = self._add(entry[0], task, active)
        self.members_by_load.add(entry)
        return int(entry[1])


class _State:
    def __init__(self, members: Mapping[str, MemberSpec],
                 topology: Mapping[str, SubtopologySpec], num_standby: int) -> None:
        self.num_standby = num_standby
        self.total_active = sum(s.num_tasks for s in topology.values())
        self.total_tasks = self.total_active + sum(
            s.num_tasks * num_standby for s in topology.values() if s.stateful)
        self.members_with_active_capacity = len(members)
        self.members_with_capacity = len(members)
        self.active_per_member = _per_member(self.total_active, len(members))
        self.tasks_per_member = _per_member(self.total_tasks, len(members))
        processes: dict[str, _Process] = {}
        self.prev_active: dict[TaskId, tuple[str, str]] = {}
        candidates: dict[TaskId, list[tuple[int, int, int, str, str]]] = {}
        # `groupSpec.memberIds()`: a HashMap's key order.
        for order, member_id in enumerate(hash_map_order(members)):
            spec = members[member_id]
            processes.setdefault(spec.process_id, _Process(spec.process_id)) \
                .add_member(member_id)
            for s, parts in spec.active.items():
                for p in parts:
                    self.prev_active[(s, p)] = (spec.process_id, member_id)
            _collect_standby_candidates(candidates, spec, member_id, order)
        # `processIdToState = new HashMap<>(members)`: its iteration order feeds the queues.
        self.processes = {pid: processes[pid]
                          for pid in hash_map_order(processes, len(members))}
        # Previous standbys first, then the highest reported offset sum (a stable sort).
        self.prev_standby = {task: [(proc, mem) for _, _, _, proc, mem in sorted(found)]
                             for task, found in candidates.items()}

    def filled(self, count: int, active: bool) -> None:
        """`maybeUpdateActiveTasksPerMember` / `maybeUpdateTotalTasksPerMember`."""
        if active and count == self.active_per_member:
            self.members_with_active_capacity -= 1
            self.total_active -= count
            self.active_per_member = _per_member(self.total_active,
                                                 self.members_with_active_capacity)
        if count == self.tasks_per_member:
            self.members_with_capacity -= 1
            self.total_tasks -= count
            self.tasks_per_member = _per_member(self.total_tasks, self.members_with_capacity)

    def processes_by_load(self) -> PriorityQueue[_Process]:
        queue: PriorityQueue[_Process] = PriorityQueue(_by_load)
        for process in self.processes.values():
            queue.add(process)
        return queue


def _collect_standby_candidates(out: dict[TaskId, list[tuple[int, int, int, str, str]]],
                                spec: MemberSpec, member_id: str, order: int) -> None:
    for s, parts in spec.standby.items():
        for p in parts:
            offset = spec.task_offsets.get((s, p), 0)
            out.setdefault((s, p), []).append((0, -offset, order, spec.process_id, member_id))
    for (s, p), offset in spec.task_offsets.items():
        if p in spec.standby.get(s, frozenset()):
            continue
        out.setdefault((s, p), []).append((1, -offset, order, spec.process_id, member_id))


def _per_member(tasks: int, members: int) -> int:
    return 0 if members == 0 else -(-tasks // members)


def assign(members: Mapping[str, MemberSpec], topology: Mapping[str, SubtopologySpec],
           num_standby_replicas: int) -> dict[str, TasksTuple]:
    """`StickyTaskAssignor.assign`: member id -> its active and standby tasks."""
    state = _State(members, topology, num_standby_replicas)
    active = [(s, p) for s in sorted(topology) for p in range(topology[s].num_tasks)]
    _assign_active(state, active)
    if num_standby_replicas > 0:
        stateful = [(s, p) for s in sorted(topology) if topology[s].stateful
                    for p in range(topology[s].num_tasks)]
        _assign_standby(state, stateful)
    return _group_assignment(state, members)


def _least_loaded_prev(state: _State, candidates: list[tuple[str, str]] | None,
                       standby_task: TaskId | None) -> tuple[str, str] | None:
    """`findPrevMemberWithLeastLoad`: a later candidate replaces the first only when both
    its process and member loads are lower."""
    best: tuple[str, str] | None = None
    best_process = best_member = float("inf")
    for process_id, member_id in candidates or []:
        process = state.processes[process_id]
        if standby_task is not None and standby_task in process.tasks:
            continue
        process_load, member_load = process.load, process.member_counts[member_id]
        if best is None or (process_load < best_process and member_load < best_member):
            best, best_process, best_member = (process_id, member_id), process_load, member_load
    return best


def _assign_active(state: _State, tasks: list[TaskId]) -> None:
    remaining = sorted(tasks, key=lambda t: (t[1], t[0]))
    for source in ("active", "standby"):
        left = []
        for task in remaining:
            prev = state.prev_active.get(task) if source == "active" else \
                _least_loaded_prev(state, state.prev_standby.get(task), None)
            if prev is not None:
                process = state.processes[prev[0]]
                if process.member_counts[prev[1]] < state.active_per_member:
                    count = process.add_task(prev[1], task, True)
                    state.filled(count, True)
                    continue
            left.append(task)
        remaining = left
    queue = state.processes_by_load()
    for task in sorted(remaining):
        least = queue.poll()
        if least is None:
            raise TaskAssignorError(f"No process available to assign active task {task}.")
        count = least.add_to_least_loaded_member(task, True)
        if count == -1:
            raise TaskAssignorError(f"No member available to assign active task {task}.")
        state.filled(count, True)
        queue.add(least)


def _assign_standby(state: _State, tasks: list[TaskId]) -> None:
    to_least_loaded: list[tuple[TaskId, int]] = []
    for task in sorted(tasks, key=lambda t: (t[1], t[0]), reverse=True):
        for i in range(state.num_standby):
            prev = state.prev_active.get(task)
            if prev is not None:
                process = state.processes[prev[0]]
                if task not in process.tasks \
                        and process.member_counts[prev[1]] < state.tasks_per_member:
                    state.filled(process.add_task(prev[1], task, False), False)
                    continue
            standby_prev = _least_loaded_prev(state, state.prev_standby.get(task), task)
            if standby_prev is not None:
                process = state.processes[standby_prev[0]]
                if process.member_counts[standby_prev[1]] < state.tasks_per_member:
                    state.filled(process.add_task(standby_prev[1], task, False), False)
                    continue
            to_least_loaded.append((task, state.num_standby - i))
            break
    queue = state.processes_by_load()
    for task, replicas in sorted(to_least_loaded, reverse=True):
        for _ in range(replicas):
            if not _standby_to_least_loaded(state, queue, task):
                break


def _standby_to_least_loaded(state: _State, queue: PriorityQueue[_Process],
                             task: TaskId) -> bool:
    """`assignStandbyToMemberWithLeastLoad`: the least-loaded process without the task;
    the processes polled on the way go back in the recursion's order."""
    polled: list[_Process] = []
    found = False
    while True:
        process = queue.poll()
        if process is None:
            break
        polled.append(process)
        if task not in process.tasks:
            count = process.add_to_least_loaded_member(task, False)
            if count != -1:
                found = True
                state.filled(count, False)
            break
        if not len(queue):
            break
    for process in reversed(polled):
        queue.add(process)
    return found


def _group_assignment(state: _State, members: Mapping[str, MemberSpec]
                      ) -> dict[str, TasksTuple]:
    active: dict[str, set[TaskId]] = {}
    standby: dict[str, set[TaskId]] = {}
    for process in state.processes.values():
        for member_id, tasks in process.active.items():
            active.setdefault(member_id, set()).update(tasks)
        for member_id, tasks in process.standby.items():
            standby.setdefault(member_id, set()).update(tasks)
    return {m: TasksTuple(_compact(active.get(m, set())), _compact(standby.get(m, set())))
            for m in members}


def _compact(tasks: set[TaskId]) -> Tasks:
    by_subtopology: dict[str, set[int]] = {}
    for s, p in tasks:
        by_subtopology.setdefault(s, set()).add(p)
    return tasks_of(by_subtopology.items())
