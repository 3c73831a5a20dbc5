"""Log lines that repeat under load, at most once per interval and key.

A connection flood must not become a log flood: the first occurrence is logged, later ones
within the interval are only counted, and the count is reported with the next line logged
for that key. Kafka logs each refused connection at INFO; this keeps the fact, not the
volume.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

DEFAULT_INTERVAL_S = 10.0
# Keys are client addresses under a flood; old entries are pruned past this many.
_MAX_KEYS = 1024


class ThrottledLog:
    """`log(key, level, msg, *args)` emits at most once per `interval_s` per key."""

    def __init__(self, logger: logging.Logger, clock: Callable[[], float],
                 interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self._logger = logger
        self._clock = clock
        self.interval_s = interval_s
        # key -> [next time a line may be logged, occurrences suppressed since the last]
        self._state: dict[str, list[float]] = {}

    def log(self, key: str, level: int, msg: str, *args: object) -> bool:
        """Log unless throttled; returns whether a line was written."""
        now = self._clock()
        entry = self._state.get(key)
        if entry is not None and now < entry[0]:
            entry[1] += 1
            return False
        suppressed = int(entry[1]) if entry is not None else 0
        if suppressed:
            msg += " (%d more like this since the last report)"
            args = (*args, suppressed)
        self._logger.log(level, msg, *args)
        if entry is None and len(self._state) >= _MAX_KEYS:
            self._prune(now)
        self._state[key] = [now + self.interval_s, 0]
        return True

    def _prune(self, now: float) -> None:
        for key in [k for k, (until, _) in self._state.items() if until <= now]:
            del self._state[key]
        while len(self._state) >= _MAX_KEYS:  # all still throttled: forget the oldest
            del self._state[next(iter(self._state))]
