"""Produce throughput: one confluent-kafka producer, 1 KiB records, acks=1 and acks=all.

Every run gets a freshly started broker and a new one-partition topic. The clock runs
from the first ``produce()`` to the end of ``flush()`` (all delivery reports in).
"""

from __future__ import annotations

from typing import Any

from bench import clients
from bench.brokers import BrokerFailed, BrokerSpec, start_broker
from bench.common import (
    THROUGHPUT_COLUMNS,
    Section,
    add_relative,
    progress,
    throughput_summary,
)
from bench.context import BenchContext

NAME = "produce"
TITLE = "Produce throughput"
ACKS = ("1", "all")


def run(ctx: BenchContext) -> Section:
    """Measure produce throughput of every usable broker for each acks setting."""
    cfg = ", ".join(f"{k}={v}" for k, v in clients.PRODUCER_CONFIG.items())
    section = Section(
        name=NAME, title=TITLE,
        description=f"{ctx.records:,} records of {clients.RECORD_SIZE} B (value only, no key) "
                    f"to a 1-partition topic from one confluent-kafka producer; {cfg}. "
                    "Fresh broker per run.",
        columns=[("broker", "broker"), ("acks", "acks"), *THROUGHPUT_COLUMNS],
        notes=[("All brokers are single nodes with replication factor 1, so acks=all waits "
               "for the leader's append only, like acks=1.")],
    )
    samples: dict[tuple[str, str], list[dict[str, Any]]] = {}
    failures: dict[tuple[str, str], str] = {}
    for i in range(ctx.runs):
        for acks in ACKS:
            for spec in ctx.order(i):
                key = (spec.name, acks)
                if key in failures:
                    continue
                try:
                    sample = _one_run(ctx, spec, acks, f"produce-acks{acks}-{i}")
                except clients.BENCH_ERRORS as exc:  # reported in the table, not fatal
                    failures[key] = f"{type(exc).__name__}: {exc}"
                    progress(NAME, f"{spec.name} acks={acks} run {i + 1}: FAILED {exc}")
                    continue
                samples.setdefault(key, []).append(sample)
                progress(NAME, f"{spec.name} acks={acks} run {i + 1}/{ctx.runs}: "
                               f"{sample['records'] / sample['seconds']:,.0f} records/s, "
                               f"{sample['bytes'] / sample['seconds'] / 1e6:.1f} MB/s")
    for acks in ACKS:
        for spec in ctx.brokers:
            key = (spec.name, acks)
            row: dict[str, Any] = {"broker": spec.name, "acks": acks}
            row.update(throughput_summary(samples.get(key, [])))
            row["status"] = f"failed: {failures[key].splitlines()[0]}" if key in failures \
                else "ok"
            section.rows.append(row)
        section.rows.extend(ctx.pending_rows(acks=acks))
    add_relative(section.rows, "records_per_s", ("acks",))
    section.raw = {"runs": {f"{b}/acks={a}": v for (b, a), v in samples.items()},
                   "failures": {f"{b}/acks={a}": v for (b, a), v in failures.items()}}
    return section


def _one_run(ctx: BenchContext, spec: BrokerSpec, acks: str, tag: str) -> dict[str, Any]:
    topic = f"bench-produce-acks-{acks}"
    with start_broker(spec, tag) as broker:
        note = clients.create_topic(broker.bootstrap, topic)
        if note:
            progress(NAME, f"{spec.name}: {note}")
        broker.mark_cpu()
        out = clients.produce(broker.bootstrap, topic, ctx.records, acks,
                              timeout_s=ctx.run_timeout_s)
        cpu = broker.cpu_since_mark()
        rss = broker.rss_peak_mib()
        if broker.proc.poll() is not None:
            raise BrokerFailed(f"{spec.name} exited during the run:\n{broker.log_tail()}")
    if out.errors:
        raise RuntimeError(f"{out.errors} delivery errors, first: {out.first_error}")
    return {"records": out.records, "bytes": out.records * clients.RECORD_SIZE,
            "seconds": out.seconds, "cpu_s": cpu,
            "rss_mib": rss}
