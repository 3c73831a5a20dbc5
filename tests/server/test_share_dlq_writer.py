"""The share-group DLQ writer (KIP-1191) on a real broker with a manual clock: the DLQ
records Kafka 4.4 writes (headers, copy mode, partition), what happens when the DLQ topic
is missing, not enabled or badly named, auto-creation, and exactly-once across a crash
between the DLQ write and the ARCHIVED write (Kafka writes such records again on resume,
`SharePartition.maybeResumeDlqArchiving`; here they are found in the DLQ topic and kept
once)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from broker_inproc import InProcBroker, run, settle
from share_state_support import GROUP, TOPIC, Ack, durable_view, rebuilt, state_partition

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.clock import ManualClock
from groupcoord.coordinator.share.partition import AckType, RecordState
from groupcoord.logformat.batch import build_batch, decode_records, parse_header
from groupcoord.wire.errors import ErrorCode

DLQ = "dlq.sg"
ENABLE = {"errors.deadletterqueue.group.enable": "true"}


def setup(broker: Any, records: int = 10, partitions: int = 1, dlq_partitions: int = 1,
          copy: bool = False, dlq_name: str = DLQ, dlq_configs: dict | None = None) -> Any:
    topic = broker.topics.create(TOPIC, partitions, {})
    for p in range(partitions):
        broker.append(TOPIC, p, build_batch([(f"k{i}".encode(), f"v{i}".encode(),
                                              [("orig", b"h")], 0) for i in range(records)]), 0)
    if dlq_configs is not None:
        broker.topics.create(dlq_name, dlq_partitions, dlq_configs)
    broker.shares.group_configs.set(GROUP, {
        "share.auto.offset.reset": "earliest", "share.delivery.count.limit": "2",
        "errors.deadletterqueue.topic.name": dlq_name,
        "errors.deadletterqueue.copy.record.enable": str(copy).lower()})
    return topic


def dlq_records(broker: Any, name: str = DLQ, partition: int = 0) -> list[tuple[Any, ...]]:
    """(key, value, headers dict, header names) of every record in a DLQ partition."""
    plog = broker.topics.log(name, partition)
    out = []
    for view in plog.iter_batches():
        assert not parse_header(view).is_control
        for rec in decode_records(view):
            out.append((rec.key, rec.value, {n: v for n, v in rec.headers},
                        [n for n, _ in rec.headers]))
    return out


def offsets_in(records: list[tuple[Any, ...]]) -> list[int]:
    return [int(r[2]["__dlq.errors.offset"]) for r in records]


async def reject(shares: Any, sp: Any, first: int, last: int) -> None:
    _data, got = await shares.acquire(sp, TOPIC, "m1", 100, 1 << 20)
    assert got
    assert await shares.acknowledge(sp, TOPIC, "m1", [Ack(first, last, [AckType.REJECT])]) == 0


def test_rejected_records_reach_the_dlq_with_kafkas_headers(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            shares = b.broker.shares
            topic = setup(b.broker, dlq_configs=ENABLE)
            sp = await shares.partition(GROUP, topic, 0)
            await reject(shares, sp, 0, 2)
            # Phase 1 is durable before any DLQ write: ARCHIVING in the state log.
            assert rebuilt(b.broker, state_partition(sp)).get(sp.key).offsets[0] == (3, 1)
            assert dlq_records(b.broker) == []
            clock.advance(0)
            await shares.quiesce()  # the fired flush writes on the loop
            got = dlq_records(b.broker)
            assert offsets_in(got) == [0, 1, 2]
            key, value, headers, names = got[1]
            assert (key, value) == (None, None)  # copy mode is off by default
            assert names == ["__dlq.errors.topic", "__dlq.errors.partition",
                             "__dlq.errors.offset", "__dlq.errors.group",
                             "__dlq.errors.delivery.count", "__dlq.errors.message"]
            assert headers == {"__dlq.errors.topic": TOPIC.encode(),
                               "__dlq.errors.partition": b"0", "__dlq.errors.offset": b"1",
                               "__dlq.errors.group": GROUP.encode(),
                               "__dlq.errors.delivery.count": b"1",
                               "__dlq.errors.message": b"Offset rejected by client."}
            assert sp.start_offset == 3 and sp.archiving() == []
            replayed = rebuilt(b.broker, state_partition(sp)).canonical()
            assert replayed[sp.key] == durable_view(sp)
    run(go())


def test_copy_mode_and_delivery_limit_across_partitions(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            shares = b.broker.shares
            topic = setup(b.broker, records=3, partitions=3, dlq_partitions=2, copy=True,
                          dlq_configs=ENABLE)
            for p in range(3):
                sp = await shares.partition(GROUP, topic, p)
                for _ in range(2):  # two deliveries, each lock expires: the limit is 2
                    await shares.acquire(sp, TOPIC, "m1", 100, 1 << 20)
                    clock.advance(shares.lock_duration_ms(GROUP))
                    # The expiry is an operation of the state shard: it runs on the loop.
                    await settle(lambda sp=sp: sp.counts()["ACQUIRED"] == 0)
            clock.advance(0)
            await shares.quiesce()  # the fired flush writes on the loop
            p0, p1 = dlq_records(b.broker, DLQ, 0), dlq_records(b.broker, DLQ, 1)
            # Source partition p goes to DLQ partition p % 2.
            assert sorted({int(r[2]["__dlq.errors.partition"]) for r in p0}) == [0, 2]
            assert {int(r[2]["__dlq.errors.partition"]) for r in p1} == {1}
            key, value, headers, names = p1[2]
            assert (key, value) == (b"k2", b"v2")  # the original key and value...
            assert "orig" not in names  # ...but never its headers
            assert headers["__dlq.errors.delivery.count"] == b"2"
            assert headers["__dlq.errors.message"] == \
                b"Offset delivery count exceeded the threshold."
            assert len(p0) == 6 and len(p1) == 3
    run(go())


@pytest.mark.parametrize("case", ["missing", "not-enabled", "prefix", "no-name"])
def test_unusable_dlq_topic_archives_without_writing(tmp_path: Path, case: str) -> None:
    """`validateDlqTopic` fails: Kafka logs and archives regardless."""
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            shares = b.broker.shares
            name = {"prefix": "sg-dead"}.get(case, DLQ)
            configs = {"missing": None, "not-enabled": {}, "prefix": ENABLE,
                       "no-name": ENABLE}[case]
            topic = setup(b.broker, dlq_name=name, dlq_configs=configs)
            sp = await shares.partition(GROUP, topic, 0)
            if case == "no-name":  # records ARCHIVING, then the group's DLQ is unset
                await reject(shares, sp, 0, 1)
                shares.group_configs.set(GROUP, {"errors.deadletterqueue.topic.name": None})
                shares.reconfigure(GROUP)
            else:
                await reject(shares, sp, 0, 1)
            assert [o for o, _, _ in sp.archiving()] == [0, 1]
            clock.advance(0)
            await shares.quiesce()  # the fired flush writes on the loop
            assert sp.archiving() == [] and sp.start_offset == 2
            if configs is None:
                assert b.broker.topics.get(name) is None
            else:
                assert dlq_records(b.broker, name) == []
    run(go())


def test_missing_topic_is_created_when_auto_create_is_on(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        extra = {"errors.deadletterqueue.auto.create.topics.enable": "true"}
        async with InProcBroker(tmp_path, clock=clock, extra=extra) as b:
            shares = b.broker.shares
            topic = setup(b.broker)
            sp = await shares.partition(GROUP, topic, 0)
            await reject(shares, sp, 4, 4)
            clock.advance(0)
            await shares.quiesce()  # the fired flush writes on the loop
            created = b.broker.topics.get(DLQ)
            assert created is not None
            assert created.configs == {"errors.deadletterqueue.group.enable": "true",
                                       "message.timestamp.type": "CreateTime"}
            assert offsets_in(dlq_records(b.broker)) == [4]
    run(go())


def test_crash_between_dlq_write_and_archived_keeps_one_copy(tmp_path: Path) -> None:
    """The ARCHIVED write fails after the DLQ append (as a crash there would leave it);
    after a restart the resumed flush finds the records in the DLQ topic and writes none
    again; records whose DLQ write never happened are written once."""
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            shares = b.broker.shares
            topic = setup(b.broker, dlq_configs=ENABLE)
            sp = await shares.partition(GROUP, topic, 0)
            await reject(shares, sp, 0, 3)

            def refuse(*_args: Any) -> None:
                raise OSError("disk gone")
            shares.state.append = refuse
            clock.advance(0)
            await shares.quiesce()  # the fired flush writes on the loop
            assert offsets_in(dlq_records(b.broker)) == [0, 1, 2, 3]
            assert [o for o, _, _ in sp.archiving()] == [0, 1, 2, 3]
            # More rejections are persisted ARCHIVING but never flushed before the "crash".
            shares.state.append = b.broker.append
            assert await shares.acknowledge(sp, TOPIC, "m1", [Ack(4, 6, [AckType.REJECT])]) == 0
        async with InProcBroker(tmp_path, clock=ManualClock(clock.now_ms())) as b2:
            shares = b2.broker.shares
            sp = shares.partitions[sp.key]  # resumed at start-up, before any fetch
            assert [o for o, _, _ in sp.archiving()] == list(range(7))
            b2.broker.shares.clock.advance(0)
            await b2.broker.shares.quiesce()
            got = dlq_records(b2.broker)
            assert offsets_in(got) == list(range(7))
            assert sp.archiving() == [] and sp.start_offset == 7
            assert all(r[2]["__dlq.errors.message"] == b"Offset rejected by client."
                       for r in got)
    run(go())


def test_storage_error_in_the_dlq_append_is_retried(tmp_path: Path) -> None:
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            shares = b.broker.shares
            topic = setup(b.broker, dlq_configs=ENABLE)
            sp = await shares.partition(GROUP, topic, 0)
            await reject(shares, sp, 0, 0)
            real, calls = b.broker.append, []

            def flaky(name: str, *args: Any, **kwargs: Any) -> Any:
                if name == DLQ and not calls:
                    calls.append(name)
                    raise OSError("transient")
                return real(name, *args, **kwargs)
            b.broker.append = flaky
            clock.advance(0)
            await shares.quiesce()  # the fired flush writes on the loop
            assert calls and sp.archiving() != []
            clock.advance(1_000)
            await shares.quiesce()  # the fired flush writes on the loop
            assert offsets_in(dlq_records(b.broker)) == [0] and sp.archiving() == []
    run(go())


def test_archiving_state_survives_failed_state_write(tmp_path: Path) -> None:
    """A reject whose ARCHIVING write fails changes nothing and writes no DLQ record."""
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            shares = b.broker.shares
            topic = setup(b.broker, dlq_configs=ENABLE)
            sp = await shares.partition(GROUP, topic, 0)
            await shares.acquire(sp, TOPIC, "m1", 100, 1 << 20)

            def refuse(*_args: Any) -> None:
                raise OSError("disk gone")
            shares.state.append = refuse
            code = await shares.acknowledge(sp, TOPIC, "m1", [Ack(0, 0, [AckType.REJECT])])
            assert code == ErrorCode.COORDINATOR_NOT_AVAILABLE
            clock.advance(0)
            await shares.quiesce()  # the fired flush writes on the loop
            assert dlq_records(b.broker) == []
            assert sp.records[0].state == RecordState.ACQUIRED
            with pytest.raises(ApiError):
                await shares.state.initialize(sp.key, sp.start_offset)
    run(go())


def test_copy_skipped_for_records_past_the_dlq_max_message_bytes(tmp_path: Path) -> None:
    """testDlqCopyRecordSkippedWhenDecompressedSizeExceedsDlqMaxMessageBytes: a record larger
    than the DLQ topic's max.message.bytes, or in a compressed batch that decompresses past
    it, gets a headers-only DLQ record; the others are copied."""
    async def go() -> None:
        clock = ManualClock()
        async with InProcBroker(tmp_path, clock=clock) as b:
            shares = b.broker.shares
            topic = b.broker.topics.create(TOPIC, 1, {})
            b.broker.append(TOPIC, 0, build_batch([(b"small", b"s", (), 0),
                                                   (b"big", b"b" * 3_000, (), 0)]), 0)
            b.broker.append(TOPIC, 0, build_batch([(b"z", b"a" * 200_000, (), 0)] * 2,
                                                  compression=1), 0)  # gzip: tiny on disk
            b.broker.topics.create(DLQ, 1, {**ENABLE, "max.message.bytes": "2000"})
            shares.group_configs.set(GROUP, {
                "share.auto.offset.reset": "earliest",
                "errors.deadletterqueue.topic.name": DLQ,
                "errors.deadletterqueue.copy.record.enable": "true"})
            sp = await shares.partition(GROUP, topic, 0)
            await reject(shares, sp, 0, 3)
            clock.advance(0)
            await shares.quiesce()  # the fired flush writes on the loop
            got = dlq_records(b.broker)
            assert offsets_in(got) == [0, 1, 2, 3]
            assert [(k, v) for k, v, _h, _n in got] == [(b"small", b"s")] + [(None, None)] * 3
            assert sp.start_offset == 4
    run(go())


def test_auto_creation_refuses_an_illegal_topic_name(tmp_path: Path) -> None:
    """A DLQ topic name that is no legal topic name is never created (no directory
    outside the data dir); the records are archived without a DLQ copy."""
    async def go() -> None:
        clock = ManualClock()
        extra = {"errors.deadletterqueue.auto.create.topics.enable": "true"}
        async with InProcBroker(tmp_path / "data", clock=clock, extra=extra) as b:
            shares = b.broker.shares
            topic = setup(b.broker, dlq_name="dlq./../../escape")
            sp = await shares.partition(GROUP, topic, 0)
            await reject(shares, sp, 0, 0)
            clock.advance(0)
            await shares.quiesce()  # the fired flush writes on the loop
            assert b.broker.topics.get("dlq./../../escape") is None
            assert not (tmp_path / "escape-0").exists()
            assert sp.archiving() == [] and sp.start_offset == 1
    run(go())
