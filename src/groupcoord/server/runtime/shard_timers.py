"""A shard's timers: keyed soft state armed on the broker's `Clock` (which never fires one
before its deadline). A fired timer runs as an ordinary queued operation of the shard: the
shard's `on_timer`, or for the periodic cleanup its `cleanup_expired_offsets`."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groupcoord.coordinator.clock import TimerHandle
    from groupcoord.coordinator.shard import Shard
    from groupcoord.server.runtime.shard_host import Operation, ShardHost

TimerKey = tuple[Any, ...]
# The periodic cleanup of expired offsets (every `ShardHost.cleanup_interval_ms`).
CLEANUP_KEY: TimerKey = ("__cleanup__",)


class ShardTimers(dict[TimerKey, tuple[int, "TimerHandle", int]]):
    """key -> (sequence, handle, deadline ms); the deadline is for describing state."""

    def __init__(self, host: ShardHost, submit: Callable[[Operation], None]) -> None:
        super().__init__()
        self._host = host
        self._clock = host.broker.clock
        self._submit = submit
        self._seq = itertools.count(1)

    def schedule(self, key: TimerKey, deadline_ms: int) -> None:
        entry = self.get(key)
        if entry is not None and entry[1].postpone(deadline_ms):
            # Moved later before it fired (a session each heartbeat and commit extends):
            # the clock keeps its timer, so a busy member costs no new one per request.
            self[key] = (entry[0], entry[1], deadline_ms)
            return
        self.cancel(key)
        seq = next(self._seq)
        handle = self._clock.call_at(deadline_ms, lambda: self._fire(key, seq))
        self[key] = (seq, handle, deadline_ms)

    def cancel(self, key: TimerKey) -> None:
        entry = self.pop(key, None)
        if entry is not None:
            entry[1].cancel()

    def cancel_all(self) -> None:
        for _seq, handle, _deadline in self.values():
            handle.cancel()
        self.clear()

    def schedule_cleanup(self, shard: Shard) -> None:
        interval = self._host.cleanup_interval_ms
        if interval > 0 and shard.periodic_cleanup:
            self.schedule(CLEANUP_KEY, self._clock.now_ms() + interval)

    def _fire(self, key: TimerKey, seq: int) -> None:
        def op(shard: Any, _ctx: Any, now: int) -> Any:
            entry = self.get(key)
            if entry is None or entry[0] != seq:
                return None  # replaced or cancelled after it fired
            del self[key]
            if key == CLEANUP_KEY:
                self.schedule_cleanup(shard)
                return shard.cleanup_expired_offsets(now)
            return shard.on_timer(key, now)
        self._submit(op)
