"""The client side of the demo workload: member processes, a steady producer, a lag probe.

All three use confluent-kafka (librdkafka), imported lazily so that `groupcoord` itself does
not need the `[test]` extra.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

CLOSE_TIMEOUT_S = 20.0


class MemberProcess:
    """A `demo_member` subprocess and the events it reported, read by a background thread."""

    def __init__(self, name: str, bootstrap: str, scenario: Any, delay_ms: float,
                 on_assigned: Callable[[str, list[int]], None],
                 leave_reason: str | None = None, log: IO[bytes] | None = None) -> None:
        self.name = name
        self.events: list[dict[str, Any]] = []
        self.assigned: list[int] | None = None  # None until the first assignment
        self.killed = False
        self._on_assigned = on_assigned
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "groupcoord.cli.demo_member", "--bootstrap", bootstrap,
             "--topic", scenario.topic, "--group", scenario.group, "--name", name,
             "--delay-ms", str(delay_ms), "--session-timeout-ms",
             str(scenario.session_timeout_ms),
             *(["--leave-reason", leave_reason] if leave_reason else [])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"read-{name}")
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue  # librdkafka never writes to stdout, but be tolerant
            with self._lock:
                self.events.append(ev)
            if ev["ev"] == "assigned":
                self.assigned = ev["parts"]
                self._on_assigned(self.name, ev["parts"])
            elif ev["ev"] in ("revoked", "lost"):
                self.assigned = []

    def events_of(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["ev"] == kind]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def failed(self) -> bool:
        """Exited without being told to, or reported an error."""
        return (not self.alive() and not self.killed and not self.events_of("closed")) \
            or bool(self.events_of("error"))

    def close(self) -> None:
        """Ask for a graceful close (LeaveGroup) and wait for the process to end."""
        if not self.alive():
            return
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write("close\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
        self._reader.join(5)

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to leave the group."""
        if self.alive():
            self.killed = True
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.assigned = []


def logged_to(client_log: IO[bytes] | None) -> dict[str, Any]:
    """librdkafka settings that send an in-process client's log lines to the demo's client
    log: by default librdkafka writes them to fd 2, where they reach the terminal when the
    broker stops before the client does (a Ctrl-C reaches both at once)."""
    if client_log is None:
        return {}
    logger = logging.getLogger("groupcoord.demo.clients")
    if not logger.handlers:
        logger.addHandler(logging.FileHandler(client_log.name))
        logger.propagate = False
    return {"logger": logger}


class SteadyProducer(threading.Thread):
    """Produces keyed records at a steady rate until stopped (acks=all)."""

    TICK_S = 0.05

    def __init__(self, bootstrap: str, topic: str, rate: int, customers: int = 500,
                 settings: dict[str, Any] | None = None) -> None:
        super().__init__(daemon=True, name="producer")
        from confluent_kafka import Producer

        self.topic = topic
        self.rate = rate
        self.customers = customers
        self.delivered = 0
        self.failed = 0
        self._halt = threading.Event()
        self._abandon = False
        self._producer: Any = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "linger.ms": 20, "compression.type": "lz4",
                                   **(settings or {})})

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        if err is None:
            self.delivered += 1
        else:
            self.failed += 1

    def run(self) -> None:
        sent, started = 0, time.monotonic()
        while not self._halt.is_set():
            # catch up to where the schedule says we should be, so the rate stays steady
            due = int((time.monotonic() - started) * self.rate)
            for i in range(sent, due):
                customer = f"customer-{i % self.customers:03d}"
                value = json.dumps({"order": i, "customer": customer}).encode()
                self._producer.produce(self.topic, key=customer.encode(), value=value,
                                       on_delivery=self._on_delivery)
            sent = max(sent, due)
            self._producer.poll(self.TICK_S)
        if self._abandon:
            self._producer.purge()  # interrupted: drop what is in flight, wait for nothing
        self._producer.flush(0 if self._abandon else 30)
        self._producer = None  # destroy the client now, not whenever the GC gets to it

    def stop(self) -> None:
        """Stop producing and wait until every record in flight is acknowledged."""
        self._halt.set()
        if self.is_alive():
            self.join(60)

    def abandon(self) -> None:
        """Stop at once, dropping the records in flight (the run was interrupted)."""
        self._abandon = True
        self.stop()


class LagMonitor:
    """Reads a group's committed offsets and the end offsets without joining the group."""

    def __init__(self, bootstrap: str, group: str, topic: str, partitions: int,
                 settings: dict[str, Any] | None = None) -> None:
        from confluent_kafka import Consumer

        self.topic = topic
        self.partitions = partitions
        # group.id is needed for OffsetFetch; this consumer never subscribes, so never joins
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                   "enable.auto.commit": False, **(settings or {})})

    def offsets(self) -> dict[int, tuple[int, int]]:
        """{partition: (committed offset or -1, end offset)}."""
        from confluent_kafka import TopicPartition

        tps = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        committed = {tp.partition: tp.offset for tp in self._consumer.committed(tps, timeout=10)}
        out = {}
        for p in range(self.partitions):
            _low, high = self._consumer.get_watermark_offsets(TopicPartition(self.topic, p),
                                                              timeout=10)
            out[p] = (committed[p] if committed[p] >= 0 else -1, high)
        return out

    def lag(self) -> dict[int, int]:
        """{partition: end offset - committed offset} (the whole log when nothing committed)."""
        return {p: end - max(c, 0) for p, (c, end) in self.offsets().items()}

    def close(self) -> None:
        self._consumer.close()
