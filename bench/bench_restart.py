"""Restart with a large `__consumer_offsets`: what is answered while the shards load.

``python -m bench.bench_restart [--commits 1000000]`` writes a data dir whose offsets
partitions hold ``--commits`` offset commits (batches of 100 records, 10,000 groups, spread
over five partitions as a busy cluster would), plus a one-partition data topic, then starts
the broker (a subprocess) and measures from spawn: the first ApiVersions answer, the first
Metadata, Produce to the data topic and Fetch of it, the first answer to an OffsetFetch of a
group (COORDINATOR_LOAD_IN_PROGRESS while its shard replays, as Kafka answers) and the first
one with its offsets (the shard loaded). ``--compare-src`` also starts a broker from another
checkout's ``src/`` in the same run, for a before/after. Three restarts each after a clean and after an
unclean shutdown (the unclean one has no `.kafka_cleanshutdown`, so the last segments are
CRC-scanned first). Results go to stdout and ``bench/results/restart.md``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import REPO_ROOT, RESULTS_DIR, free_port, progress
from groupcoord.coordinator.partitioning import partition_for
from groupcoord.coordinator.records import offset_commit_record
from groupcoord.logformat.batch import build_batch
from groupcoord.server.shard_log import encode_records_batch
from groupcoord.storage.manager import CLEAN_SHUTDOWN_FILE, LogManager
from groupcoord.wire.generated import api_versions, fetch, metadata, offset_fetch, produce

SECTION = "restart"
GROUPS = 10_000
TOPIC = "orders"


def build(data: Path, commits: int) -> list[str]:
    """The data dir; the groups whose offsets it holds."""
    mgr = LogManager(str(data), topic_configs={"__consumer_offsets": {
        "cleanup.policy": "compact", "segment.bytes": 104857600}})
    groups = [f"group-{i}" for i in range(GROUPS)]
    by_partition: dict[int, list[str]] = {}
    for g in groups:
        by_partition.setdefault(partition_for(g, 50), []).append(g)
    busiest = sorted(by_partition, key=lambda p: -len(by_partition[p]))[:5]
    chosen = [g for p in busiest for g in by_partition[p]]
    written = 0
    while written < commits:
        for p in busiest:
            plog = mgr.get_or_create("__consumer_offsets", p)
            records = [offset_commit_record(chosen[(written + j) % len(chosen)], TOPIC, 0,
                                            written + j, -1, "", 1_000, -1, b"\0" * 16)
                       for j in range(100)]
            plog.append(encode_records_batch(records, 1_000))
            written += 100
            if written % 200_000 == 0:
                progress(SECTION, f"wrote {written:,} commits")
    mgr.get_or_create(TOPIC, 0, os.urandom(16)).append(build_batch([(b"k", b"v", [], 1_000)]))
    mgr.close()
    return chosen


def _frame(request: object, api_key: int, version: int) -> bytes:
    head = struct.pack(">hhih", api_key, version, 1, 5) + b"bench"
    flexible_min = request.FLEXIBLE_MIN  # type: ignore[attr-defined]
    if flexible_min is not None and version >= flexible_min:
        head += b"\x00"  # request header v2: no tagged fields
    body = head + request.encode(version)  # type: ignore[attr-defined]
    return struct.pack(">i", len(body)) + body


def _call(port: int, frame: bytes, timeout: float = 60.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(frame)
        size = struct.unpack(">i", _recv(sock, 4))[0]
        return _recv(sock, size)


def _recv(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def measure(data: Path, group: str, src: Path | None = None) -> dict[str, float]:
    """One start on `data` (the broker from `src`, a checkout's `src/`, if given)."""
    port = free_port()
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "groupcoord", "serve", "--listen",
                             f"127.0.0.1:{port}", "--data-dir", str(data)], env=env,
                            cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out: dict[str, float] = {}
    try:
        while True:
            try:
                _call(port, _frame(api_versions.ApiVersionsRequest(), 18, 0), 1.0)
                break
            except OSError:
                time.sleep(0.001)
        out["api_versions_ms"] = (time.perf_counter() - start) * 1000
        _call(port, _frame(metadata.MetadataRequest(topics=[
            metadata.MetadataRequestTopic(name=TOPIC)]), 3, 12))
        out["metadata_ms"] = (time.perf_counter() - start) * 1000
        batch = build_batch([(b"k", b"v", [], int(time.time() * 1000))])
        _call(port, _frame(produce.ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
            produce.TopicProduceData(name=TOPIC, partition_data=[
                produce.PartitionProduceData(index=0, records=batch)])]), 0, 9))
        out["produce_ms"] = (time.perf_counter() - start) * 1000
        _call(port, _frame(fetch.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1,
                                              max_bytes=1 << 20, isolation_level=0, topics=[
            fetch.FetchTopic(topic=TOPIC, partitions=[fetch.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]), 1, 11))
        out["fetch_ms"] = (time.perf_counter() - start) * 1000
        request = _frame(offset_fetch.OffsetFetchRequest(group_id=group, topics=[
            offset_fetch.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])]), 9, 7)
        while True:
            # v7 is flexible: correlation id, then the response header's tagged fields.
            answer, _ = offset_fetch.OffsetFetchResponse.decode(_call(port, request), 5, 7)
            now = (time.perf_counter() - start) * 1000
            out.setdefault("offset_fetch_first_ms", now)
            out.setdefault("offset_fetch_first_error", float(answer.error_code))
            if answer.error_code == 0:
                out["offset_fetch_ms"] = now
                break
            time.sleep(0.01)
    finally:
        proc.terminate()
        proc.wait(60)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_restart")
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--compare-src", type=Path, default=None,
                        help="also start the broker from this src/ directory (a checkout of an "
                             "earlier commit), alternating with this one")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    brokers: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.compare_src is not None:
        brokers.insert(0, (f"compare: {args.compare_src.parent.name}", args.compare_src))
    try:
        groups = build(data, args.commits)
        rows = []
        for shutdown in ("clean", "unclean"):
            for name, src in brokers:
                samples = []
                for i in range(args.repeats):
                    if shutdown == "unclean":
                        (data / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
                    samples.append(measure(data, groups[i * 7 % len(groups)], src))
                    progress(SECTION, f"{name}, {shutdown} #{i + 1}: {samples[-1]}")
                rows.append((f"{name}, {shutdown}", {k: statistics.median(s[k] for s in samples)
                                                     for k in samples[0]}))
    finally:
        shutil.rmtree(data, ignore_errors=True)
    command = f"python -m bench.bench_restart --commits {args.commits} --repeats {args.repeats}"
    if args.compare_src is not None:
        command += f" --compare-src <checkout of {args.compare_src.parent.name}>/src"
    lines = [f"# Restart with {args.commits:,} offset commits in __consumer_offsets\n",
             (f"Command: `{command}`; median of {args.repeats} starts, ms from spawn; "
             f"1-minute load average at the end: {os.getloadavg()[0]:.1f}\n"),
             ("| broker, shutdown | ApiVersions | Metadata | Produce | Fetch | first OffsetFetch "
              "answer (error) | OffsetFetch (shard loaded) |"),
             "|---|---|---|---|---|---|---|"]
    for shutdown, m in rows:
        first_error = int(m.get("offset_fetch_first_error", 0))
        lines.append(f"| {shutdown} | {m['api_versions_ms']:.0f} | "
                     f"{m.get('metadata_ms', float('nan')):.0f} | {m['produce_ms']:.0f} | "
                     f"{m['fetch_ms']:.0f} | {m['offset_fetch_first_ms']:.0f} ({first_error}) "
                     f"| {m['offset_fetch_ms']:.0f} |")
    text = "\n".join(lines) + "\n"
    (RESULTS_DIR / "restart.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
