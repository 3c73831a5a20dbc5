"""Connection limits on a running broker: `max.connections.per.ip` (and overrides) close a
connection beyond the limit, `max.connections` makes new connections wait, and
`connections.max.idle.ms` closes idle ones; each logged when it bites."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, RawClient, run, settle

from groupcoord.apis.registry import ApiSpec, load_handlers
from groupcoord.server.connection_limits import ConnectionLimits
from groupcoord.server.connection_quotas import ConnectionQuotas, Refusal
from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
)
from groupcoord.wire.generated.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)
from groupcoord.wire.generated.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)


async def _parked_metadata(ctx: Any, header: Any, request: Any, version: int) -> Any:
    """Never answers: a request parked like a long JoinGroup."""
    await asyncio.Event().wait()


def _handlers() -> dict[int, ApiSpec]:
    table = load_handlers(["api_versions"])
    table[3] = ApiSpec(3, 0, 12, _parked_metadata, MetadataRequest, MetadataResponse, 9)
    return table


async def _client_from(b: InProcBroker, source: str) -> RawClient:
    reader, writer = await asyncio.open_connection("127.0.0.1", b.port, local_addr=(source, 0))
    client = RawClient(reader, writer)
    b.clients.append(client)
    return client


async def _served(client: RawClient) -> bool:
    response = await client.call(ApiVersionsRequest(), 0, ApiVersionsResponse)
    return bool(response.error_code == 0)


def _limits(b: InProcBroker) -> ConnectionLimits:
    limits = b.broker.connection_limits
    assert limits is not None
    return limits


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "groupcoord.server"]


def test_per_ip_limit_closes_the_connection_beyond_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers(), max_connections_per_ip=2) as b:
            first, second = await b.client(), await b.client()
            assert await _served(first) and await _served(second)
            third = await b.client()
            assert await third.closed()
            assert await _served(await _client_from(b, "127.0.0.2"))
            quotas = _limits(b).quotas
            assert quotas.count("127.0.0.1") == 2 and quotas.refused == 1
            await first.close()
            await settle(lambda: quotas.count("127.0.0.1") == 1)
            assert await _served(await b.client())  # the slot was released on close

    with caplog.at_level(logging.INFO, logger="groupcoord.server"):
        run(go())
    assert ("Rejected connection from 127.0.0.1, address already has the configured maximum "
            "of 2 connections (max.connections.per.ip)") in _messages(caplog)


def test_per_ip_overrides(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers(), max_connections_per_ip=0,
                                max_connections_per_ip_overrides="127.0.0.1:1") as b:
            assert await _served(await b.client())
            assert await (await b.client()).closed()
            assert await (await _client_from(b, "127.0.0.2")).closed()
            assert _limits(b).quotas.refused == 2

    run(go())


def test_max_connections_makes_new_connections_wait(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers(), max_connections=2) as b:
            first = await b.client()
            assert await _served(first) and await _served(await b.client())
            waiting = await _client_from(b, "127.0.0.2")
            corr = await waiting.send(ApiVersionsRequest(), 0)
            await settle(lambda: any("max.connections=2 reached" in m
                                     for m in _messages(caplog)))
            # The acceptor waits: the third connection sits in the listen backlog.
            assert _limits(b).quotas.total == 2 and len(b.broker.connections) == 2
            await first.close()
            got, response = await waiting.recv(ApiVersionsResponse, 0)
            assert got == corr and response.error_code == 0

    with caplog.at_level(logging.INFO, logger="groupcoord.server"):
        run(go())


def test_idle_connections_closed_at_the_injected_time(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:  # Kafka's default, 10 minutes
            idle, busy = await b.client(), await b.client()
            assert await _served(idle)
            await busy.send(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 9)
            await settle(lambda: any(c.has_pending_responses() for c in b.broker.connections))
            limits = _limits(b)
            now = asyncio.get_running_loop().time()
            assert limits.expire_idle(now + 599.0) == 0
            assert limits.expire_idle(now + 601.0) == 1
            assert await idle.closed()
            # A connection owed a response is not idle.
            assert len(b.broker.connections) == 1 and not await busy.closed(timeout=0)
            await settle(lambda: limits.quotas.total == 1)

    with caplog.at_level(logging.INFO, logger="groupcoord.server"):
        run(go())
    assert ("closed 1 connections idle for more than connections.max.idle.ms=600000"
            in _messages(caplog))


def test_idle_timer_closes_connections(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers(), connections_max_idle_ms=50) as b:
            client = await b.client()
            assert await _served(client)
            assert await client.closed(timeout=5.0)
            assert _limits(b).idle_closed == 1
            await settle(lambda: _limits(b).quotas.total == 0)

    run(go())


def test_negative_idle_time_disables_expiry(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers(), connections_max_idle_ms=-1) as b:
            client = await b.client()
            assert await _served(client)
            limits = _limits(b)
            assert limits.idle is None
            assert limits.expire_idle(asyncio.get_running_loop().time() + 1e9) == 0
            assert await _served(client)

    run(go())


class _FailingOnce(ConnectionQuotas):
    """Accounting that fails for the first connection, as a bug on the accept path would."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def inc(self, address: str) -> Refusal | None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("accounting bug")
        return super().inc(address)


def test_an_accept_error_is_logged_and_the_listener_keeps_accepting(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, _handlers()) as b:
            _limits(b).quotas = _FailingOnce()
            assert await (await b.client()).closed()
            assert await _served(await b.client())

    with caplog.at_level(logging.INFO, logger="groupcoord.server"):
        run(go())
    assert ("error while accepting a connection: RuntimeError('accounting bug')"
            in _messages(caplog))


def test_limits_described_as_static_read_only_broker_configs(tmp_path: Path) -> None:
    names = ["max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
             "connections.max.idle.ms"]

    async def go() -> None:
        async with InProcBroker(tmp_path, max_connections_per_ip=7,
                                max_connections_per_ip_overrides="127.0.0.1:9",
                                connections_max_idle_ms=1234) as b:
            c = await b.client()
            describe = DescribeConfigsRequest(resources=[DescribeConfigsResource(
                resource_type=4, resource_name="0", configuration_keys=names)])
            resp = await c.call(describe, 4, DescribeConfigsResponse)
            assert [(e.name, e.value, e.config_source, e.read_only)
                    for e in resp.results[0].configs] == [
                ("max.connections", "2147483647", 4, True),
                ("max.connections.per.ip", "7", 4, True),
                ("max.connections.per.ip.overrides", "127.0.0.1:9", 4, True),
                ("connections.max.idle.ms", "1234", 4, True)]
            alter = IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
                resource_type=4, resource_name="", configs=[AlterableConfig(
                    name="max.connections.per.ip", config_operation=0, value="1")])])
            resp = await c.call(alter, 1, IncrementalAlterConfigsResponse)
            assert resp.responses[0].error_code == ErrorCode.INVALID_CONFIG

    run(go())
