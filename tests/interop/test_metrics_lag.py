"""`/metrics` of an in-process broker on virtual time, with confluent-kafka producing
records with known timestamps and committing known offsets: lag in records and seconds to
the millisecond, messages lost after DeleteRecords, the group limit, states, and
rebalances counted by cause for a classic and a KIP-848 group."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from helpers.prometheus_text import Labels, scrape, value

from groupcoord.server.metrics.http import MetricsOptions, MetricsServer
from groupcoord.testing import KafkaBroker

pytestmark = pytest.mark.interop

TOPIC = "orders"
CLUSTER = "test-cluster"
Scrape = dict[str, dict[Labels, float]]


class Endpoint:
    def __init__(self, broker: KafkaBroker, url: str) -> None:
        self.broker = broker
        self.url = url

    def scrape(self) -> Scrape:
        return scrape(self.url + "/metrics")

    def now_ms(self) -> int:
        assert self.broker.clock is not None
        return self.broker.clock.now_ms()


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    with KafkaBroker(clock="manual", metrics_max_groups=2) as broker:
        assert broker.broker is not None
        server = MetricsServer(broker.broker, MetricsOptions(CLUSTER, 2))
        port = broker.call(server.start("127.0.0.1", 0))
        try:
            yield Endpoint(broker, f"http://127.0.0.1:{port}")
        finally:
            broker.call(server.stop())


def _produce(bootstrap: str, timestamps: list[int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for ts in timestamps:
        producer.produce(TOPIC, value=b"v", partition=0, timestamp=ts)
    assert producer.flush(30) == 0


def _commit(bootstrap: str, group: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def _lag_labels(group: str) -> dict[str, str]:
    # A group that only commits has no members: klag leaves the member labels empty.
    return {"cluster_name": CLUSTER, "group": group, "topic": TOPIC, "partition": "0",
            "member_host": "", "consumer_id": "", "client_id": ""}


def test_lag_in_records_and_seconds_and_messages_lost(endpoint: Endpoint) -> None:
    bootstrap = endpoint.broker.bootstrap_servers
    t0 = endpoint.now_ms() - 60_000
    _produce(bootstrap, [t0 + 1000 * i for i in range(10)])
    _commit(bootstrap, "g-a", 4)
    m = endpoint.scrape()
    labels = _lag_labels("g-a")
    assert value(m, "kafka_consumergroup_group_offset", **labels) == 4
    assert value(m, "kafka_consumergroup_group_lag", **labels) == 6
    # The next record the group reads is offset 4, produced at t0 + 4 s.
    assert value(m, "kafka_consumergroup_group_lag_seconds", **labels,
                 compaction_detected="false", data_loss_detected="false") == 56.0
    assert value(m, "kafka_consumergroup_group_max_lag_seconds", group="g-a") == 56.0
    assert value(m, "kafka_consumergroup_group_retention_margin", group="g-a") == 4
    assert value(m, "kafka_consumergroup_group_messages_lost", group="g-a") == 0
    assert value(m, "kafka_consumergroup_group_lag_retention_ratio", group="g-a") == 60.0
    assert value(m, "kafka_consumergroup_group_state", group="g-a") == 5  # Empty
    assert value(m, "groupcoord_group_state", group="g-a") == 1
    assert value(m, "kafka_partition_latest_offset", topic=TOPIC) == 10
    assert value(m, "kafka_server_group_coordinator_metrics_offset_commit_count") == 1

    endpoint.broker.advance(10_000)  # the lag in time grows with the clock, not the offsets
    m = endpoint.scrape()
    assert value(m, "kafka_consumergroup_group_lag_seconds", group="g-a") == 66.0

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.delete_records([TopicPartition(TOPIC, 0, 7)])
    for future in futures.values():
        future.result(30)
    m = endpoint.scrape()
    assert value(m, "kafka_consumergroup_group_messages_lost", group="g-a") == 3
    assert value(m, "kafka_consumergroup_group_retention_margin", group="g-a") == -3
    assert value(m, "kafka_partition_earliest_offset", topic=TOPIC) == 7
    # The group resumes at the first record kept, offset 7 (t0 + 7 s), 70 s - 7 s ago.
    assert value(m, "kafka_consumergroup_group_lag_seconds", group="g-a",
                 data_loss_detected="true") == 63.0

    _commit(bootstrap, "g-a", 10)
    m = endpoint.scrape()
    assert value(m, "kafka_consumergroup_group_lag", group="g-a") == 0
    assert value(m, "kafka_consumergroup_group_lag_seconds", group="g-a") == 0


def test_only_the_first_groups_by_id_are_exported(endpoint: Endpoint) -> None:
    bootstrap = endpoint.broker.bootstrap_servers
    _produce(bootstrap, [endpoint.now_ms()] * 3)
    for group in ("g-c", "g-a", "g-b"):
        _commit(bootstrap, group, 1)
    m = endpoint.scrape()
    exported = {dict(k)["group"] for k in m["kafka_consumergroup_group_lag"]}
    assert exported == {"g-a", "g-b"}
    assert value(m, "kafka_server_group_coordinator_metrics_group_count",
                 protocol="classic") == 3
    assert value(m, "kafka_server_group_coordinator_metrics_classic_group_count",
                 state="Empty") == 3
    assert value(m, "groupcoord_metrics_groups", kind="total") == 3
    assert value(m, "groupcoord_metrics_groups", kind="exported") == 2


def _poll_until_assigned(consumer: Consumer, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not consumer.assignment():
        assert time.monotonic() < deadline, "no assignment"
        consumer.poll(0.1)


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_rebalances_counted_by_cause_and_state(endpoint: Endpoint, protocol: str) -> None:
    bootstrap = endpoint.broker.bootstrap_servers
    _produce(bootstrap, [endpoint.now_ms()])
    group = f"live-{protocol}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "group.protocol": protocol, "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    try:
        _poll_until_assigned(consumer)
        m = endpoint.scrape()
        assert value(m, "kafka_consumergroup_group_state", group=group) == 3  # Stable
        assert value(m, "groupcoord_group_state", group=group, protocol=protocol,
                     state="Stable") == 1
        assert value(m, "groupcoord_group_rebalances_total", group=group,
                     cause="member_joined") == 1
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
        m = endpoint.scrape()
        # The lag series names the member the partition is assigned to, as klag does.
        assert value(m, "kafka_consumergroup_group_lag", group=group, member_host="/127.0.0.1",
                     consumer_id=consumer.memberid(), client_id="rdkafka") == 0
    finally:
        consumer.close()
    m = endpoint.scrape()
    assert value(m, "groupcoord_rebalances_total", protocol=protocol,
                 cause="member_left") == 1
    assert value(m, "groupcoord_group_rebalances_total", group=group, protocol=protocol,
                 cause="member_left") == 1
    assert value(m, "kafka_consumergroup_group_state", group=group) == 5  # Empty
    kafka_count = ("group_completed_rebalance_count" if protocol == "classic"
                   else "consumer_group_rebalance_count")
    # Classic: the join formed one generation (the leave leaves the group Empty without
    # another); consumer: the join and the leave each bumped the group epoch.
    assert value(m, "kafka_server_group_coordinator_metrics_" + kafka_count) == (
        1 if protocol == "classic" else 2)
