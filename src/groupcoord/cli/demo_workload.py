"""The demo's consumer-group workload: a steady producer and a scripted classic group.

`run_workload(bootstrap, scenario, say)` drives real confluent-kafka clients against a
running broker:

1. a producer streams keyed records at `rate` records/s for the whole run;
2. `m1`, `m2`, `m3-slow` and `m4-killed` join the group one by one, `step_s` apart (each
   member is a `demo_member` process; `m3-slow` sleeps `slow_delay_ms` per record, so its
   partitions fall behind; `m2` is a kafka-python consumer, the rest use librdkafka);
3. `m2` closes with LeaveGroup and a KIP-800 reason (`LEAVE_REASON`);
4. `m4-killed` is SIGKILLed: no LeaveGroup, so the coordinator evicts it when its session
   times out (`session_timeout_ms`) and the survivors take over its partitions;
5. after `tail_s` the producer stops and the last members close.

Progress lines (members and their partitions after each rebalance, produced records, lag)
go to `say`. The result keeps what every member reported (assignments, each commit) as the
ground truth the analytics output is checked against.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from groupcoord.cli.demo_clients import LagMonitor, MemberProcess, SteadyProducer, logged_to

Say = Callable[[str], None]
# The KIP-800 reason m2 gives when it leaves; the coordinator records it in __group_events.
LEAVE_REASON = "scaling down"


@dataclass(frozen=True)
class Scenario:
    """Knobs of one run; the defaults are the demo's (about 75 s of wall time)."""

    topic: str = "demo-orders"
    group: str = "demo-group"
    partitions: int = 6
    rate: int = 200  # records/s, all partitions together
    step_s: float = 10.0  # between scripted membership changes
    tail_s: float = 15.0  # after the killed member was evicted
    slow_delay_ms: float = 40.0  # m3-slow's processing time per record
    session_timeout_ms: int = 6000
    progress_s: float = 5.0  # between lag lines


@dataclass
class WorkloadResult:
    """What happened, as the clients saw it."""

    scenario: Scenario
    started_ms: int
    ended_ms: int = 0
    produced: int = 0
    members: dict[str, MemberProcess] = field(default_factory=dict)
    timeline: list[tuple[float, str]] = field(default_factory=list)  # (seconds, what)

    def commits(self) -> list[tuple[str, int, int]]:
        """Every (member, partition, offset) a member reported as committed."""
        return [(name, int(p), int(o)) for name, m in self.members.items()
                for ev in m.events_of("committed") for p, o in ev["offsets"].items()]


class Workload:
    """Runs one scenario; `run()` returns the result. See the module docstring."""

    def __init__(self, bootstrap: str, scenario: Scenario, say: Say,
                 client_log: IO[bytes] | None = None) -> None:
        self.bootstrap = bootstrap
        self.sc = scenario
        self.say = say
        self.client_log = client_log
        self.aborted = False
        self.t0 = time.monotonic()
        self.result = WorkloadResult(scenario, int(time.time() * 1000))
        settings = logged_to(client_log)
        self.producer = SteadyProducer(bootstrap, scenario.topic, scenario.rate,
                                       settings=settings)
        self.monitor = LagMonitor(bootstrap, scenario.group, scenario.topic,
                                  scenario.partitions, settings=settings)
        self._stop_progress = threading.Event()

    def note(self, text: str) -> None:
        """A timeline entry, printed with the elapsed time."""
        at = time.monotonic() - self.t0
        self.result.timeline.append((at, text))
        self.say(f"t={at:5.1f}s  {text}")

    def run(self) -> WorkloadResult:
        progress = threading.Thread(target=self._progress_loop, daemon=True)
        self.producer.start()
        self.note(f"producer streaming {self.sc.rate} keyed records/s to {self.sc.topic}")
        progress.start()
        try:
            self._script()
        except KeyboardInterrupt:
            self._abort()
            raise
        finally:
            self._stop_progress.set()
            if not self.aborted:
                progress.join()
                for member in self.result.members.values():
                    member.close()
                self.producer.stop()
                self.monitor.close()
            self.result.produced = self.producer.delivered
            self.result.ended_ms = int(time.time() * 1000)
        return self.result

    def _abort(self) -> None:
        """Interrupted: no graceful leaves or flushes against a broker that is stopping too
        (each would wait and retry); the lag probe's thread ends with the process."""
        self.aborted = True
        for member in self.result.members.values():
            member.kill()
        self.producer.abandon()

    def _script(self) -> None:
        sc = self.sc
        for name, delay in (("m1", 0.0), ("m2", 0.0), ("m3-slow", sc.slow_delay_ms),
                            ("m4-killed", 0.0)):
            self._join(name, delay, LEAVE_REASON if name == "m2" else None)
            self._settle(sc.step_s)
        self.note(f"m2 closes: LeaveGroup with reason {LEAVE_REASON!r}, its partitions move "
                  f"to the others")
        self.result.members["m2"].close()
        self._settle(sc.step_s)
        self.note(f"m4-killed gets SIGKILL: no LeaveGroup; the coordinator evicts it after "
                  f"session.timeout.ms={sc.session_timeout_ms}")
        self.result.members["m4-killed"].kill()
        killed_at = time.monotonic()
        survivors = [self.result.members[n] for n in ("m1", "m3-slow")]
        self._wait(lambda: self._owns_all(survivors), sc.session_timeout_ms / 1000 + 30,
                   "the survivors to take over every partition")
        self.note(f"m4-killed evicted; its partitions reassigned "
                  f"{time.monotonic() - killed_at:.1f}s after the kill")
        self._settle(sc.tail_s)
        self.producer.stop()
        self.note(f"producer stopped after {self.producer.delivered:,} records; "
                  f"closing m1 and m3-slow")

    def _join(self, name: str, delay_ms: float, leave_reason: str | None) -> None:
        member = MemberProcess(name, self.bootstrap, self.sc, delay_ms, self._on_assigned,
                               leave_reason, self.client_log)
        self.result.members[name] = member
        how = f", processing {delay_ms:.0f} ms per record" if delay_ms else ""
        client = "kafka-python" if leave_reason else "confluent-kafka"
        self.note(f"{name} joins the group ({client}{how})")
        self._wait(lambda: member.assigned is not None, 30, f"{name} to get an assignment")

    def _on_assigned(self, name: str, parts: list[int]) -> None:
        self.say(f"          {name} assigned partitions {parts}")

    def _owns_all(self, members: list[MemberProcess]) -> bool:
        owned = sorted(p for m in members for p in (m.assigned or []))
        return owned == list(range(self.sc.partitions))

    def _wait(self, cond: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Poll `cond` (the members report asynchronously) until true or time runs out."""
        deadline = time.monotonic() + timeout_s
        while not cond():
            failed = [m.name for m in self.result.members.values() if m.failed()]
            if failed or time.monotonic() > deadline:
                raise RuntimeError(f"gave up waiting for {what}; failed members: {failed}")
            time.sleep(0.05)

    def _settle(self, seconds: float) -> None:
        """Let the workload run; a member that dies unexpectedly ends the run early."""
        end = time.monotonic() + seconds
        self._wait(lambda: time.monotonic() >= end, seconds + 1, "the next step")

    def _progress_loop(self) -> None:
        while not self._stop_progress.wait(self.sc.progress_s):
            try:
                lag = self.monitor.lag()
            except Exception as exc:  # noqa: BLE001 - a progress line is not worth a crash
                if not self._stop_progress.is_set():  # not the broker stopping under it
                    self.say(f"          (lag unavailable: {exc})")
                continue
            total = sum(lag.values())
            per = " ".join(f"p{p}:{n}" for p, n in sorted(lag.items()))
            owners = "  ".join(f"{m.name}{m.assigned or '(rebalancing)'}"
                               for m in self.result.members.values()
                               if m.alive() and m.assigned is not None)
            self.note(f"produced {self.producer.delivered:,}  lag {total:,} ({per})  "
                      f"members {owners}")


def run_workload(bootstrap: str, scenario: Scenario, say: Say = print,
                 client_log: IO[bytes] | None = None) -> WorkloadResult:
    """Run the scripted consumer-group scenario against `bootstrap` (topic must exist);
    the members' own output (librdkafka's log lines) goes to `client_log`."""
    return Workload(bootstrap, scenario, say, client_log).run()


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int
                      ) -> dict[int, tuple[int, int]]:
    """{partition: (committed offset, end offset)} read back from the broker (OffsetFetch and
    ListOffsets, through librdkafka)."""
    monitor = LagMonitor(bootstrap, group, topic, partitions)
    try:
        return monitor.offsets()
    finally:
        monitor.close()
