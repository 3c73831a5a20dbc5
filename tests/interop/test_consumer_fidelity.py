"""KIP-848 consumer-group fidelity edges with confluent-kafka (`group.protocol=consumer`),
as librdkafka's `0113-cooperative_rebalance` checks them against Kafka 4.2:

- many subscription changes in a row: the final assignment is the final subscription's;
- a member that exceeds `max.poll.interval.ms` leaves, the other member takes over, and
  once it polls again it rejoins and is assigned again, all within 30 s;
- a regex subscription while matching topics are created and deleted settles on the
  partitions of the topics that exist, within 30 s.
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

SETTLE_S = 30.0


@pytest.fixture(scope="module")
def consumer_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    factory = BrokerFactory(tmp_path_factory.mktemp("consumer-fidelity"),
                            ["--group-initial-rebalance-delay-ms", "0"])
    yield factory.create()
    factory.close()


def admin(bootstrap: str) -> Any:
    return admin_mod.AdminClient({"bootstrap.servers": bootstrap})


def create_topics(bootstrap: str, topics: list[str], partitions: int = 2) -> None:
    client = admin(bootstrap)  # kept alive until the futures complete
    futures = client.create_topics([admin_mod.NewTopic(t, partitions, 1) for t in topics])
    for fut in futures.values():
        fut.result(timeout=30)


def delete_topics(bootstrap: str, topics: list[str]) -> None:
    client = admin(bootstrap)
    for fut in client.delete_topics(topics).values():
        fut.result(timeout=30)


def consumer(bootstrap: str, group: str, **conf: Any) -> Any:
    return ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                        "group.protocol": "consumer", "auto.offset.reset": "earliest",
                        **{k.replace("_", "."): v for k, v in conf.items()}})


def assigned(c: Any) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in c.assignment()}


def poll_until(consumers: list[Any], cond: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        if cond():
            return True
    return False


def test_many_subscription_changes_end_on_the_last(consumer_broker: BrokerProcess) -> None:
    bootstrap, group = consumer_broker.bootstrap, "cf848-subs"
    topics = [f"cf848-subs-{i}" for i in range(4)]
    create_topics(bootstrap, topics)
    c = consumer(bootstrap, group)
    changes = [[topics[0]], [topics[0], topics[1]], [topics[1]], [topics[2]],
               [topics[1], topics[3]], [topics[0], topics[2], topics[3]], [topics[3]],
               [topics[1], topics[2]]]
    try:
        for subscription in changes:
            c.subscribe(subscription)
            for _ in range(3):
                c.poll(0.1)
        final = {(t, p) for t in changes[-1] for p in range(2)}
        started = time.monotonic()
        ok = poll_until([c], lambda: assigned(c) == final, SETTLE_S)
        assert ok, (assigned(c), final)
        poll_until([c], lambda: False, 2.0)
        assert assigned(c) == final
        assert time.monotonic() - started < SETTLE_S
    finally:
        c.close()


# librdkafka 0113 `u_multiple_subscription_changes`: (at ms, consumer, subscription 1 or 2).
PLAYBOOK = [(0, 0, 1), (4000, 1, 1), (4000, 1, 1), (4000, 1, 1), (4000, 2, 1), (6000, 3, 1),
            (6000, 4, 1), (6000, 5, 1), (6000, 6, 1), (6000, 7, 2), (6000, 1, 1),
            (6000, 1, 2), (6000, 1, 1), (6000, 2, 2), (7000, 2, 1), (7000, 1, 2),
            (8000, 0, 2), (8000, 1, 1), (8000, 0, 1), (13000, 2, 1), (13000, 1, 2),
            (13000, 5, 2), (14000, 6, 2), (15000, 7, 1), (15000, 1, 1), (15000, 5, 1),
            (15000, 6, 1)]


def test_eight_members_changing_subscriptions_settle_balanced(
        consumer_broker: BrokerProcess) -> None:
    """Eight members on two 16-partition topics change subscriptions 27 times in 15 s;
    then every member must own exactly its share of each subscribed topic (16 / the
    topic's subscribers), within 30 s."""
    bootstrap, group = consumer_broker.bootstrap, "cf848-u"
    topics = ["cf848-u-1", "cf848-u-2"]
    create_topics(bootstrap, topics, partitions=16)
    subs = {1: [topics[0]], 2: [topics[1]]}
    members = [consumer(bootstrap, group) for _ in range(8)]
    subscribed: dict[int, list[str]] = {}
    started = time.monotonic()
    try:
        for at_ms, index, which in PLAYBOOK:
            while (time.monotonic() - started) * 1000 < at_ms:
                for m in members:
                    m.poll(0.01)
            members[index].subscribe(subs[which])
            subscribed[index] = subs[which]

        def expected() -> dict[int, dict[str, int]]:
            count = {t: sum(t in ts for ts in subscribed.values()) for t in topics}
            return {i: {t: 16 // count[t] for t in ts} for i, ts in subscribed.items()}

        def owned() -> dict[int, dict[str, int]]:
            out: dict[int, dict[str, int]] = {}
            for i in subscribed:
                per: dict[str, int] = {}
                for topic, _p in assigned(members[i]):
                    per[topic] = per.get(topic, 0) + 1
                out[i] = per
            return out
        settle_started = time.monotonic()
        ok = poll_until(members, lambda: owned() == expected(), SETTLE_S)
        assert ok, (owned(), expected(), time.monotonic() - settle_started)
    finally:
        for m in members:
            m.close()


def test_max_poll_interval_exceeded_then_rejoin(consumer_broker: BrokerProcess) -> None:
    """confluent-kafka's `test_cooperative_rebalance_1` with `group.protocol=consumer`: a
    member past `max.poll.interval.ms` reports MAX_POLL_EXCEEDED, loses its partitions,
    leaves (epoch -1) and rejoins (epoch 0, same member id), is assigned both partitions
    again and reads the records again (nothing was committed)."""
    bootstrap, group = consumer_broker.bootstrap, "cf848-mpi"
    topics = ["cf848-mpi-1", "cf848-mpi-2"]
    create_topics(bootstrap, topics, partitions=1)
    producer = ck.Producer({"bootstrap.servers": bootstrap})
    for topic, value in zip(topics, (b"a", b"b"), strict=True):
        producer.produce(topic, value)
    assert producer.flush(10) == 0
    events: list[tuple[str, int]] = []

    def on(kind: str) -> Any:
        return lambda c, ps: events.append((kind, len(ps)))
    c = consumer(bootstrap, group, enable_auto_commit=False, max_poll_interval_ms=6500)
    c.subscribe(topics, on_assign=on("assign"), on_revoke=on("revoke"), on_lost=on("lost"))
    try:
        values = set()
        deadline = time.monotonic() + SETTLE_S
        while len(values) < 2 and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                values.add(msg.value())
        assert values == {b"a", b"b"}
        time.sleep(8)  # past max.poll.interval.ms
        started = time.monotonic()
        errors, again = [], set()
        while len(again) < 2 and time.monotonic() - started < SETTLE_S:
            try:
                msg = c.poll(0.5)
            except ck.KafkaException as exc:  # how the classic protocol reports it
                errors.append(exc.args[0].code())
                continue
            if msg is not None and msg.error() is not None:
                errors.append(msg.error().code())
            elif msg is not None:
                again.add(msg.value())
        assert ck.KafkaError._MAX_POLL_EXCEEDED in errors, errors
        assert again == {b"a", b"b"}, (again, events, time.monotonic() - started)
        assert ("lost", 2) in events, events
        assert sum(n for kind, n in events if kind == "assign") == 4, events
    finally:
        c.close()


def test_regex_subscription_follows_created_and_deleted_topics(
        consumer_broker: BrokerProcess) -> None:
    """librdkafka 0113 `n_wildcard` with the consumer protocol: two members subscribe to a
    regex no topic matches yet; two matching 2-partition topics appear and each member
    gets two partitions; one topic is deleted and each keeps one. Each step within 30 s
    (Kafka refreshes a group's regexes at most every 10 s)."""
    bootstrap, group = consumer_broker.bootstrap, "cf848-regex"
    names = ["cf848-rx_1", "cf848-rx_2"]
    members = [consumer(bootstrap, group, topic_metadata_refresh_interval_ms=3000)
               for _ in range(2)]
    for m in members:
        m.subscribe(["^cf848-rx_."])
    try:
        poll_until(members, lambda: False, 1.0)
        assert all(not assigned(m) for m in members)
        create_topics(bootstrap, names)
        started = time.monotonic()
        assert poll_until(members, lambda: all(len(assigned(m)) == 2 for m in members),
                          SETTLE_S), [assigned(m) for m in members]
        created_s = time.monotonic() - started
        assert {tp for m in members for tp in assigned(m)} == \
            {(t, p) for t in names for p in range(2)}
        delete_topics(bootstrap, [names[0]])
        started = time.monotonic()
        assert poll_until(members, lambda: all(assigned(m) and {t for t, _ in assigned(m)}
                                               == {names[1]} for m in members),
                          SETTLE_S), [assigned(m) for m in members]
        assert created_s < SETTLE_S and time.monotonic() - started < SETTLE_S
    finally:
        for m in members:
            m.close()
