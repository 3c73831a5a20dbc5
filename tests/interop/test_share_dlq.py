"""The share-group dead-letter queue (KIP-1191) with real clients and a real crash.

- confluent-kafka's `ShareConsumer` rejects some records and releases others until
  `share.delivery.count.limit`; a plain `Consumer` then reads the DLQ topic: each of those
  records exactly once, with the original key and value (copy mode) and Kafka's headers.
- kill -9 while records are ARCHIVING: a share consumer rejects every record; the broker is
  frozen (SIGSTOP) at moments when `__share_group_state` on disk holds ARCHIVING records and
  killed there (SIGKILL), several times; after each restart the consumer goes on. At the end
  the DLQ topic holds every record exactly once - none lost, none duplicated.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.confluent_io import create_share_topic, produce_ids

from groupcoord.coordinator.share.dlq import origin
from groupcoord.coordinator.share.state_store import ShareStateStore
from groupcoord.logformat.batch import decode_records, iter_batches
from groupcoord.logformat.coordinator_records import SHARE, decode_record

pytestmark = [pytest.mark.interop, pytest.mark.timeout(300)]

ck = pytest.importorskip("confluent_kafka")
admin_mod = pytest.importorskip("confluent_kafka.admin")

HEADER_NAMES = ["__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset",
                "__dlq.errors.group", "__dlq.errors.delivery.count", "__dlq.errors.message"]
REJECTED = b"Offset rejected by client."
EXCEEDED = b"Offset delivery count exceeded the threshold."


def setup(bootstrap: str, topic: str, group: str, dlq: str, partitions: int,
          dlq_partitions: int, **extra: str) -> None:
    admin = admin_mod.AdminClient({"bootstrap.servers": bootstrap})
    new = admin_mod.NewTopic(dlq, dlq_partitions, 1,
                             config={"errors.deadletterqueue.group.enable": "true"})
    for fut in admin.create_topics([new]).values():
        fut.result(timeout=30)
    create_share_topic(bootstrap, topic, group, partitions, {
        "share.auto.offset.reset": "earliest", "share.delivery.count.limit": "2",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.copy.record.enable": "true", **extra})


def share_consumer(bootstrap: str, group: str, topic: str) -> Any:
    consumer = ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                 "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    return consumer


def read_dlq(bootstrap: str, dlq: str, partitions: int, expected: int,
             timeout: float = 60.0) -> list[Any]:
    """Every record of the DLQ topic, read with a plain consumer until `expected` came
    and then a little longer (a duplicate would arrive after)."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"{dlq}-reader",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition(dlq, p, ck.OFFSET_BEGINNING) for p in range(partitions)])
    got: list[Any] = []
    deadline = time.monotonic() + timeout
    quiet_until = None
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg)
                continue
            if len(got) >= expected:
                quiet_until = quiet_until or time.monotonic() + 2.0
                if time.monotonic() > quiet_until:
                    break
    finally:
        consumer.close()
    return got


def test_share_consumer_rejections_and_exhausted_records_land_in_the_dlq(broker: Any) -> None:
    topic, group, dlq, total = "dlq-src", "dlq-g", "dlq.dlq-g", 60
    setup(broker.bootstrap, topic, group, dlq, partitions=2, dlq_partitions=2)
    produce_ids(broker.bootstrap, topic, range(total), 2)
    # id % 3: 0 rejected, 1 released every time (archived at the limit 2), 2 accepted.
    expected = {i for i in range(total) if i % 3 != 2}
    consumer = share_consumer(broker.bootstrap, group, topic)
    done: set[int] = set()
    deliveries: dict[int, int] = {}
    deadline = time.monotonic() + 60
    try:
        while len(done) < total and time.monotonic() < deadline:
            for msg in consumer.poll(0.5):
                if msg.error() is not None:
                    continue
                record_id = int(msg.value())
                deliveries[record_id] = msg.delivery_count()
                kind = ["REJECT", "RELEASE", "ACCEPT"][record_id % 3]
                consumer.acknowledge(msg, getattr(ck.AcknowledgeType, kind))
                if kind != "RELEASE" or msg.delivery_count() >= 2:
                    done.add(record_id)
            consumer.commit_sync(30)
    finally:
        consumer.close()
    assert done == set(range(total))
    got = read_dlq(broker.bootstrap, dlq, 2, len(expected))
    values = [int(m.value()) for m in got]
    assert sorted(values) == sorted(expected), "each dead letter exactly once"
    for msg in got:
        record_id = int(msg.value())
        headers = msg.headers()
        assert [name for name, _ in headers] == HEADER_NAMES
        h = dict(headers)
        source_partition = record_id % 2
        assert msg.partition() == source_partition  # source partition % 2 DLQ partitions
        assert msg.key() is None  # produce_ids writes no key; copy mode copies that
        assert h["__dlq.errors.topic"] == topic.encode()
        assert h["__dlq.errors.group"] == group.encode()
        assert int(h["__dlq.errors.partition"]) == source_partition
        assert int(h["__dlq.errors.offset"]) == record_id // 2
        if record_id % 3 == 0:
            assert (h["__dlq.errors.message"], h["__dlq.errors.delivery.count"]) == \
                (REJECTED, b"1")
        else:
            assert (h["__dlq.errors.message"], h["__dlq.errors.delivery.count"]) == \
                (EXCEEDED, b"2")


# -- kill -9 during archiving -------------------------------------------------------------

def _segments(data_dir: Path, prefix: str) -> list[Path]:
    return sorted(p for d in data_dir.glob(f"{prefix}-*") for p in d.glob("*.log"))


def _batches(path: Path) -> list[Any]:
    """The whole batches of a segment as it is on disk (a torn tail is left out)."""
    return [view for _header, view in iter_batches(memoryview(path.read_bytes()))]


def disk_view(data_dir: Path, dlq: str) -> tuple[set[int], set[int]]:
    """(offsets ARCHIVING in the share state, offsets with a DLQ record), read from the
    files of a frozen broker."""
    store = ShareStateStore()
    for segment in _segments(data_dir, "__share_group_state"):
        for view in _batches(segment):
            for rec in decode_records(view):
                if rec.key is not None:
                    try:
                        store.replay(decode_record(rec.key, rec.value, SHARE))
                    except ValueError:
                        continue
    archiving = {o for state in store.states.values()
                 for o, (s, _c) in state.offsets.items() if s == 3}
    written = set()
    for segment in _segments(data_dir, dlq):
        for view in _batches(segment):
            for rec in decode_records(view):
                named = origin(rec.headers)
                if named is not None:
                    written.add(named[3])
    return archiving, written


class Rejected:
    """What the rejecting consumer has seen, for a failure to tell a stalled consumer from
    records that ran out."""

    def __init__(self) -> None:
        self.count = 0
        self.last = time.monotonic()
        self.renewed = 0

    def silent_for(self) -> float:
        return time.monotonic() - self.last

    def __str__(self) -> str:
        return (f"{self.count} deliveries rejected, the last {self.silent_for():.1f} s ago, "
                f"the consumer renewed {self.renewed} times")


# librdkafka's share consumer is a preview: a consumer that has received nothing for this
# long while records remain is replaced by a new member. A broker that stopped delivering
# gives the new member nothing either, and the search for ARCHIVING records fails.
SILENCE_BEFORE_RENEWAL_S = 20.0


def rejecter(bootstrap: str, group: str, topic: str, stop: threading.Event,
             seen: Rejected) -> None:
    """Reject everything, over restarts (errors while the broker is down are expected)."""
    while not stop.is_set():
        consumer = share_consumer(bootstrap, group, topic)
        seen.last = time.monotonic()  # a new member's silence counts from its start
        try:
            while not stop.is_set():
                if seen.silent_for() > SILENCE_BEFORE_RENEWAL_S:
                    seen.renewed += 1
                    break
                for msg in consumer.poll(0.2):
                    if msg.error() is None:
                        consumer.acknowledge(msg, ck.AcknowledgeType.REJECT)
                        seen.count += 1
                        seen.last = time.monotonic()
                try:
                    consumer.commit_sync(5)
                except ck.KafkaException:
                    break
        finally:
            consumer.close()


def test_kill9_while_archiving_keeps_each_dead_letter_once(broker_factory: Any) -> None:
    """Each kill first looks (for a while, and until the DLQ holds its share of the
    records) for the narrower moment that matters most: DLQ records written for offsets
    still ARCHIVING, where a resume that wrote again would duplicate them; else any moment
    with ARCHIVING records on disk. `--fsync always` puts an fsync between the DLQ append
    and the ARCHIVED write, which widens that moment."""
    topic, group, dlq, total, kills = "dlq-kill", "dlq-kg", "dlq.dlq-kg", 4_000, 4
    broker = broker_factory.create(extra_args=["--fsync", "always"])
    setup(broker.bootstrap, topic, group, dlq, partitions=1, dlq_partitions=1,
          **{"share.partition.max.record.locks": "200"})
    produce_ids(broker.bootstrap, topic, range(total), 1, batch_records=20)
    stop = threading.Event()
    seen = Rejected()
    thread = threading.Thread(target=rejecter, args=(broker.bootstrap, group, topic, stop, seen),
                              daemon=True)
    thread.start()
    caught: list[tuple[int, int]] = []  # (ARCHIVING on disk, of those with a DLQ record)
    try:
        for kill in range(kills):
            # Past its share of the records, a kill takes any ARCHIVING moment, so records
            # remain for the later kills however fast the broker and consumer run.
            share_end = (kill + 1) * total // (kills + 1)
            started = time.monotonic()
            deadline = started + 60
            while time.monotonic() < deadline:
                pid = broker.proc.pid
                os.kill(pid, signal.SIGSTOP)
                archiving, written = disk_view(broker.data_dir, dlq)
                narrow = (bool(archiving & written) or time.monotonic() > started + 10
                          or len(written) >= share_end)
                if archiving and narrow and len(written) < total:
                    broker.kill()  # SIGKILL of the stopped process: the crash is here
                    caught.append((len(archiving), len(archiving & written)))
                    break
                os.kill(pid, signal.SIGCONT)
                time.sleep(0.01)
            else:
                raise AssertionError(
                    f"never found ARCHIVING records on disk after {len(caught)} kills: "
                    f"{len(written)} of {total} in the DLQ, {seen}")
            broker.restart()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            archiving, written = disk_view(broker.data_dir, dlq)
            if len(written) >= total and not archiving:
                break
            time.sleep(0.5)
    finally:
        stop.set()
        thread.join(30)
    assert len(caught) == kills and all(count > 0 for count, _ in caught), caught
    got = read_dlq(broker.bootstrap, dlq, 1, total)
    values = [int(m.value()) for m in got]
    assert len(values) == len(set(values)), "a dead letter was written twice"
    assert set(values) == set(range(total)), f"lost: {sorted(set(range(total)) - set(values))[:20]}"
    assert [int(dict(m.headers())["__dlq.errors.offset"]) for m in got] == \
        [int(m.value()) for m in got]
    print(f"kills caught with (ARCHIVING, of those already in the DLQ): {caught}; {seen}")
