"""Fixtures of the differential suite: one Apache Kafka and one groupcoord per test session.

Every test in this directory that uses Apache Kafka is marked `reference` (it needs Java and
the Maven-fetched broker), so `make test-fast` leaves those out. The `differential` fixture runs
a scenario against both brokers and compares the transcripts (see `differential.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from helpers.broker import BrokerFactory
from helpers.kraft_node import CONSUMER_ASSIGNMENT_ON_HEARTBEAT
from helpers.reference_broker import GROUP_SETTINGS, ReferenceBroker, log_event

from conformance.differential import Endpoint, Scenario, run_both

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Every test here that needs Apache Kafka (directly or through `differential`) is marked
    # `reference`; the DSL's own unit tests need no broker and stay in `make test-fast`.
    for item in items:
        needs_kafka = "kafka_reference" in getattr(item, "fixturenames", ())
        if _HERE in Path(str(item.fspath)).resolve().parents and needs_kafka:
            item.add_marker(pytest.mark.reference)


@pytest.fixture(scope="session")
def kafka_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceBroker]:
    broker = ReferenceBroker(tmp_path_factory.mktemp("kafka-reference"))
    broker.start()
    log_event(f"RSS after start: {broker.rss_kib() // 1024} MiB")
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def groupcoord_peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoint]:
    factory = BrokerFactory(tmp_path_factory.mktemp("groupcoord-peer"))
    # Both brokers compute a consumer group's target on the heartbeat that bumps the epoch
    # (assignment interval 0), so consumer-group scenarios compare step by step.
    interval = "group.consumer.assignment.interval.ms"
    args = ["--group-initial-rebalance-delay-ms", GROUP_SETTINGS["group.initial.rebalance.delay.ms"],
            "--default-partitions", GROUP_SETTINGS["num.partitions"],
            "--group-config", "group.streams.initial.rebalance.delay.ms="
            + GROUP_SETTINGS["group.streams.initial.rebalance.delay.ms"],
            "--group-config", "group.streams.assignment.interval.ms="
            + CONSUMER_ASSIGNMENT_ON_HEARTBEAT["group.streams.assignment.interval.ms"],
            "--group-config", f"{interval}={CONSUMER_ASSIGNMENT_ON_HEARTBEAT[interval]}"]
    broker = factory.create(extra_args=args)
    yield Endpoint("groupcoord", "127.0.0.1", broker.port)
    factory.close()


@pytest.fixture
def differential(kafka_reference: ReferenceBroker, groupcoord_peer: Endpoint,
                 request: pytest.FixtureRequest) -> Callable[[Scenario], None]:
    """`differential(scenario)`: run it on both brokers under this test's name and compare."""
    kafka = Endpoint("kafka", "127.0.0.1", kafka_reference.port)
    name = request.node.name.replace("[", "-").replace("]", "").replace("_", "-")[:80]

    def run(scenario: Scenario) -> None:
        run_both(kafka, groupcoord_peer, name, scenario)

    return run
