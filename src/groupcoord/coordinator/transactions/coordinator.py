"""The transaction coordinator's decisions, without IO.

Mirrors Kafka's `TransactionCoordinator` (`handleInitProducerId`,
`handleAddPartitionsToTransaction`, `handleVerifyPartitionsInTransaction`,
`handleEndTransaction` / `endTransaction`, `abortTimedOutTransactions`) and the cache side of
`TransactionStateManager` (`timedOutTransactions`, `removeExpiredTransactionalIds`,
`listTransactionStates`), for a broker that leads every `__transaction_state` partition.

Every operation returns a `TxnOp`: an error code, the producer id/epoch to answer with,
and at most one `TxnTransit` to append to `__transaction_state`. The runtime appends the
record, then calls `apply`; the metadata never changes otherwise (replay at load uses
`replay`). A transit into PrepareCommit/PrepareAbort means markers must be written to every
partition of the transaction before `complete` may be called. Appends here are synchronous,
so Kafka's `pendingState` reduces to the Prepare* states: while markers are being written,
other calls see PrepareCommit/PrepareAbort and get CONCURRENT_TRANSACTIONS, as in Kafka.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from groupcoord.coordinator.transactions.state import (
    EXPIRATION_ALLOWED,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    S,
    TopicPartition,
    TransactionMetadata,
    TransactionState,
    TxnTransit,
    is_epoch_exhausted,
)
from groupcoord.logformat.transaction_records import TransactionLogValue
from groupcoord.wire.errors import ErrorCode

DEFAULT_MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms
DEFAULT_ID_EXPIRATION_MS = 7 * 24 * 3600 * 1000  # transactional.id.expiration.ms
PREPARE = (S.PREPARE_COMMIT, S.PREPARE_ABORT)
COMPLETE = (S.COMPLETE_COMMIT, S.COMPLETE_ABORT)


@dataclass
class TxnOp:
    """One operation's outcome: answer, and the record to append first (if any)."""

    error: int = ErrorCode.NONE
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    tid: str = ""
    transit: TxnTransit | None = None

    @property
    def writes_markers(self) -> bool:
        return self.transit is not None and self.transit.state in PREPARE


def _error(code: int) -> TxnOp:
    return TxnOp(error=code)


class TransactionCoordinator:
    """All transactional ids of this broker (every `__transaction_state` partition)."""

    def __init__(self, next_producer_id: Callable[[], int],
                 max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
                 transaction_version: int = 0) -> None:
        """`transaction_version` is the broker's finalized `transaction.version`, at which
        the coordinator's own aborts (timeouts, fencing) run, as Kafka's
        `txnManager.transactionVersionLevel()`."""
        self.next_producer_id = next_producer_id
        self.max_timeout_ms = max_timeout_ms
        self.transaction_version = transaction_version
        self.txns: dict[str, TransactionMetadata] = {}

    # -- log ---------------------------------------------------------------------------

    def replay(self, tid: str, value: TransactionLogValue | None) -> None:
        """Load one `__transaction_state` record (the latest value wins; None deletes)."""
        if value is None:
            self.txns.pop(tid, None)
        else:
            self.txns[tid] = TransactionMetadata.from_value(tid, value)

    def apply(self, tid: str, transit: TxnTransit) -> None:
        """Take a transit whose record has been appended; Dead removes the id."""
        if transit.state == S.DEAD:
            self.txns.pop(tid, None)
            return
        self.txns[tid].apply(transit)

    # -- InitProducerId ------------------------------------------------------------------

    def validate_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.max_timeout_ms

    def init_producer_id(self, tid: str, timeout_ms: int, expected: tuple[int, int] | None,
                         now_ms: int) -> TxnOp:
        """`expected` is the (producer id, epoch) a v3+ client resumes with, else None."""
        if tid == "":
            return _error(ErrorCode.INVALID_REQUEST)
        if not self.validate_timeout(timeout_ms):
            return _error(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        md = self.txns.get(tid)
        if md is None:
            # Kept in the cache before the append, like putTransactionStateIfNotExists.
            md = self.txns[tid] = TransactionMetadata(tid, self.next_producer_id(),
                                                      timeout_ms=timeout_ms,
                                                      last_update_ms=now_ms)
        if expected is not None and not _valid_expected_pid(md, expected):
            return _error(ErrorCode.PRODUCER_FENCED)
        if md.state in PREPARE:
            return _error(ErrorCode.CONCURRENT_TRANSACTIONS)
        if md.state == S.ONGOING:
            # Abort first with a bumped epoch the caller never sees; its retry bumps again.
            return TxnOp(ErrorCode.CONCURRENT_TRANSACTIONS, tid=tid,
                         transit=self._fence_and_abort(md, now_ms))
        if md.state in (S.EMPTY, *COMPLETE):
            return self._bump_or_rotate(md, timeout_ms, expected, now_ms)
        raise AssertionError(f"transactional id {tid} in state {md.state.kafka_name}")

    def _bump_or_rotate(self, md: TransactionMetadata, timeout_ms: int,
                        expected: tuple[int, int] | None, now_ms: int) -> TxnOp:
        if is_epoch_exhausted(md.producer_epoch) and (
                expected is None or expected[1] == md.producer_epoch):
            transit = md.prepare_producer_id_rotation(self.next_producer_id(), timeout_ms,
                                                      now_ms, expected is not None)
        else:
            bumped = md.producer_epoch + 1
            if expected is None:
                epochs = (bumped, NO_PRODUCER_EPOCH)
            elif md.producer_epoch == NO_PRODUCER_EPOCH or expected[1] == md.producer_epoch:
                epochs = (bumped, md.producer_epoch)
            elif expected[1] == md.last_producer_epoch:
                # A retry of a bump whose answer was lost: the same epoch again.
                epochs = (md.producer_epoch, md.last_producer_epoch)
            else:
                return _error(ErrorCode.PRODUCER_FENCED)
            transit = md.prepare_epoch_bump(epochs[0], epochs[1], timeout_ms, now_ms)
        return TxnOp(ErrorCode.NONE, transit.producer_id, transit.producer_epoch,
                     md.transactional_id, transit)

    # -- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------

    def _check_producer(self, tid: str, pid: int, epoch: int) -> tuple[int, TransactionMetadata
                                                                        | None]:
        if not tid:
            return ErrorCode.INVALID_REQUEST, None
        md = self.txns.get(tid)
        if md is None or md.producer_id != pid:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if md.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, md

    def add_partitions(self, tid: str, pid: int, epoch: int,
                       partitions: Iterable[TopicPartition], now_ms: int,
                       client_tv: int = 0) -> TxnOp:
        error, md = self._check_producer(tid, pid, epoch)
        if md is None:
            return _error(error)
        if md.state in PREPARE:
            return _error(ErrorCode.CONCURRENT_TRANSACTIONS)
        added = frozenset(partitions)
        if md.state == S.ONGOING and added <= md.partitions:
            return TxnOp(ErrorCode.NONE, pid, epoch, tid)
        transit = md.prepare_add_partitions(added, now_ms, client_tv)
        return TxnOp(ErrorCode.NONE, pid, epoch, tid, transit)

    def verify_partitions(self, tid: str, pid: int, epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4+ verifyOnly (KIP-890 part 1): nothing is written."""
        parts = list(partitions)
        error, md = self._check_producer(tid, pid, epoch)
        if md is not None and md.state in PREPARE:
            error = ErrorCode.CONCURRENT_TRANSACTIONS
        if md is None or error:
            return dict.fromkeys(parts, error)
        return {tp: ErrorCode.NONE if tp in md.partitions else ErrorCode.TRANSACTION_ABORTABLE
                for tp in parts}

    # -- EndTxn ----------------------------------------------------------------------------

    def end_txn(self, tid: str, pid: int, epoch: int, commit: bool, now_ms: int,
                client_tv: int = 0, from_client: bool = True) -> TxnOp:
        if not tid:
            return _error(ErrorCode.INVALID_REQUEST)
        md = self.txns.get(tid)
        if md is None:
            return _error(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        # The request's transaction version picks the path (`endTransaction` ->
        # `endTransactionWithTV1` below 2), whatever version wrote the transaction's state.
        tv2 = client_tv >= 2
        retry_on_overflow = (tv2 and md.prev_producer_id == pid and epoch == 32766
                             and md.producer_epoch == 0)
        if md.producer_id != pid and not retry_on_overflow:
            return _error(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if not self._valid_end_epoch(md, epoch, from_client, retry_on_overflow, tv2):
            return _error(ErrorCode.PRODUCER_FENCED)
        state = md.state
        if state == S.ONGOING:
            next_pid = NO_PRODUCER_ID
            if client_tv >= 2 and is_epoch_exhausted(md.producer_epoch):
                next_pid = self.next_producer_id()
            transit = md.prepare_abort_or_commit(commit, client_tv, next_pid, now_ms)
            return TxnOp(ErrorCode.NONE, transit.producer_id, transit.producer_epoch, tid, transit)
        wanted_complete = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        wanted_prepare = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        if state == wanted_complete:
            return TxnOp(ErrorCode.NONE, md.producer_id, md.producer_epoch, tid)
        if state == wanted_prepare:
            return _error(ErrorCode.CONCURRENT_TRANSACTIONS)
        return _error(ErrorCode.INVALID_TXN_STATE)

    @staticmethod
    def _valid_end_epoch(md: TransactionMetadata, epoch: int, from_client: bool,
                         retry_on_overflow: bool, tv2: bool) -> bool:
        if not tv2:
            # TV1: clients never bump the epoch without the coordinator.
            return (not from_client or epoch == md.producer_epoch) and epoch >= md.producer_epoch
        bumped = md.producer_epoch == epoch + 1  # a retry of an EndTxn that already bumped
        if md.state in PREPARE:
            return bumped
        if md.state in COMPLETE:
            return bumped or retry_on_overflow
        return epoch == md.producer_epoch

    def complete(self, tid: str, now_ms: int) -> TxnOp:
        """Every marker is written: PrepareCommit/PrepareAbort -> CompleteCommit/Abort."""
        md = self.txns.get(tid)
        if md is None or md.state not in PREPARE:
            return _error(ErrorCode.INVALID_TXN_STATE)
        transit = md.prepare_complete(now_ms)
        return TxnOp(ErrorCode.NONE, transit.producer_id, transit.producer_epoch, tid, transit)

    # -- background work -------------------------------------------------------------------

    def timed_out(self, now_ms: int) -> list[str]:
        """Ongoing transactions older than their timeout (Kafka's timedOutTransactions)."""
        return [tid for tid, md in self.txns.items()
                if md.state == S.ONGOING and md.start_ms + md.timeout_ms < now_ms]

    def abort_timed_out(self, tid: str, now_ms: int) -> TxnOp:
        """Fence the producer and abort (abortTimedOutTransactions): PrepareAbort, epoch+1."""
        md = self.txns.get(tid)
        if md is None or md.state != S.ONGOING:
            return _error(ErrorCode.CONCURRENT_TRANSACTIONS)
        return TxnOp(ErrorCode.NONE, tid=tid, transit=self._fence_and_abort(md, now_ms))

    def _fence_and_abort(self, md: TransactionMetadata, now_ms: int) -> TxnTransit:
        """The coordinator's abort of an ongoing transaction at the server's transaction
        version; at 2 an exhausted epoch gets its next producer id, as an EndTxn does."""
        next_pid = NO_PRODUCER_ID
        if self.transaction_version >= 2 and is_epoch_exhausted(md.producer_epoch):
            next_pid = self.next_producer_id()
        return md.prepare_fence_and_abort(now_ms, self.transaction_version, next_pid)

    def pending_markers(self) -> list[str]:
        """Ids whose markers are not all written yet (PrepareCommit/PrepareAbort)."""
        return [tid for tid, md in self.txns.items() if md.state in PREPARE]

    def expired(self, now_ms: int, expiration_ms: int = DEFAULT_ID_EXPIRATION_MS) -> list[str]:
        """Idle ids to delete (removeExpiredTransactionalIds): write a tombstone each."""
        return [tid for tid, md in self.txns.items()
                if md.state in EXPIRATION_ALLOWED and md.last_update_ms <= now_ms - expiration_ms]

    # -- admin -----------------------------------------------------------------------------

    def list_transactions(self, states: list[str], producer_ids: list[int], duration_ms: int,
                          pattern: str | None, now_ms: int
                          ) -> tuple[list[TransactionMetadata], list[str]]:
        """(matching metadata, unknown state filters), as listTransactionStates."""
        wanted = {TransactionState.from_name(name) for name in states}
        unknown = [name for name in states if TransactionState.from_name(name) is None]
        regex = re.compile(pattern) if pattern else None
        pids = set(producer_ids)
        out = []
        for md in self.txns.values():
            if md.state == S.DEAD or (pids and md.producer_id not in pids):
                continue
            if states and md.state not in wanted:
                continue
            if duration_ms >= 0 and now_ms - md.start_ms <= duration_ms:
                continue
            if regex is not None and not regex.fullmatch(md.transactional_id):
                continue
            out.append(md)
        return out, unknown


def _valid_expected_pid(md: TransactionMetadata, expected: tuple[int, int]) -> bool:
    """InitProducerId v3+: the resuming producer is the current one (isValidProducerId)."""
    pid, epoch = expected
    return (md.producer_epoch == NO_PRODUCER_EPOCH or pid == md.producer_id
            or (pid == md.prev_producer_id and is_epoch_exhausted(epoch)))
