"""`consumer.*` GROUP configs over the wire (Kafka `GroupConfig` for KIP-848 groups):
DescribeConfigs sources and defaults from the broker's `group.consumer.*` settings,
IncrementalAlterConfigs SET/DELETE with INVALID_CONFIG and validate_only, the overrides
reaching ConsumerGroupHeartbeat, and surviving a restart."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from broker_inproc import InProcBroker, RawClient, run

from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated import consumer_group_heartbeat as cgh
from groupcoord.wire.generated import describe_configs as dc
from groupcoord.wire.generated import incremental_alter_configs as iac

G = "cg-configs"
SESSION, INTERVAL = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
EXTRA = {"group.consumer.min.session.timeout.ms": "10000",
         "group.consumer.session.timeout.ms": "40000",
         "group.consumer.min.heartbeat.interval.ms": "1000"}


async def alter(c: RawClient, changes: dict[str, str | None],
                validate_only: bool = False) -> tuple[int, str | None]:
    res = iac.AlterConfigsResource(resource_type=32, resource_name=G, configs=[
        iac.AlterableConfig(name=k, config_operation=0 if v is not None else 1, value=v)
        for k, v in changes.items()])
    resp = await c.call(iac.IncrementalAlterConfigsRequest(
        resources=[res], validate_only=validate_only), 1, iac.IncrementalAlterConfigsResponse)
    return resp.responses[0].error_code, resp.responses[0].error_message


async def describe(c: RawClient, keys: list[str] | None = None) -> dict[str, tuple[str, int]]:
    req = dc.DescribeConfigsRequest(resources=[dc.DescribeConfigsResource(
        resource_type=32, resource_name=G, configuration_keys=keys)])
    resp = await c.call(req, 4, dc.DescribeConfigsResponse)
    assert resp.results[0].error_code == 0
    return {e.name: (e.value, e.config_source) for e in resp.results[0].configs}


async def join(c: RawClient) -> Any:
    req = cgh.ConsumerGroupHeartbeatRequest(
        group_id=G, member_id="m1aaaaaaaaaaaaaaaaaaaa", member_epoch=0,
        rebalance_timeout_ms=30_000, subscribed_topic_names=["t"], topic_partitions=[])
    return await c.call(req, 1, cgh.ConsumerGroupHeartbeatResponse)


def test_describe_alter_validate_and_heartbeat(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, extra=EXTRA) as b:
            b.broker.topics.create("t", 1, {})
            c = await b.client()
            assert await describe(c, [SESSION, INTERVAL]) == {
                SESSION: ("40000", 5), INTERVAL: ("5000", 5)}
            assert await alter(c, {SESSION: "9999"}) == (
                E.INVALID_CONFIG, ("consumer.session.timeout.ms must be greater than or equal "
                                  "to group.consumer.min.session.timeout.ms"))
            assert await alter(c, {INTERVAL: "40000"}) == (
                E.INVALID_CONFIG, ("consumer.heartbeat.interval.ms must be less than or equal "
                                  "to group.consumer.max.heartbeat.interval.ms"))
            assert await alter(c, {SESSION: "12000", INTERVAL: "12000"}) == (
                E.INVALID_CONFIG, ("consumer.heartbeat.interval.ms must be less than "
                                  "consumer.session.timeout.ms"))
            assert (await alter(c, {SESSION: "12000"}, validate_only=True))[0] == 0
            assert (await describe(c))[SESSION] == ("40000", 5)
            assert (await alter(c, {SESSION: "12000", INTERVAL: "2000"}))[0] == 0
            values = await describe(c)
            assert values[SESSION] == ("12000", 8) and values[INTERVAL] == ("2000", 8)
            assert values["share.session.timeout.ms"] == ("45000", 5)
            resp = await join(c)
            assert (resp.error_code, resp.heartbeat_interval_ms) == (0, 2000)
            shard = b.broker.groups.shards[b.broker.groups.partition_for(G)]
            assert shard.shard.consumer.session_timeout_ms(G) == 12_000
            assert (await alter(c, {INTERVAL: None}))[0] == 0
            assert (await describe(c, [INTERVAL])) == {INTERVAL: ("5000", 5)}
    run(go())


def test_overrides_survive_a_restart(tmp_path: Path) -> None:
    async def first() -> None:
        async with InProcBroker(tmp_path, extra=EXTRA) as b:
            c = await b.client()
            assert (await alter(c, {SESSION: "15000", INTERVAL: "3000"}))[0] == 0

    async def second() -> None:
        async with InProcBroker(tmp_path, extra=EXTRA) as b:
            b.broker.topics.create("t", 1, {})
            c = await b.client()
            values = await describe(c, [SESSION, INTERVAL])
            assert values == {SESSION: ("15000", 8), INTERVAL: ("3000", 8)}
            resp = await join(c)
            assert (resp.error_code, resp.heartbeat_interval_ms) == (0, 3000)
    run(first())
    run(second())
