"""A real Prometheus scrapes `groupcoord serve --metrics-listen` every second while
confluent-kafka runs a classic and a KIP-848 group; PromQL through Prometheus's HTTP API
gives the lag in records and seconds, the group states and the rebalances by cause that
the workload implies."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from helpers.broker import BrokerFactory, BrokerProcess
from helpers.polling import poll_until
from helpers.prometheus_server import PrometheusServer

pytestmark = pytest.mark.interop

TOPIC = "events"
RECORDS = 100
AGE_S = 1800  # the records were produced half an hour ago (their CreateTime)
METRICS_LINE = re.compile(r"groupcoord metrics listening on \S+:(\d+)")
QUERY_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess,
                                                                        PrometheusServer]]:
    base = tmp_path_factory.mktemp("metrics")
    factory = BrokerFactory(base / "broker")
    broker = factory.create(["--metrics-listen", "127.0.0.1:0",
                             "--metrics-cluster-name", "local"])
    match = METRICS_LINE.search(broker.log_text())
    assert match, broker.log_tail()
    prometheus = PrometheusServer(Path(base / "prometheus"),
                                  {"groupcoord": f"127.0.0.1:{match.group(1)}"})
    prometheus.start()
    try:
        yield broker, prometheus
    finally:
        prometheus.stop()
        factory.close()


def _consume(consumer: Consumer, count: int) -> None:
    got, deadline = 0, time.monotonic() + 60
    while got < count:
        assert time.monotonic() < deadline, f"consumed {got} of {count}"
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            got += 1


def _eventually(prometheus: PrometheusServer, promql: str,
                expected: dict[str, float] | float, key: str = "",
                members: tuple[Consumer, ...] = ()) -> None:
    """Wait until `promql` answers `expected` (one value, or label `key` -> value),
    polling `members` meanwhile (a classic member rejoins only from its poll)."""
    seen: list[object] = []

    def matches() -> bool:
        for member in members:
            member.poll(0.1)
        result = prometheus.query(promql)
        seen.append(result)
        if isinstance(expected, dict):
            return {labels.get(key, ""): v for labels, v in result} == expected
        return len(result) == 1 and result[0][1] == expected

    assert poll_until(matches, QUERY_TIMEOUT_S, interval=0.5), \
        f"{promql}: expected {expected}, last answer {seen[-1] if seen else None}"


def test_prometheus_sees_lag_states_and_rebalance_causes(
        served: tuple[BrokerProcess, PrometheusServer]) -> None:
    broker, prometheus = served
    produced_ms = int(time.time() * 1000) - AGE_S * 1000
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(RECORDS):
        producer.produce(TOPIC, value=b"%d" % i, partition=0, timestamp=produced_ms + i)
    assert producer.flush(30) == 0

    def consumer(group: str, protocol: str) -> Consumer:
        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                      "group.protocol": protocol, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe([TOPIC])
        return c

    first = consumer("classic-g", "classic")
    _consume(first, 40)
    first.commit(offsets=[TopicPartition(TOPIC, 0, 40)], asynchronous=False)
    second = consumer("classic-g", "classic")  # joins: a second rebalance
    kip848 = consumer("kip848-g", "consumer")
    try:
        _consume(kip848, 10)
        kip848.commit(offsets=[TopicPartition(TOPIC, 0, 10)], asynchronous=False)
        joined = 'sum by (cause) (groupcoord_group_rebalances_total{group="classic-g"})'
        _eventually(prometheus, joined, {"member_joined": 2}, "cause", (first, second, kip848))
        _eventually(prometheus, 'kafka_consumergroup_group_state{group="classic-g"}', 3,
                    members=(first, second, kip848))
        second.close()  # leaves: a third rebalance, which `first` rejoins
        _eventually(prometheus, joined, {"member_joined": 2, "member_left": 1}, "cause",
                    (first, kip848))
        _eventually(prometheus, 'kafka_consumergroup_group_state', {"classic-g": 3,
                                                                    "kip848-g": 3}, "group",
                    (first, kip848))
        _eventually(prometheus, 'kafka_consumergroup_group_lag{cluster_name="local"}',
                    {"classic-g": 60, "kip848-g": 90}, key="group")
        _eventually(prometheus, 'groupcoord_group_state{group="kip848-g",protocol="consumer"}',
                    {"Stable": 1}, key="state")
        _eventually(prometheus, 'kafka_server_group_coordinator_metrics_consumer_group_count'
                                '{state="Stable"}', 1)
        _eventually(prometheus, 'kafka_server_group_coordinator_metrics_offset_commit_count',
                    2)
        # Lag in time: the next record of classic-g is offset 40, of kip848-g offset 10,
        # both produced about AGE_S ago; a scrape is at most a second old.
        for group, offset in (("classic-g", 40), ("kip848-g", 10)):
            (labels, seconds), = prometheus.query(
                f'kafka_consumergroup_group_lag_seconds{{group="{group}"}}')
            expected = (time.time() * 1000 - (produced_ms + offset)) / 1000
            assert expected - 5 <= seconds <= expected + 0.5, (group, seconds, expected)
            assert labels["data_loss_detected"] == "false"
        (_, margin), = prometheus.query(
            'kafka_consumergroup_group_retention_margin{group="classic-g"}')
        assert margin == 40
    finally:
        first.close()
        kip848.close()


def test_prometheus_sees_the_coordinator_runtime_metrics(
        served: tuple[BrokerProcess, PrometheusServer]) -> None:
    """Commits of a KIP-848 consumer while Prometheus scrapes every second: the runtime's
    histograms, idle ratio, flush rate and shard counts of both coordinators have plausible
    values (a histogram's figures cover the second since the previous scrape)."""
    broker, prometheus = served
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(TOPIC, value=b"runtime", partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "runtime-g",
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    _consume(consumer, 1)  # joined, with an epoch to commit under
    kafka = "kafka_server_group_coordinator_metrics_"
    seen: dict[str, float] = {}

    def plausible() -> bool:
        consumer.poll(0.1)
        for offset in range(1, 21):
            consumer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
        for name in ("event_processing_time_ms_max", "event_queue_time_ms_p99",
                     "event_purgatory_time_ms_max", "batch_flush_time_ms_p50",
                     "batch_linger_time_ms_max", "batch_flush_rate"):
            result = prometheus.query(f"max_over_time({kafka}{name}[1m])")
            seen[name] = result[0][1] if result else -1.0
        return all(v > 0 for k, v in seen.items() if k != "batch_linger_time_ms_max") \
            and seen["batch_linger_time_ms_max"] >= 0

    try:
        assert poll_until(plausible, QUERY_TIMEOUT_S, interval=1.0), seen
    finally:
        consumer.close()
    # Operations take microseconds to milliseconds here, never seconds.
    assert seen["event_processing_time_ms_max"] < 1000, seen
    assert seen["batch_flush_time_ms_p50"] < 1000, seen
    (_, idle), = prometheus.query(kafka + "thread_idle_ratio_avg")
    assert 0 < idle <= 1
    (_, active), = prometheus.query(kafka + 'num_partitions{state="active"}')
    assert active >= 1
    assert prometheus.query(kafka + "partition_load_time_max")  # NaN after a quiet minute
    share = "kafka_server_share_coordinator_metrics_"
    (_, failed), = prometheus.query(share + 'num_partitions{state="failed"}')
    assert failed == 0
    (_, share_idle), = prometheus.query(share + "thread_idle_ratio_avg")
    assert 0 < share_idle <= 1
