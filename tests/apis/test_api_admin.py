"""Topic and cluster admin APIs over the wire: ApiVersions, Metadata, CreateTopics,
DeleteTopics, CreatePartitions, DescribeConfigs, IncrementalAlterConfigs, DescribeCluster,
FindCoordinator, InitProducerId."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from broker_inproc import InProcBroker, RawClient, run

from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated import (
    api_versions,
    create_partitions,
    create_topics,
    delete_topics,
    describe_cluster,
    describe_configs,
    find_coordinator,
    incremental_alter_configs,
    init_producer_id,
    metadata,
)


def _create(name: str, partitions: int = 1, rf: int = 1, configs: dict[str, str] | None = None,
            validate_only: bool = False) -> create_topics.CreateTopicsRequest:
    topic = create_topics.CreatableTopic(
        name=name, num_partitions=partitions, replication_factor=rf,
        configs=[create_topics.CreatableTopicConfig(name=k, value=v)
                 for k, v in (configs or {}).items()])
    return create_topics.CreateTopicsRequest(topics=[topic], timeout_ms=1000,
                                             validate_only=validate_only)


async def _create_call(c: RawClient, *args: Any, version: int = 7, **kw: Any) -> Any:
    resp = await c.call(_create(*args, **kw), version, create_topics.CreateTopicsResponse)
    return resp.topics[0]


def _metadata(*names: str | None, auto: bool = True, version: int = 12) -> Any:
    topics = None if names == (None,) else [metadata.MetadataRequestTopic(name=n) for n in names]
    return metadata.MetadataRequest(topics=topics, allow_auto_topic_creation=auto)


def test_api_versions_advertise_the_registry(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            for version in range(6):
                req = api_versions.ApiVersionsRequest(client_software_name="t",
                                                      client_software_version="1")
                resp = await c.call(req, version, api_versions.ApiVersionsResponse)
                keys = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
                assert resp.error_code == 0
                assert keys[0] == (0, 12) and keys[1] == (4, 17) and keys[18] == (0, 5)
                assert set(keys) == set(b.broker.handlers)
            bad = api_versions.ApiVersionsRequest(client_software_name="-bad",
                                                  client_software_version="1")
            resp = await c.call(bad, 3, api_versions.ApiVersionsResponse)
            assert resp.error_code == ErrorCode.INVALID_REQUEST
    run(go())


def test_metadata_auto_create_and_errors(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, default_partitions=3, node_id=7) as b:
            c = await b.client()
            resp = await c.call(_metadata("auto", "bad name!", "x", auto=True), 12,
                                metadata.MetadataResponse)
            auto, bad, _ = resp.topics
            assert auto.error_code == 0 and len(auto.partitions) == 3
            assert auto.partitions[0].leader_id == 7 and auto.partitions[0].leader_epoch == 0
            assert auto.topic_id != bytes(16)
            assert bad.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
            assert resp.cluster_id == "test-cluster" and resp.controller_id == 7
            assert resp.brokers[0].node_id == 7 and resp.brokers[0].port == b.port
            resp = await c.call(_metadata("nope", auto=False), 12, metadata.MetadataResponse)
            assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            by_id = metadata.MetadataRequest(topics=[
                metadata.MetadataRequestTopic(topic_id=auto.topic_id, name=None),
                metadata.MetadataRequestTopic(topic_id=b"\x01" * 16, name=None)])
            resp = await c.call(by_id, 12, metadata.MetadataResponse)
            assert resp.topics[0].name == "auto"
            assert resp.topics[1].error_code == ErrorCode.UNKNOWN_TOPIC_ID
            resp = await c.call(_metadata(None), 12, metadata.MetadataResponse)
            assert {"auto", "x", "__consumer_offsets"} <= {t.name for t in resp.topics}
    run(go())


def test_metadata_without_auto_create_config(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, auto_create_topics=False) as b:
            c = await b.client()
            resp = await c.call(_metadata("t", version=1), 1, metadata.MetadataResponse)
            assert resp.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    run(go())


def test_create_topics_rules(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            ok = await _create_call(c, "a", 2, configs={"retention.ms": "1000"})
            assert ok.error_code == 0 and ok.num_partitions == 2 and ok.topic_id != bytes(16)
            described = {cfg.name: (cfg.value, cfg.config_source) for cfg in ok.configs}
            assert described["retention.ms"] == ("1000", 1)
            assert described["cleanup.policy"] == ("delete", 5)
            assert (await _create_call(c, "a")).error_code == ErrorCode.TOPIC_ALREADY_EXISTS
            assert (await _create_call(c, "b", rf=3)).error_code == \
                ErrorCode.INVALID_REPLICATION_FACTOR
            assert (await _create_call(c, "b", rf=-1)).error_code == 0
            assert (await _create_call(c, "c", 0)).error_code == ErrorCode.INVALID_PARTITIONS
            assert (await _create_call(c, "a.b/c")).error_code == \
                ErrorCode.INVALID_TOPIC_EXCEPTION
            assert (await _create_call(c, "d", configs={"nope": "1"})).error_code == \
                ErrorCode.INVALID_CONFIG
            dry = await _create_call(c, "e", 4, validate_only=True)
            assert dry.error_code == 0 and dry.num_partitions == 4
            assert b.broker.topics.get("e") is None
            dup = create_topics.CreateTopicsRequest(topics=[
                create_topics.CreatableTopic(name="f", num_partitions=1, replication_factor=1)] * 2)
            resp = await c.call(dup, 4, create_topics.CreateTopicsResponse)
            assert [t.error_code for t in resp.topics] == [ErrorCode.INVALID_REQUEST] * 2
    run(go())


def test_delete_topics_by_name_and_id(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            a = await _create_call(c, "a")
            await _create_call(c, "b")
            resp = await c.call(delete_topics.DeleteTopicsRequest(topic_names=["b", "zz"]), 5,
                                delete_topics.DeleteTopicsResponse)
            assert [r.error_code for r in resp.responses] == [0,
                                                               ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
            req = delete_topics.DeleteTopicsRequest(topics=[
                delete_topics.DeleteTopicState(name=None, topic_id=a.topic_id),
                delete_topics.DeleteTopicState(name=None, topic_id=b"\x02" * 16),
                delete_topics.DeleteTopicState(name="__consumer_offsets")])
            resp = await c.call(req, 6, delete_topics.DeleteTopicsResponse)
            assert [r.error_code for r in resp.responses] == [
                0, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.INVALID_REQUEST]
            assert resp.responses[0].name == "a"
            assert b.broker.topics.get("a") is None and b.broker.topics.get("b") is None
            assert not (tmp_path / "a-0").exists()
    run(go())


def test_create_partitions(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _create_call(c, "a", 2)

            def req(count: int, validate_only: bool = False) -> Any:
                return create_partitions.CreatePartitionsRequest(topics=[
                    create_partitions.CreatePartitionsTopic(name="a", count=count,
                                                            assignments=None)],
                    timeout_ms=1000, validate_only=validate_only)

            async def call(r: Any) -> int:
                resp = await c.call(r, 3, create_partitions.CreatePartitionsResponse)
                return resp.results[0].error_code

            assert await call(req(1)) == ErrorCode.INVALID_PARTITIONS
            assert await call(req(5, True)) == 0
            assert b.broker.topics.get("a").num_partitions == 2
            assert await call(req(5)) == 0
            assert b.broker.topics.get("a").num_partitions == 5
            assert (tmp_path / "a-4").is_dir()
    run(go())


def test_describe_and_alter_configs(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            await _create_call(c, "a")
            alter = incremental_alter_configs.IncrementalAlterConfigsRequest(resources=[
                incremental_alter_configs.AlterConfigsResource(
                    resource_type=2, resource_name="a", configs=[
                        incremental_alter_configs.AlterableConfig(
                            name="cleanup.policy", config_operation=2, value="compact"),
                        incremental_alter_configs.AlterableConfig(
                            name="retention.ms", config_operation=0, value="5000")]),
                incremental_alter_configs.AlterConfigsResource(
                    resource_type=2, resource_name="missing", configs=[]),
                incremental_alter_configs.AlterConfigsResource(
                    resource_type=4, resource_name="", configs=[
                        incremental_alter_configs.AlterableConfig(
                            name="log.retention.ms", config_operation=0, value="7000")])])
            resp = await c.call(alter, 1, incremental_alter_configs.IncrementalAlterConfigsResponse)
            assert [r.error_code for r in resp.responses] == [
                0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0]
            describe = describe_configs.DescribeConfigsRequest(resources=[
                describe_configs.DescribeConfigsResource(resource_type=2, resource_name="a",
                                                         configuration_keys=None),
                describe_configs.DescribeConfigsResource(resource_type=4, resource_name="0",
                                                         configuration_keys=["log.retention.ms"]),
                describe_configs.DescribeConfigsResource(resource_type=4, resource_name="9",
                                                         configuration_keys=None)],
                include_synonyms=True)
            resp = await c.call(describe, 4, describe_configs.DescribeConfigsResponse)
            topic, broker, wrong = resp.results
            cfg = {e.name: e for e in topic.configs}
            assert cfg["cleanup.policy"].value == "delete,compact"
            assert cfg["retention.ms"].value == "5000" and cfg["retention.ms"].config_source == 1
            assert [s.source for s in cfg["retention.ms"].synonyms] == [1, 2, 5]
            assert cfg["segment.ms"].config_source == 5
            assert [(e.name, e.value, e.config_source) for e in broker.configs] == [
                ("log.retention.ms", "7000", 2)]
            assert wrong.error_code == ErrorCode.INVALID_REQUEST
            read_only = incremental_alter_configs.IncrementalAlterConfigsRequest(resources=[
                incremental_alter_configs.AlterConfigsResource(
                    resource_type=4, resource_name="", configs=[
                        incremental_alter_configs.AlterableConfig(
                            name="node.id", config_operation=0, value="5")])])
            resp = await c.call(read_only, 1,
                                incremental_alter_configs.IncrementalAlterConfigsResponse)
            assert resp.responses[0].error_code == ErrorCode.INVALID_CONFIG
        # Topic overrides and dynamic broker configs survive a restart.
        async with InProcBroker(tmp_path) as b:
            assert b.broker.topics.get("a").configs["retention.ms"] == "5000"
            assert b.broker.broker_configs == {"log.retention.ms": "7000"}
    run(go())


def test_describe_cluster_and_find_coordinator(tmp_path: Path) -> None:
    async def go() -> None:
        async with InProcBroker(tmp_path, node_id=3) as b:
            c = await b.client()
            resp = await c.call(describe_cluster.DescribeClusterRequest(), 2,
                                describe_cluster.DescribeClusterResponse)
            assert (resp.cluster_id, resp.controller_id, resp.brokers[0].broker_id) == (
                "test-cluster", 3, 3)
            resp = await c.call(describe_cluster.DescribeClusterRequest(endpoint_type=2), 1,
                                describe_cluster.DescribeClusterResponse)
            assert resp.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE
            old = await c.call(find_coordinator.FindCoordinatorRequest(key="g", key_type=0), 3,
                               find_coordinator.FindCoordinatorResponse)
            assert (old.error_code, old.node_id, old.port) == (0, 3, b.port)
            batched = find_coordinator.FindCoordinatorRequest(key_type=2, coordinator_keys=[
                "g:AAAAAAAAAAAAAAAAAAAAAA:0", "bad"])
            resp = await c.call(batched, 6, find_coordinator.FindCoordinatorResponse)
            assert [x.error_code for x in resp.coordinators] == [0, ErrorCode.INVALID_REQUEST]
            share_v5 = find_coordinator.FindCoordinatorRequest(key_type=2, coordinator_keys=["a"])
            resp = await c.call(share_v5, 5, find_coordinator.FindCoordinatorResponse)
            assert resp.coordinators[0].error_code == ErrorCode.INVALID_REQUEST
    run(go())


def test_init_producer_id_is_monotonic_across_restarts(tmp_path: Path) -> None:
    async def ids() -> list[int]:
        async with InProcBroker(tmp_path) as b:
            c = await b.client()
            out = []
            for _ in range(3):
                resp = await c.call(init_producer_id.InitProducerIdRequest(
                    transactional_id=None, transaction_timeout_ms=60000), 4,
                    init_producer_id.InitProducerIdResponse)
                assert resp.error_code == 0 and resp.producer_epoch == 0
                out.append(resp.producer_id)
            return out

    first = run(ids())
    second = run(ids())
    assert first == sorted(set(first)) and min(second) > max(first)
