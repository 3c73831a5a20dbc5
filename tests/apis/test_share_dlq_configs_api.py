"""The KIP-1191 configs over the wire: the GROUP configs `errors.deadletterqueue.topic.name`
(STRING, no "__" names: `GroupConfig.validate`) and `errors.deadletterqueue.copy.record.enable`
(BOOLEAN), and the TOPIC config `errors.deadletterqueue.group.enable` (BOOLEAN, default
false: `LogConfig`), through IncrementalAlterConfigs / DescribeConfigs / CreateTopics with
Kafka's INVALID_CONFIG for bad values."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from broker_inproc import InProcBroker, RawClient, run

from groupcoord.wire.errors import ErrorCode as E
from groupcoord.wire.generated import create_topics as ct
from groupcoord.wire.generated import describe_configs as dc
from groupcoord.wire.generated import incremental_alter_configs as iac

G = "dlq-configs"
NAME, COPY = "errors.deadletterqueue.topic.name", "errors.deadletterqueue.copy.record.enable"
ENABLE = "errors.deadletterqueue.group.enable"
GROUP, TOPIC = 32, 2


async def alter(c: RawClient, kind: int, resource: str, changes: dict[str, str | None]) -> int:
    res = iac.AlterConfigsResource(resource_type=kind, resource_name=resource, configs=[
        iac.AlterableConfig(name=k, config_operation=0 if v is not None else 1, value=v)
        for k, v in changes.items()])
    resp = await c.call(iac.IncrementalAlterConfigsRequest(resources=[res]), 1,
                        iac.IncrementalAlterConfigsResponse)
    return int(resp.responses[0].error_code)


async def describe(c: RawClient, kind: int, resource: str,
                   keys: list[str]) -> dict[str, tuple[str, int, int]]:
    req = dc.DescribeConfigsRequest(resources=[dc.DescribeConfigsResource(
        resource_type=kind, resource_name=resource, configuration_keys=keys)])
    resp = await c.call(req, 4, dc.DescribeConfigsResponse)
    assert resp.results[0].error_code == 0
    return {e.name: (e.value, e.config_source, e.config_type) for e in resp.results[0].configs}


def test_group_dlq_configs(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            # Defaults: no DLQ topic (STRING ""), no copy (BOOLEAN false); source DEFAULT.
            assert await describe(c, GROUP, G, [NAME, COPY]) == {
                NAME: ("", 5, 2), COPY: ("false", 5, 1)}
            assert await alter(c, GROUP, G, {NAME: "__internal"}) == E.INVALID_CONFIG
            assert await alter(c, GROUP, G, {COPY: "maybe"}) == E.INVALID_CONFIG
            assert await alter(c, GROUP, G, {NAME: "dlq.orders", COPY: "TRUE"}) == 0
            assert await describe(c, GROUP, G, [NAME, COPY]) == {
                NAME: ("dlq.orders", 8, 2), COPY: ("TRUE", 8, 1)}
            config = b.broker.shares.config_of(G)
            assert config.dlq  # share.version 2 and a topic name: the DLQ is on
            assert await alter(c, GROUP, G, {NAME: None}) == 0
            assert not b.broker.shares.config_of(G).dlq
    run(go())


def test_topic_dlq_enable_config(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            created = await c.call(ct.CreateTopicsRequest(topics=[
                ct.CreatableTopic(name="dlq.bad", num_partitions=1, replication_factor=1,
                                  configs=[ct.CreatableTopicConfig(name=ENABLE, value="yes")]),
                ct.CreatableTopic(name="dlq.ok", num_partitions=1, replication_factor=1,
                                  configs=[ct.CreatableTopicConfig(name=ENABLE, value="true")])],
                timeout_ms=5_000), 7, ct.CreateTopicsResponse)
            assert [t.error_code for t in created.topics] == [E.INVALID_CONFIG, 0]
            assert await describe(c, TOPIC, "dlq.ok", [ENABLE]) == {ENABLE: ("true", 1, 1)}
            b.broker.topics.create("plain", 1, {})
            assert await describe(c, TOPIC, "plain", [ENABLE]) == {ENABLE: ("false", 5, 1)}
            assert await alter(c, TOPIC, "plain", {ENABLE: "nope"}) == E.INVALID_CONFIG
            assert await alter(c, TOPIC, "plain", {ENABLE: "true"}) == 0
            assert b.broker.topics.get("plain").configs[ENABLE] == "true"
    run(go())


def test_broker_dlq_configs_are_dynamic(tmp_path: Path) -> None:
    """`errors.deadletterqueue.auto.create.topics.enable` and `.topic.name.prefix` are
    reconfigurable in Kafka: set on the BROKER resource they reach the DLQ writer."""
    async def go() -> None:
        extra = {"errors.deadletterqueue.topic.name.prefix": "dead."}
        async with InProcBroker(tmp_path, extra=extra) as b:
            c = await b.client()
            auto, prefix = ("errors.deadletterqueue.auto.create.topics.enable",
                            "errors.deadletterqueue.topic.name.prefix")
            # --group-config is the static value (source STATIC_BROKER_CONFIG, 4).
            assert await describe(c, 4, "", [auto, prefix]) == {
                auto: ("false", 5, 1), prefix: ("dead.", 4, 2)}
            dlq = b.broker.shares.dlq
            assert dlq.settings().errors_deadletterqueue_topic_name_prefix == "dead."
            assert await alter(c, 4, "", {auto: "maybe"}) == E.INVALID_CONFIG
            assert await alter(c, 4, "", {auto: "true", prefix: ""}) == 0
            assert await describe(c, 4, "", [auto, prefix]) == {
                auto: ("true", 2, 1), prefix: ("", 2, 2)}
            settings = dlq.settings()
            assert settings.errors_deadletterqueue_auto_create_topics_enable
            assert settings.errors_deadletterqueue_topic_name_prefix == ""
    run(go())
