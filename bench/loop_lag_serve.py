"""`groupcoord serve` with a loop-lag probe on its event loop, for benchmarks.

``python -m bench.loop_lag_serve OUT.json <serve options>`` runs the broker as ``groupcoord
serve`` does (same config parsing, same loop, same collector pauses) plus a callback every
``PERIOD_MS`` that records how late it ran: the loop's own delay, whatever held it (work on
the loop, or another thread holding the GIL), which an ApiVersions round trip from another
process mixes with that process's and the network's scheduling. With each sample go the
loop thread's CPU time and its time runnable but waiting for a core
(``/proc/thread-self/schedstat``) since the previous one, and the process's CPU time, so a
late tick can be told apart: loop CPU (work on the loop), run-queue wait (other processes'
load) or neither (the loop thread blocked, e.g. waiting for the GIL). Written to OUT.json
when the broker stops (SIGTERM), as a list of ``[perf_counter s, lag ms, loop CPU ms, loop
run-queue wait ms, process CPU s]``; ``perf_counter`` is the system's monotonic clock, so
the caller can place samples on its own timeline.

Only the standard library and ``groupcoord.cli.serve`` (present in every checkout) are
imported, so it runs another checkout's broker too (``PYTHONPATH`` names its ``src/``).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from groupcoord.cli.serve import _run, config_from_args, parse_args, serve
from groupcoord.server.runtime import heap

PERIOD_MS = 10.0


def _schedstat() -> tuple[float, float]:
    """(ms on a CPU, ms runnable but waiting for one) of the calling thread (Linux)."""
    with open("/proc/thread-self/schedstat") as f:
        on_cpu, waiting, _ = f.read().split()
    return int(on_cpu) / 1e6, int(waiting) / 1e6


class LoopLagProbe:
    """Every PERIOD_MS on the running loop: how late the callback ran."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float, float, float, float]] = []
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._cpu, self._wait = 0.0, 0.0

    def start(self) -> None:
        self._cpu, self._wait = _schedstat()
        self._schedule(asyncio.get_running_loop())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        self._due = time.perf_counter() + PERIOD_MS / 1000
        self._handle = loop.call_later(PERIOD_MS / 1000, self._tick, loop)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        now = time.perf_counter()
        cpu, wait = _schedstat()
        self.samples.append((now, max(0.0, (now - self._due) * 1000), cpu - self._cpu,
                             wait - self._wait, time.process_time()))
        self._cpu, self._wait = cpu, wait
        self._schedule(loop)


async def _serve_probed(argv: list[str], probe: LoopLagProbe) -> None:
    config = config_from_args(parse_args(argv))
    probe.start()
    try:
        await serve(config)
    finally:
        probe.stop()


def main() -> None:
    out, argv = sys.argv[1], sys.argv[2:]
    heap.pause_until_started()  # as `groupcoord serve`: `serve` collects again once started
    probe = LoopLagProbe()
    try:
        _run(_serve_probed(argv, probe))
    finally:
        heap.end_pause()
        with open(out, "w") as f:
            json.dump(probe.samples, f)


if __name__ == "__main__":
    main()
