"""`/metrics` for share groups (KIP-1226 lag of each share-partition, from a confluent-kafka
share consumer), streams groups (lag per active task, from a Kafka Streams 4.4 app), and
partitions of subscribed topics that no member holds (classic and KIP-848 groups)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewPartitions
from helpers import streams_app
from helpers.confluent_io import create_share_topic, create_topic
from helpers.polling import poll_until
from helpers.prometheus_text import Labels, scrape, value

from groupcoord.server.metrics.http import MetricsOptions, MetricsServer
from groupcoord.testing import KafkaBroker

pytestmark = pytest.mark.interop

Scrape = dict[str, dict[Labels, float]]


@pytest.fixture
def endpoint() -> Iterator[tuple[KafkaBroker, str]]:
    with KafkaBroker() as broker:
        assert broker.broker is not None
        server = MetricsServer(broker.broker, MetricsOptions("c"))
        port = broker.call(server.start("127.0.0.1", 0))
        try:
            yield broker, f"http://127.0.0.1:{port}/metrics"
        finally:
            broker.call(server.stop())


def _produce(bootstrap: str, topic: str, count: int, partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, value=b"word%d word" % i, partition=partition)
    assert producer.flush(30) == 0


def _until(url: str, check: str, expected: float, timeout: float = 60.0,
           pump: Callable[[], object] = lambda: None, **labels: str) -> None:
    """Wait until the one sample of `check` with `labels` is `expected`, calling `pump`
    (a consumer's poll) in between."""
    seen: list[float | None] = []

    def reached() -> bool:
        pump()
        samples = scrape(url)
        found = [v for k, v in samples.get(check, {}).items() if set(labels.items()) <= k]
        seen.append(found[0] if len(found) == 1 else None)
        return seen[-1] == expected

    assert poll_until(reached, timeout, interval=0.2), (check, labels, expected, seen[-1:])


def test_share_group_lag(endpoint: tuple[KafkaBroker, str]) -> None:
    broker, url = endpoint
    bootstrap = broker.bootstrap_servers
    create_share_topic(bootstrap, "jobs", "workers", 1, {"share.auto.offset.reset": "earliest"})
    _produce(bootstrap, "jobs", 10)
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "workers",
                              "share.acknowledgement.mode": "implicit"})
    consumer.subscribe(["jobs"])
    try:
        got, deadline = 0, time.monotonic() + 60
        while got < 10:
            assert time.monotonic() < deadline, f"got {got} of 10 records"
            got += sum(1 for m in consumer.poll(0.1) or [] if m.error() is None)
        # The next poll acknowledges the batch (implicit mode): nothing left behind.
        _until(url, "groupcoord_share_group_lag", 0, pump=lambda: consumer.poll(0.05),
               group="workers", topic="jobs", partition="0")
        # Five more records the consumer has not taken (nor acknowledged): the lag.
        _produce(bootstrap, "jobs", 5)
        _until(url, "groupcoord_share_group_lag", 5, group="workers", topic="jobs")
        samples = scrape(url)
        assert value(samples, "groupcoord_share_group_start_offset", group="workers") == 10
        assert value(samples, "kafka_server_group_coordinator_metrics_share_group_count",
                     state="Stable") == 1
        assert value(samples, "groupcoord_group_state", group="workers", protocol="share",
                     state="Stable") == 1
        # The member's join bumped the group epoch, and the initialized partition once more.
        kafka = "kafka_server_group_coordinator_metrics_"
        assert value(samples, kafka + "share_group_rebalance_count") >= 2
        assert value(samples, "groupcoord_rebalances_total", protocol="share",
                     cause="member_joined") == 1
        # Each ShareFetch/ShareAcknowledge writes share state on the share coordinator.
        assert value(samples, "kafka_server_share_coordinator_metrics_"
                              "event_processing_time_ms_max") >= 0
        assert value(samples, "kafka_server_share_coordinator_metrics_num_partitions",
                     state="active") >= 1
        # Share groups are not consumer groups: klag's families leave them out.
        assert not any(dict(k)["group"] == "workers"
                       for k in samples.get("kafka_consumergroup_group_lag", {}))
    finally:
        consumer.close()


def test_streams_group_lag_per_task(endpoint: tuple[KafkaBroker, str],
                                    tmp_path: Path) -> None:
    reason = streams_app.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    broker, url = endpoint
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "lines", 2)
    create_topic(bootstrap, "counts", 2)
    _produce(bootstrap, "lines", 20, partition=0)
    app = streams_app.StreamsInstance(streams_app.compile_app(), bootstrap, "wc", "lines",
                                      "counts", tmp_path / "state", "at_least_once",
                                      tmp_path / "streams.log")
    try:
        assert poll_until(lambda: app.state == "RUNNING", 120, interval=0.2), app.state
        # Everything read and committed: no task is behind.
        _until(url, "groupcoord_streams_group_task_lag", 0, timeout=120, group="wc",
               subtopology="0", partition="0")
        _until(url, "groupcoord_group_state", 1, group="wc", protocol="streams",
               state="Stable")
    finally:
        assert app.close() == 0
    # Stopped, with its offsets committed: new records are the lag of task 0_0 only.
    _produce(bootstrap, "lines", 7, partition=0)
    _until(url, "groupcoord_streams_group_task_lag", 7, group="wc", subtopology="0",
           partition="0")
    samples = scrape(url)
    # The tasks of the repartition topic read all they were given.
    repartition = [v for k, v in samples["groupcoord_streams_group_task_lag"].items()
                   if ("subtopology", "1") in k]
    assert repartition and set(repartition) == {0}
    assert value(samples, "kafka_consumergroup_group_lag", group="wc", topic="lines",
                 partition="0") == 7
    assert value(samples, "kafka_server_group_coordinator_metrics_streams_group_count",
                 state="Empty") == 1


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_partitions_no_member_holds(endpoint: tuple[KafkaBroker, str], protocol: str) -> None:
    """Partitions added to a subscribed topic: a classic group's leader assigns from its own
    (stale) metadata, so they stay unassigned until its next metadata refresh; the KIP-848
    coordinator assigns them itself."""
    broker, url = endpoint
    bootstrap = broker.bootstrap_servers
    create_topic(bootstrap, "grows", 1)
    group = f"silent-{protocol}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "group.protocol": protocol,
                         "topic.metadata.refresh.interval.ms": 600_000})
    consumer.subscribe(["grows"])
    try:
        labels = {"group": group, "protocol": protocol, "topic": "grows"}
        _until(url, "groupcoord_group_unassigned_partitions", 0, pump=lambda: consumer.poll(0.05),
               **labels)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_partitions([NewPartitions("grows", 3)]).values():
            future.result(30)
        if protocol == "classic":
            _until(url, "groupcoord_group_unassigned_partitions", 2,
                   pump=lambda: consumer.poll(0.05), **labels)
            samples = scrape(url)
            assert value(samples, "kafka_consumergroup_group_state", group=group) == 3
        else:
            _until(url, "groupcoord_group_unassigned_partitions", 0,
                   pump=lambda: consumer.poll(0.05), **labels)
            assert poll_until(lambda: (consumer.poll(0.05), len(consumer.assignment()))[1]
                              == 3, 30)
    finally:
        consumer.close()
