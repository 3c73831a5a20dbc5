"""Start-up time: spawn -> first successful ApiVersions round trip on the port.

Each broker is started ``startup_repeats`` times (alternating brokers, fresh data dir each
time). Reported: median, p90, min and max of spawn -> ApiVersions, plus median spawn ->
first TCP connect.
"""

from __future__ import annotations

from typing import Any

from bench.brokers import BrokerFailed, start_broker
from bench.common import Section, add_relative, median, percentile, progress
from bench.context import BenchContext

NAME = "startup"
TITLE = "Start-up time"


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
                 ("status", "status")],
    )
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
        progress(NAME, f"start {i + 1}/{ctx.startup_repeats}: " + ", ".join(
            f"{name} {vals[-1]:.1f} ms" for name, vals in samples.items() if vals))
    for spec in ctx.brokers:
        vals = samples[spec.name]
        row: dict[str, Any] = {"broker": spec.name, "n": len(vals)}
        if vals:
            row.update(median_ms=median(vals), p90_ms=percentile(vals, 90),
                       min_ms=min(vals), max_ms=max(vals),
                       connect_median_ms=median(connects[spec.name]),
                       cpu_ms=median([cpu * 1000.0 for cpu, _ in at_ready[spec.name]]),
                       rss_mib=median([rss for _, rss in at_ready[spec.name]]))
        row["status"] = f"failed: {failures[spec.name].splitlines()[0]}" \
            if spec.name in failures else "ok"
        section.rows.append(row)
    section.rows.extend(ctx.pending_rows())
    add_relative(section.rows, "median_ms")
    formats = [s for spec in ctx.brokers for s in getattr(spec, "format_s", [])]
    if formats:
        section.notes.append(
            f"Kafka's data dir is formatted (`kafka-storage format`, a JVM run of its own) "
            f"before the clock starts: median {median(formats):.2f} s per start, not counted.")
    section.raw = {"samples_ms": samples, "connect_ms": connects, "failures": failures,
                   "cpu_s_rss_mib_at_ready": at_ready, "kafka_format_s": formats}
    return section
