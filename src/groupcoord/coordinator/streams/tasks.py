"""Task sets of a streams group member (Kafka's `TasksTuple` and `TasksTupleWithEpochs`).

A task is (subtopology id, partition). Active tasks of a member's current assignment carry
the epoch they were assigned at, which offset commits from an older member epoch are
checked against; standby and warm-up tasks carry none. Values are treated as immutable:
every change builds new dicts, so a member taken before a change keeps its old tasks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

Tasks = dict[str, frozenset[int]]
EpochTasks = dict[str, dict[int, int]]


def tasks_of(pairs: Iterable[tuple[str, Iterable[int]]]) -> Tasks:
    """Drop empty subtopologies, as Kafka's maps never hold them."""
    out: Tasks = {}
    for subtopology, partitions in pairs:
        parts = frozenset(partitions)
        if parts:
            out[subtopology] = out.get(subtopology, frozenset()) | parts
    return out


def without_epochs(tasks: Mapping[str, Mapping[int, int]]) -> Tasks:
    return tasks_of((s, p.keys()) for s, p in tasks.items())


def contains(tasks: Mapping[str, Iterable[int]], subtopology: str, partition: int) -> bool:
    return partition in tasks.get(subtopology, ())


def count(tasks: Mapping[str, Iterable[int]]) -> int:
    return sum(len(list(p)) for p in tasks.values())


@dataclass(frozen=True, slots=True)
class TasksTuple:
    """A target assignment: active, standby and warm-up tasks (`TasksTuple`)."""

    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)


EMPTY = TasksTuple()


@dataclass(frozen=True, slots=True)
class TasksWithEpochs:
    """A member's current tasks, active ones with their assignment epochs
    (`TasksTupleWithEpochs`)."""

    active: EpochTasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)

    def merge(self, other: TasksWithEpochs) -> TasksWithEpochs:
        """`TasksTupleWithEpochs.merge`: `other`'s epochs win for a task in both."""
        active: EpochTasks = {s: dict(p) for s, p in self.active.items()}
        for s, parts in other.active.items():
            active.setdefault(s, {}).update(parts)
        standby = tasks_of(list(self.standby.items()) + list(other.standby.items()))
        warmup = tasks_of(list(self.warmup.items()) + list(other.warmup.items()))
        return TasksWithEpochs(active, standby, warmup)

    def contains_any(self, other: TasksWithEpochs) -> bool:
        """Whether any task of `other` is in this tuple, role by role (`containsAny`)."""
        for s, epochs in other.active.items():
            if set(epochs) & set(self.active.get(s, {})):
                return True
        for mine, theirs in ((self.standby, other.standby), (self.warmup, other.warmup)):
            for s, parts in theirs.items():
                if parts & mine.get(s, frozenset()):
                    return True
        return False

    def reset_epochs_to_zero(self) -> TasksWithEpochs:
        active = {s: dict.fromkeys(p, 0) for s, p in self.active.items()}
        return TasksWithEpochs(active, self.standby, self.warmup)


NO_TASKS = TasksWithEpochs()
