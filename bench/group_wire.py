"""A raw asyncio Kafka client for the heartbeat and commit benchmarks: join single-member
classic groups, then keep a window of Heartbeat (or OffsetCommit) requests in flight on every
connection.

Real clients send one heartbeat every few seconds per member, so no client library can load
a broker's heartbeat path; this one sends pre-encoded frames back to back and only counts
response frames, which keeps the load generator far cheaper per request than the broker it
measures. Versions are negotiated with ApiVersions, capped at what the Java 3.9 client sends.
The caller makes sure the coordinator serves every group first (`bench/coordinator.py`).
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.classic.consumer_protocol import (
    encode_assignment,
    encode_subscription,
)
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.heartbeat import HeartbeatRequest, HeartbeatResponse
from groupcoord.wire.generated.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
)
from groupcoord.wire.generated.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.wire.generated.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from groupcoord.wire.headers import (
    RequestHeader,
    decode_response_header,
    encode_request_header,
    request_header_version,
    response_header_version,
)

_SIZE = struct.Struct(">i")
MEMBER_ID_REQUIRED = 79
REBALANCE_IN_PROGRESS = 27
# Highest versions used: what the Java 3.9 client sends for the classic protocol.
WANTED = {JoinGroupRequest.API_KEY: 9, SyncGroupRequest.API_KEY: 5,
          HeartbeatRequest.API_KEY: 4, OffsetCommitRequest.API_KEY: 9}
CLIENT_ID = "bench-hb"
#: The topic the members subscribe to and commit offsets for (it must exist on Kafka).
TOPIC = "bench-hb"

# Real consumer-protocol bytes: Tansu answers an empty assignment with REBALANCE_IN_PROGRESS.
SUBSCRIPTION = encode_subscription([TOPIC])
ASSIGNMENT = encode_assignment({TOPIC: [0]})
SESSION_TIMEOUT_MS = 6_000


def encode_frame(message: Any, version: int, correlation_id: int) -> bytes:
    api_key = type(message).API_KEY
    out = bytearray()
    encode_request_header(out, RequestHeader(api_key, version, correlation_id, CLIENT_ID),
                          request_header_version(api_key, version))
    message.encode_into(out, version)
    return _SIZE.pack(len(out)) + bytes(out)


class Conn:
    """One connection: request/response calls, then pipelined heartbeats."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.versions: dict[int, int] = {}
        self._corr = 0

    @classmethod
    async def open(cls, host: str, port: int) -> Conn:
        reader, writer = await asyncio.open_connection(host, port)
        conn = cls(reader, writer)
        response = await conn.call(ApiVersionsRequest(), 0, ApiVersionsResponse)
        served = {k.api_key: k.max_version for k in response.api_keys}
        conn.versions = {key: min(want, served.get(key, -1)) for key, want in WANTED.items()}
        return conn

    async def read_frame(self) -> bytes:
        (size,) = _SIZE.unpack(await self.reader.readexactly(4))
        return await self.reader.readexactly(size)

    async def call(self, message: Any, version: int, response_cls: Any) -> Any:
        self._corr += 1
        self.writer.write(encode_frame(message, version, self._corr))
        body = await self.read_frame()
        api_key = type(message).API_KEY
        header_version = 0 if api_key == 18 else response_header_version(api_key, version)
        _, pos = decode_response_header(body, 0, header_version)
        return response_cls.decode(body, pos, version)[0]

    def close(self) -> None:
        self.writer.close()


@dataclass
class Member:
    conn: Conn
    group_id: str
    member_id: str
    generation: int


async def join_single_member_group(conn: Conn, group_id: str) -> Member:
    """JoinGroup (again when the broker asks for a member id or a new round) and SyncGroup
    as leader, until the member has its assignment."""
    member_id = ""
    for _attempt in range(10):
        joined = await conn.call(JoinGroupRequest(
            group_id=group_id, session_timeout_ms=SESSION_TIMEOUT_MS,
            rebalance_timeout_ms=SESSION_TIMEOUT_MS,
            member_id=member_id, protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION)]),
            conn.versions[JoinGroupRequest.API_KEY], JoinGroupResponse)
        member_id = joined.member_id or member_id
        if joined.error_code == MEMBER_ID_REQUIRED:
            continue
        if joined.error_code:
            raise RuntimeError(f"JoinGroup {group_id}: error {joined.error_code}")
        synced = await conn.call(SyncGroupRequest(
            group_id=group_id, generation_id=joined.generation_id, member_id=member_id,
            protocol_type="consumer", protocol_name=joined.protocol_name or "range",
            assignments=[SyncGroupRequestAssignment(member_id=member_id, assignment=ASSIGNMENT)]),
            conn.versions[SyncGroupRequest.API_KEY], SyncGroupResponse)
        if synced.error_code == REBALANCE_IN_PROGRESS:
            continue
        if synced.error_code:
            raise RuntimeError(f"SyncGroup {group_id}: error {synced.error_code}")
        return Member(conn, group_id, member_id, joined.generation_id)
    raise RuntimeError(f"{group_id}: no stable generation after 10 rounds")


def _heartbeat(member: Member) -> HeartbeatRequest:
    return HeartbeatRequest(group_id=member.group_id, generation_id=member.generation,
                            member_id=member.member_id)


def _commit(member: Member) -> OffsetCommitRequest:
    # A consumer's commit: its generation and member id, one offset of its partition.
    partition = OffsetCommitRequestPartition(partition_index=0, committed_offset=42,
                                             committed_metadata="")
    return OffsetCommitRequest(group_id=member.group_id,
                               generation_id_or_member_epoch=member.generation,
                               member_id=member.member_id,
                               topics=[OffsetCommitRequestTopic(name=TOPIC,
                                                                partitions=[partition])])


async def heartbeat_check(member: Member) -> int:
    """One Heartbeat round trip; returns its error code (0 when the group is Stable)."""
    version = member.conn.versions[HeartbeatRequest.API_KEY]
    return int((await member.conn.call(_heartbeat(member), version,
                                       HeartbeatResponse)).error_code)


async def commit_check(member: Member) -> int:
    """One OffsetCommit round trip; returns the partition's error code."""
    version = member.conn.versions[OffsetCommitRequest.API_KEY]
    response = await member.conn.call(_commit(member), version, OffsetCommitResponse)
    return int(response.topics[0].partitions[0].error_code)


@dataclass(frozen=True)
class Workload:
    """What each member sends back to back, and the round trip that checks it succeeds."""

    name: str
    request: Callable[[Member], Any]
    check: Callable[[Member], Awaitable[int]]


HEARTBEATS = Workload("heartbeats", _heartbeat, heartbeat_check)
COMMITS = Workload("commits", _commit, commit_check)


async def blast(member: Member, frame: bytes, window: int, stop_at: float,
                counts: list[int]) -> None:
    """Keep `window` copies of `frame` in flight until `stop_at` (loop clock); count responses
    in `counts[0]`. Responses are counted by their size prefixes in whole reads and replaced
    by one write per read, so the generator costs far less per request than a broker."""
    writer, reader = member.conn.writer, member.conn.reader
    writer.write(frame * window)
    outstanding = window
    loop = asyncio.get_running_loop()
    buf = bytearray()
    while outstanding:
        data = await reader.read(1 << 16)
        if not data:
            raise ConnectionError("broker closed the connection")
        buf += data
        pos = done = 0
        while len(buf) - pos >= 4:
            end = pos + 4 + int.from_bytes(buf[pos:pos + 4], "big")
            if end > len(buf):
                break
            pos, done = end, done + 1
        del buf[:pos]
        counts[0] += done
        outstanding -= done
        if done and loop.time() < stop_at:
            writer.write(frame * done)
            outstanding += done


def group_ids(groups: int) -> list[str]:
    """The ids of the single-member groups `measure_rate` joins."""
    return [f"bench-hb-{i}" for i in range(groups)]


async def measure_rate(host: str, port: int, workload: Workload, groups: int, window: int,
                       warmup_s: float, seconds: float, cpu: Any) -> dict[str, float]:
    """Join `groups` single-member groups, then blast `workload` requests on all of them.

    `cpu()` returns the broker's CPU seconds so far; the rate and the broker CPU are taken
    over the `seconds` after `warmup_s`. The workload's check must succeed before and after.
    """
    conns = [await Conn.open(host, port) for _ in range(groups)]
    members = await asyncio.gather(*(join_single_member_group(c, group)
                                     for c, group in zip(conns, group_ids(groups))))
    errors = [await workload.check(m) for m in members]
    if any(errors):
        raise RuntimeError(f"{workload.name}: errors before the run: {sorted(set(errors))}")
    counts = [0]
    loop = asyncio.get_running_loop()
    stop_at = loop.time() + warmup_s + seconds
    tasks = []
    for m in members:
        request = workload.request(m)
        frame = encode_frame(request, m.conn.versions[type(request).API_KEY], 7)
        tasks.append(asyncio.create_task(blast(m, frame, window, stop_at, counts)))
    await asyncio.sleep(warmup_s)
    start_count, start_wall, start_cpu = counts[0], time.perf_counter(), cpu()
    await asyncio.sleep(seconds)
    done, wall, used = counts[0] - start_count, time.perf_counter() - start_wall, cpu()
    await asyncio.gather(*tasks)
    after = await workload.check(members[0])
    if after:
        raise RuntimeError(f"{workload.name}: error {after} after the run")
    for c in conns:
        c.close()
    cpu_s = None if used is None or start_cpu is None else used - start_cpu
    return {"requests": done, "seconds": wall, "per_s": done / wall,
            "broker_cpu_s": cpu_s if cpu_s is not None else float("nan")}
