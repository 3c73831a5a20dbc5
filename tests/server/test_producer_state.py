"""Idempotent producer state: sequence rules, duplicates, epochs, persistent id blocks."""

from __future__ import annotations

from pathlib import Path

from groupcoord.server.producer_state import (
    PartitionProducerState,
    ProducerIdManager,
    ProducerStateManager,
)
from groupcoord.storage.documents import FileDocuments
from groupcoord.wire.errors import ErrorCode as E


def _append(state: PartitionProducerState, pid: int, epoch: int, first: int, last: int,
            offset: int) -> None:
    state.record(pid, epoch, first, last, offset, offset + last - first, 0)


def test_unknown_producer_accepts_any_sequence() -> None:
    assert PartitionProducerState().check(1, 0, 17, 20) == (0, None)


def test_in_sequence_and_gap() -> None:
    s = PartitionProducerState()
    _append(s, 1, 0, 0, 4, 100)
    assert s.check(1, 0, 5, 9) == (0, None)
    assert s.check(1, 0, 7, 9)[0] == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert s.check(1, 0, 3, 4)[0] == E.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_duplicate_returns_original_offsets() -> None:
    s = PartitionProducerState()
    for i in range(5):
        _append(s, 1, 0, i * 10, i * 10 + 9, 1000 + i * 10)
    error, dup = s.check(1, 0, 20, 29)
    assert error == 0 and dup is not None and dup.first_offset == 1020
    _append(s, 1, 0, 50, 59, 1050)
    # Only five batches are retained: the first one is no longer recognised.
    assert s.check(1, 0, 0, 9)[0] == E.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_epochs() -> None:
    s = PartitionProducerState()
    _append(s, 1, 3, 0, 0, 0)
    assert s.check(1, 2, 1, 1)[0] == E.INVALID_PRODUCER_EPOCH
    assert s.check(1, 4, 5, 5)[0] == E.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert s.check(1, 4, 0, 0) == (0, None)


def test_sequence_wraps_at_int32_max() -> None:
    s = PartitionProducerState()
    _append(s, 1, 0, 2**31 - 10, 2**31 - 1, 0)
    assert s.check(1, 0, 0, 4) == (0, None)


def test_producer_ids_never_repeat_across_restarts(tmp_path: Path) -> None:
    first = ProducerIdManager(FileDocuments(str(tmp_path)))
    ids = [first.next_id() for _ in range(3)]
    second = ProducerIdManager(FileDocuments(str(tmp_path)))
    assert second.next_id() > max(ids)


def test_rebuild_from_headers_observes_ids(tmp_path: Path) -> None:
    m = ProducerStateManager(FileDocuments(str(tmp_path)))
    state, aborted = m.load_partition("t", 0, [(5000, 0, 0, 9, 0, 9, 1),
                                               (-1, -1, -1, -1, 10, 10, 1)])
    assert aborted == []
    assert state.check(5000, 0, 0, 9)[1] is not None
    assert m.ids.next_id() > 5000


def test_idempotent_ids_are_fresh(tmp_path: Path) -> None:
    m = ProducerStateManager(FileDocuments(str(tmp_path)))
    first, epoch = m.init_producer_id()
    assert epoch == 0 and m.init_producer_id()[0] == first + 1
