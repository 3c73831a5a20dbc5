"""Java collection orders that Kafka's streams coordinator leaks into its answers.

Where Kafka iterates a `java.util.HashMap` or breaks ties in a `java.util.PriorityQueue`,
the result (a status text, which of two equally loaded processes gets a task) depends on
those classes' internals. Reproducing them keeps groupcoord's answers identical:

- `hash_map_order`: a HashMap's iteration order, given its keys in insertion order and the
  constructor's initial capacity: by bucket (`(h ^ h >>> 16) & (table - 1)` over
  `String.hashCode`), insertion order within a bucket; the table starts at
  `tableSizeFor(initialCapacity)` (16 by default) and doubles past 3/4 full.
- `PriorityQueue`: `java.util.PriorityQueue` with a comparator: the same binary heap,
  `siftUp` on offer and `siftDown` on poll, so equal elements come out in Java's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from groupcoord.coordinator.partitioning import java_string_hash

T = TypeVar("T")
DEFAULT_CAPACITY = 16


def _table_size_for(capacity: int) -> int:
    size = 1
    while size < capacity:
        size *= 2
    return size


def _final_table_size(entries: int, initial_capacity: int | None) -> int:
    if initial_capacity is None:
        table, threshold = DEFAULT_CAPACITY, DEFAULT_CAPACITY * 3 // 4
    else:
        table = _table_size_for(initial_capacity)
        threshold = int(table * 0.75)
    for size in range(1, entries + 1):
        if size > threshold:
            threshold = threshold * 2 if table >= DEFAULT_CAPACITY else int(table * 2 * 0.75)
            table *= 2
    return table


def hash_map_order(keys: Iterable[str], initial_capacity: int | None = None) -> list[str]:
    names = list(dict.fromkeys(keys))
    table = _final_table_size(len(names), initial_capacity)
    position = {n: i for i, n in enumerate(names)}

    def bucket(name: str) -> int:
        h = java_string_hash(name) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (table - 1)
    return sorted(names, key=lambda n: (bucket(n), position[n]))


class PriorityQueue(Generic[T]):
    """`java.util.PriorityQueue(Comparator)`: `compare(a, b)` < 0 when a comes first."""

    def __init__(self, compare: Callable[[T, T], int]) -> None:
        self._queue: list[T] = []
        self._compare = compare

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, item: T) -> None:
        queue = self._queue
        queue.append(item)
        k = len(queue) - 1
        while k > 0:
            parent = (k - 1) >> 1
            if self._compare(item, queue[parent]) >= 0:
                break
            queue[k] = queue[parent]
            k = parent
        queue[k] = item

    def poll(self) -> T | None:
        queue = self._queue
        if not queue:
            return None
        result = queue[0]
        last = queue.pop()
        n = len(queue)
        if n:
            k, half = 0, n >> 1
            while k < half:
                child = 2 * k + 1
                right = child + 1
                if right < n and self._compare(queue[child], queue[right]) > 0:
                    child = right
                if self._compare(last, queue[child]) <= 0:
                    break
                queue[k] = queue[child]
                k = child
            queue[k] = last
        return result
