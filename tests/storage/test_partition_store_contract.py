"""The `PartitionStore` contract, run against every implementation: the file log over a
directory on disk and over `MemoryFileIO`, the list-backed `InMemoryPartitionStore`, and
`PostgresPartitionStore` on a real PostgreSQL server (a fresh topic per store, led by one
node). Each store holds one segment here, so their reads are comparable byte for byte."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from storage_helpers import make_batch

from groupcoord.logformat.batch import iter_batches, parse_header
from groupcoord.storage.config import (
    AppendPreconditionFailed,
    InvalidRecordError,
    LogConfig,
    OffsetOutOfRangeError,
    StorageError,
)
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.memory_io import MemoryFileIO
from groupcoord.storage.memory_store import InMemoryPartitionStore
from groupcoord.storage.partition_store import LogSnapshot, PartitionStore
from groupcoord.storage.postgres_session import PostgresSession
from groupcoord.storage.postgres_store import PostgresPartitionStore, acquire_leadership

NOW = 1_700_000_000_000
StoreFactory = Callable[[], PartitionStore]
# Topics of the PostgreSQL stores, which share one database for the whole session.
_pg_topics = (f"contract-{n}" for n in itertools.count())


@pytest.fixture(params=["file-on-disk", "file-in-memory-io", "in-memory", "postgresql"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def new_store(request: pytest.FixtureRequest, store_kind: str,
              tmp_path: Path) -> Iterator[StoreFactory]:
    """Makes fresh, empty stores of one implementation (closed after the test)."""
    opened: list[PartitionLog] = []
    io = MemoryFileIO()
    # Asked for only by the PostgreSQL stores: the others run without a server.
    connect: Callable[[], PostgresSession] | None = (
        request.getfixturevalue("postgres_connect") if store_kind == "postgresql" else None)

    def make() -> PartitionStore:
        if store_kind == "in-memory":
            return InMemoryPartitionStore(LogConfig())
        if connect is not None:
            session, topic = connect(), next(_pg_topics)
            epoch = acquire_leadership(session, topic, 0, node_id=1, lease_ms=30_000,
                                       now_ms=NOW)
            return PostgresPartitionStore(session, topic, 0, leader_epoch=epoch)
        path = str(tmp_path / f"t-{len(opened)}")
        if store_kind == "file-on-disk":
            log = PartitionLog.open(path, LogConfig(), now_ms=NOW)
        else:
            log = PartitionLog.open("/data" + path, LogConfig(), now_ms=NOW, io=io)
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()


@pytest.fixture
def store(new_store: StoreFactory) -> PartitionStore:
    return new_store()


def _filled(store: PartitionStore) -> list[bytes]:
    """Three batches of 2, 3 and 1 records (offsets 0-1, 2-4, 5); their stored bytes."""
    for n in (2, 3, 1):
        store.append(make_batch(n, ts=NOW), now_ms=NOW)
    return [bytes(view) for view in store.iter_batches()]


def _offsets(data: bytes | memoryview) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for h, _ in iter_batches(data)]


def test_append_assigns_offsets_from_the_log_end(store: PartitionStore) -> None:
    first = store.append(make_batch(2, ts=NOW), now_ms=NOW)
    second = store.append(make_batch(3, ts=NOW) + make_batch(1, ts=NOW), now_ms=NOW)
    assert (first.base_offset, first.last_offset) == (0, 1)
    assert (second.base_offset, second.last_offset) == (2, 5)
    assert [(h.base_offset, h.last_offset) for h in second.headers] == [(2, 4), (5, 5)]
    assert (store.log_start_offset, store.log_end_offset) == (0, 6)
    assert _offsets(b"".join(bytes(v) for v in store.iter_batches())) == [(0, 1), (2, 4), (5, 5)]


def test_append_with_the_current_end_offset_is_taken(store: PartitionStore) -> None:
    store.append(make_batch(2, ts=NOW), expected_end_offset=0, now_ms=NOW)
    info = store.append(make_batch(1, ts=NOW), expected_end_offset=2, now_ms=NOW)
    assert info.base_offset == 2 and store.log_end_offset == 3


@pytest.mark.parametrize("stale", [0, 1, 3, 7])
def test_a_stale_expected_end_offset_is_refused_and_writes_nothing(store: PartitionStore,
                                                                   stale: int) -> None:
    before = _filled(store)
    snap = store.snapshot()
    with pytest.raises(AppendPreconditionFailed) as refused:
        store.append(make_batch(4, ts=NOW), expected_end_offset=stale, now_ms=NOW)
    assert (refused.value.expected, refused.value.actual) == (stale, 6)
    assert isinstance(refused.value, StorageError)  # the family the server maps
    assert store.snapshot() == snap
    assert [bytes(v) for v in store.iter_batches()] == before
    # The store goes on taking appends that name its end.
    assert store.append(make_batch(1, ts=NOW), expected_end_offset=6, now_ms=NOW
                        ).base_offset == 6


def test_the_precondition_is_checked_before_the_batch(store: PartitionStore) -> None:
    _filled(store)
    with pytest.raises(AppendPreconditionFailed):
        store.append(b"not a batch", expected_end_offset=2)
    with pytest.raises(InvalidRecordError):
        store.append(b"not a batch", expected_end_offset=6)
    assert store.log_end_offset == 6


def test_read_returns_whole_batches_from_the_one_holding_the_offset(
        store: PartitionStore) -> None:
    batches = _filled(store)
    assert bytes(store.read(0, 1 << 20)) == b"".join(batches)
    assert bytes(store.read(3, 1 << 20)) == batches[1] + batches[2]  # mid-batch: whole batch
    assert bytes(store.read(5, 1 << 20)) == batches[2]
    assert bytes(store.read(6, 1 << 20)) == b""  # the log end: nothing yet
    # max_bytes stops before a batch that would not fit, but the first always comes whole.
    assert bytes(store.read(0, len(batches[0]) + len(batches[1]) - 1)) == batches[0]
    assert bytes(store.read(0, 1)) == batches[0]
    # max_offset (the high watermark) leaves out batches starting at or after it.
    assert bytes(store.read(0, 1 << 20, max_offset=2)) == batches[0]
    assert bytes(store.read(0, 1 << 20, max_offset=3)) == batches[0] + batches[1]
    assert bytes(store.read(2, 1 << 20, max_offset=2)) == b""


@pytest.mark.parametrize("offset", [-1, 7, 100])
def test_reads_outside_the_log_are_out_of_range(store: PartitionStore, offset: int) -> None:
    _filled(store)
    with pytest.raises(OffsetOutOfRangeError):
        store.read(offset, 1 << 20)


def test_reads_below_the_log_start_are_out_of_range(store: PartitionStore) -> None:
    batches = _filled(store)
    assert store.delete_records_before(2) == 2
    with pytest.raises(OffsetOutOfRangeError):
        store.read(1, 1 << 20)
    assert bytes(store.read(2, 1 << 20)) == batches[1] + batches[2]
    assert [bytes(v) for v in store.iter_batches()] == batches[1:]
    assert [h.base_offset for h in store.iter_batch_headers()] == [2, 5]
    assert [h.base_offset for h in store.iter_batch_headers(5)] == [5]


def test_truncate_to_removes_every_batch_from_the_offset(store: PartitionStore) -> None:
    batches = _filled(store)
    store.truncate_to(7)  # past the end: nothing to do
    assert store.log_end_offset == 6
    store.truncate_to(2)
    assert (store.log_start_offset, store.log_end_offset) == (0, 2)
    assert bytes(store.read(0, 1 << 20)) == batches[0]
    with pytest.raises(OffsetOutOfRangeError):
        store.read(3, 1 << 20)
    # Appends carry on from the new end, and the precondition sees it.
    with pytest.raises(AppendPreconditionFailed):
        store.append(make_batch(1, ts=NOW), expected_end_offset=6, now_ms=NOW)
    assert store.append(make_batch(1, ts=NOW), expected_end_offset=2, now_ms=NOW
                        ).base_offset == 2
    store.truncate_to(0)
    assert (store.log_start_offset, store.log_end_offset) == (0, 0)
    assert list(store.iter_batches()) == []


def test_snapshot_holds_the_offsets_and_the_batches(store: PartitionStore,
                                                    store_kind: str) -> None:
    empty = store.snapshot()
    assert (empty.log_start_offset, empty.log_end_offset, empty.batches) == (0, 0, b"")
    batches = _filled(store)
    store.flush()
    store.append(make_batch(1, ts=NOW), now_ms=NOW)  # after the flush: not yet durable...
    # ...except in PostgreSQL, where the append's commit made it durable.
    durable_end = 7 if store_kind == "postgresql" else 6
    snap = store.snapshot()
    assert (snap.log_start_offset, snap.log_end_offset, snap.recovery_point) == (
        0, 7, durable_end)
    assert _offsets(snap.batches) == [(0, 1), (2, 4), (5, 5), (6, 6)]
    assert [bytes(v) for v in snap.iter_batches()][:3] == batches
    with pytest.raises(AttributeError):
        snap.log_end_offset = 0  # type: ignore[misc]  # frozen


def test_snapshot_round_trip(new_store: StoreFactory) -> None:
    source = new_store()
    _filled(source)
    source.delete_records_before(2)
    snap = source.snapshot()
    assert (snap.log_start_offset, snap.log_end_offset) == (2, 6)
    # Into the list-backed store, exactly.
    restored = InMemoryPartitionStore.from_snapshot(snap)
    assert restored.snapshot() == snap
    assert bytes(restored.read(2, 1 << 20)) == bytes(source.read(2, 1 << 20))
    # Into a fresh store of the same kind, through its own append of the stored offsets.
    copy = new_store()
    copy.append(snap.batches, assign_offsets=False, trusted=True)
    copy.delete_records_before(snap.log_start_offset)
    again = copy.snapshot()
    assert (again.log_start_offset, again.log_end_offset, again.batches) == (
        snap.log_start_offset, snap.log_end_offset, snap.batches)
    assert [parse_header(v).base_offset for v in copy.iter_batches()] == [2, 5]


def test_appends_without_assigned_offsets_may_not_go_back(store: PartitionStore) -> None:
    _filled(store)
    with pytest.raises(InvalidRecordError):
        store.append(make_batch(1, ts=NOW, base_offset=3), assign_offsets=False)
    info = store.append(make_batch(1, ts=NOW, base_offset=10), assign_offsets=False)
    assert (info.base_offset, store.log_end_offset) == (10, 11)


def test_snapshot_type_is_the_seams() -> None:
    snap = InMemoryPartitionStore().snapshot()
    assert isinstance(snap, LogSnapshot)
