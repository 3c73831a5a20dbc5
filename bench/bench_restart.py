"""Restart with a large `__consumer_offsets`: what is answered while the shards load.

``python -m bench.bench_restart [--commits 1000000]`` writes a data dir whose offsets
partitions hold ``--commits`` offset commits (batches of 100 records, 10,000 groups, spread
over five partitions as a busy cluster would), plus a one-partition data topic, then starts
the broker (a subprocess) and measures from spawn: the first ApiVersions answer, the first
Metadata, Produce to the data topic and Fetch of it, the first answer to an OffsetFetch of a
group (COORDINATOR_LOAD_IN_PROGRESS while its shard replays, as Kafka answers), the first
group answered with its offsets (its shard loaded) and the time every shard had loaded
(an OffsetFetch of one group per loaded partition answered). Load time per record is
(all shards loaded - first ApiVersions) / commits.

Three kinds of start, ``--repeats`` each: cold (the shard snapshots removed, so the whole
log is replayed), from the snapshot the previous clean shutdown wrote (only the tail after
it is replayed), and from the snapshot after an unclean shutdown (no
`.kafka_cleanshutdown`, so the last segments are CRC-scanned before the listener opens).
Results go to stdout and to this size's section of ``bench/results/restart.md``. A first,
unmeasured start writes the broker's bytecode cache.
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
from bench.machine import cpu_model
from groupcoord.coordinator.partitioning import partition_for
from groupcoord.coordinator.records import offset_commit_record
from groupcoord.logformat.batch import build_batch
from groupcoord.server.runtime.shard_log import encode_records_batch
from groupcoord.server.runtime.shard_snapshot import SNAPSHOT_FILE
from groupcoord.storage.manager import CLEAN_SHUTDOWN_FILE, LogManager
from groupcoord.wire.generated import api_versions, fetch, metadata, offset_fetch, produce

SECTION = "restart"
TITLE = "# Restart with a large __consumer_offsets\n"
INTRO = """
Five offsets partitions hold the commits (10,000 groups); the broker starts on them and is
asked for the data-topic APIs at once, then for one group of each partition until all have
loaded. Cold: the shard snapshots are removed first, so each shard replays its whole log
(keys first, superseded commits skipped undecoded). Snapshot: the previous clean shutdown
left each shard's snapshot beside its log, so a shard replays the snapshot and the log after
it. Unclean: the clean-shutdown marker is removed, so the last segments are CRC-scanned
first. "load µs/record" is (all shards loaded - first ApiVersions) / commits. Before the fast
loader, a cold replay cost about 6.2 µs per record (1 M commits in 6.4 s on a quiet machine);
the in-process line under each table compares the two loaders on the same partition.
"""
GROUPS = 10_000
TOPIC = "orders"


def build(data: Path, commits: int) -> list[str]:
    """The data dir; one group of each offsets partition it fills."""
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
    return [by_partition[p][0] for p in busiest]


def _frame(request: object, api_key: int, version: int) -> bytes:
    head = struct.pack(">hhih", api_key, version, 1, 5) + b"bench"
    flexible_min = request.FLEXIBLE_MIN  # type: ignore[attr-defined]
    if flexible_min is not None and version >= flexible_min:
        head += b"\x00"  # request header v2: no tagged fields
    body = head + request.encode(version)  # type: ignore[attr-defined]
    return struct.pack(">i", len(body)) + body


def _call(port: int, frame: bytes, timeout: float = 60.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        return _exchange(sock, frame)


def _exchange(sock: socket.socket, frame: bytes) -> bytes:
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


def _offset_fetch_error(sock: socket.socket, group: str) -> int:
    request = _frame(offset_fetch.OffsetFetchRequest(group_id=group, topics=[
        offset_fetch.OffsetFetchRequestTopic(name=TOPIC, partition_indexes=[0])]), 9, 7)
    # v7 is flexible: correlation id, then the response header's tagged fields.
    answer, _ = offset_fetch.OffsetFetchResponse.decode(_exchange(sock, request), 5, 7)
    return int(answer.error_code)


def measure(data: Path, groups: list[str]) -> dict[str, float]:
    """One start on `data`; `groups`: one per loading shard."""
    port = free_port()
    # The broker keeps its compiled bytecode, as an installed package does, even where the
    # environment turns bytecode writing off: compiling every module at each start is not
    # what a restart costs.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "groupcoord", "serve", "--listen",
                             f"127.0.0.1:{port}", "--data-dir", str(data)], env=env,
                            cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out: dict[str, float] = {}

    def since() -> float:
        return (time.perf_counter() - start) * 1000

    try:
        while True:
            try:
                _call(port, _frame(api_versions.ApiVersionsRequest(), 18, 0), 1.0)
                break
            except OSError:
                time.sleep(0.001)
        out["api_versions_ms"] = since()
        _call(port, _frame(metadata.MetadataRequest(topics=[
            metadata.MetadataRequestTopic(name=TOPIC)]), 3, 12))
        out["metadata_ms"] = since()
        batch = build_batch([(b"k", b"v", [], int(time.time() * 1000))])
        _call(port, _frame(produce.ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
            produce.TopicProduceData(name=TOPIC, partition_data=[
                produce.PartitionProduceData(index=0, records=batch)])]), 0, 9))
        out["produce_ms"] = since()
        _call(port, _frame(fetch.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1,
                                              max_bytes=1 << 20, isolation_level=0, topics=[
            fetch.FetchTopic(topic=TOPIC, partitions=[fetch.FetchPartition(
                partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]), 1, 11))
        out["fetch_ms"] = since()
        waiting = list(groups)
        # One connection polls every 10 ms, so the polling takes little from the loading.
        with socket.create_connection(("127.0.0.1", port), timeout=60.0) as sock:
            while waiting:
                for group in list(waiting):
                    error = _offset_fetch_error(sock, group)
                    now = since()
                    out.setdefault("offset_fetch_first_ms", now)
                    out.setdefault("offset_fetch_first_error", float(error))
                    if error == 0:
                        out.setdefault("first_group_ms", now)
                        waiting.remove(group)
                if waiting:
                    time.sleep(0.01)
        out["all_loaded_ms"] = since()
    finally:
        proc.terminate()
        proc.wait(600)
    return out


def replay_in_process(data: Path, partition: int) -> dict[str, float]:
    """µs per record of replaying one offsets partition in this process, through the plain
    loader (`shard_log.replay_log`, every record decoded) and the fast one (cold, no
    snapshot); the best of two runs each."""
    from groupcoord.coordinator.shard import GroupCoordinatorShard
    from groupcoord.server.runtime.fast_replay import FastReplay
    from groupcoord.server.runtime.shard_log import ProducerEpochs, replay_log

    mgr = LogManager(str(data))
    mgr.load_all()
    plog = mgr.get("__consumer_offsets", partition)
    assert plog is not None
    records = sum(h.records_count for h in plog.iter_batch_headers())
    out = {"records": float(records)}
    for name in ("plain", "fast"):
        best = float("inf")
        for _ in range(2):
            shard = GroupCoordinatorShard(partition)
            start = time.perf_counter()
            if name == "plain":
                replay_log(plog, shard, ProducerEpochs())
            else:
                for _ in FastReplay(shard, ProducerEpochs()).steps(plog.iter_batches()):
                    pass
            best = min(best, time.perf_counter() - start)
        out[name] = best * 1e6 / records
    mgr.close()
    return out


def _remove_snapshots(data: Path) -> None:
    for path in data.glob(f"__consumer_offsets-*/{SNAPSHOT_FILE}"):
        path.unlink()


KINDS = (("cold (no snapshot)", True, False), ("snapshot, clean shutdown", False, False),
         ("snapshot, unclean shutdown", False, True))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_restart")
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="bench-restart-"))
    rows = []
    try:
        groups = build(data, args.commits)
        in_process = replay_in_process(data, partition_for(groups[0], 50))
        progress(SECTION, f"in-process replay: {in_process}")
        measure(data, groups)  # writes the bytecode cache (and snapshots, removed for cold)
        for name, cold, unclean in KINDS:
            samples = []
            for i in range(args.repeats):
                if cold:
                    _remove_snapshots(data)
                if unclean:
                    (data / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
                samples.append(measure(data, groups))
                progress(SECTION, f"{name} #{i + 1}: {samples[-1]}")
            rows.append((name, {k: statistics.median(s[k] for s in samples)
                                for k in samples[0]}))
    finally:
        shutil.rmtree(data, ignore_errors=True)
    load = os.getloadavg()
    lines = [f"## {args.commits:,} offset commits\n",
             (f"Command: `python -m bench.bench_restart --commits {args.commits} --repeats "
              f"{args.repeats}`; median of {args.repeats} starts, ms from spawn; "
              f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, {cpu_model()}, "
              f"{os.cpu_count()} cores, load average at the end {load[0]:.1f} / {load[1]:.1f} "
              f"/ {load[2]:.1f} (1/5/15 min)\n"),
             ("| start | ApiVersions | Metadata | Produce | Fetch | first OffsetFetch answer "
              "(error) | first group served | all shards loaded | load µs/record |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for name, m in rows:
        per_record = (m["all_loaded_ms"] - m["api_versions_ms"]) * 1000 / args.commits
        lines.append(f"| {name} | {m['api_versions_ms']:.0f} | {m['metadata_ms']:.0f} | "
                     f"{m['produce_ms']:.0f} | {m['fetch_ms']:.0f} | "
                     f"{m['offset_fetch_first_ms']:.0f} ({int(m['offset_fetch_first_error'])}) "
                     f"| {m['first_group_ms']:.0f} | {m['all_loaded_ms']:.0f} | "
                     f"{per_record:.2f} |")
    lines += ["", (f"In-process replay of one of those partitions ({int(in_process['records']):,} "
                   f"records, best of 2): plain loader (every record decoded) "
                   f"{in_process['plain']:.2f} µs/record, fast loader "
                   f"{in_process['fast']:.2f} µs/record.")]
    section = "\n".join(lines) + "\n"
    _write_section(args.commits, section)
    print(section)


def _write_section(commits: int, section: str) -> None:
    """Replace (or add) this size's section of restart.md, keeping the others."""
    path = RESULTS_DIR / "restart.md"
    text = path.read_text() if path.exists() else ""
    if not text.startswith(TITLE):
        text = TITLE + INTRO
    heading = f"## {commits:,} offset commits\n"
    parts = text.split("\n## ")
    head, sections = parts[0], ["## " + p for p in parts[1:]]
    sections = [p.rstrip("\n") + "\n" for p in sections if not p.startswith(heading)]
    sections.append(section)
    sections.sort(key=lambda p: int(p.split()[1].replace(",", "")))
    path.write_text(head.rstrip("\n") + "\n\n" + "\n".join(sections))


if __name__ == "__main__":
    main()
