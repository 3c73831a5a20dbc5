"""A raw asyncio Kafka client for the heartbeat benchmark: join single-member classic groups,
then keep a window of Heartbeat requests in flight on every connection.

Real clients send one heartbeat every few seconds per member, so no client library can load
a broker's heartbeat path; this one sends pre-encoded Heartbeat frames back to back and only
counts response frames, which keeps the load generator far cheaper per request than the
broker it measures. Versions are negotiated with ApiVersions, capped at versions both
brokers under test serve.
"""

from __future__ import annotations

import asyncio
import struct
import time
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
          HeartbeatRequest.API_KEY: 4}
CLIENT_ID = "bench-hb"
# Real consumer-protocol bytes: Tansu answers an empty assignment with REBALANCE_IN_PROGRESS.
SUBSCRIPTION = encode_subscription(["bench-hb"])
ASSIGNMENT = encode_assignment({"bench-hb": [0]})
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


async def heartbeat_check(member: Member) -> int:
    """One Heartbeat round trip; returns its error code (0 when the group is Stable)."""
    version = member.conn.versions[HeartbeatRequest.API_KEY]
    request = HeartbeatRequest(group_id=member.group_id, generation_id=member.generation,
                               member_id=member.member_id)
    return int((await member.conn.call(request, version, HeartbeatResponse)).error_code)


async def blast(member: Member, window: int, stop_at: float, counts: list[int]) -> None:
    """Keep `window` heartbeats in flight until `stop_at` (loop clock); count responses in
    `counts[0]`. Responses are counted by their size prefixes in whole reads and replaced
    by one write per read, so the generator costs far less per request than a broker."""
    version = member.conn.versions[HeartbeatRequest.API_KEY]
    frame = encode_frame(HeartbeatRequest(group_id=member.group_id,
                                          generation_id=member.generation,
                                          member_id=member.member_id), version, 7)
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


async def measure_heartbeats(host: str, port: int, groups: int, window: int,
                             warmup_s: float, seconds: float,
                             cpu: Any) -> dict[str, float]:
    """Join `groups` single-member groups, then blast heartbeats on all of them.

    `cpu()` returns the broker's CPU seconds so far; the rate and the broker CPU are taken
    over the `seconds` after `warmup_s`.
    """
    conns = [await Conn.open(host, port) for _ in range(groups)]
    members = await asyncio.gather(*(join_single_member_group(c, f"bench-hb-{i}")
                                     for i, c in enumerate(conns)))
    errors = [await heartbeat_check(m) for m in members]
    if any(errors):
        raise RuntimeError(f"heartbeat errors before the run: {sorted(set(errors))}")
    counts = [0]
    loop = asyncio.get_running_loop()
    stop_at = loop.time() + warmup_s + seconds
    tasks = [asyncio.create_task(blast(m, window, stop_at, counts)) for m in members]
    await asyncio.sleep(warmup_s)
    start_count, start_wall, start_cpu = counts[0], time.perf_counter(), cpu()
    await asyncio.sleep(seconds)
    done, wall, used = counts[0] - start_count, time.perf_counter() - start_wall, cpu()
    await asyncio.gather(*tasks)
    after = await heartbeat_check(members[0])
    if after:
        raise RuntimeError(f"heartbeat error {after} after the run: the group was disturbed")
    for c in conns:
        c.close()
    cpu_s = None if used is None or start_cpu is None else used - start_cpu
    return {"heartbeats": done, "seconds": wall, "per_s": done / wall,
            "broker_cpu_s": cpu_s if cpu_s is not None else float("nan")}
