"""The test broker (`groupcoord.testing.KafkaBroker`): how fast a test gets a broker, and
what virtual time saves.

``python -m bench.bench_testing [--starts 20] [--fresh 100] [--real-time]`` measures:

- start to the first ApiVersions answer: `KafkaBroker().start()` in process (its own
  thread and event loop, storage in memory), then one raw ApiVersions v3 request on a new
  connection; the same with a data dir on disk (a new temporary directory each time,
  `fsync=never`); the same for `subprocess=True` (`python -m groupcoord serve --data-dir
  memory`); and the clean stop;
- a fresh broker per test: `--fresh` times (start, one test's worth of requests: create a
  topic, join and sync a classic group, commit an offset; stop), total wall time;
- the 45 s session-timeout test (`tests/testing/test_embedded_broker.py`: a member with a
  45 s session stops heartbeating; the group is Empty once the session has passed) on
  virtual time (`clock="manual"`, `advance(45_000)`), and with `--real-time` on the system
  clock, where the test waits for the broker to expire the session (about 45 s).

Results go to stdout and ``bench/results/testing.json`` / ``testing.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import struct
import sys
import tempfile
import time
from typing import Any

from bench.common import RESULTS_DIR, percentile, progress
from bench.machine import machine_info, machine_load
from groupcoord.testing import KafkaBroker
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.create_topics import CreatableTopic, CreateTopicsRequest
from groupcoord.wire.generated.describe_groups import DescribeGroupsRequest
from groupcoord.wire.generated.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.wire.generated.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from groupcoord.wire.headers import (
    RequestHeader,
    decode_response_header,
    encode_request_header,
    request_header_version,
    response_header_version,
)
from groupcoord.wire.messages import RESPONSES

SECTION = "testing"
SESSION_TIMEOUT_MS = 45_000
START_GOAL_MS = 50
# Published start of a JVM Kafka broker container: KIP-975's measurements of the images
# (total container start, seconds); the image Testcontainers' Kafka module ran for years is
# confluentinc/cp-kafka.
KIP_975_URL = ("https://cwiki.apache.org/confluence/display/KAFKA/"
               "KIP-975%3A+Docker+Image+for+Apache+Kafka")
KIP_975_START_S = {"confluentinc/cp-kafka 7.5.0": 3.341, "apache/kafka 3.5.1 (Java 17)": 2.174,
                   "apache/kafka 3.6.0 (Java 21)": 3.885, "bitnami/kafka 3.5.1": 3.469}


class Wire:
    """One blocking connection speaking our generated codec."""

    def __init__(self, broker: KafkaBroker) -> None:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.correlation = 0

    def call(self, request: Any, version: int) -> Any:
        api_key = int(request.API_KEY)
        self.correlation += 1
        out = bytearray()
        encode_request_header(out, RequestHeader(api_key, version, self.correlation, "bench"),
                              request_header_version(api_key, version))
        request.encode_into(out, version)
        self.sock.sendall(struct.pack(">i", len(out)) + out)
        size = struct.unpack(">i", self._recv(4))[0]
        data = self._recv(size)
        _correlation, pos = decode_response_header(
            data, 0, response_header_version(api_key, version))
        return RESPONSES[api_key].decode(data, pos, version)[0]

    def _recv(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()


def _api_versions(broker: KafkaBroker) -> None:
    wire = Wire(broker)
    response: ApiVersionsResponse = wire.call(ApiVersionsRequest(
        client_software_name="bench", client_software_version="1"), 3)
    wire.close()
    if response.error_code != 0:
        raise RuntimeError(f"ApiVersions answered {response.error_code}")


def _summary(samples: list[float]) -> dict[str, float]:
    return {"n": len(samples), "median_ms": statistics.median(samples),
            "p90_ms": percentile(samples, 90), "min_ms": min(samples), "max_ms": max(samples)}


def start_to_api_versions(starts: int, subprocess: bool,
                          under: str | None = None) -> dict[str, Any]:
    ready, stops = [], []
    for _ in range(starts):
        began = time.perf_counter()
        data_dir = tempfile.mkdtemp(dir=under) if under is not None else None
        broker = KafkaBroker(subprocess=subprocess, data_dir=data_dir).start()
        _api_versions(broker)
        ready.append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        broker.stop()
        stops.append((time.perf_counter() - began) * 1000)
        if data_dir is not None:
            shutil.rmtree(data_dir, ignore_errors=True)
    return {"start": _summary(ready), "stop": _summary(stops)}


def _one_test(broker: KafkaBroker, session_ms: int = 10_000) -> tuple[Wire, str]:
    """What a small test does: a topic, a classic member joined and synced, a commit."""
    wire = Wire(broker)
    created = wire.call(CreateTopicsRequest(topics=[CreatableTopic(
        name="orders", num_partitions=1, replication_factor=1)], timeout_ms=5000), 4)
    assert created.topics[0].error_code == 0
    join = wire.call(JoinGroupRequest(
        group_id="g", session_timeout_ms=session_ms, rebalance_timeout_ms=60_000,
        member_id="", protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")]), 3)
    assert join.error_code == 0
    sync = wire.call(SyncGroupRequest(
        group_id="g", generation_id=join.generation_id, member_id=join.member_id,
        assignments=[SyncGroupRequestAssignment(member_id=join.member_id, assignment=b"")]), 3)
    assert sync.error_code == 0
    commit = wire.call(OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=join.generation_id,
        member_id=join.member_id, topics=[OffsetCommitRequestTopic(name="orders", partitions=[
            OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]), 8)
    assert commit.topics[0].partitions[0].error_code == 0
    return wire, join.member_id


def fresh_brokers(count: int) -> dict[str, Any]:
    per_test = []
    began = time.perf_counter()
    for _ in range(count):
        one = time.perf_counter()
        with KafkaBroker() as broker:
            wire, _member = _one_test(broker)
            wire.close()
        per_test.append((time.perf_counter() - one) * 1000)
    total_s = time.perf_counter() - began
    return {"tests": count, "total_s": total_s, "per_test": _summary(per_test)}


def _group_state(wire: Wire) -> str:
    return str(wire.call(DescribeGroupsRequest(groups=["g"]), 3).groups[0].group_state)


def session_timeout_test(virtual: bool) -> dict[str, Any]:
    """Wall time of the eviction test, from the member going silent to the group Empty."""
    with KafkaBroker(clock="manual" if virtual else "system") as broker:
        wire, _member = _one_test(broker, SESSION_TIMEOUT_MS)
        began = time.perf_counter()  # the member sends no more heartbeats from here
        if virtual:
            broker.advance(SESSION_TIMEOUT_MS)
        while _group_state(wire) != "Empty":
            time.sleep(0.05)
        wall_s = time.perf_counter() - began
        wire.close()
    return {"virtual_time": virtual, "wall_s": wall_s}


def render(result: dict[str, Any]) -> str:
    cmd = result["command"]
    inproc, sub = result["in_process"], result.get("subprocess")
    fresh = result["fresh"]
    lines = ["# The test broker: start, a fresh broker per test, virtual time\n",
             (f"Command: `{cmd}`; {result['date']}; {result['machine']['cpu_model']}, "
              f"{result['machine']['cpu_cores']} cores; "
              f"load average (1/5/15 min) at start {result['load_before']}, at end "
              f"{result['load_after']}.\n"),
             "| what | n | median ms | p90 ms | min ms | max ms |", "|---|---|---|---|---|---|"]

    def row(name: str, s: dict[str, float]) -> None:
        lines.append(f"| {name} | {s['n']} | {s['median_ms']:.1f} | {s['p90_ms']:.1f} | "
                     f"{s['min_ms']:.1f} | {s['max_ms']:.1f} |")

    disk = result["in_process_disk"]
    row("in-process `KafkaBroker().start()` to first ApiVersions answer, memory storage",
        inproc["start"])
    row("in-process `stop()`, memory storage", inproc["stop"])
    row("in-process start to first ApiVersions answer, data dir on disk", disk["start"])
    row("in-process `stop()`, data dir on disk", disk["stop"])
    if sub is not None:
        row("subprocess (`serve`) start to first ApiVersions answer", sub["start"])
        row("subprocess stop (SIGTERM, clean)", sub["stop"])
    row("a fresh broker per test: start, test, stop", fresh["per_test"])
    cp = KIP_975_START_S["confluentinc/cp-kafka 7.5.0"]
    lines += [
        "",
        f"- {fresh['tests']} tests, each on a fresh in-process broker: "
        f"**{fresh['total_s']:.2f} s** in all (start, the test's requests, stop). One JVM "
        f"Kafka broker container start is {cp:.3f} s for confluentinc/cp-kafka 7.5.0 "
        f"(2.2 to 3.9 s for the other images) in [KIP-975]({KIP_975_URL})'s measurements, "
        f"before Testcontainers' own work; a fresh container per test would be about "
        f"{cp * fresh['tests']:.0f} s for {fresh['tests']} tests"
        + (f", and even one shared container takes longer to start than the "
           f"{fresh['tests']} fresh brokers here. " if fresh["total_s"] < cp else ". ")
        + "On this machine Kafka 4.4 from its tarball takes 3.7 s to its first ApiVersions "
        "(\"Start-up time\" above).",
    ]
    memory_ms = inproc["start"]["median_ms"]
    goal = "meets" if memory_ms < START_GOAL_MS else "misses"
    lines.append(
        f"- In process with memory storage, start to the first ApiVersions answer: "
        f"{memory_ms:.1f} ms median ({goal} the {START_GOAL_MS} ms goal); "
        f"{disk['start']['median_ms']:.1f} ms with a data dir on this machine's disk. The "
        "difference is mostly fsync: even with `fsync=never` the broker fsyncs the metadata "
        "and checkpoint files it writes at start and stop (meta.properties, topic configs, "
        "partition metadata, checkpoints), which memory storage has no need for.")
    for run in result["session_timeout"]:
        how = "virtual time (`advance(45_000)`)" if run["virtual_time"] else "the system clock"
        lines.append(f"- The 45 s session-timeout test on {how}: "
                     f"**{run['wall_s'] * 1000:,.0f} ms** "
                     "from the member going silent to the group Empty.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_testing")
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--subprocess-starts", type=int, default=5)
    parser.add_argument("--fresh", type=int, default=100)
    parser.add_argument("--real-time", action="store_true",
                        help="also run the 45 s session-timeout test on the system clock "
                             "(waits about 45 s)")
    args = parser.parse_args()
    command = " ".join(["python -m bench.bench_testing", *sys.argv[1:]])
    result: dict[str, Any] = {"command": command, "machine": machine_info(),
                              "date": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()),
                              "load_before": [round(x, 2) for x in machine_load()]}
    _api_versions(KafkaBroker().start())  # warm imports; the broker is left to exit
    result["in_process"] = start_to_api_versions(args.starts, subprocess=False)
    progress(SECTION, f"in-process: {result['in_process']}")
    result["in_process_disk"] = start_to_api_versions(args.starts, subprocess=False,
                                                      under=tempfile.gettempdir())
    progress(SECTION, f"in-process, disk: {result['in_process_disk']}")
    if args.subprocess_starts:
        result["subprocess"] = start_to_api_versions(args.subprocess_starts, subprocess=True)
        progress(SECTION, f"subprocess: {result['subprocess']}")
    result["fresh"] = fresh_brokers(args.fresh)
    progress(SECTION, f"fresh brokers: {result['fresh']['total_s']:.2f} s")
    runs = [session_timeout_test(virtual=True)]
    if args.real_time:
        runs.append(session_timeout_test(virtual=False))
    result["session_timeout"] = runs
    result["load_after"] = [round(x, 2) for x in machine_load()]
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / f"{SECTION}.json").write_text(json.dumps(result, indent=1) + "\n")
    text = render(result)
    (RESULTS_DIR / f"{SECTION}.md").write_text(text)
    print(text)
    os._exit(0)  # the warm-up broker's thread is a daemon; nothing else is left running


if __name__ == "__main__":
    main()
