"""Classic group formation time with confluent-kafka members.

N consumers of one new group are created first and each made to find the group
coordinator (a `committed()` call does FindCoordinator and OffsetFetch), so that
`subscribe()` sends the JoinGroup at once. Then all N subscribe in a tight loop, each
polled by its own thread. The time measured runs from just before the last `subscribe()`
(the last member's first JoinGroup) to the last `on_assign` callback (every member has
its assignment).
"""

from __future__ import annotations

import threading
import time
from typing import Any

JOIN_TIMEOUT_S = 60.0
# Members poll often so callbacks are served at once; heartbeats are frequent so members
# that formed an earlier generation notice the next rebalance quickly on every broker.
CONSUMER_CONFIG = {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 100,
                   "enable.auto.commit": False, "auto.offset.reset": "earliest"}


class _Member(threading.Thread):
    def __init__(self, consumer: Any, topic: str, start: threading.Event) -> None:
        super().__init__(daemon=True)
        self.consumer, self.topic, self.start_evt = consumer, topic, start
        self.assigned_at: float | None = None
        self.stop = threading.Event()

    def _on_assign(self, _consumer: Any, partitions: Any) -> None:
        if self.assigned_at is None:
            self.assigned_at = time.perf_counter()

    def run(self) -> None:
        self.start_evt.wait()
        while not self.stop.is_set():
            self.consumer.poll(0.01)


def measure_join(bootstrap: str, topic: str, group: str, members: int) -> dict[str, Any]:
    """One formation of a `members`-strong group; returns seconds and what was seen."""
    from confluent_kafka import Consumer, TopicPartition

    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "client.id": f"bench-{i}", **CONSUMER_CONFIG})
                 for i in range(members)]
    for c in consumers:
        c.committed([TopicPartition(topic, 0)], timeout=30)
    go = threading.Event()
    threads = [_Member(c, topic, go) for c in consumers]
    for t in threads:
        t.start()
    last_join = 0.0
    for t in threads:
        last_join = time.perf_counter()
        t.consumer.subscribe([topic], on_assign=t._on_assign)
    go.set()
    deadline = time.monotonic() + JOIN_TIMEOUT_S
    while any(t.assigned_at is None for t in threads) and time.monotonic() < deadline:
        time.sleep(0.005)
    done = [t.assigned_at for t in threads if t.assigned_at is not None]
    for t in threads:
        t.stop.set()
    for t in threads:
        t.join(10)
    for c in consumers:
        c.close()
    if len(done) < members:
        raise RuntimeError(f"only {len(done)} of {members} members got an assignment")
    return {"members": members, "seconds": max(done) - last_join}
