"""Compaction of a full `__consumer_offsets`-sized segment, and what a probe client sees.

``python -m bench.bench_compaction [--mb 100]`` builds an in-process broker with a compacted
topic whose closed segments hold ``--mb`` MB of offset-commit-sized records (100 records
per batch, 2,000 distinct keys), then cleans it twice while a probe connection sends
ApiVersions back to back and a second one heartbeats a one-member KIP-848 group every
``HEARTBEAT_MS``: once in place on the event loop (the broker before the cleaner process)
and once through the cleaner process. Reported: cleaning time, and the probe's
answer latencies (max, p99, median) and answer count during each. A loop-lag probe (a 1 ms
sleep in a loop) records every stall over ``STALL_MS`` with the event-loop thread's own CPU
time and its time waiting for a core (``/proc/thread-self/schedstat``), which tells the
broker's work apart from the machine's scheduling. Results go to stdout and
``bench/results/compaction.md``.
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
from groupcoord.wire.generated.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.wire.headers import (
    RequestHeader,
    encode_request_header,
    request_header_version,
    response_header_version,
)

SECTION = "compaction"
HEARTBEAT_MS = 20
PROBE_GROUP = "compaction-probe"
PROBE_MEMBER = "compaction-probe-0000-4000-8000-000000000000"
STALL_MS = 20.0
LOAD_AT_START = [0.0]
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


def thread_schedstat() -> tuple[float, float]:
    """(ms on a CPU, ms runnable but waiting for one) of the calling thread (Linux)."""
    with open("/proc/thread-self/schedstat") as f:
        on_cpu, waiting, _ = f.read().split()
    return int(on_cpu) / 1e6, int(waiting) / 1e6


async def loop_lag(stop: asyncio.Event, stalls: list[tuple[float, float, float]]) -> None:
    """Every gap over STALL_MS between 1 ms sleeps: (gap, loop CPU, run-queue wait) in ms."""
    last = time.perf_counter()
    last_cpu, last_wait = thread_schedstat()
    while not stop.is_set():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        cpu, wait = thread_schedstat()
        if (now - last) * 1000 > STALL_MS:
            stalls.append(((now - last) * 1000, cpu - last_cpu, wait - last_wait))
        last, last_cpu, last_wait = now, cpu, wait


async def heartbeat_probe(port: int, stop: asyncio.Event) -> list[float]:
    """A one-member KIP-848 group on the cleaned topic, heartbeating every HEARTBEAT_MS on a
    connection of its own: the latency of each answer in ms."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key, version = ConsumerGroupHeartbeatRequest.API_KEY, 1
    epoch, owned, topic_id, correlation = 0, [], b"\0" * 16, 0
    latencies = []
    while not stop.is_set():
        joining = epoch == 0
        request = ConsumerGroupHeartbeatRequest(
            group_id=PROBE_GROUP, member_id=PROBE_MEMBER, member_epoch=epoch,
            rebalance_timeout_ms=30_000 if joining else -1,
            subscribed_topic_names=["offsets-like"] if joining else None,
            topic_partitions=[TopicPartitions(topic_id=topic_id, partitions=owned)]
            if owned else [])
        correlation += 1
        body = bytearray()
        header_version = request_header_version(key, version)
        encode_request_header(body, RequestHeader(key, version, correlation, "probe",
                                                  header_version), header_version)
        body += request.encode(version)
        start = time.perf_counter()
        writer.write(len(body).to_bytes(4, "big") + body)
        size = int.from_bytes(await reader.readexactly(4), "big")
        data = await reader.readexactly(size)
        latencies.append((time.perf_counter() - start) * 1000)
        pos = 4 + (1 if response_header_version(key, version) >= 1 else 0)
        response, _ = ConsumerGroupHeartbeatResponse.decode(data, pos, version)
        if response.error_code == 0:
            epoch = response.member_epoch
            if response.assignment is not None:
                tps = response.assignment.topic_partitions
                owned = sorted(p for tp in tps for p in tp.partitions)
                topic_id = bytes(tps[0].topic_id) if tps else topic_id
        await asyncio.sleep(HEARTBEAT_MS / 1000)
    writer.close()
    return latencies


async def measure(broker: Broker, in_place: bool) -> dict[str, Any]:
    broker._compacted.clear()
    stop = asyncio.Event()
    stalls: list[tuple[float, float, float]] = []
    lag = asyncio.create_task(loop_lag(stop, stalls))
    prober = asyncio.create_task(probe(broker.bound[0].port, stop))
    beater = asyncio.create_task(heartbeat_probe(broker.bound[0].port, stop))
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
    beats = await beater
    await lag
    worst = max(stalls, default=(0.0, 0.0, 0.0))
    return {"mode": "in place, on the loop" if in_place else "cleaner process",
            "seconds": seconds, "answers": len(lat), "max_ms": max(lat),
            "p99_ms": percentile(lat, 99), "median_ms": statistics.median(lat),
            "stalls": len(stalls), "stall_ms": worst[0], "stall_cpu_ms": worst[1],
            "stall_wait_ms": worst[2], "beats": len(beats),
            "beat_max_ms": max(beats, default=float("nan")),
            "beat_p99_ms": percentile(beats, 99) if beats else float("nan"),
            "stalls_mostly_waiting": sum(1 for _, c, w in stalls if w > c)}


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
    LOAD_AT_START[0] = os.getloadavg()[0]
    rows = asyncio.run(run(args.mb))
    info = machine_info()
    load = os.getloadavg()[0]
    load_start = LOAD_AT_START[0]
    lines = [f"# Compaction of a {args.mb} MB compacted segment, probe latency\n",
             f"Command: `python -m bench.bench_compaction --mb {args.mb}`  ",
             (f"Date (UTC): {info['date_utc']}; {info['cpu_model']}, {info['cpu_cores']} cores, "
             f"{info['python']}; 1-minute load average at the start {load_start:.1f}, at the end "
             f"{load:.1f}\n"),
             ("| mode | records | cleaning s | probe answers | max ms | p99 ms | median ms "
              "| heartbeats | heartbeat max ms | heartbeat p99 ms "
              f"| loop stalls > {STALL_MS:.0f} ms | of them waiting for a core more than running "
              "| longest stall ms | its loop CPU ms | its wait for a core ms |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['records']:,} | {r['seconds']:.1f} | {r['answers']:,} "
                     f"| {r['max_ms']:.1f} | {r['p99_ms']:.1f} | {r['median_ms']:.2f} "
                     f"| {r['beats']:,} | {r['beat_max_ms']:.1f} | {r['beat_p99_ms']:.1f} "
                     f"| {r['stalls']} | {r['stalls_mostly_waiting']} | {r['stall_ms']:.1f} "
                     f"| {r['stall_cpu_ms']:.1f} | {r['stall_wait_ms']:.1f} |")
    text = "\n".join(lines) + "\n"
    (RESULTS_DIR / "compaction.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
