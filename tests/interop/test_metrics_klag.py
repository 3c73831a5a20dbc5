"""klag-exporter (built by `make klag-exporter`) and groupcoord's `/metrics` watch the same
broker under the same workload and agree: the same klag families with the same label sets,
the same offsets, lags, losses, margins, ratios and states, and lag in seconds within one
scrape interval. klag reads the record at each committed offset (its `message` mode), as
groupcoord does."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from helpers.broker import REPO_ROOT, BrokerFactory, BrokerProcess, free_port
from helpers.confluent_io import create_topic
from helpers.polling import poll_until
from helpers.prometheus_text import Labels, scrape

pytestmark = pytest.mark.interop

KLAG_VERSION = "0.1.29"
KLAG = REPO_ROOT / ".cache" / f"klag-exporter-{KLAG_VERSION}" / "bin" / "klag-exporter"
CLUSTER = "local"
POLL_S = 1
GROUPS = ("classic-g", "kip848-g", "simple-g")
# Families compared value for value; lag_seconds is compared within a scrape interval.
EXACT = ("kafka_consumergroup_group_offset", "kafka_consumergroup_group_lag",
         "kafka_consumergroup_group_messages_lost", "kafka_consumergroup_group_retention_margin",
         "kafka_consumergroup_group_lag_retention_ratio", "kafka_consumergroup_group_max_lag",
         "kafka_consumergroup_group_sum_lag", "kafka_consumergroup_group_topic_sum_lag",
         "kafka_consumergroup_group_state", "kafka_partition_latest_offset",
         "kafka_partition_earliest_offset")
TIMED = ("kafka_consumergroup_group_lag_seconds", "kafka_consumergroup_group_max_lag_seconds")
Samples = dict[str, dict[Labels, float]]


def _klag_binary() -> Path:
    if not KLAG.exists():
        reason = f"{KLAG} is missing (make klag-exporter builds it)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return KLAG


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[BrokerProcess, str]]:
    factory = BrokerFactory(tmp_path / "broker")
    metrics_port = free_port()
    broker = factory.create(["--metrics-listen", f"127.0.0.1:{metrics_port}",
                             "--metrics-cluster-name", CLUSTER])
    try:
        yield broker, f"http://127.0.0.1:{metrics_port}/metrics"
    finally:
        factory.close()


@pytest.fixture
def klag(served: tuple[BrokerProcess, str], tmp_path: Path) -> Iterator[str]:
    binary = _klag_binary()
    broker, _ = served
    port = free_port()
    config = tmp_path / "klag.toml"
    config.write_text(f"""
[exporter]
poll_interval = "{POLL_S}s"
http_host = "127.0.0.1"
http_port = {port}
granularity = "partition"

[exporter.timestamp_sampling]
enabled = true
mode = "message"
cache_ttl = "1s"
fetch_timeout = "2s"

[exporter.performance]
# Topics and groups appear during the test: klag looks again every cycle.
metadata_cache_ttl = "0s"
consumer_groups_cache_ttl = "0s"
compacted_topics_cache_ttl = "0s"

[[clusters]]
name = "{CLUSTER}"
bootstrap_servers = "{broker.bootstrap}"
""")
    with (tmp_path / "klag.log").open("wb") as log:
        proc = subprocess.Popen([str(binary), "--config", str(config)], stdout=log,
                                stderr=log, stdin=subprocess.DEVNULL)
    try:
        yield f"http://127.0.0.1:{port}/metrics"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ours(samples: Samples) -> Samples:
    """Only the groups of this test (klag's and ours list the same ones)."""
    return {name: {k: v for k, v in series.items()
                   if dict(k).get("group", GROUPS[0]) in GROUPS}
            for name, series in samples.items()}


def _workload(bootstrap: str) -> tuple[Consumer, Consumer]:
    now_ms = int(time.time() * 1000)
    create_topic(bootstrap, "orders", 2)
    create_topic(bootstrap, "audit", 1)
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in range(2):
        for i in range(30):
            producer.produce("orders", value=b"o", partition=partition,
                             timestamp=now_ms - 600_000 + i * 1000)
    for i in range(20):
        producer.produce("audit", value=b"a", partition=0, timestamp=now_ms - 300_000 + i)
    assert producer.flush(30) == 0

    def member(group: str, protocol: str) -> Consumer:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                      "group.protocol": protocol, "enable.auto.commit": False,
                      "auto.offset.reset": "earliest"})
        c.subscribe(["orders"])
        assert poll_until(lambda: (c.poll(0.1), len(c.assignment()))[1] == 2, 60)
        return c

    classic, kip848 = member("classic-g", "classic"), member("kip848-g", "consumer")
    classic.commit(offsets=[TopicPartition("orders", 0, 10), TopicPartition("orders", 1, 30)],
                   asynchronous=False)
    kip848.commit(offsets=[TopicPartition("orders", 0, 25), TopicPartition("orders", 1, 3)],
                  asynchronous=False)
    simple = Consumer({"bootstrap.servers": bootstrap, "group.id": "simple-g"})
    simple.commit(offsets=[TopicPartition("audit", 0, 5)], asynchronous=False)
    simple.close()
    # Retention took the first 8 records of `audit`: simple-g lost 3.
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until its answer
    for future in admin.delete_records([TopicPartition("audit", 0, 8)]).values():
        future.result(30)
    return classic, kip848


def test_klag_exporter_and_groupcoord_agree(served: tuple[BrokerProcess, str],
                                            klag: str) -> None:
    broker, metrics_url = served
    classic, kip848 = _workload(broker.bootstrap)
    try:
        klag_seen: list[Samples] = []

        def klag_has_every_group() -> bool:
            classic.poll(0.05)  # members stay in their groups only by polling
            kip848.poll(0.05)
            try:
                klag_seen.append(_ours(scrape(klag, content_type=None)))
            except OSError:
                return False
            lags = klag_seen[-1].get("kafka_consumergroup_group_lag", {})
            return {dict(k)["group"] for k in lags} == set(GROUPS) and \
                klag_seen[-1].get("kafka_consumergroup_group_state", {}).get(
                    frozenset({("cluster_name", CLUSTER), ("group", "classic-g")})) == 3
        # klag polls every POLL_S; its first cycles may precede the commits.
        assert poll_until(klag_has_every_group, 60), klag_seen[-1:] or "no answer"
        time.sleep(2 * POLL_S)  # one more klag cycle after the state above settled
        theirs = scrape(klag, content_type=None)
        scraped_at = time.time()
        ours = _ours(scrape(metrics_url))
        (klag_cycle_s,) = theirs["kafka_lag_exporter_last_update_timestamp_seconds"].values()
        (cycle_s,) = theirs["kafka_lag_exporter_scrape_duration_seconds"].values()
        theirs = _ours(theirs)
        for name in EXACT:
            assert theirs.get(name), name
            assert ours.get(name) == theirs[name], name
        # klag's time lags are as of its last cycle (a slow cycle under load ends later than
        # POLL_S after the one before), ours as of our scrape: they differ by the time
        # between the two. klag stamps the end of its cycle in whole seconds and reports
        # how long the cycle took (its clock is read somewhere within it).
        between = scraped_at - klag_cycle_s
        for name in TIMED:
            assert set(ours[name]) == set(theirs[name]), name
            for labels, seconds in theirs[name].items():
                if seconds == 0:  # no lag: 0 in both, whenever taken
                    assert ours[name][labels] == 0, (name, labels)
                    continue
                difference = ours[name][labels] - seconds
                assert between - 1.0 - 0.25 <= difference <= between + cycle_s + 0.25, \
                    (name, labels, ours[name][labels], seconds, between, cycle_s)
    finally:
        classic.close()
        kip848.close()
