"""The transaction coordinator state machine: exact error codes and transits, manual clock."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from groupcoord.coordinator.result import Result
from groupcoord.coordinator.transactions.coordinator import (
    TransactionCoordinator,
    TxnRecord,
    TxnReply,
)
from groupcoord.coordinator.transactions.state import (
    IllegalTransitionError,
    S,
    TransactionMetadata,
    TransactionState,
    TxnTransit,
    check_transition,
)
from groupcoord.logformat.transaction_records import decode_value, encode_key
from groupcoord.wire.errors import ErrorCode as E


def _coord() -> TransactionCoordinator:
    ids = itertools.count(1000)
    return TransactionCoordinator(lambda: next(ids))


@dataclass(frozen=True)
class Op:
    """A handler's `Result` as these tests read it: its reply and the transit it writes."""

    result: Result

    @property
    def reply(self) -> TxnReply:
        assert isinstance(self.result.response, TxnReply)
        return self.result.response

    @property
    def error(self) -> int:
        return self.reply.error

    @property
    def producer_id(self) -> int:
        return self.reply.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.reply.producer_epoch

    @property
    def writes_markers(self) -> bool:
        return self.reply.writes_markers

    @property
    def transit(self) -> TxnTransit | None:
        records = self.result.records
        assert len(records) <= 1
        return records[0].transit if records else None


def as_op(result: Result) -> Op:
    return Op(result)


def _commit(c: TransactionCoordinator, op: Op) -> Op:
    """What the runtime does: append the record (round trip through bytes), then replay."""
    [record] = op.result.records
    assert op.transit is not None
    value, _ = decode_value(record.value_bytes())
    assert value is not None and value.producer_epoch == op.transit.producer_epoch
    c.replay(record)
    return op


def _init(c: TransactionCoordinator, tid: str = "t", now: int = 0,
          expected: tuple[int, int] | None = None) -> Op:
    op = as_op(c.init_producer_id(tid, 60_000, expected, now))
    if op.transit is not None:
        _commit(c, op)
    return op


def _ongoing(c: TransactionCoordinator, now: int = 10) -> tuple[int, int]:
    op = _init(c)
    _commit(c, as_op(c.add_partitions("t", op.producer_id, op.producer_epoch, [("a", 0)], now)))
    return op.producer_id, op.producer_epoch


def test_transition_table_is_kafkas() -> None:
    check_transition(S.ONGOING, S.PREPARE_COMMIT)
    check_transition(S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT)
    check_transition(S.COMPLETE_ABORT, S.ONGOING)
    for bad in ((S.EMPTY, S.PREPARE_COMMIT), (S.PREPARE_COMMIT, S.ONGOING),
                (S.PREPARE_ABORT, S.COMPLETE_COMMIT), (S.ONGOING, S.DEAD)):
        with pytest.raises(IllegalTransitionError):
            check_transition(*bad)
    assert TransactionState.from_name("PrepareEpochFence") == S.PREPARE_EPOCH_FENCE
    assert S.COMPLETE_COMMIT.kafka_name == "CompleteCommit" and int(S.DEAD) == 6


def test_init_producer_id_allocates_then_bumps_epoch() -> None:
    c = _coord()
    first = _init(c)
    assert (first.error, first.producer_id, first.producer_epoch) == (0, 1000, 0)
    second = _init(c)
    assert (second.producer_id, second.producer_epoch) == (1000, 1)
    assert c.txns["t"].state == S.EMPTY and c.txns["t"].last_producer_epoch == -1


def test_init_producer_id_validation_errors() -> None:
    c = _coord()
    assert as_op(c.init_producer_id("", 1000, None, 0)).error == E.INVALID_REQUEST
    assert as_op(c.init_producer_id("t", 0, None, 0)).error == E.INVALID_TRANSACTION_TIMEOUT
    assert as_op(c.init_producer_id("t", 900_001, None, 0)).error == E.INVALID_TRANSACTION_TIMEOUT
    assert as_op(c.init_producer_id("t", 900_000, None, 0)).error == 0


def test_init_producer_id_on_ongoing_fences_and_aborts_first() -> None:
    c = _coord()
    pid, epoch = _ongoing(c)
    op = as_op(c.init_producer_id("t", 60_000, None, 20))
    assert op.error == E.CONCURRENT_TRANSACTIONS and op.writes_markers
    assert op.transit is not None and op.transit.state == S.PREPARE_ABORT
    assert op.transit.producer_epoch == epoch + 1 and op.transit.partitions == {("a", 0)}
    _commit(c, op)
    # While markers are outstanding the caller keeps getting CONCURRENT_TRANSACTIONS.
    assert as_op(c.init_producer_id("t", 60_000, None, 21)).error == E.CONCURRENT_TRANSACTIONS
    # The old producer is fenced.
    assert as_op(c.end_txn("t", pid, epoch, True, 22)).error == E.PRODUCER_FENCED
    _commit(c, as_op(c.complete("t", 23)))
    assert c.txns["t"].state == S.COMPLETE_ABORT
    retry = _init(c, now=24)
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (0, pid, epoch + 2)


def test_init_producer_id_with_expected_epoch() -> None:
    c = _coord()
    op = _init(c)
    pid = op.producer_id
    bumped = _init(c, expected=(pid, 0))
    assert bumped.producer_epoch == 1 and c.txns["t"].last_producer_epoch == 0
    # A retry of that bump (answer lost) gets the same epoch, not another bump.
    again = as_op(c.init_producer_id("t", 60_000, (pid, 0), 5))
    assert again.producer_epoch == 1
    assert as_op(c.init_producer_id("t", 60_000, (pid, 7), 5)).error == E.PRODUCER_FENCED
    assert as_op(c.init_producer_id("t", 60_000, (pid + 1, 1), 5)).error == E.PRODUCER_FENCED


def test_epoch_exhaustion_rotates_producer_id() -> None:
    c = _coord()
    _init(c)
    md = c.txns["t"]
    md.producer_epoch = 32766
    op = _init(c)
    assert (op.producer_id, op.producer_epoch) == (1001, 0)
    assert c.txns["t"].prev_producer_id == 1000


def test_add_partitions_rules() -> None:
    c = _coord()
    assert as_op(c.add_partitions("x", 1, 0, [("a", 0)], 0)).error == E.INVALID_PRODUCER_ID_MAPPING
    op = _init(c)
    pid, epoch = op.producer_id, op.producer_epoch
    assert as_op(c.add_partitions("t", pid + 1, epoch, [("a", 0)], 0)).error == E.INVALID_PRODUCER_ID_MAPPING
    assert as_op(c.add_partitions("t", pid, epoch + 1, [("a", 0)], 0)).error == E.PRODUCER_FENCED
    assert as_op(c.add_partitions("", pid, epoch, [("a", 0)], 0)).error == E.INVALID_REQUEST
    added = _commit(c, as_op(c.add_partitions("t", pid, epoch, [("a", 0)], 100)))
    assert added.transit is not None and added.transit.start_ms == 100
    # Already in the transaction: no record at all.
    assert as_op(c.add_partitions("t", pid, epoch, [("a", 0)], 150)).transit is None
    more = _commit(c, as_op(c.add_partitions("t", pid, epoch, [("b", 1)], 200)))
    assert more.transit is not None and more.transit.start_ms == 100
    assert c.txns["t"].partitions == {("a", 0), ("b", 1)}
    _commit(c, as_op(c.end_txn("t", pid, epoch, True, 300)))
    assert as_op(c.add_partitions("t", pid, epoch, [("c", 0)], 310)).error == E.CONCURRENT_TRANSACTIONS


def test_verify_partitions() -> None:
    c = _coord()
    pid, epoch = _ongoing(c)
    got = c.verify_partitions("t", pid, epoch, [("a", 0), ("z", 0)])
    assert got == {("a", 0): 0, ("z", 0): E.TRANSACTION_ABORTABLE}
    assert c.verify_partitions("t", pid, epoch + 1, [("a", 0)]) == {("a", 0): E.PRODUCER_FENCED}
    assert c.txns["t"].state == S.ONGOING  # nothing written


def test_end_txn_commit_and_retries() -> None:
    c = _coord()
    pid, epoch = _ongoing(c)
    op = as_op(c.end_txn("t", pid, epoch, True, 50))
    assert op.writes_markers and op.transit is not None and op.transit.state == S.PREPARE_COMMIT
    _commit(c, op)
    assert as_op(c.end_txn("t", pid, epoch, True, 51)).error == E.CONCURRENT_TRANSACTIONS
    assert as_op(c.end_txn("t", pid, epoch, False, 51)).error == E.INVALID_TXN_STATE
    done = _commit(c, as_op(c.complete("t", 52)))
    assert done.transit is not None and done.transit.partitions == frozenset()
    retry = as_op(c.end_txn("t", pid, epoch, True, 53))
    assert (retry.error, retry.producer_id, retry.producer_epoch, retry.transit) == (
        0, pid, epoch, None)
    assert as_op(c.end_txn("t", pid, epoch, False, 53)).error == E.INVALID_TXN_STATE


def test_end_txn_errors() -> None:
    c = _coord()
    assert as_op(c.end_txn("t", 1, 0, True, 0)).error == E.INVALID_PRODUCER_ID_MAPPING
    op = _init(c)
    assert as_op(c.end_txn("t", op.producer_id, 0, True, 0)).error == E.INVALID_TXN_STATE  # Empty
    assert as_op(c.end_txn("t", op.producer_id, 1, True, 0)).error == E.PRODUCER_FENCED
    assert as_op(c.end_txn("t", op.producer_id + 5, 0, True, 0)).error == E.INVALID_PRODUCER_ID_MAPPING
    assert as_op(c.end_txn("", op.producer_id, 0, True, 0)).error == E.INVALID_REQUEST


def test_end_txn_v5_bumps_epoch_every_transaction() -> None:
    c = _coord()
    pid, epoch = _ongoing(c)
    op = _commit(c, as_op(c.end_txn("t", pid, epoch, True, 50, client_tv=2)))
    assert op.producer_epoch == epoch + 1 and c.txns["t"].last_producer_epoch == epoch
    # The retry with the old epoch is recognised while markers are written and after.
    assert as_op(c.end_txn("t", pid, epoch, True, 51, client_tv=2)).error == E.CONCURRENT_TRANSACTIONS
    _commit(c, as_op(c.complete("t", 52)))
    retry = as_op(c.end_txn("t", pid, epoch, True, 53, client_tv=2))
    assert (retry.error, retry.producer_epoch) == (0, epoch + 1)


def test_end_txn_v5_aborts_with_no_partition_from_empty_and_complete() -> None:
    """Kafka's TV2 table: at the current epoch an abort of Empty, CompleteCommit or
    CompleteAbort is a transaction with no partition (PrepareAbort, epoch bumped, no
    markers, started now); its retry answers NONE; a commit there is INVALID_TXN_STATE, as
    is an abort retried after a commit. TV1 keeps INVALID_TXN_STATE for Empty."""
    c = _coord()
    op = _init(c)
    pid, epoch = op.producer_id, op.producer_epoch
    assert as_op(c.end_txn("t", pid, epoch, False, 5)).error == E.INVALID_TXN_STATE  # TV1
    assert as_op(c.end_txn("t", pid, epoch, True, 5, client_tv=2)).error == E.INVALID_TXN_STATE
    empty_abort = _commit(c, as_op(c.end_txn("t", pid, epoch, False, 7, client_tv=2)))
    assert (empty_abort.error, empty_abort.producer_epoch, empty_abort.writes_markers) == (
        0, epoch + 1, True)
    assert empty_abort.transit is not None and empty_abort.transit.partitions == frozenset()
    assert empty_abort.transit.start_ms == 7
    _commit(c, as_op(c.complete("t", 8)))
    md = c.txns["t"]
    assert (md.state, md.producer_epoch, md.last_producer_epoch) == (
        S.COMPLETE_ABORT, epoch + 1, epoch)
    retry = as_op(c.end_txn("t", pid, epoch, False, 9, client_tv=2))
    assert (retry.error, retry.producer_epoch, retry.transit) == (0, epoch + 1, None)
    assert as_op(c.end_txn("t", pid, epoch + 1, True, 9, client_tv=2)).error == \
        E.INVALID_TXN_STATE
    # A committed transaction, then an abort at the new epoch: another empty abort.
    epoch += 1
    _commit(c, as_op(c.add_partitions("t", pid, epoch, [("a", 0)], 10, client_tv=2)))
    _commit(c, as_op(c.end_txn("t", pid, epoch, True, 11, client_tv=2)))
    _commit(c, as_op(c.complete("t", 12)))
    assert as_op(c.end_txn("t", pid, epoch, False, 13, client_tv=2)).error == \
        E.INVALID_TXN_STATE
    again = _commit(c, as_op(c.end_txn("t", pid, epoch + 1, False, 14, client_tv=2)))
    assert (again.error, again.producer_epoch) == (0, epoch + 2)
    # The producer that lost the EndTxn answer re-inits at the epoch it had: a retry.
    _commit(c, as_op(c.complete("t", 15)))
    reinit = _init(c, now=16, expected=(pid, epoch + 1))
    assert (reinit.error, reinit.producer_epoch) == (0, epoch + 2)


def test_timeouts_abort_with_epoch_fence() -> None:
    c = _coord()
    pid, epoch = _ongoing(c, now=1000)
    assert c.timed_out(61_000) == []
    assert c.timed_out(61_001) == ["t"]
    aborted = c.abort_timed_out(61_001)
    assert aborted.response == ["t"]
    [record] = aborted.records
    assert record.transit is not None and record.transit.state == S.PREPARE_ABORT
    c.replay(record)
    assert c.txns["t"].producer_epoch == epoch + 1
    assert c.pending_markers() == ["t"]
    _commit(c, as_op(c.complete("t", 61_002)))
    assert c.timed_out(10**9) == [] and c.pending_markers() == []
    assert as_op(c.end_txn("t", pid, epoch, True, 61_003)).error == E.PRODUCER_FENCED


def test_at_transaction_version_2_the_coordinators_abort_is_a_tv2_abort() -> None:
    """`abortTimedOutTransactions` ends the transaction at the server's TV: the epoch is
    bumped once, the fenced one kept as the last epoch, ClientTransactionVersion 2. The
    request's own version then picks the path: a TV2 producer's abort at its old epoch is a
    retry (answered with the new epoch, so it carries on), its commit INVALID_TXN_STATE;
    a TV1 producer (EndTxn v4-) is fenced."""
    ids = itertools.count(1000)
    c = TransactionCoordinator(lambda: next(ids), transaction_version=2)
    pid, epoch = _ongoing(c, now=1000)
    aborted = c.abort_timed_out(61_001)
    assert aborted.response == ["t"]
    c.replay(aborted.records[0])
    md = c.txns["t"]
    assert (md.state, md.producer_epoch, md.last_producer_epoch, md.client_tv) == (
        S.PREPARE_ABORT, epoch + 1, epoch, 2)
    _commit(c, as_op(c.complete("t", 61_002)))
    assert (c.txns["t"].state, c.txns["t"].producer_epoch) == (S.COMPLETE_ABORT, epoch + 1)
    abort = as_op(c.end_txn("t", pid, epoch, False, 61_003, client_tv=2))
    assert (abort.error, abort.producer_id, abort.producer_epoch, abort.transit) == (
        0, pid, epoch + 1, None)
    assert as_op(c.end_txn("t", pid, epoch, True, 61_004, client_tv=2)).error == E.INVALID_TXN_STATE
    assert as_op(c.end_txn("t", pid, epoch, False, 61_005, client_tv=0)).error == E.PRODUCER_FENCED
    # A new instance's InitProducerId fences an ongoing transaction the same way.
    _commit(c, as_op(c.add_partitions("t", pid, epoch + 1, [("a", 0)], 61_006, client_tv=2)))
    fenced = _commit(c, as_op(c.init_producer_id("t", 60_000, None, 61_007)))
    assert fenced.error == E.CONCURRENT_TRANSACTIONS
    assert (c.txns["t"].producer_epoch, c.txns["t"].client_tv) == (epoch + 2, 2)


def test_expiration_and_tombstone_replay() -> None:
    c = _coord()
    _init(c, now=0)
    assert c.expired(10, expiration_ms=100) == []
    assert c.expired(100, expiration_ms=100) == ["t"]
    [tombstone] = c.remove_expired(100, expiration_ms=100).records
    assert tombstone.value is None and tombstone.value_bytes() is None
    c.replay(tombstone)
    assert "t" not in c.txns
    c.replay(TxnRecord("u", None))
    assert "u" not in c.txns


def test_replay_rebuilds_what_live_operations_built() -> None:
    live = _coord()
    log: list[tuple[str, bytes | None]] = []

    def write(op: Op) -> None:
        [record] = op.result.records
        log.append((record.tid, record.value_bytes()))
        live.replay(record)

    op = as_op(live.init_producer_id("t", 60_000, None, 0))
    write(op)
    write(as_op(live.add_partitions("t", op.producer_id, 0, [("a", 0), ("a", 2), ("b", 1)], 5)))
    write(as_op(live.end_txn("t", op.producer_id, 0, False, 6)))
    loaded = _coord()
    for tid, raw in log:
        loaded.replay(loaded.decode(encode_key(tid), raw))
    got, want = loaded.txns["t"], live.txns["t"]
    assert got == TransactionMetadata(
        "t", want.producer_id, want.producer_epoch, -1, want.timeout_ms, S.PREPARE_ABORT,
        {("a", 0), ("a", 2), ("b", 1)}, 5, 6, -1, -1, 0)
    # Like Kafka's v0 record, the previous producer id is not stored.
    assert want.prev_producer_id == want.producer_id
    assert loaded.pending_markers() == ["t"]


def test_list_transactions_filters() -> None:
    c = _coord()
    _ongoing(c, now=100)
    _init(c, tid="idle", now=0)
    found, unknown = c.list_transactions(["Ongoing", "Bogus"], [], -1, None, 200)
    assert [m.transactional_id for m in found] == ["t"] and unknown == ["Bogus"]
    assert c.list_transactions(["Ongoing"], [], 150, None, 200)[0] == []
    assert len(c.list_transactions(["Ongoing"], [], 99, None, 200)[0]) == 1
    assert [m.transactional_id for m in c.list_transactions([], [], -1, "id.*", 200)[0]] == [
        "idle"]
    pid = c.txns["idle"].producer_id
    assert [m.transactional_id for m in c.list_transactions([], [pid], -1, None, 0)[0]] == [
        "idle"]
