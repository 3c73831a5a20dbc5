"""Share-group consumption: time to the first record, then records/s through ShareFetch +
ShareAcknowledge, and how the records spread over the consumers.

Run: ``python -m bench.bench_share`` (``--records N``, ``--runs N``, ``--consumers 1,4``) for
groupcoord alone; writes ``bench/results/share.json`` and ``bench/results/share.md``. The
``share`` section of ``bench.run_all`` runs the same workload on every broker side by side
(a broker that advertises no ShareGroupHeartbeat/ShareFetch gets a row saying so).

Per run: a fresh broker (groupcoord: ``--fsync interval``), one topic of 4 partitions filled
with ``records`` records of 100 B before any consumer starts, the group set to
``share.auto.offset.reset=earliest``. Then ``consumers`` confluent-kafka ``ShareConsumer``s
(librdkafka share consumer, implicit acknowledgement: each poll accepts the previous batch),
each in its own process, consume until together they have seen every record. The clock
runs from the moment all consumers were created to the moment the last record arrived, and
is reported in two parts: the time to the first record (the joins and the share-partition
initialization round: Kafka 4.4 assigns a new group's partitions only once their share
state is initialized, at the heartbeat after that, 5 s later with the default heartbeat
interval) and the steady rate over the rest (ShareFetch long polls, acquisition and the
acknowledgements, each persisted as a ShareUpdate in ``__share_group_state``). Each
consumer's record count shows whether the work was shared. Clients and broker share the
machine's cores.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing as mp
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from bench.brokers import BrokerSpec, GroupcoordBroker, start_broker
from bench.common import Section, add_relative, progress
from bench.context import BenchContext
from bench.probe import api_keys

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TOPIC, GROUP, PARTITIONS, VALUE = "share-bench", "share-bench-group", 4, b"x" * 100
RUN_TIMEOUT_S = 300.0
NAME = "share"
TITLE = "Share group consumption"
#: ShareGroupHeartbeat, ShareFetch, ShareAcknowledge: what a share consumer needs.
SHARE_API_KEYS = frozenset({76, 78, 79})
#: ``run_all``'s share section: records per run (fewer than produce: each one is acquired,
#: acknowledged and its state persisted) and the consumer counts.
SECTION_RECORDS = 200_000
SECTION_CONSUMERS = (1, 4)


def prepare(bootstrap: str, records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
        fut.result(30)
    entry = ConfigEntry("share.auto.offset.reset", "earliest",
                        incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, GROUP, incremental_configs=[entry])
    for fut in admin.incremental_alter_configs([resource]).values():
        fut.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "batch.num.messages": 10_000, "queue.buffering.max.messages": 1_000_000})
    for i in range(records):
        producer.produce(TOPIC, VALUE, partition=i % PARTITIONS)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def consumer_main(bootstrap: str, total: Any, ready: Any, records: int, go: Any,
                  index: int, counts: Any, first_at: Any) -> None:
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP})
    consumer.subscribe([TOPIC])
    with ready.get_lock():
        ready.value += 1
    # Nothing is fetched before the clock starts: on a busy machine the timing process
    # could otherwise see the first records consumed (or all of them) before it starts.
    while not go.value:
        time.sleep(0.0005)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        with total.get_lock():
            if total.value >= records:
                break
        got = sum(1 for m in consumer.poll(0.2) if m.error() is None)
        if got:
            now = time.monotonic()  # CLOCK_MONOTONIC: comparable across processes
            with total.get_lock():
                if total.value == 0:
                    first_at.value = now
                total.value += got
            counts[index] += got
    consumer.close()


class ShareUnsupported(RuntimeError):
    """The broker does not advertise the share-group APIs."""


def one_run(consumers: int, records: int, spec: BrokerSpec | None = None) -> dict[str, Any]:
    spec = spec if spec is not None else GroupcoordBroker("interval")
    with start_broker(spec, f"share-{consumers}") as broker:
        host, port = broker.bootstrap.rsplit(":", 1)
        missing = SHARE_API_KEYS - api_keys(host, int(port))
        if missing:
            raise ShareUnsupported(f"advertises no API key(s) {sorted(missing)} "
                                   "(ShareGroupHeartbeat 76, ShareFetch 78, ShareAcknowledge 79)")
        prepare(broker.bootstrap, records)
        ctx = mp.get_context("spawn")
        total, ready, go = ctx.Value("q", 0), ctx.Value("i", 0), ctx.Value("i", 0)
        counts, first_at = ctx.Array("q", consumers), ctx.Value("d", 0.0)
        procs = [ctx.Process(target=consumer_main,
                             args=(broker.bootstrap, total, ready, records, go, index, counts,
                                   first_at))
                 for index in range(consumers)]
        for p in procs:
            p.start()
        while ready.value < consumers:
            time.sleep(0.001)
        broker.mark_cpu()
        started = time.monotonic()
        go.value = 1
        deadline = started + RUN_TIMEOUT_S
        while total.value < records and time.monotonic() < deadline:
            time.sleep(0.005)
        elapsed = time.monotonic() - started
        cpu = broker.cpu_since_mark()
        for p in procs:
            p.join(60)
        ok = total.value >= records
        rss = broker.rss_peak_mib()
        first_s = first_at.value - started if first_at.value else None
        steady_s = elapsed - first_s if first_s is not None else 0.0
        return {"rss_mib": rss, "consumers": consumers, "records": records,
                "seconds": round(elapsed, 3),
                "first_record_ms": round(first_s * 1000) if first_s is not None else None,
                "records_per_s": round(records / elapsed) if ok else 0,
                "steady_records_per_s": round(records / steady_s) if ok and steady_s > 0 else 0,
                "per_consumer": sorted(counts[:], reverse=True),
                "broker_cpu_us_per_record": round(cpu * 1e6 / records, 1) if cpu else None,
                "status": "ok" if ok else f"timeout at {total.value} records"}


def run(ctx: BenchContext) -> Section:
    """`bench.run_all` section: share-group records/s on every broker, side by side."""
    records = min(ctx.records, SECTION_RECORDS)
    section = Section(
        name=NAME, title=TITLE,
        description=f"{records:,} records of {len(VALUE)} B in a {PARTITIONS}-partition topic, "
                    "produced before the consumers start; then 1 or 4 confluent-kafka "
                    "ShareConsumers (librdkafka's share consumer, each in its own process, "
                    "implicit acknowledgement) read until together they have every record. "
                    "First record: from the moment all consumers exist to the first record "
                    "received (joins and the share-partition initialization round: Kafka 4.4 "
                    "and groupcoord assign a new group's partitions at the heartbeat after "
                    "their share state is initialized). Steady rate: the records over the "
                    "time from the first record to the last (ShareFetch long polls, "
                    "acquisition and acknowledgements with persisted share state). Records "
                    "per consumer: each consumer's count in the median run, largest first. "
                    "Fresh broker per run.",
        columns=[("broker", "broker"), ("consumers", "consumers"),
                 ("first_record_ms", "first record ms (median)"),
                 ("steady_records_per_s", "steady records/s (median)"),
                 ("best_steady_records_per_s", "steady records/s (best)"),
                 ("vs_peer", "steady rate vs Tansu"), ("vs_kafka", "steady rate vs Kafka"),
                 ("records_per_s", "records/s incl. first record (median)"),
                 ("per_consumer", "records per consumer (median run)"),
                 ("broker_cpu_us_per_record", "broker CPU µs/record (median)"),
                 ("broker_rss_mib", "broker peak RSS MiB"), ("runs", "runs"), ("status", "status")],
    )
    samples: dict[tuple[str, int], list[dict[str, Any]]] = {}
    failures: dict[str, str] = {}
    for i in range(ctx.runs):
        for consumers in SECTION_CONSUMERS:
            for spec in ctx.order(i):
                if spec.name in failures:
                    continue
                try:
                    out = one_run(consumers, records, spec)
                except ShareUnsupported as exc:
                    failures[spec.name] = f"not supported: {exc}"
                    progress(NAME, f"{spec.name}: {failures[spec.name]}")
                    continue
                if out["status"] != "ok":
                    progress(NAME, f"{spec.name} {consumers} consumer(s) run {i + 1}: "
                                   f"{out['status']}")
                    samples.setdefault((spec.name, consumers), []).append(out)
                    continue
                samples.setdefault((spec.name, consumers), []).append(out)
                progress(NAME, f"{spec.name} {consumers} consumer(s) run {i + 1}/{ctx.runs}: "
                               f"first record {out['first_record_ms']} ms, "
                               f"{out['steady_records_per_s']:,} records/s steady, per "
                               f"consumer {out['per_consumer']}, "
                               f"{out['broker_cpu_us_per_record']} µs CPU each")
    for consumers in SECTION_CONSUMERS:
        for spec in ctx.brokers:
            got = samples.get((spec.name, consumers), [])
            ok = [r for r in got if r["status"] == "ok"]
            row: dict[str, Any] = {"broker": spec.name, "consumers": consumers,
                                   "runs": len(ok)}
            if ok:
                cpus = [r["broker_cpu_us_per_record"] for r in ok
                        if r["broker_cpu_us_per_record"]]
                rates = [float(r["records_per_s"]) for r in ok]
                steady = [float(r["steady_records_per_s"]) for r in ok]
                firsts = [r["first_record_ms"] for r in ok if r["first_record_ms"] is not None]
                median_run = sorted(ok, key=lambda r: r["steady_records_per_s"])[len(ok) // 2]
                row.update({"records_per_s": statistics.median(rates),
                            "steady_records_per_s": statistics.median(steady),
                            "best_steady_records_per_s": max(steady),
                            "first_record_ms":
                                float(statistics.median(firsts)) if firsts else None,
                            "per_consumer": " / ".join(f"{n:,}"
                                                       for n in median_run["per_consumer"]),
                            "broker_cpu_us_per_record":
                                float(statistics.median(cpus)) if cpus else None,
                            "broker_rss_mib": float(max(r["rss_mib"] or 0 for r in ok))})
            if spec.name in failures:
                row["status"] = failures[spec.name]
            elif len(ok) < len(got):
                row["status"] = f"{len(got) - len(ok)} run(s) timed out"
            else:
                row["status"] = "ok"
            section.rows.append(row)
        section.rows.extend(ctx.pending_rows(consumers=consumers))
    add_relative(section.rows, "steady_records_per_s", ("consumers",))
    section.raw = {"runs": {f"{b}/{c}": v for (b, c), v in samples.items()},
                   "failures": failures}
    return section


def render(result: dict[str, Any]) -> str:
    lines = [
        "# Share groups: ShareFetch + ShareAcknowledge throughput", "",
        f"Command: `{result['command']}`  ",
        f"Date (UTC): {result['date']}; {result['machine']}", "",
        ("| consumers | records | first record ms (median) | steady records/s (median) | "
         "records/s (median) | records/s (best) | records per consumer (median run) | "
         "broker CPU µs/record (median) | runs | status |"),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        lines.append(f"| {row['consumers']} | {row['records']:,} | {row['first_ms']} | "
                     f"{row['steady']:,} | {row['median']:,} | {row['best']:,} | "
                     f"{row['per_consumer']} | {row['cpu']} | {row['runs']} | "
                     f"{row['status']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--consumers", default="1,4")
    args = parser.parse_args()
    rows, samples = [], []
    for consumers in (int(c) for c in args.consumers.split(",")):
        runs = [one_run(consumers, args.records) for _ in range(args.runs)]
        samples.extend(runs)
        rates = [r["records_per_s"] for r in runs]
        cpus = [r["broker_cpu_us_per_record"] for r in runs if r["broker_cpu_us_per_record"]]
        steady = [r["steady_records_per_s"] for r in runs]
        firsts = [r["first_record_ms"] for r in runs if r["first_record_ms"] is not None]
        median_run = sorted(runs, key=lambda r: r["steady_records_per_s"])[len(runs) // 2]
        rows.append({"consumers": consumers, "records": args.records,
                     "median": round(statistics.median(rates)), "best": max(rates),
                     "steady": round(statistics.median(steady)),
                     "first_ms": round(statistics.median(firsts)) if firsts else "n/a",
                     "per_consumer": " / ".join(f"{n:,}" for n in median_run["per_consumer"]),
                     "cpu": round(statistics.median(cpus), 1) if cpus else "n/a",
                     "runs": len(runs),
                     "status": "ok" if all(r["status"] == "ok" for r in runs) else "partial"})
    result = {
        "command": "python -m bench.bench_share " + " ".join(
            f"--{k} {v}" for k, v in vars(args).items()),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": f"{platform.machine()}, {mp.cpu_count()} cores, CPython "
                   f"{platform.python_version()}",
        "rows": rows, "samples": samples,
    }
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "share.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS_DIR / "share.md").write_text(render(result))
    print(render(result))


if __name__ == "__main__":
    main()
