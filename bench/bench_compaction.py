"""Compaction of a full `__consumer_offsets`-sized segment, and what a probe client sees.

``python -m bench.bench_compaction [--mb 100]`` builds an in-process broker with a compacted
topic whose closed segments hold ``--mb`` MB of offset-commit-sized records (100 records
per batch, 2,000 distinct keys), then cleans it twice while a probe connection sends
ApiVersions back to back: once in place on the event loop (the broker before the cleaner
process) and once through the cleaner process. Reported: cleaning time, and the probe's
answer latencies (max, p99, median) and answer count during each. Results go to stdout
and ``bench/results/compaction.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR, percentile, progress
from bench.machine import machine_info
from groupcoord.logformat.batch import build_batch
from groupcoord.server.broker import Broker
from groupcoord.server.config import BrokerConfig, Listener
from groupcoord.wire.generated import api_versions

SECTION = "compaction"
VALUE = b"v" * 60  # about the size of an OffsetCommitValue


def fill(broker: Broker, megabytes: int) -> int:
    """Append batches of 100 records until the closed segments hold `megabytes` MB."""
    records = 0
    i = 0
    plog = broker.topics.log("offsets-like", 0)
    while sum(s.size for s in plog.segments[:-1]) < megabytes * 1_000_000:
        rows = [(b"group-%d-topic-0" % ((i * 100 + j) % 2000), VALUE, (), 1_000 + i)
                for j in range(100)]
        broker.append("offsets-like", 0, build_batch(rows))
        records += 100
        i += 1
        if i % 2000 == 0:
            progress(SECTION, f"filled {sum(s.size for s in plog.segments) / 1e6:.0f} MB")
    return records


async def probe(port: int, stop: asyncio.Event) -> list[float]:
    """ApiVersions v0 back to back; the latency of each answer in ms."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = (b"\x00\x12\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x05probe"
            + api_versions.ApiVersionsRequest().encode(0))
    frame = len(body).to_bytes(4, "big") + body
    latencies = []
    while not stop.is_set():
        start = time.perf_counter()
        writer.write(frame)
        size = int.from_bytes(await reader.readexactly(4), "big")
        await reader.readexactly(size)
        latencies.append((time.perf_counter() - start) * 1000)
    writer.close()
    return latencies


async def measure(broker: Broker, in_place: bool) -> dict[str, Any]:
    broker._compacted.clear()
    stop = asyncio.Event()
    prober = asyncio.create_task(probe(broker.bound[0].port, stop))
    await asyncio.sleep(0.2)
    start = time.perf_counter()
    if in_place:
        broker.compact_logs()
    else:
        await broker.compact_logs_in_background()
    seconds = time.perf_counter() - start
    await asyncio.sleep(0.05)
    stop.set()
    lat = await prober
    return {"mode": "in place, on the loop" if in_place else "cleaner process",
            "seconds": seconds, "answers": len(lat), "max_ms": max(lat),
            "p99_ms": percentile(lat, 99), "median_ms": statistics.median(lat)}


async def run(megabytes: int) -> list[dict[str, Any]]:
    rows = []
    for in_place in (True, False):
        data = Path(tempfile.mkdtemp(prefix="bench-compaction-"))
        broker = Broker(BrokerConfig(listeners=(Listener("127.0.0.1", 0),), data_dir=str(data),
                                     fsync="never", group_initial_rebalance_delay_ms=0))
        await broker.start()
        try:
            broker.topics.create("offsets-like", 1, {"cleanup.policy": "compact",
                                                     "segment.bytes": str(megabytes * 1_000_000)})
            records = fill(broker, megabytes)
            progress(SECTION, f"{records:,} records; cleaning "
                     f"{'in place' if in_place else 'in the cleaner process'}")
            row = await measure(broker, in_place)
            row["records"] = records
            rows.append(row)
            progress(SECTION, f"{row['mode']}: {row['seconds']:.1f} s, probe max "
                     f"{row['max_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms")
        finally:
            await broker.stop()
            shutil.rmtree(data, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_compaction")
    parser.add_argument("--mb", type=int, default=100)
    args = parser.parse_args()
    rows = asyncio.run(run(args.mb))
    info = machine_info()
    load = os.getloadavg()[0]
    lines = [f"# Compaction of a {args.mb} MB compacted segment, probe latency\n",
             f"Command: `python -m bench.bench_compaction --mb {args.mb}`  ",
             (f"Date (UTC): {info['date_utc']}; {info['cpu_model']}, {info['cpu_cores']} cores, "
             f"{info['python']}; 1-minute load average at the end: {load:.1f}\n"),
             "| mode | records | cleaning s | probe answers | max ms | p99 ms | median ms |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['records']:,} | {r['seconds']:.1f} | {r['answers']:,} "
                     f"| {r['max_ms']:.1f} | {r['p99_ms']:.1f} | {r['median_ms']:.2f} |")
    text = "\n".join(lines) + "\n"
    (RESULTS_DIR / "compaction.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
