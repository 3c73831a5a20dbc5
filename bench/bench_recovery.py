"""Start-up recovery after SIGKILL (or a clean stop): how long the broker leaves requests
unanswered.

``python -m bench.bench_recovery [--partitions 1000] [--commits 1000000] [--compare-src DIR]``
writes a data dir with a ``--partitions``-partition topic (a few batches each) and
``--commits`` offset commits (as ``bench.bench_restart`` writes them), starts the broker on
it, waits until it serves, SIGKILLs it, and measures the next start: from spawn, another
process sends ApiVersions every 50 ms on one connection and records how long each answer
took, until the broker has recovered every log (a Metadata request sent at once is
answered) and every offsets shard has loaded. Reported: the slowest ApiVersions answer while
the logs recovered (samples sent from the bind until Metadata was answered), and while the
shards loaded after it; when Metadata was answered, and when every shard had loaded. The
measured broker runs under ``bench.loop_lag_serve``: its own loop lag in each phase (a
callback every 10 ms, how late it ran), for the worst tick the loop thread's CPU and its
wait for a core, the most a tick was late with the loop thread doing neither (blocked, e.g.
on the GIL held by the recovery thread), and the broker's CPU per wall second: figures the
other processes on a shared machine inflate far less than an answer's round trip.
``--repeats`` SIGKILL-and-start rounds; ``--clean`` stops with SIGTERM (a clean shutdown).
``--compare-src DIR`` measures another checkout's ``src/`` (e.g. the code before a change) on
a copy of the same data dir, in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.bench_restart import _call, _exchange, _frame, _offset_fetch_error
from bench.bench_restart import build as build_commits
from bench.common import REPO_ROOT, free_port, progress
from groupcoord.logformat.batch import build_batch
from groupcoord.storage.manager import LogManager
from groupcoord.wire.generated import api_versions, metadata

SECTION = "recovery"
TOPIC = "wide"
SAMPLE_INTERVAL_S = 0.05
# The goal for every answer while the broker starts (issue: no reply slower than this).
GOAL_MS = 50.0


def build(data: Path, partitions: int, commits: int) -> list[str]:
    """The data dir; one group of each offsets partition that holds commits."""
    groups = build_commits(data, commits)
    mgr = LogManager(str(data))
    mgr.load_all()
    topic_id = os.urandom(16)
    for p in range(partitions):
        plog = mgr.get_or_create(TOPIC, p, topic_id)
        for i in range(5):
            plog.append(build_batch([(f"k{j}".encode(), b"v" * 100, [], 1_000 + i)
                                     for j in range(20)]))
    mgr.close()
    return groups


class Sampler(threading.Thread):
    """ApiVersions every 50 ms on one connection; each answer's latency in ms."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        # (when sent, perf_counter seconds; how long the answer took, ms)
        self.latencies: list[tuple[float, float]] = []
        self.done = threading.Event()

    def run(self) -> None:
        frame = _frame(api_versions.ApiVersionsRequest(), 18, 0)
        while not self.done.is_set():
            try:
                sock = socket.create_connection(("127.0.0.1", self.port), timeout=60.0)
                break
            except OSError:
                time.sleep(0.001)
        else:
            return
        with sock:
            while not self.done.is_set():
                sent = time.perf_counter()
                _exchange(sock, frame)
                took = time.perf_counter() - sent
                self.latencies.append((sent, took * 1000))
                time.sleep(max(0.0, SAMPLE_INTERVAL_S - took))


def _spawn(data: Path, port: int, src: Path, lag_out: Path | None = None
           ) -> subprocess.Popen[bytes]:
    """`groupcoord serve` of `src`; with `lag_out`, with the loop-lag probe writing there."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(src)
    command = ["-m", "groupcoord", "serve"] if lag_out is None else \
        ["-m", "bench.loop_lag_serve", str(lag_out)]
    return subprocess.Popen([sys.executable, *command, "--listen", f"127.0.0.1:{port}",
                             "--data-dir", str(data)], env=env,
                            cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# One loop-lag sample: perf_counter s, lag ms, loop CPU ms, loop run-queue wait ms, process
# CPU s (bench.loop_lag_serve).
LagSample = tuple[float, float, float, float, float]


def _phase(samples: list[LagSample], begin: float, end: float, prefix: str
           ) -> dict[str, float]:
    """The loop's worst lag in [begin, end) (only its part after `begin`: before the bind no
    request could wait) with when it ended, the loop thread's CPU and run-queue wait in that
    tick, the ticks over GOAL_MS, and the broker's CPU over the phase per wall second."""
    inside = [(s[0], min(s[1], (s[0] - begin) * 1000), *s[2:])
              for s in samples if begin <= s[0] < end]
    before = [s for s in samples if s[0] < begin]
    worst = max(inside, key=lambda s: s[1], default=(begin, 0.0, 0.0, 0.0, 0.0))
    cpu_begin = before[-1][4] if before else 0.0  # the process starts with the phase
    cpu_end = inside[-1][4] if inside else cpu_begin
    wall = (inside[-1][0] - begin) if inside else 0.0
    return {f"{prefix}_lag_ms": worst[1], f"{prefix}_lag_at_ms": (worst[0] - begin) * 1000,
            f"{prefix}_lag_loop_cpu_ms": worst[2], f"{prefix}_lag_runq_ms": worst[3],
            # Late with the loop thread neither on a CPU nor waiting for one: blocked (the
            # GIL held by another thread), whatever the other processes' load.
            f"{prefix}_blocked_ms": max((max(0.0, s[1] - s[2] - s[3]) for s in inside),
                                        default=0.0),
            f"{prefix}_ticks_over_goal": float(sum(1 for s in inside if s[1] > GOAL_MS)),
            f"{prefix}_cpu_per_wall": (cpu_end - cpu_begin) / wall if wall > 0 else 0.0}


def _wait_all_loaded(port: int, groups: list[str]) -> None:
    waiting = list(groups)
    with socket.create_connection(("127.0.0.1", port), timeout=60.0) as sock:
        while waiting:
            waiting = [g for g in waiting if _offset_fetch_error(sock, g) != 0]
            if waiting:
                time.sleep(0.01)


def measure(data: Path, groups: list[str], src: Path, clean: bool) -> dict[str, float]:
    """Start, serve, stop (SIGKILL, or SIGTERM with `clean`), then one measured start."""
    port = free_port()
    proc = _spawn(data, port, src)
    try:
        _wait_all_loaded_after_listen(port, groups)
    finally:
        if clean:
            proc.terminate()
        else:
            proc.send_signal(signal.SIGKILL)
        proc.wait(600)
    port = free_port()
    lag_out = data.parent / "loop-lag.json"
    lag_out.unlink(missing_ok=True)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    proc = _spawn(data, port, src, lag_out)
    sampler = Sampler(port)
    sampler.start()
    try:
        listening = _call_when_listening(port)
        _call(port, _frame(metadata.MetadataRequest(topics=[
            metadata.MetadataRequestTopic(name=TOPIC)]), 3, 12))
        ready = time.perf_counter()
        ready_ms = (ready - start) * 1000
        _wait_all_loaded(port, groups)
        loaded = time.perf_counter()
        loaded_ms = (loaded - start) * 1000
    finally:
        sampler.done.set()
        sampler.join(60)
        proc.terminate()
        proc.wait(600)
    recovering = [ms for sent, ms in sampler.latencies if sent < ready]
    loading = [ms for sent, ms in sampler.latencies if sent >= ready]
    with open(lag_out) as f:
        lag: list[LagSample] = [tuple(s) for s in json.load(f)]  # type: ignore[misc]
    return {"max_api_versions_ms": max(recovering), "samples": len(recovering),
            "max_while_shards_load_ms": max(loading, default=0.0),
            "metadata_ms": ready_ms, "all_loaded_ms": loaded_ms,
            "listening_ms": (listening - start) * 1000,
            **_phase(lag, listening, ready, "recovering"), **_phase(lag, ready, loaded, "loading"),
            "load_before": load_before, "load_after": os.getloadavg()[0]}


def _call_when_listening(port: int) -> float:
    """ApiVersions once the broker listens; when the attempt that connected began."""
    while True:
        began = time.perf_counter()
        try:
            _call(port, _frame(api_versions.ApiVersionsRequest(), 18, 0), 60.0)
            return began
        except OSError:
            time.sleep(0.001)


def _wait_all_loaded_after_listen(port: int, groups: list[str]) -> None:
    _call_when_listening(port)
    _wait_all_loaded(port, groups)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_recovery")
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clean", action="store_true",
                        help="stop with SIGTERM (a clean shutdown) instead of SIGKILL")
    parser.add_argument("--compare-src", type=Path, default=None, metavar="DIR",
                        help="also measure the broker of another checkout's src/ directory")
    args = parser.parse_args()
    sources = [("this checkout", REPO_ROOT / "src")]
    if args.compare_src is not None:
        sources.insert(0, ("--compare-src", args.compare_src.resolve()))
    base = Path(tempfile.mkdtemp(prefix="bench-recovery-"))
    try:
        template = base / "template"
        groups = build(template, args.partitions, args.commits)
        progress(SECTION, "data dir written")
        for name, src in sources:
            data = base / "data"
            shutil.rmtree(data, ignore_errors=True)
            shutil.copytree(template, data)
            samples = []
            for i in range(args.repeats):
                samples.append(measure(data, groups, src, args.clean))
                progress(SECTION, f"{name} #{i + 1}: {samples[-1]}")
            worst = {k: max(s[k] for s in samples) for k in samples[0]}
            med = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
            print(f"{name}: while the logs recover: slowest ApiVersions answer "
                  f"{worst['max_api_versions_ms']:.0f} ms (median of starts "
                  f"{med['max_api_versions_ms']:.0f} ms, {med['samples']:.0f} samples), "
                  f"loop lag {worst['recovering_lag_ms']:.0f} ms (median "
                  f"{med['recovering_lag_ms']:.0f} ms; in the worst tick loop CPU "
                  f"{med['recovering_lag_loop_cpu_ms']:.0f} ms, run-queue wait "
                  f"{med['recovering_lag_runq_ms']:.0f} ms; most blocked "
                  f"{worst['recovering_blocked_ms']:.0f} ms), broker CPU "
                  f"{med['recovering_cpu_per_wall']:.2f} s per s; while the shards load: "
                  f"ApiVersions {worst['max_while_shards_load_ms']:.0f} ms, loop lag "
                  f"{worst['loading_lag_ms']:.0f} ms (median {med['loading_lag_ms']:.0f} ms, "
                  f"its loop CPU {med['loading_lag_loop_cpu_ms']:.0f} ms), "
                  f"broker CPU {med['loading_cpu_per_wall']:.2f} s per s; Metadata at "
                  f"{med['metadata_ms']:.0f} ms, all shards loaded at "
                  f"{med['all_loaded_ms']:.0f} ms; load {min(s['load_before'] for s in samples):.1f}"
                  f"-{max(s['load_after'] for s in samples):.1f}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}")


if __name__ == "__main__":
    main()
