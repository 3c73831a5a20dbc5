"""Start-up time: spawn -> first successful ApiVersions round trip on the port.

Each broker is started ``startup_repeats`` times (alternating brokers, fresh data dir each
time). Reported: median, p90, min and max of spawn -> ApiVersions, plus median spawn ->
first TCP connect. With valgrind installed, the Python brokers and floors also get the
instructions they execute up to their listener's bind (`bench.startup_instructions`): a
number the machine's load does not move.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import startup_instructions
from bench.brokers import BrokerFailed, BrokerSpec, GroupcoordBroker, start_broker
from bench.common import (
    DATA_DIR,
    LOOPBACK,
    Section,
    add_relative,
    free_port,
    median,
    percentile,
    progress,
)
from bench.context import BenchContext

NAME = "startup"
TITLE = "Start-up time"

# Processes that run to their exit: spawn -> exit is their cost.
FLOOR_PROCESSES = {"floor: python -S -c pass": [sys.executable, "-S", "-c", "pass"],
                   "floor: python -c 'import asyncio'": [sys.executable, "-c", "import asyncio"]}


class BareServer(BrokerSpec):
    """An asyncio+uvloop listener answering ApiVersions, nothing else (the floor)."""

    name = "floor: bare asyncio+uvloop server"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def command(self, port: int, data_dir: Path) -> list[str]:
        return [sys.executable, str(Path(__file__).with_name("bare_server.py")), str(port)]

    def describe(self) -> dict[str, str]:
        return {"name": self.name, "host": LOOPBACK}


def _process_ms(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True)
    return (time.perf_counter() - start) * 1000.0


def _instructions(spec: BrokerSpec) -> float | None:
    """Millions of instructions a Python broker executes to its bind, None for others."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{spec.name}-ir-", dir=DATA_DIR) as data_dir:
        command = spec.command(free_port(), Path(data_dir))
        if command[0] != sys.executable:
            return None
        return startup_instructions.to_bind(command, spec.env()) / 1e6


def _floor_instructions(bare: BareServer) -> dict[str, float]:
    counts = {label: startup_instructions.count(argv) / 1e6
              for label, argv in FLOOR_PROCESSES.items()}
    return {**counts, bare.name: _instructions(bare) or float("nan")}


def run(ctx: BenchContext) -> Section:
    """Measure start-up of every usable broker; return the results table."""
    section = Section(
        name=NAME, title=TITLE,
        description="Wall time from spawning the broker process to the first successful "
                    "ApiVersions v0 round trip on its port (polled every 1 ms, one "
                    "connection per attempt). Fresh data dir per start. Broker CPU and "
                    "RSS (VmHWM) are read from /proc at that moment.",
        columns=[("broker", "broker"), ("n", "starts"), ("median_ms", "median ms"),
                 ("vs_peer", "time vs Tansu"), ("vs_kafka", "time vs Kafka"),
                 ("p90_ms", "p90 ms"), ("min_ms", "min ms"), ("max_ms", "max ms"), ("connect_median_ms", "median ms to TCP accept"),
                 ("cpu_ms", "broker CPU ms to ready (median)"),
                 ("rss_mib", "RSS MiB when ready (median)"),
                 ("instructions_m", "instructions to bind (M)"),
                 ("status", "status")],
    )
    bare = BareServer()
    floor: dict[str, list[float]] = {name: [] for name in [*FLOOR_PROCESSES, bare.name]}
    samples: dict[str, list[float]] = {b.name: [] for b in ctx.brokers}
    connects: dict[str, list[float]] = {b.name: [] for b in ctx.brokers}
    at_ready: dict[str, list[tuple[float, float]]] = {b.name: [] for b in ctx.brokers}
    failures: dict[str, str] = {}
    for i in range(ctx.startup_repeats):
        for spec in ctx.order(i):
            if spec.name in failures:
                continue
            try:
                with start_broker(spec, f"startup-{i}") as broker:
                    total = (broker.ready_s - broker.spawn_s) * 1000.0
                    samples[spec.name].append(total)
                    connects[spec.name].append((broker.connect_s - broker.spawn_s) * 1000.0)
                    cpu, rss = broker.cpu_seconds(), broker.rss_peak_mib()
                    at_ready[spec.name].append((float("nan") if cpu is None else cpu,
                                                float("nan") if rss is None else rss))
            except BrokerFailed as exc:
                failures[spec.name] = str(exc)
                progress(NAME, f"{spec.name}: FAILED {exc}")
        for label, argv in FLOOR_PROCESSES.items():
            floor[label].append(_process_ms(argv))
        with start_broker(bare, f"startup-floor-{i}") as server:
            floor[bare.name].append((server.ready_s - server.spawn_s) * 1000.0)
        progress(NAME, f"start {i + 1}/{ctx.startup_repeats}: " + ", ".join(
            f"{name} {vals[-1]:.1f} ms" for name, vals in samples.items() if vals))
    counted = startup_instructions.available()
    # Only Python brokers: the others' commands need a prepared node (Kafka) or are not
    # interpreters whose bind the count can stop at.
    instructions = {spec.name: _instructions(spec) for spec in ctx.brokers
                    if counted and spec.name not in failures
                    and isinstance(spec, GroupcoordBroker)}
    floor_instructions = _floor_instructions(bare) if counted else {}
    for spec in ctx.brokers:
        vals = samples[spec.name]
        row: dict[str, Any] = {"broker": spec.name, "n": len(vals)}
        if vals:
            row.update(median_ms=median(vals), p90_ms=percentile(vals, 90),
                       min_ms=min(vals), max_ms=max(vals),
                       connect_median_ms=median(connects[spec.name]),
                       cpu_ms=median([cpu * 1000.0 for cpu, _ in at_ready[spec.name]]),
                       rss_mib=median([rss for _, rss in at_ready[spec.name]]),
                       instructions_m=instructions.get(spec.name))
        row["status"] = f"failed: {failures[spec.name].splitlines()[0]}" \
            if spec.name in failures else "ok"
        section.rows.append(row)
    section.rows.extend(ctx.pending_rows())
    add_relative(section.rows, "median_ms")
    for label, vals in floor.items():
        section.rows.append({"broker": label, "n": len(vals), "median_ms": median(vals),
                             "p90_ms": percentile(vals, 90), "min_ms": min(vals),
                             "max_ms": max(vals),
                             "instructions_m": floor_instructions.get(label), "status": "ok"})
    section.notes.append(
        "The `floor:` rows are measured in the same loop as the brokers: a process's spawn to "
        "its exit, and the bare server's spawn to its first ApiVersions answer. They are what "
        "any broker started as a Python process pays before its first answer on this machine.")
    if counted:
        section.notes.append(
            "Instructions to bind: counted once per Python broker and floor by valgrind "
            "(`cachegrind --cache-sim=no`, `PYTHONHASHSEED=0`) from spawn to the first "
            "`socket.bind` (or to the exit for the floor processes); load does not move "
            "them, unlike the times. `python -m bench.startup_instructions -m groupcoord "
            "serve ...` counts one command.")
    else:
        section.notes.append("Instructions to bind: not counted (valgrind is not installed).")
    formats = [s for spec in ctx.brokers for s in getattr(spec, "format_s", [])]
    if formats:
        section.notes.append(
            f"Kafka's data dir is formatted (`kafka-storage format`, a JVM run of its own) "
            f"before the clock starts: median {median(formats):.2f} s per start, not counted.")
    section.raw = {"samples_ms": samples, "floor_ms": floor, "connect_ms": connects,
                   "failures": failures,
                   "cpu_s_rss_mib_at_ready": at_ready, "kafka_format_s": formats,
                   "instructions_to_bind_m": {**instructions, **floor_instructions}}
    return section
