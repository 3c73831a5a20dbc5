"""Kafka Streams 4.4 (Java, from Maven Central) against groupcoord's streams groups
(KIP-1071, `group.protocol=streams`), with exactly-once v2 on.

A word count (source topic -> repartition topic -> counting state store with a changelog)
runs as 1, then 3, then 2 instances while input keeps arriving. Every instance must reach
RUNNING, the 12 active tasks must be spread with no task active twice, the stateful tasks
must get standbys on other instances (`group.streams.num.standby.replicas=1`), and the
final counts read with read_committed must equal the word counts of the input: nothing
lost, nothing counted twice across the rebalances. The same scenario runs against Apache
Kafka 4.4.0 (marked `reference`) with the same expectations.
"""

from __future__ import annotations

import random
import struct
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from helpers import confluent_io, streams_app
from helpers.broker import BROKER_KINDS, THREE_NODE_CLUSTER, BrokerFactory, BrokerProcess
from helpers.polling import wait_for
from helpers.postgres_cluster import cluster_bootstrap
from helpers.reference_broker import ReferenceBroker

pytestmark = pytest.mark.interop

PARTITIONS = 6
ALL_ACTIVE = {f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS)}
STATEFUL = {f"1_{p}" for p in range(PARTITIONS)}
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]


@pytest.fixture(scope="module")
def word_count_classes() -> Path:
    reason = streams_app.unavailable_reason()
    if reason is not None:
        pytest.fail(f"Kafka Streams app unavailable: {reason}")
    return streams_app.compile_app()


def _lines(rng: random.Random, count: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))) for _ in range(count)]


def _produce(bootstrap: str, topic: str, lines: list[str], start: int) -> None:
    producer = confluent_io.acks_all_producer(bootstrap)
    for i, line in enumerate(lines, start):
        producer.produce(topic, key=str(i).encode(), value=line.encode())
    assert producer.flush(30) == 0


def _final_counts(bootstrap: str, topic: str, expected: Counter[str]) -> dict[str, int]:
    """The latest count per word, read until it matches `expected` or 120 s pass."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "wordcount-check",
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    counts: dict[str, int] = {}
    try:
        wait_for(lambda: _poll_into(consumer, counts) == dict(expected),
                 "the final word counts", 120,
                 lambda: f"have {counts}, want {dict(expected)}")
    finally:
        consumer.close()
    return counts


def _poll_into(consumer: Consumer, counts: dict[str, int]) -> dict[str, int]:
    for msg in consumer.consume(500, 0.5):
        if msg.error() is None:
            counts[msg.key().decode()] = struct.unpack(">q", msg.value())[0]
    return counts


def _spread(instances: list[streams_app.StreamsInstance]) -> bool:
    actives = [set(i.tasks[0]) for i in instances]
    return all(i.state == "RUNNING" for i in instances) and all(actives) \
        and sum(len(a) for a in actives) == len(ALL_ACTIVE) \
        and set().union(*actives) == ALL_ACTIVE


def _standbys_placed(instances: list[streams_app.StreamsInstance]) -> bool:
    standbys = [set(i.tasks[1]) for i in instances]
    own_active = any(set(i.tasks[0]) & set(i.tasks[1]) for i in instances)
    return not own_active and set().union(*standbys) == STATEFUL


def _detail(instances: list[streams_app.StreamsInstance]) -> str:
    return "; ".join(f"#{n}: {i.state} {i.tasks}" for n, i in enumerate(instances))


@pytest.fixture
def streams_broker(broker_factory: BrokerFactory, request: pytest.FixtureRequest
                   ) -> BrokerProcess:
    """A broker of the test's own with one standby replica per task, or the three-node
    cluster's bootstrap node (which has that setting too)."""
    if request.param == THREE_NODE_CLUSTER:
        return cluster_bootstrap(request)
    return broker_factory.create(["--group-config", "group.streams.num.standby.replicas=1"])


@pytest.mark.parametrize("streams_broker", BROKER_KINDS, indirect=True)
def test_word_count_one_three_two_instances_exactly_once(
        streams_broker: BrokerProcess, word_count_classes: Path, tmp_path: Path) -> None:
    counts, expected = _scale_scenario(streams_broker.bootstrap, word_count_classes, tmp_path)
    assert counts == dict(expected)


@pytest.mark.reference
def test_word_count_one_three_two_instances_on_kafka(word_count_classes: Path,
                                                     tmp_path: Path) -> None:
    """The same scenario against Apache Kafka 4.4.0: the same counts, so the expectations
    (and groupcoord's output) are Kafka's."""
    kafka = ReferenceBroker(tmp_path / "kafka", {"group.streams.num.standby.replicas": "1"})
    kafka.start()
    try:
        counts, expected = _scale_scenario(kafka.bootstrap, word_count_classes, tmp_path)
    finally:
        kafka.stop()
    assert counts == dict(expected)


def _scale_scenario(bootstrap: str, classes: Path, tmp_path: Path
                    ) -> tuple[dict[str, int], Counter[str]]:
    """1 -> 3 -> 2 instances while three batches of lines arrive; the final counts."""
    confluent_io.create_topic(bootstrap, "words", PARTITIONS)
    confluent_io.create_topic(bootstrap, "counts", 1)
    rng = random.Random(1071)
    batches = [_lines(rng, 300), _lines(rng, 300), _lines(rng, 300)]

    def start(n: int) -> streams_app.StreamsInstance:
        return streams_app.StreamsInstance(
            classes, bootstrap, "wordcount", "words", "counts", tmp_path / f"state-{n}",
            "exactly_once_v2", tmp_path / f"instance-{n}.log")

    instances = [start(0)]
    try:
        _produce(bootstrap, "words", batches[0], 0)
        wait_for(lambda: _spread(instances), "one instance RUNNING with all "
                 "tasks", 90, lambda: _detail(instances))
        instances += [start(1), start(2)]
        wait_for(lambda: _spread(instances) and _standbys_placed(instances),
                 "three instances sharing the tasks with standbys", 120,
                 lambda: _detail(instances))
        _produce(bootstrap, "words", batches[1], 300)
        assert instances.pop().close() == 0
        wait_for(lambda: _spread(instances) and _standbys_placed(instances),
                 "two instances sharing the tasks with standbys", 120,
                 lambda: _detail(instances))
        _produce(bootstrap, "words", batches[2], 600)
        expected = streams_app.expected_counts(line for b in batches for line in b)
        counts = _final_counts(bootstrap, "counts", expected)
    finally:
        for instance in instances:
            instance.close()
    for instance in instances:
        assert instance.of("error") == []
        states = [e["state"] for e in instance.of("state")]
        assert "RUNNING" in states and states[-1] == "NOT_RUNNING"
    return counts, expected


# Short sessions so a killed instance is fenced within seconds (Kafka's minimums lowered).
FAST_SESSIONS = ["--group-config", "group.streams.min.session.timeout.ms=6000",
                 "--group-config", "group.streams.session.timeout.ms=6000",
                 "--group-config", "group.streams.min.heartbeat.interval.ms=1000",
                 "--group-config", "group.streams.heartbeat.interval.ms=2000"]


def test_word_count_survives_kill_of_an_instance_and_of_the_broker(
        broker_factory: BrokerFactory, word_count_classes: Path, tmp_path: Path) -> None:
    """kill -9 of one of two instances (its open transaction is aborted, its tasks move to
    the survivor once its session expires), then kill -9 of the broker and a restart on the
    same data dir (the group, its tasks and the offsets come back from the log), then a new
    instance joins: the final counts are still exact."""
    broker = broker_factory.create(["--group-config", "group.streams.num.standby.replicas=1",
                                    *FAST_SESSIONS])
    confluent_io.create_topic(broker.bootstrap, "words", PARTITIONS)
    confluent_io.create_topic(broker.bootstrap, "counts", 1)
    rng = random.Random(848)
    batches = [_lines(rng, 300) for _ in range(4)]

    def start(n: int) -> streams_app.StreamsInstance:
        return streams_app.StreamsInstance(
            word_count_classes, broker.bootstrap, "wordcount", "words", "counts",
            tmp_path / f"state-{n}", "exactly_once_v2", tmp_path / f"instance-{n}.log")

    instances = [start(0), start(1)]
    try:
        _produce(broker.bootstrap, "words", batches[0], 0)
        wait_for(lambda: _spread(instances), "two instances sharing the tasks",
                 120, lambda: _detail(instances))
        _produce(broker.bootstrap, "words", batches[1], 300)
        instances.pop(0).kill()
        wait_for(lambda: _spread(instances), "the survivor owning every task",
                 120, lambda: _detail(instances))
        broker.kill()
        broker.start()
        _produce(broker.bootstrap, "words", batches[2], 600)
        instances.append(start(2))
        wait_for(lambda: _spread(instances), "the survivor and a new instance "
                 "sharing the tasks after the broker restart", 180,
                 lambda: _detail(instances))
        _produce(broker.bootstrap, "words", batches[3], 900)
        expected = streams_app.expected_counts(line for b in batches for line in b)
        assert _final_counts(broker.bootstrap, "counts", expected) == dict(expected)
    finally:
        for instance in instances:
            instance.close()
    for instance in instances:
        assert instance.of("error") == []
