"""Share groups (KIP-932) with real share consumers: confluent-kafka's `ShareConsumer`
(librdkafka, ShareGroupHeartbeat v1 / ShareFetch v1-2), the Java 4.4 `KafkaShareConsumer`
(explicit acknowledgement mode) and the Java 3.9.1 one (v0 of every share RPC).

Per client: three consumers on a three-partition topic receive every record; no record is
held by two consumers at once (a redelivery starts only after the previous holder sent its
acknowledgement); released records come back, rejected ones never do, and records
released up to the delivery limit are archived. A kill -9 of the broker loses no
acknowledgement and no unacknowledged record.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import defaultdict
from typing import Any

import pytest
from helpers.broker import BROKER_KINDS
from helpers.confluent_io import create_share_topic, produce_ids

pytestmark = pytest.mark.interop

ck = pytest.importorskip("confluent_kafka")

RECORDS = 300
DELIVERY_LIMIT = 3
RUN_TIMEOUT_S = 90.0


def policy(record_id: int) -> str:
    """What the consumers do with a record, by id."""
    return {1: "release_once", 2: "reject", 3: "release_always"}.get(record_id % 10, "accept")


def setup_topic(bootstrap: str, topic: str, group: str, partitions: int = 3,
                **group_configs: str) -> None:
    create_share_topic(bootstrap, topic, group, partitions, {
        "share.auto.offset.reset": "earliest",
        "share.delivery.count.limit": str(DELIVERY_LIMIT),
        **{k.replace("_", "."): v for k, v in group_configs.items()}})


def produce(bootstrap: str, topic: str, ids: range, partitions: int = 3,
            batch_records: int = 10_000) -> None:
    produce_ids(bootstrap, topic, ids, partitions, batch_records)


class Ledger:
    """Every delivery: (record id) -> [(consumer, received at, ack sent at, kind, count)]."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.deliveries: dict[int, list[list[Any]]] = defaultdict(list)
        self.done: set[int] = set()

    def finished(self, expected: set[int]) -> bool:
        with self.lock:
            return expected <= self.done


def share_consumer(bootstrap: str, group: str) -> Any:
    return ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                             "share.acknowledgement.mode": "explicit"})


def consume(name: str, bootstrap: str, topic: str, group: str, ledger: Ledger,
            expected: set[int], stop: threading.Event) -> None:
    consumer = share_consumer(bootstrap, group)
    consumer.subscribe([topic])
    try:
        while not stop.is_set() and not ledger.finished(expected):
            batch = [m for m in consumer.poll(0.5) if m.error() is None]
            if not batch:
                continue
            received = time.monotonic()
            entries = []
            for msg in batch:
                record_id = int(msg.value())
                kind = _decide(record_id, msg.delivery_count())
                consumer.acknowledge(msg, getattr(ck.AcknowledgeType, kind))
                entries.append((record_id, kind, msg.delivery_count()))
            sent = time.monotonic()
            with ledger.lock:
                for record_id, kind, count in entries:
                    ledger.deliveries[record_id].append([name, received, sent, kind, count])
                    if kind in ("ACCEPT", "REJECT") or count >= DELIVERY_LIMIT:
                        ledger.done.add(record_id)
            consumer.commit_sync(30)
    finally:
        consumer.close()


def _decide(record_id: int, delivery_count: int) -> str:
    rule = policy(record_id)
    if rule == "reject":
        return "REJECT"
    if rule == "release_always" or (rule == "release_once" and delivery_count == 1):
        return "RELEASE"
    return "ACCEPT"


def run_consumers(bootstrap: str, topic: str, group: str, count: int, expected: set[int]
                  ) -> Ledger:
    """Start `count` consumers, produce once all joined, run until every record is done."""
    ledger = Ledger()
    stop = threading.Event()
    threads = [threading.Thread(target=consume, args=(f"c{i}", bootstrap, topic, group, ledger,
                                                      expected, stop), daemon=True)
               for i in range(count)]
    for t in threads:
        t.start()
    wait_for_members(bootstrap, group, count)
    produce(bootstrap, topic, range(min(expected), max(expected) + 1))
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline and not ledger.finished(expected):
        time.sleep(0.2)
    # Keep polling a little: an archived or rejected record must not come back.
    time.sleep(2.0)
    stop.set()
    for t in threads:
        t.join(30)
    return ledger


def check_ledger(ledger: Ledger, expected: set[int], consumers: int) -> None:
    assert ledger.done >= expected, f"missing: {sorted(expected - ledger.done)[:20]}"
    assert len({d[0] for ds in ledger.deliveries.values() for d in ds}) == consumers
    for record_id, deliveries in ledger.deliveries.items():
        deliveries.sort(key=lambda d: d[1])
        # No overlap: a redelivery was received only after the earlier holder acked.
        for before, after in itertools.pairwise(deliveries):
            assert after[1] >= before[2], (record_id, deliveries)
        counts = [d[4] for d in deliveries]
        assert counts == list(range(1, len(counts) + 1)), (record_id, deliveries)
        rule = policy(record_id)
        expected_deliveries = {"accept": 1, "reject": 1, "release_once": 2,
                               "release_always": DELIVERY_LIMIT}[rule]
        assert len(deliveries) == expected_deliveries, (record_id, rule, deliveries)


@pytest.mark.parametrize("broker", BROKER_KINDS, indirect=True)
def test_confluent_share_consumers_queue_semantics(broker: Any) -> None:
    topic, group = "share-q", "share-g"
    setup_topic(broker.bootstrap, topic, group)
    ids = range(RECORDS)
    ledger = run_consumers(broker.bootstrap, topic, group, 3, set(ids))
    check_ledger(ledger, set(ids), 3)


def test_confluent_kill9_keeps_acks_and_redelivers_the_rest(broker: Any) -> None:
    topic, group = "share-k", "share-kg"
    setup_topic(broker.bootstrap, topic, group, partitions=1)
    produce(broker.bootstrap, topic, range(100), partitions=1)
    consumer = share_consumer(broker.bootstrap, group)
    consumer.subscribe([topic])
    accepted: set[int] = set()
    held: set[int] = set()
    deadline = time.monotonic() + 30
    while not held and time.monotonic() < deadline:
        for msg in consumer.poll(0.5):
            if msg.error() is not None:
                continue
            record_id = int(msg.value())
            # Accept the first 40; the rest stay acquired and unacknowledged.
            if record_id < 40:
                consumer.acknowledge(msg, ck.AcknowledgeType.ACCEPT)
                accepted.add(record_id)
            else:
                held.add(record_id)
    consumer.commit_sync(30)
    assert accepted and held
    broker.kill()
    broker.restart()
    seen = consume_all(broker.bootstrap, topic, group, set(range(100)) - accepted)
    assert not seen & accepted, sorted(seen & accepted)
    assert seen == set(range(100)) - accepted



def test_confluent_kill9_while_consuming(broker: Any) -> None:
    """A consumer acknowledges continuously; the broker is killed between two of its
    commits. Confirmed acknowledgements never come back; every record whose
    acknowledgement was not sent is delivered again; one in flight may go either way."""
    topic, group, total = "share-k2", "share-kg2", 5_000
    # At most 100 records in flight, so the stream takes many fetches and commits.
    setup_topic(broker.bootstrap, topic, group, partitions=1,
                share_partition_max_record_locks="100")
    # Small batches: a fetch acquires whole batches, so one big batch would be one poll.
    produce(broker.bootstrap, topic, range(total), partitions=1, batch_records=50)
    confirmed: set[int] = set()
    uncertain: set[int] = set()
    stop, reached = threading.Event(), threading.Event()

    def run() -> None:
        consumer = share_consumer(broker.bootstrap, group)
        consumer.subscribe([topic])
        while not stop.is_set():
            try:
                batch = [m for m in consumer.poll(0.5) if m.error() is None]
                for msg in batch:
                    consumer.acknowledge(msg, ck.AcknowledgeType.ACCEPT)
                ids = {int(m.value()) for m in batch}
                uncertain.update(ids)
                results = consumer.commit_sync(5)
            except ck.KafkaException:
                return
            if all(err is None for err in results.values()) and not stop.is_set():
                confirmed.update(ids)
                uncertain.difference_update(ids)
            if len(confirmed) >= 500 and not reached.is_set():
                # Hold here so the kill lands between two commits, with the client's
                # next fetch (records acquired, unacknowledged) already under way.
                reached.set()
                stop.wait(30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert reached.wait(60)
    time.sleep(0.5)  # let the client's prefetching ShareFetch acquire more records
    broker.kill()
    stop.set()
    assert 0 < len(confirmed) < total
    broker.restart()
    seen = consume_all(broker.bootstrap, topic, group, set(range(total)) - confirmed - uncertain)
    assert not seen & confirmed, sorted(seen & confirmed)[:10]
    assert set(range(total)) - confirmed - uncertain <= seen


def consume_all(bootstrap: str, topic: str, group: str, want: set[int]) -> set[int]:
    """Consume (accepting) until every id in `want` was seen, then check that nothing
    acknowledged comes back."""
    consumer = share_consumer(bootstrap, group)
    consumer.subscribe([topic])
    seen: set[int] = set()
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline and not want <= seen:
            for msg in consumer.poll(0.5):
                if msg.error() is None:
                    seen.add(int(msg.value()))
                    consumer.acknowledge(msg, ck.AcknowledgeType.ACCEPT)
            consumer.commit_sync(30)
        # Anything acknowledged must not reappear.
        for _ in range(4):
            extra = [int(m.value()) for m in consumer.poll(0.5) if m.error() is None]
            assert not extra, extra
    finally:
        consumer.close()
    return seen


@pytest.mark.parametrize("broker", BROKER_KINDS, indirect=True)
def test_java_share_consumers_queue_semantics(broker: Any, java_harness: Any,
                                              tmp_path: Any) -> None:
    """The 4.4 KafkaShareConsumer, `share.acknowledgement.mode=explicit`: ACCEPT, RELEASE
    and REJECT per record over the final share RPCs."""
    from helpers import java

    run_java_share_consumers(broker.bootstrap, java.CLIENT_4_4, tmp_path, "share-jq", "share-jg")


def test_java39_share_consumers_sharegroupheartbeat_v0(broker: Any, java39_harness: Any,
                                                       tmp_path: Any) -> None:
    """The 3.9 KafkaShareConsumer (KIP-932 early access): ShareGroupHeartbeat, ShareFetch and
    ShareAcknowledge v0, explicit acknowledgement chosen by its first acknowledge() call."""
    from helpers import java

    # The harness replaces a 3.9 consumer whose first poll (12 s) is empty; a target held
    # back by the 1 s assignment interval would come only at a later heartbeat: assign at
    # once for this group (Kafka's own tests run with 0 and 1000).
    run_java_share_consumers(broker.bootstrap, java.CLIENT_3_9, tmp_path, "share-jq39",
                             "share-jg39", share_assignment_interval_ms="0")


def run_java_share_consumers(bootstrap: str, client: Any, tmp_path: Any, topic: str,
                             group: str, **group_configs: str) -> None:
    """Three harness share consumers on `client`; every delivery checked by `check_ledger`."""
    import json
    import os
    import subprocess

    from helpers import java

    setup_topic(bootstrap, topic, group, **group_configs)
    ids = range(RECORDS)
    marks = tmp_path / "marks"
    marks.mkdir()
    procs = []
    for i in range(3):
        out = open(tmp_path / f"java{i}.out", "w")  # noqa: SIM115 - closed below
        procs.append((subprocess.Popen(
            [*java.harness_command("share-consume", client),
             "--bootstrap", bootstrap, "--topic", topic, "--group", group,
             "--dir", str(marks), "--limit", str(DELIVERY_LIMIT), "--timeout-ms", "150000"],
            stdout=out, stderr=subprocess.DEVNULL), out))
    # Records are produced once all three have joined, so that they share the work.
    wait_for_members(bootstrap, group, 3)
    produce(bootstrap, topic, ids)
    deadline = time.monotonic() + 150
    expected = {f"done-{i}" for i in ids}
    while time.monotonic() < deadline and not expected <= set(os.listdir(marks)):
        time.sleep(0.5)
    time.sleep(2.0)
    (marks / "stop").touch()
    ledger = Ledger()
    commit_errors = []
    for index, (proc, out) in enumerate(procs):
        assert proc.wait(60) == 0
        out.close()
        for line in (tmp_path / f"java{index}.out").read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "share-commit-error":
                commit_errors.append(event)
            if event.get("event") != "share-record":
                continue
            ledger.deliveries[event["id"]].append(
                [f"java{index}", event["received"], event["sent"], event["kind"], event["count"]])
            if event["kind"] != "RELEASE" or event["count"] >= DELIVERY_LIMIT:
                ledger.done.add(event["id"])
    assert commit_errors == []
    check_ledger(ledger, set(ids), 3)


def wait_for_members(bootstrap: str, group: str, count: int, timeout_s: float = 60.0) -> None:
    """Poll ShareGroupDescribe until the group has `count` members, each assigned."""
    from groupcoord.cli.wire_client import WireClient
    from groupcoord.wire.generated.share_group_describe import ShareGroupDescribeRequest

    deadline = time.monotonic() + timeout_s
    with WireClient(bootstrap) as client:
        while time.monotonic() < deadline:
            response, _ = client.request(ShareGroupDescribeRequest(group_ids=[group]), 1)
            members = response.groups[0].members
            # KIP-1263: a member that joins within share.assignment.interval.ms (1 s) of
            # the last target gets its partitions at its next heartbeat (5 s later).
            if len(members) >= count and all(m.assignment.topic_partitions for m in members):
                return
            time.sleep(0.2)
    raise AssertionError(f"share group {group} never reached {count} members")
