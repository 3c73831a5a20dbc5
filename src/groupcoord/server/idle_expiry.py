"""Least-recently-active connections, for `connections.max.idle.ms`.

Mirrors Kafka's `Selector.IdleExpiryManager`: an access-ordered map connection -> last
activity; the oldest entry is the only one that can have expired first, so a check costs
O(expired), not O(connections). Kafka closes one expired connection per poll and polls
continuously; here one check returns every expired connection at once.

Pure: times are passed in (seconds on the caller's monotonic clock).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")  # any hashable connection handle

CONNECTIONS_MAX_IDLE_MS = "connections.max.idle.ms"
CONNECTIONS_MAX_IDLE_MS_DEFAULT = 10 * 60 * 1000


class IdleExpiry(Generic[K]):
    """Tracks activity; `expired(now)` pops the connections idle longer than `max_idle`."""

    def __init__(self, max_idle_s: float) -> None:
        self.max_idle_s = max_idle_s
        self._lru: OrderedDict[K, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._lru)

    def update(self, key: K, now: float) -> None:
        """Record activity on `key` (adds it when new)."""
        lru = self._lru
        lru[key] = now
        lru.move_to_end(key)

    def remove(self, key: K) -> None:
        self._lru.pop(key, None)

    def next_deadline(self) -> float | None:
        """When the oldest connection expires; None when none is tracked."""
        for last in self._lru.values():
            return last + self.max_idle_s
        return None

    def expired(self, now: float) -> list[K]:
        """Remove and return every connection whose last activity is more than
        `max_idle` before `now` (Kafka's strict `>`), oldest first."""
        out: list[K] = []
        lru = self._lru
        limit = now - self.max_idle_s
        while lru:
            key, last = next(iter(lru.items()))
            if last >= limit:
                break
            del lru[key]
            out.append(key)
        return out
