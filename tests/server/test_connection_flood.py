"""Connection floods against a broker subprocess (issue 10, must-show 5).

- With `max.connections.per.ip` set, 5,000 idle connections from one loopback address are
  held to the limit (the rest closed at once, one throttled log line), and well-behaved
  clients from other addresses are served: raw ApiVersions and Metadata, and a real
  client (confluent-kafka) producing and consuming.
- With no limits and a small open-files limit, a flood stops at the descriptor reserve:
  the broker keeps serving its existing clients, can still create a topic (open segment
  files) and serves new clients once the flood goes.

The flood comes from 127.0.0.2 and the real client from 127.0.0.1: a client connecting to
127.0.0.1 cannot choose its source address (librdkafka has no such option; the kernel
picks 127.0.0.1), while raw sockets can bind theirs.
"""

from __future__ import annotations

import os
import resource
import socket
import struct
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import RawClient
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.clients import ConfluentAdapter
from helpers.polling import poll_until, wait_for
from helpers.workload import Workload, check_consumed

from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.create_topics import (
    CreatableTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from groupcoord.wire.generated.metadata import MetadataRequest, MetadataResponse

pytestmark = pytest.mark.slow

FLOOD = 5000
PER_IP = 100
FLOOD_SOURCE = "127.0.0.2"
FLOOD_DEADLINE_S = 60.0
_I32 = struct.Struct(">i")


@pytest.fixture
def many_fds() -> Iterator[None]:
    """This process holds the flood's sockets: raise its soft open-files limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = FLOOD + 1000
    if hard != resource.RLIM_INFINITY and hard < need:
        pytest.skip(f"open-files hard limit {hard} < {need} needed to hold the flood")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _flood(port: int, count: int) -> list[socket.socket]:
    """`count` idle connections from FLOOD_SOURCE, opened within the deadline."""
    deadline = time.monotonic() + FLOOD_DEADLINE_S
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(sock)
            sock.bind((FLOOD_SOURCE, 0))
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            sock.connect(("127.0.0.1", port))
    except BaseException:
        _close_all(socks)
        raise
    return socks


def _close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        sock.close()


def _closed_by_broker(socks: list[socket.socket], expect: int, timeout: float) -> int:
    """How many of `socks` the broker closed, polled until `expect` or the deadline."""
    closed: set[int] = set()

    def enough_closed() -> bool:
        for i, sock in enumerate(socks):
            if i in closed:
                continue
            sock.setblocking(False)
            try:
                if sock.recv(1) == b"":
                    closed.add(i)
            except BlockingIOError:
                pass
            except ConnectionError:
                closed.add(i)
        return len(closed) >= expect

    poll_until(enough_closed, timeout)
    return len(closed)


def _call(sock: socket.socket, request: Any, version: int, response_cls: Any) -> Any:
    """One request on a blocking socket; the response decoded as `RawClient.recv` does."""
    sock.sendall(RawClient.frame(request, version, 1))
    size = _I32.unpack(_read(sock, 4))[0]
    data = _read(sock, size)
    flexible = (response_cls.FLEXIBLE_MIN is not None and version >= response_cls.FLEXIBLE_MIN
                and response_cls.API_KEY != 18)
    assert _I32.unpack_from(data, 0)[0] == 1
    return response_cls.decode(data, 4 + (1 if flexible else 0), version)[0]


def _read(sock: socket.socket, size: int) -> bytes:
    out = b""
    while len(out) < size:
        chunk = sock.recv(size - len(out))
        assert chunk, "broker closed the connection"
        out += chunk
    return out


def _client(port: int, source: str | None = None) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10,
                                    source_address=(source, 0) if source else None)


def _served(port: int, source: str | None = None) -> None:
    """ApiVersions and Metadata answered on a new connection from `source`."""
    with _client(port, source) as sock:
        request = ApiVersionsRequest(client_software_name="flood-test",
                                     client_software_version="1.0")
        versions = _call(sock, request, 3, ApiVersionsResponse)
        assert versions.error_code == 0 and versions.api_keys
        metadata = _call(sock, MetadataRequest(topics=None), 12, MetadataResponse)
        assert [b.port for b in metadata.brokers] == [port]


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _pid(broker: BrokerProcess) -> int:
    assert broker.proc is not None
    return broker.proc.pid


def test_per_ip_limit_keeps_other_clients_served_under_a_flood(
        broker_factory: BrokerFactory, many_fds: None) -> None:
    broker = broker_factory.create(["--max-connections-per-ip", str(PER_IP),
                                    "--group-initial-rebalance-delay-ms", "0"])
    started = time.monotonic()
    flood = _flood(broker.port, FLOOD)
    try:
        flooded_s = time.monotonic() - started
        _served(broker.port, "127.0.0.3")
        _served(broker.port)
        workload = Workload("after-flood", 200)
        adapter = ConfluentAdapter()
        adapter.produce(broker.bootstrap, workload, "none")
        check_consumed(workload, adapter.consume_assign(broker.bootstrap, workload.topic, 1,
                                                        workload.count), 1)
        refused = _closed_by_broker(flood, FLOOD - PER_IP, timeout=30.0)
        assert refused == FLOOD - PER_IP, f"{refused} refused; held {FLOOD - refused}"
        assert _open_fds(_pid(broker)) < PER_IP + 400  # refused sockets are not kept
    finally:
        _close_all(flood)
    text = broker.log_text()
    line = (f"Rejected connection from {FLOOD_SOURCE}, address already has the configured "
            f"maximum of {PER_IP} connections (max.connections.per.ip)")
    assert line in text
    # Throttled: a few lines for 4,900 refusals, not one each.
    assert 1 <= text.count("Rejected connection from") <= 1 + int(flooded_s / 10) + 2
    assert broker.is_running


def _limited_command(nofile: int) -> list[str]:
    """`python -m groupcoord` under an open-files limit of `nofile` (soft and hard)."""
    code = ("import os, resource, sys; "
            f"resource.setrlimit(resource.RLIMIT_NOFILE, ({nofile}, {nofile})); "
            "os.execv(sys.executable, [sys.executable, '-m', 'groupcoord', *sys.argv[1:]])")
    return [sys.executable, "-c", code]


def test_flood_stops_at_the_open_files_reserve(tmp_path: Path, many_fds: None) -> None:
    nofile = 512
    broker = BrokerProcess(tmp_path / "data", tmp_path / "stderr.log",
                           command=_limited_command(nofile))
    broker.start()
    early = _client(broker.port)  # connected before the flood
    flood: list[socket.socket] = []
    try:
        flood = _flood(broker.port, 1000)  # all fit the listen backlog (1024)
        wait_for(lambda: "open files limit" in broker.log_text(), "the open files limit", 30,
                 broker.log_tail)
        # The reserve (64 at this limit) stays free, give or take sockets in flight.
        assert _open_fds(_pid(broker)) <= nofile - 56
        # The reserve lets the broker open segment files while connections are at the limit.
        created = _call(early, CreateTopicsRequest(topics=[CreatableTopic(
            name="at-the-limit", num_partitions=8, replication_factor=1)]), 7,
            CreateTopicsResponse)
        assert [t.error_code for t in created.topics] == [0]
        _close_all(flood)
        flood = []
        _served(broker.port)  # accepted again once the flood is gone
        workload = Workload("at-the-limit", 100)
        ConfluentAdapter().produce(broker.bootstrap, workload, "none")
    finally:
        early.close()
        _close_all(flood)
        assert broker.stop() == 0
    text = broker.log_text()
    assert f"open files limit {nofile} nearly reached" in text
    assert "Too many open files" not in text
