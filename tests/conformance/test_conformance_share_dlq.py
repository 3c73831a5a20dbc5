"""The share-group dead-letter queue (KIP-1191), differentially against Kafka 4.4.

Kafka's DLQ needs share.version 2, its 4.4 default (the session's reference broker is
formatted at it too); these scenarios change the DLQ's dynamic broker configs, so they run on
a Kafka of their own.
Records rejected, and released up to `share.delivery.count.limit`, are read back from the
DLQ topic with a plain Fetch and compared with their headers (the DLQ records' timestamps are
each broker's clock and are left out). Mirrors `SharePartition.initiateDLQAndArchive` and
`ShareGroupDLQStateManager` (server/src/main/java/org/apache/kafka/server/share/dlq/), and
`GroupConfig`'s DLQ names.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from helpers.polling import poll_until, wait_for
from helpers.reference_broker import ReferenceBroker, log_event

from conformance.conversation import Conversation, Topic
from conformance.differential import Endpoint, Scenario, run_both
from conformance.test_conformance_group_configs import alter, describe, wait_applied
from conformance.test_conformance_share_groups import (
    ACCEPT,
    FETCH_VERSION,
    M1,
    REJECT,
    RELEASE,
    alter_offsets,
    join_until_assigned,
    share_fetch,
)
from groupcoord.logformat.batch import decode_records, iter_batches
from groupcoord.wire.generated.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResponse,
)
from groupcoord.wire.generated.describe_share_group_offsets import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
    DescribeShareGroupOffsetsResponse,
)
from groupcoord.wire.generated.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
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
from groupcoord.wire.generated.share_fetch import (
    AcknowledgementBatch,
    ShareFetchRequest,
    ShareFetchResponse,
)
from groupcoord.wire.generated.share_fetch import FetchPartition as ShareFetchPartition
from groupcoord.wire.generated.share_fetch import FetchTopic as ShareFetchTopic

pytestmark = pytest.mark.reference

Run = Callable[[Scenario], None]
SET = 0
DLQ_NAME = "errors.deadletterqueue.topic.name"
DLQ_COPY = "errors.deadletterqueue.copy.record.enable"
ENABLE = {"errors.deadletterqueue.group.enable": "true"}
# Kafka's DLQ write goes through its inter-broker client; on a loaded machine it once took
# longer than the DSL's 20 s polling deadline.
DLQ_DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def kafka_dlq_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceBroker]:
    broker = ReferenceBroker(tmp_path_factory.mktemp("kafka-reference-dlq"),
                             features={"share.version": "2"})
    broker.start()
    log_event(f"DLQ reference RSS after start: {broker.rss_kib() // 1024} MiB")
    yield broker
    broker.stop()


@pytest.fixture
def differential_dlq(kafka_dlq_reference: ReferenceBroker, groupcoord_peer: Endpoint,
                     request: pytest.FixtureRequest) -> Run:
    kafka = Endpoint("kafka", "127.0.0.1", kafka_dlq_reference.port)
    name = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:80]

    def run(scenario: Scenario) -> None:
        run_both(kafka, groupcoord_peer, name, scenario)

    return run


def dlq_rows(c: Conversation, topic: Topic, partition: int = 0) -> list[tuple[object, ...]]:
    """(offset, key, value, headers) of every record in `partition` of `topic`."""
    response = c.quiet(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0,
                                    max_bytes=1 << 20, session_epoch=-1, topics=[
        FetchTopic(topic=topic.name, partitions=[FetchPartition(
            partition=partition, fetch_offset=0, partition_max_bytes=1 << 20)])]), 12,
        FetchResponse)
    rows: list[tuple[object, ...]] = []
    for header, batch in iter_batches(bytes(response.responses[0].partitions[0].records or b"")):
        for rec in decode_records(batch):
            rows.append((header.base_offset + rec.offset_delta, rec.key, rec.value,
                         [(name, value) for name, value in rec.headers]))
    return rows


def wait_dlq(c: Conversation, step: str, topic: Topic, count: int) -> None:
    """Wait until the DLQ topic holds `count` records (the DLQ write is asynchronous on
    both brokers), then record them."""
    wait_for(lambda: len(dlq_rows(c, topic)) >= count,
             f"{c.broker}: {count} records in {topic.name}", DLQ_DEADLINE_S)
    c.record(step, dlq_rows(c, topic))


def configure(c: Conversation, group: str, dlq: Topic, copy: bool) -> None:
    settings = {DLQ_NAME: dlq.name, DLQ_COPY: str(copy).lower(),
                "share.delivery.count.limit": "2"}
    alter(c, "the group's DLQ configs", group, *((k, SET, v) for k, v in settings.items()))
    for key, value in settings.items():
        wait_applied(c, group, key, value)


def reject_and_exhaust(c: Conversation, group: str, topic: Topic) -> None:
    """Three records: reject r0, accept r1, release r2 twice (limit 2)."""
    c.produce(topic, 0, [b"r0", b"r1", b"r2"])
    alter_offsets(c, "start at the beginning", group, topic.name, {0: 0})
    join_until_assigned(c, group, M1, topic)
    share_fetch(c, "deliver all three", group, M1, 0, topic)
    share_fetch(c, "reject r0, accept r1, release r2; r2 comes again", group, M1, 1, topic, [
        AcknowledgementBatch(first_offset=0, last_offset=2,
                             acknowledge_types=[REJECT, ACCEPT, RELEASE])])
    share_fetch(c, "release r2 at the limit", group, M1, 2, topic, [
        AcknowledgementBatch(first_offset=2, last_offset=2, acknowledge_types=[RELEASE])],
        max_wait_ms=100)


def wait_archived(c: Conversation, group: str, topic: Topic) -> None:
    """r3 is produced and accepted: a later state write whose start offset passes 0-2 once
    r0 and r2 are ARCHIVED (Kafka persists the start offset it had before an
    acknowledgement, so the describe lags one write behind; the scenario waits for it and
    does not record it). Only where the DLQ write fails at once: a slow one (Kafka creating
    the topic) could come after this write, and no later write would move the start."""
    c.produce(topic, 0, [b"r3"])
    share_fetch(c, "deliver r3", group, M1, 3, topic)
    share_fetch(c, "accept r3", group, M1, 4, topic, [
        AcknowledgementBatch(first_offset=3, last_offset=3, acknowledge_types=[ACCEPT])],
        max_wait_ms=0)
    c.wait_until(lambda: _start_offset(c, group, topic) >= 3, "r0-r2 archived")


@pytest.mark.parametrize("copy", [False, True], ids=["headers-only", "copy-record"])
def test_rejected_and_exhausted_records_reach_the_dlq(differential_dlq: Run,
                                                      copy: bool) -> None:
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        dlq = c.create_topic("dead", configs=ENABLE, prefix="dlq.")
        group = c.name("g")
        configure(c, group, dlq, copy)
        reject_and_exhaust(c, group, topic)
        wait_dlq(c, "the DLQ topic", dlq, 2)
    differential_dlq(scenario)


@pytest.mark.parametrize("case", ["not-enabled", "no-prefix", "missing"])
def test_unusable_dlq_topic_archives_without_dlq_records(differential_dlq: Run,
                                                         case: str) -> None:
    """Kafka's `validateDlqTopic` fails (auto-creation is off, Kafka's default): the
    records are archived and nothing is written."""
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        if case == "missing":
            missing = Topic("dlq." + c.name("never"), b"", 1)
            configure(c, group, missing, False)
            reject_and_exhaust(c, group, topic)
            wait_archived(c, group, topic)
            meta = c.quiet(MetadataRequest(topics=[MetadataRequestTopic(name=missing.name)],
                                           allow_auto_topic_creation=False), 12,
                           MetadataResponse)
            # The node ids of the two brokers differ; the topic's error code is the point.
            c.record("the DLQ topic was not created",
                     [(t.name, t.error_code) for t in meta.topics])
            return
        dlq = c.create_topic("dead", configs=ENABLE if case == "no-prefix" else {},
                             prefix="" if case == "no-prefix" else "dlq.")
        configure(c, group, dlq, False)
        reject_and_exhaust(c, group, topic)
        wait_archived(c, group, topic)
        c.record("the DLQ topic stays empty", dlq_rows(c, dlq))
    differential_dlq(scenario)


def test_dlq_group_configs(differential_dlq: Run) -> None:
    def scenario(c: Conversation) -> None:
        group = c.name("g")
        describe(c, "defaults", group, [DLQ_NAME, DLQ_COPY])
        alter(c, "an internal topic name", group, (DLQ_NAME, SET, "__dead"))
        alter(c, "copy record not a boolean", group, (DLQ_COPY, SET, "maybe"))
        alter(c, "set both", group, (DLQ_NAME, SET, "dlq.x"), (DLQ_COPY, SET, "true"))
        wait_applied(c, group, DLQ_NAME, "dlq.x")
        wait_applied(c, group, DLQ_COPY, "true")
        describe(c, "both set", group, [DLQ_NAME, DLQ_COPY])
    differential_dlq(scenario)


def _start_offset(c: Conversation, group: str, topic: Topic) -> int:
    response = c.quiet(DescribeShareGroupOffsetsRequest(groups=[
        DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=[
            DescribeShareGroupOffsetsRequestTopic(topic_name=topic.name, partitions=[0])])]),
        1, DescribeShareGroupOffsetsResponse)
    return int(response.groups[0].topics[0].partitions[0].start_offset)


def test_dlq_partition_is_the_source_partition_modulo_dlq_partitions(
        differential_dlq: Run) -> None:
    """Three source partitions into a two-partition DLQ topic: source p goes to DLQ
    partition p % 2 (`populateDLQTopicData`). The fetches are not recorded: which
    partitions one ShareFetch answers is timing."""
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t", partitions=3)
        dlq = c.create_topic("dead", partitions=2, configs=ENABLE, prefix="dlq.")
        group = c.name("g")
        configure(c, group, dlq, True)
        for p in range(3):
            c.produce(topic, p, [f"p{p}".encode()])
        alter_offsets(c, "start at the beginning", group, topic.name, {0: 0, 1: 0, 2: 0})
        join_until_assigned(c, group, M1, topic)
        epoch, held = 0, set()

        def fetch(acks: dict[int, AcknowledgementBatch]) -> ShareFetchResponse:
            nonlocal epoch
            response = c.quiet(ShareFetchRequest(
                group_id=group, member_id=M1, share_session_epoch=epoch, max_wait_ms=500,
                min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
                topics=[ShareFetchTopic(topic_id=topic.topic_id, partitions=[
                    ShareFetchPartition(partition_index=p, acknowledgement_batches=(
                        [acks[p]] if p in acks else [])) for p in range(3)])]),
                FETCH_VERSION, ShareFetchResponse)
            epoch += 1
            return response

        def all_held() -> bool:
            for t in fetch({}).responses:
                held.update(p.partition_index for p in t.partitions if p.acquired_records)
            return len(held) == 3

        c.wait_until(all_held, "every partition's record acquired")
        fetch({p: AcknowledgementBatch(first_offset=0, last_offset=0,
                                       acknowledge_types=[REJECT]) for p in range(3)})
        # Sources 0 and 2 are written by two share-partitions' DLQ writes, in either order:
        # compare them without their DLQ offsets, in source order.
        poll_until(lambda: len(dlq_rows(c, dlq)) >= 2, DLQ_DEADLINE_S)
        c.record("DLQ partition 0: sources 0 and 2",
                 sorted((row[1:] for row in dlq_rows(c, dlq)), key=repr))
        rows: list[tuple[object, ...]] = []
        deadline = time.monotonic() + DLQ_DEADLINE_S
        while len(rows) < 1 and time.monotonic() < deadline:
            rows = dlq_rows(c, dlq, partition=1)
        c.record("DLQ partition 1: source 1", rows)
    differential_dlq(scenario)


AUTO_CREATE = "errors.deadletterqueue.auto.create.topics.enable"
BROKER_RESOURCE, TOPIC_RESOURCE = 4, 2


def set_auto_create(c: Conversation, step: str, value: str | None) -> None:
    """The cluster-wide dynamic broker config (resource name ""), and wait until the broker
    describes it so."""
    c.call(step, IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=BROKER_RESOURCE, resource_name="", configs=[AlterableConfig(
            name=AUTO_CREATE, config_operation=SET if value is not None else 1,
            value=value)])]), 1, IncrementalAlterConfigsResponse)

    def applied() -> bool:
        described = c.quiet(DescribeConfigsRequest(resources=[DescribeConfigsResource(
            resource_type=BROKER_RESOURCE, resource_name="", configuration_keys=[AUTO_CREATE])],
            include_synonyms=False, include_documentation=False), 4, DescribeConfigsResponse)
        configs = described.results[0].configs
        current = configs[0].value if configs else None
        return current == value if value is not None else current in (None, "false")
    c.wait_until(applied, f"{AUTO_CREATE}={value}")


def test_missing_dlq_topic_is_created_with_auto_creation(differential_dlq: Run) -> None:
    """`errors.deadletterqueue.auto.create.topics.enable` (dynamic): the DLQ manager creates
    the missing topic with the broker's default partitions, the DLQ flag and CreateTime."""
    def scenario(c: Conversation) -> None:
        topic = c.create_topic("t")
        group = c.name("g")
        dlq = Topic("dlq." + c.name("auto"), b"", 1)
        set_auto_create(c, "turn auto-creation on", "true")
        try:
            configure(c, group, dlq, True)
            reject_and_exhaust(c, group, topic)
            wait_dlq(c, "the created DLQ topic", dlq, 2)
            meta = c.quiet(MetadataRequest(topics=[MetadataRequestTopic(name=dlq.name)],
                                           allow_auto_topic_creation=False), 12,
                           MetadataResponse)
            c.record("its partitions", [(t.error_code, len(t.partitions)) for t in meta.topics])
            c.call("its configs", DescribeConfigsRequest(resources=[DescribeConfigsResource(
                resource_type=TOPIC_RESOURCE, resource_name=dlq.name, configuration_keys=[
                    "errors.deadletterqueue.group.enable", "message.timestamp.type"])],
                include_synonyms=False, include_documentation=False), 4,
                DescribeConfigsResponse)
        finally:
            set_auto_create(c, "turn auto-creation off", None)
    differential_dlq(scenario)
