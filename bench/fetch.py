"""Fetch throughput: one confluent-kafka consumer with assign() reading from offset 0.

Every broker is started once (fresh, empty) and filled with the 1 KiB records (acks=1,
untimed); all brokers stay up while the timed reads alternate between them. Each timed
read is a new consumer reading the whole partition from offset 0.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from bench import clients
from bench.brokers import BrokerFailed, RunningBroker, start_broker
from bench.common import (
    THROUGHPUT_COLUMNS,
    Section,
    add_relative,
    median,
    progress,
    throughput_summary,
)
from bench.context import BenchContext

NAME = "fetch"
TITLE = "Fetch throughput"
TOPIC = "bench-fetch"


def run(ctx: BenchContext) -> Section:
    """Measure fetch throughput of every usable broker."""
    cfg = ", ".join(f"{k}={v}" for k, v in clients.CONSUMER_CONFIG.items())
    section = Section(
        name=NAME, title=TITLE,
        description=f"One confluent-kafka consumer, assign() to partition 0 at offset 0, "
                    f"reading {ctx.records:,} + 1 records of {clients.RECORD_SIZE} B produced "
                    f"beforehand (untimed); {cfg}; consume(num_messages=min(10000, remaining)). "
                    "Each value is checked. One broker instance per broker, filled once; "
                    "each run is a new consumer.",
        columns=[("broker", "broker"), *THROUGHPUT_COLUMNS[:-2],
                 ("first_record_ms", "ms to first record (median)"), *THROUGHPUT_COLUMNS[-2:]],
    )
    samples: dict[str, list[dict[str, Any]]] = {}
    failures: dict[str, str] = {}
    with ExitStack() as stack:
        running: dict[str, RunningBroker] = {}
        for spec in ctx.brokers:
            try:
                broker = stack.enter_context(start_broker(spec, "fetch"))
                _fill(ctx, broker)
                running[spec.name] = broker
                progress(NAME, f"{spec.name}: filled with {ctx.records + 1:,} records")
            except clients.BENCH_ERRORS as exc:  # reported in the table, not fatal
                failures[spec.name] = f"{type(exc).__name__}: {exc}"
                progress(NAME, f"{spec.name} fill: FAILED {exc}")
        for i in range(ctx.runs):
            for spec in ctx.order(i):
                if spec.name in failures:
                    continue
                try:
                    sample = _one_read(ctx, running[spec.name])
                except clients.BENCH_ERRORS as exc:  # reported in the table, not fatal
                    failures[spec.name] = f"{type(exc).__name__}: {exc}"
                    progress(NAME, f"{spec.name} run {i + 1}: FAILED {exc}")
                    continue
                samples.setdefault(spec.name, []).append(sample)
                progress(NAME, f"{spec.name} run {i + 1}/{ctx.runs}: "
                               f"{sample['records'] / sample['seconds']:,.0f} records/s, "
                               f"{sample['bytes'] / sample['seconds'] / 1e6:.1f} MB/s")
    for spec in ctx.brokers:
        row: dict[str, Any] = {"broker": spec.name}
        runs = samples.get(spec.name, [])
        row.update(throughput_summary(runs))
        if runs:
            row["first_record_ms"] = median([r["first_record_ms"] for r in runs])
        row["status"] = f"failed: {failures[spec.name].splitlines()[0]}" \
            if spec.name in failures else "ok"
        section.rows.append(row)
    section.rows.extend(ctx.pending_rows())
    add_relative(section.rows, "records_per_s", ())
    section.raw = {"runs": samples, "failures": failures}
    return section


def _fill(ctx: BenchContext, broker: RunningBroker) -> None:
    """Create the topic and produce ``ctx.records`` + 1 records into it (untimed)."""
    note = clients.create_topic(broker.bootstrap, TOPIC)
    if note:
        progress(NAME, f"{broker.spec.name}: {note}")
    produced = clients.produce(broker.bootstrap, TOPIC, ctx.records, "1",
                               timeout_s=ctx.run_timeout_s)
    if produced.errors:
        raise RuntimeError(f"fill failed: {produced.first_error}")


def _one_read(ctx: BenchContext, broker: RunningBroker) -> dict[str, Any]:
    """Time one consumer reading the whole partition."""
    broker.mark_cpu()
    out = clients.consume(broker.bootstrap, TOPIC, ctx.records + 1,
                          timeout_s=ctx.run_timeout_s)
    cpu = broker.cpu_since_mark()
    if broker.proc.poll() is not None:
        raise BrokerFailed(f"{broker.spec.name} exited during the run:\n{broker.log_tail()}")
    return {"records": out.records, "bytes": out.value_bytes, "seconds": out.seconds,
            "first_record_ms": out.first_record_s * 1000.0,
            "cpu_s": cpu, "rss_mib": broker.rss_peak_mib()}
