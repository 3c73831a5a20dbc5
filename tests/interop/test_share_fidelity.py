"""Share-group fidelity edges with confluent-kafka's `ShareConsumer` (librdkafka), each an
item of what the clients' own integration suites check against Kafka 4.2:

- AlterShareGroupOffsets on a new group id creates the group; the consumer then starts at
  the altered offset (KAFKA-19662); DescribeShareGroupOffsets for all topics answers;
- `share.isolation.level=read_committed` skips an aborted transaction;
- `fetch.max.bytes=0` fetches nothing;
- `max.poll.records` caps a poll at log-batch boundaries;
- one explicit and one implicit acknowledging consumer of one group both receive records;
- an unacknowledged record comes back to the same consumer after the acquisition lock;
- two groups, earliest and latest, on one topic;
- closing a consumer reports its acknowledgements to the commit callback.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

pytestmark = pytest.mark.interop

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([admin_mod.NewTopic(topic, partitions, 1)]).values():
        fut.result(timeout=30)


def group_configs(bootstrap: str, group: str, **configs: str) -> None:
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    entries = [admin_mod.ConfigEntry(k.replace("_", "."), v,
                                     incremental_operation=admin_mod.AlterConfigOpType.SET)
               for k, v in configs.items()]
    resource = admin_mod.ConfigResource(admin_mod.ResourceType.GROUP, group,
                                        incremental_configs=entries)
    for fut in admin.incremental_alter_configs([resource]).values():
        fut.result(timeout=30)


def produce(bootstrap: str, topic: str, values: list[bytes], one_per_batch: bool = False
            ) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 0 if one_per_batch
                            else 50})
    for value in values:
        producer.produce(topic, value, partition=0)
        if one_per_batch:
            assert producer.flush(10) == 0
    assert producer.flush(30) == 0


def consumer(bootstrap: str, group: str, **conf: Any) -> Any:
    return ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                             **{k.replace("_", "."): v for k, v in conf.items()}})


def poll_until(sc: Any, want: int, timeout_s: float, explicit: bool = False) -> list[Any]:
    got: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < deadline:
        for msg in sc.poll(0.5):
            if msg.error() is None:
                got.append(msg)
                if explicit:
                    sc.acknowledge(msg, ck.AcknowledgeType.ACCEPT)
    return got


def test_read_committed_skips_an_aborted_transaction(broker: Any) -> None:
    topic, group = "fid-rc", "fid-rc-g"
    create_topic(broker.bootstrap, topic)
    group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest",
                  share_isolation_level="read_committed")
    producer = ck.Producer({"bootstrap.servers": broker.bootstrap,
                            "transactional.id": "fid-rc-tx"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(100):
        producer.produce(topic, b"aborted-%d" % i, partition=0)
    assert producer.flush(30) == 0  # written, then aborted (abort alone purges the queue)
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, b"committed-%d" % i, partition=0)
    producer.commit_transaction(30)
    sc = consumer(broker.bootstrap, group)
    sc.subscribe([topic])
    try:
        got = poll_until(sc, 10, 30)
        extra = [m for m in sc.poll(1.0) if m.error() is None]
    finally:
        sc.close()
    values = sorted(m.value() for m in got + extra)
    assert values == sorted(b"committed-%d" % i for i in range(10))
    # Check the broker too: the aborted records (offsets 0-99, marker 100) were archived,
    # not handed out, and the committed ones (101-110) accepted, so nothing is left.
    start, lag = start_offset_and_lag(broker.bootstrap, group)
    assert start >= 111 and lag == 0, (start, lag)


def start_offset_and_lag(bootstrap: str, group: str) -> tuple[int, int]:
    from groupcoord.cli.wire_client import WireClient
    from groupcoord.wire.generated import describe_share_group_offsets as dso

    with WireClient(bootstrap) as client:
        describe = dso.DescribeShareGroupOffsetsRequest(groups=[
            dso.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)])
        response, _ = client.request(describe, 1)
    (partition,) = [p for t in response.groups[0].topics for p in t.partitions]
    return partition.start_offset, partition.lag


def test_fetch_max_bytes_zero_fetches_nothing(broker: Any) -> None:
    topic, group = "fid-fmb0", "fid-fmb0-g"
    create_topic(broker.bootstrap, topic)
    group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest")
    produce(broker.bootstrap, topic, [b"v%d" % i for i in range(10)])
    sc = consumer(broker.bootstrap, group, fetch_max_bytes=0)
    sc.subscribe([topic])
    try:
        assert poll_until(sc, 1, 6) == []
    finally:
        sc.close()
    # The records are still there for a consumer that asks for bytes.
    sc = consumer(broker.bootstrap, group)
    sc.subscribe([topic])
    try:
        assert len(poll_until(sc, 10, 20)) == 10
    finally:
        sc.close()


def test_max_poll_records_caps_at_batch_boundaries(broker: Any) -> None:
    topic, group = "fid-mpr", "fid-mpr-g"
    create_topic(broker.bootstrap, topic)
    group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest")
    produce(broker.bootstrap, topic, [b"s%d" % i for i in range(10)], one_per_batch=True)
    sc = consumer(broker.bootstrap, group, max_poll_records=5)
    sc.subscribe([topic])
    sizes: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while sum(sizes) < 10 and time.monotonic() < deadline:
            batch = [m for m in sc.poll(0.5) if m.error() is None]
            if batch:
                sizes.append(len(batch))
    finally:
        sc.close()
    assert sum(sizes) == 10 and max(sizes) <= 5 and len(sizes) >= 2, sizes


@pytest.mark.parametrize("interval_ms", ["1000", "0"])
def test_explicit_and_implicit_members_share_one_partition(broker: Any, interval_ms: str
                                                           ) -> None:
    """Both members are assigned the one partition and both receive records. The partition
    is assigned once its share state is initialized, at a heartbeat after the first join
    (Kafka 4.4); with the default `share.assignment.interval.ms` (KIP-1263, Kafka 4.3) a
    member that joins within the interval waits for its next heartbeat too, with 0 (Kafka
    4.2's behaviour) one that joins after the initialization is assigned in the response to
    its join. Records are produced once both are assigned."""
    topic, group, total = f"fid-mixed-{interval_ms}", f"fid-mixed-g-{interval_ms}", 100
    create_topic(broker.bootstrap, topic)
    group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest",
                  share_assignment_interval_ms=interval_ms)
    received: dict[str, list[bytes]] = {"explicit": [], "implicit": []}
    stop = threading.Event()

    def run(mode: str) -> None:
        sc = consumer(broker.bootstrap, group, share_acknowledgement_mode=mode,
                      max_poll_records=10)
        sc.subscribe([topic])
        try:
            while not stop.is_set():
                for msg in sc.poll(0.2):
                    if msg.error() is None:
                        received[mode].append(msg.value())
                        if mode == "explicit":
                            sc.acknowledge(msg, ck.AcknowledgeType.ACCEPT)
                        time.sleep(0.002)  # each record takes a little work
        finally:
            sc.close()

    threads = [threading.Thread(target=run, args=(m,), daemon=True) for m in received]
    for t in threads:
        t.start()
    from test_share_groups import wait_for_members
    wait_for_members(broker.bootstrap, group, 2, timeout_s=15)
    # One record per log batch: a fetch acquires whole batches, so one big batch would go
    # to whichever member fetched first, in Kafka too.
    produce(broker.bootstrap, topic, [b"m%d" % i for i in range(total)], one_per_batch=True)
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline and \
            len(set(received["explicit"]) | set(received["implicit"])) < total:
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join(30)
    assert set(received["explicit"]) | set(received["implicit"]) == \
        {b"m%d" % i for i in range(total)}
    assert received["explicit"] and received["implicit"], \
        {k: len(v) for k, v in received.items()}


SHORT_LOCK = ["--group-config", "group.share.record.lock.duration.ms=1000",
              "--group-config", "group.share.min.record.lock.duration.ms=1000"]


@pytest.mark.parametrize("mode", ["implicit", "explicit"])
def test_lock_expiry_redelivers_to_the_same_consumer(broker_factory: Any, mode: str) -> None:
    """The clients' suites run the broker with `group.share.record.lock.duration.ms=1000`:
    a record left unacknowledged comes back to the same consumer, delivery count 2, at the
    first poll after the lock ran out. In implicit mode that poll's piggy-backed ACCEPT
    comes too late (INVALID_RECORD_STATE, as in Kafka) and the record is acquired again."""
    broker = broker_factory.create(extra_args=SHORT_LOCK)
    topic, group = f"fid-lock-{mode}", f"fid-lock-g-{mode}"
    create_topic(broker.bootstrap, topic)
    group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest")
    produce(broker.bootstrap, topic, [b"only"])
    sc = consumer(broker.bootstrap, group, share_acknowledgement_mode=mode)
    sc.subscribe([topic])
    try:
        (first,) = poll_until(sc, 1, 20)
        assert first.delivery_count() == 1
        time.sleep(1.5)  # neither acknowledged nor polled: the lock expires on the broker
        if mode == "explicit":
            sc.acknowledge(first, ck.AcknowledgeType.ACCEPT)  # too late; allows the poll
        started = time.monotonic()
        (again,) = poll_until(sc, 1, 10)
        elapsed = time.monotonic() - started
    finally:
        sc.close()
    assert (again.offset(), again.delivery_count()) == (first.offset(), 2)
    assert elapsed < 1.5, elapsed  # one poll (0.5 s) and its round trips


def test_two_groups_earliest_and_latest(broker: Any) -> None:
    topic = "fid-resets"
    create_topic(broker.bootstrap, topic)
    group_configs(broker.bootstrap, "fid-early", share_auto_offset_reset="earliest")
    produce(broker.bootstrap, topic, [b"backlog-%d" % i for i in range(10)])
    early = consumer(broker.bootstrap, "fid-early")
    late = consumer(broker.bootstrap, "fid-late")
    early.subscribe([topic])
    late.subscribe([topic])
    try:
        from test_share_groups import wait_for_members
        wait_for_members(broker.bootstrap, "fid-late", 1)
        assert poll_until(late, 1, 3) == []  # the latest group pins its start offset
        produce(broker.bootstrap, topic, [b"fresh-%d" % i for i in range(5)])
        early_values = {m.value() for m in poll_until(early, 15, 30)}
        late_values = {m.value() for m in poll_until(late, 5, 30)}
    finally:
        early.close()
        late.close()
    assert early_values == {b"backlog-%d" % i for i in range(10)} | \
        {b"fresh-%d" % i for i in range(5)}
    assert late_values == {b"fresh-%d" % i for i in range(5)}


@pytest.mark.parametrize("commit_first", [False, True])
def test_close_reports_acknowledgements_to_the_callback(broker: Any, commit_first: bool
                                                        ) -> None:
    topic, group = "fid-close", "fid-close-g"
    create_topic(broker.bootstrap, topic)
    group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest")
    produce(broker.bootstrap, topic, [b"c%d" % i for i in range(10)])
    sc = consumer(broker.bootstrap, group, share_acknowledgement_mode="explicit")
    seen: list[tuple[dict[Any, set[int]], Any]] = []
    sc.set_acknowledgement_commit_callback(lambda offsets, exc: seen.append((offsets, exc)))
    sc.subscribe([topic])
    try:
        got = poll_until(sc, 10, 20, explicit=True)
        if commit_first:
            sc.commit_async()  # sent, but its answer is only drained by close()
    finally:
        sc.close()
    assert len(got) == 10
    acked = {o for offsets, exc in seen if exc is None for s in offsets.values() for o in s}
    assert acked == {m.offset() for m in got}, seen


def test_alter_offsets_creates_the_group_the_consumer_starts_there(broker: Any) -> None:
    from groupcoord.cli.wire_client import WireClient
    from groupcoord.wire.generated import alter_share_group_offsets as alt
    from groupcoord.wire.generated import describe_share_group_offsets as dso

    topic, group = "fid-alter", "fid-alter-g"
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [b"a%d" % i for i in range(10)])
    with WireClient(broker.bootstrap) as client:
        describe = dso.DescribeShareGroupOffsetsRequest(groups=[
            dso.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)])
        response, _ = client.request(describe, 1)
        assert (response.groups[0].error_code, response.groups[0].topics) == (0, [])
        alter = alt.AlterShareGroupOffsetsRequest(group_id=group, topics=[
            alt.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[
                alt.AlterShareGroupOffsetsRequestPartition(partition_index=0,
                                                           start_offset=6)])])
        response, _ = client.request(alter, 0)
        assert response.error_code == 0
        assert response.responses[0].partitions[0].error_code == 0
    sc = consumer(broker.bootstrap, group)
    sc.subscribe([topic])
    try:
        got = poll_until(sc, 4, 20)
    finally:
        sc.close()
    assert sorted(m.offset() for m in got) == [6, 7, 8, 9]


def test_close_reports_stale_acknowledgements_as_errors(broker_factory: Any) -> None:
    """Acknowledgements sent after the lock ran out (1 s broker lock) are rejected with
    INVALID_RECORD_STATE, and close() still delivers that result to the callback."""
    broker = broker_factory.create(extra_args=SHORT_LOCK)
    topic, group = "fid-close-stale", "fid-close-stale-g"
    create_topic(broker.bootstrap, topic)
    group_configs(broker.bootstrap, group, share_auto_offset_reset="earliest")
    produce(broker.bootstrap, topic, [b"s%d" % i for i in range(3)])
    sc = consumer(broker.bootstrap, group, share_acknowledgement_mode="explicit")
    seen: list[tuple[dict[Any, set[int]], Any]] = []
    sc.set_acknowledgement_commit_callback(lambda offsets, exc: seen.append((offsets, exc)))
    sc.subscribe([topic])
    try:
        got = poll_until(sc, 3, 20, explicit=True)
        time.sleep(2.0)
        sc.commit_async()
    finally:
        sc.close()
    assert len(got) == 3
    errors = [exc for _offsets, exc in seen if exc is not None]
    assert errors and all(e.args[0].code() == ck.KafkaError.INVALID_RECORD_STATE
                          for e in errors), seen
