"""Classic-group fidelity edges with confluent-kafka (librdkafka), as its own suite checks
them against Kafka 4.2 (`0102-static_group_rebalance`, `0113-cooperative_rebalance`):

- a static member closed and restarted within its session timeout gets its partitions
  back, and the other member sees no rebalance event at all;
- cooperative-sticky: after one member unsubscribes, the remaining member gets exactly one
  incremental assign (its new partitions), not two.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.broker import BrokerFactory, BrokerProcess

pytestmark = pytest.mark.interop

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")


@pytest.fixture(scope="module")
def classic_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    # Kafka's default initial delay (3000 ms), which librdkafka's tests assume: with 0 the
    # first member's join may complete alone and take every partition, and the second's join
    # then revokes or assigns again, against Apache Kafka 4.4 as here
    # (docs/consumer-groups.md, "Checked with the clients' own suites").
    factory = BrokerFactory(tmp_path_factory.mktemp("classic-fidelity"),
                            ["--group-initial-rebalance-delay-ms", "3000"])
    yield factory.create()
    factory.close()


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([admin_mod.NewTopic(topic, partitions, 1)]).values():
        fut.result(timeout=30)


class Member:
    """One consumer and the rebalance events its callbacks saw."""

    def __init__(self, bootstrap: str, group: str, **conf: Any) -> None:
        self.events: list[tuple[str, list[int]]] = []
        self.consumer = ck.Consumer({
            "bootstrap.servers": bootstrap, "group.id": group,
            "session.timeout.ms": 6000, "max.poll.interval.ms": 9000,
            "auto.offset.reset": "earliest", "topic.metadata.refresh.interval.ms": 2000,
            "metadata.max.age.ms": 5000,
            **{k.replace("_", "."): v for k, v in conf.items()}})

    def subscribe(self, topics: list[str]) -> None:
        self.consumer.subscribe(topics, on_assign=self._assigned, on_revoke=self._revoked)

    def _assigned(self, consumer: Any, partitions: list[Any]) -> None:
        self.events.append(("assign", sorted(p.partition for p in partitions)))

    def _revoked(self, consumer: Any, partitions: list[Any]) -> None:
        self.events.append(("revoke", sorted(p.partition for p in partitions)))

    def poll(self) -> None:
        self.consumer.poll(0.1)


def poll_all(members: list[Member], seconds: float, until: Any = None) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for m in members:
            m.poll()
        if until is not None and until():
            return True
    return until is None


def test_static_member_restart_is_no_rebalance(classic_broker: BrokerProcess) -> None:
    bootstrap, topic, group = classic_broker.bootstrap, "cf-static", "cf-static-g"
    create_topic(bootstrap, topic, 3)
    a = Member(bootstrap, group, group_instance_id="consumer1")
    b = Member(bootstrap, group, group_instance_id="consumer2")
    for m in (a, b):
        m.subscribe([f"^{topic}.*"])
    assert poll_all([a, b], 20, lambda: a.events and b.events)
    poll_all([a, b], 3)  # settle: nothing more may happen
    first_a, first_b = list(a.events), list(b.events)
    assert len(first_a) == 1 and len(first_b) == 1, (a.events, b.events)
    b.consumer.close()  # static: no LeaveGroup
    b2 = Member(bootstrap, group, group_instance_id="consumer2")
    b2.subscribe([f"^{topic}.*"])
    started = time.monotonic()
    assert poll_all([a, b2], 6, lambda: bool(b2.events))
    elapsed = time.monotonic() - started
    poll_all([a, b2], 4)
    try:
        assert b2.events == first_b, b2.events
        assert a.events == first_a, a.events  # no rebalance event on the other member
        assert elapsed < 6.0
    finally:
        a.consumer.close()
        b2.consumer.close()


def test_cooperative_unsubscribe_gives_the_other_member_one_assign(
        classic_broker: BrokerProcess) -> None:
    """librdkafka's `0113 l_unsubscribe` with the classic protocol: two members subscribe
    to two 2-partition topics at once; each gets one assign call. Then one unsubscribes:
    it gets one revoke, the other exactly one more assign (the two freed partitions) and
    no revoke."""
    bootstrap, group = classic_broker.bootstrap, "cf-coop-g"
    topics = ["cf-coop-1", "cf-coop-2"]
    for topic in topics:
        create_topic(bootstrap, topic, 2)
    a = Member(bootstrap, group, partition_assignment_strategy="cooperative-sticky",
               session_timeout_ms=30_000, max_poll_interval_ms=300_000)
    b = Member(bootstrap, group, partition_assignment_strategy="cooperative-sticky",
               session_timeout_ms=30_000, max_poll_interval_ms=300_000)
    a.subscribe(topics)
    b.subscribe(topics)

    def owned(m: Member) -> int:
        return len(m.consumer.assignment())
    try:
        assert poll_all([a, b], 30, lambda: owned(a) == 2 and owned(b) == 2)
        assert [e[0] for e in a.events].count("assign") == 1, a.events
        assert [e[0] for e in b.events].count("assign") == 1, b.events
        a.consumer.unsubscribe()
        assert poll_all([a, b], 30, lambda: owned(a) == 0 and owned(b) == 4)
        poll_all([a, b], 3)
        assert [e[0] for e in b.events].count("assign") == 2, b.events
        assert [e for e in b.events if e[0] == "revoke"] == [], b.events
        assert [e[0] for e in a.events].count("revoke") == 1, a.events
    finally:
        a.consumer.close()
        b.consumer.close()
