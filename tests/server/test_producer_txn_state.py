"""Open transactions in a partition's producer state: LSO, markers, aborted entries."""

from __future__ import annotations

from pathlib import Path

from groupcoord.server.producer_state import (
    AbortedEntry,
    PartitionProducerState,
    ProducerStateManager,
)
from groupcoord.storage.documents import FileDocuments
from groupcoord.wire.errors import ErrorCode as E


def test_lso_is_first_offset_of_oldest_open_transaction() -> None:
    s = PartitionProducerState()
    assert s.last_stable_offset(10) == 10
    s.open_txn(1, 0, 10)
    s.open_txn(2, 0, 12)
    s.open_txn(1, 0, 14)  # a later batch of the same transaction
    assert s.last_stable_offset(20) == 10 and s.has_ongoing(1, 0) and not s.has_ongoing(1, 1)
    # pid 1 aborts at 20: the index entry's LSO is pid 2's first offset.
    assert s.end_txn(1, 0, 0, 20, commit=False) == AbortedEntry(1, 10, 20, 12)
    assert s.last_stable_offset(21) == 12
    assert s.end_txn(2, 0, 0, 21, commit=True) is None
    assert s.last_stable_offset(22) == 22
    s.open_txn(3, 0, 22)
    assert s.end_txn(3, 0, 0, 23, commit=False) == AbortedEntry(3, 22, 23, 24)


def test_marker_without_transaction_changes_nothing() -> None:
    s = PartitionProducerState()
    assert s.end_txn(5, 1, 0, 7, commit=False) is None
    assert s.producers[5].epoch == 1 and s.ongoing == {}


def test_marker_and_batch_checks() -> None:
    s = PartitionProducerState()
    s.open_txn(1, 3, 0)
    assert s.check_transactional(1, transactional=False) == E.INVALID_TXN_STATE
    assert s.check_transactional(1, transactional=True) == 0
    assert s.check_marker(1, 2, 0) == E.INVALID_PRODUCER_EPOCH
    s.end_txn(1, 4, 5, 1, commit=True)  # a fencing abort with a bumped epoch
    assert s.check_marker(1, 4, 4) == E.TRANSACTION_COORDINATOR_FENCED
    assert s.check_marker(1, 4, 5) == 0 and s.check_marker(99, 0, 0) == 0
    assert s.check_transactional(1, transactional=False) == 0


def test_rebuild_finds_open_and_aborted_transactions(tmp_path: Path) -> None:
    m = ProducerStateManager(FileDocuments(str(tmp_path)))
    batches = [
        # pid, epoch, first_seq, last_seq, base, last, ts, transactional, commit, coord epoch
        (7, 0, 0, 1, 0, 1, 5, True, None, -1),
        (8, 0, 0, 0, 2, 2, 5, True, None, -1),
        (7, 0, -1, -1, 3, 3, 6, True, False, 0),
        (9, 0, 0, 0, 4, 4, 7, False, None, -1),
    ]
    state, aborted = m.load_partition("t", 0, batches)
    assert aborted == [AbortedEntry(7, 0, 3, 2)]
    assert state.ongoing == {8: 2} and state.last_stable_offset(5) == 2
    assert state.check(9, 0, 1, 1) == (0, None)
    assert m.ids.next_id() > 9
