"""The transaction coordinator's decisions, without IO: one `__transaction_state`
partition as a shard of the generic coordinator runtime.

Mirrors Kafka's `TransactionCoordinator` (`handleInitProducerId`,
`handleAddPartitionsToTransaction`, `handleVerifyPartitionsInTransaction`,
`handleEndTransaction` / `endTransaction`, `abortTimedOutTransactions`) and the cache side of
`TransactionStateManager` (`timedOutTransactions`, `removeExpiredTransactionalIds`,
`listTransactionStates`) for the transactional ids of one partition.

Every operation is a handler: it returns a `Result` whose response is a `TxnReply` (an
error code, the producer id/epoch to answer with, whether markers must be written) and
whose records are at most one `TxnRecord` per transactional id. The runtime runs handlers
one at a time on the shard's queue, replays their records (`replay`, the one path that
changes the metadata, live and at load), appends them and only then answers, so a handler
sees every transition queued before it, and Kafka's `pendingState` reduces to the Prepare*
states: while markers are being written, other calls see PrepareCommit/PrepareAbort and get
CONCURRENT_TRANSACTIONS, as in Kafka. A record into PrepareCommit/PrepareAbort means
markers must be written to every partition of the transaction before `complete` may be
called. What the shard asks of the broker is returned as effects, which the runtime runs
once the records are appended: `WriteMarkers` (at each load, and after each abort pass),
and `ObserveProducerIds` (at each load: the highest producer id the log holds, so the
broker never hands one out again; ids written live come from `next_producer_id`).

The coordinator's scheduled tasks (`transaction-abort`, `transactionalId-expiration`) are
keyed timers of the shard: `on_loaded` arms them and each run re-arms itself, so they run
only while the shard is loaded.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.result import Effect, Result, ScheduleTimer
from groupcoord.coordinator.shard import Shard
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
from groupcoord.logformat.transaction_records import (
    TransactionLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from groupcoord.wire.errors import ErrorCode

DEFAULT_MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms
DEFAULT_ID_EXPIRATION_MS = 7 * 24 * 3600 * 1000  # transactional.id.expiration.ms
# transaction.abort.timed.out.transaction.cleanup.interval.ms
DEFAULT_ABORT_INTERVAL_MS = 10_000
# transaction.remove.expired.transaction.cleanup.interval.ms
DEFAULT_EXPIRATION_INTERVAL_MS = 3_600_000
# The keys of the two periodic passes' timers.
ABORT_TIMER = ("transaction-abort",)
EXPIRATION_TIMER = ("transactionalId-expiration",)
PREPARE = (S.PREPARE_COMMIT, S.PREPARE_ABORT)
COMPLETE = (S.COMPLETE_COMMIT, S.COMPLETE_ABORT)

log = logging.getLogger("groupcoord.transactions")


@dataclass(frozen=True, slots=True)
class WriteMarkers(Effect):
    """Write the markers of these transactional ids (those in PrepareCommit/PrepareAbort),
    then complete them: Kafka's loader and abort task hand them to the marker channel."""

    tids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ObserveProducerIds(Effect):
    """Producer ids up to `highest` are in the log: the broker's id source skips them."""

    highest: int


TxnEffect = WriteMarkers | ObserveProducerIds


@dataclass(frozen=True, slots=True)
class TxnTimers:
    """The periodic passes' settings: how often each runs, and how long an idle
    transactional id lives."""

    abort_interval_ms: int = DEFAULT_ABORT_INTERVAL_MS
    expiration_ms: int = DEFAULT_ID_EXPIRATION_MS
    expiration_interval_ms: int = DEFAULT_EXPIRATION_INTERVAL_MS


@dataclass(frozen=True, slots=True)
class TxnReply:
    """What a transaction handler answers: an error code, the producer id and epoch, and
    whether the transaction's markers must now be written."""

    error: int = ErrorCode.NONE
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    writes_markers: bool = False


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """One `__transaction_state` record: the transactional id and its value (None: a
    tombstone). A record written live carries the transit it was made from, so replay
    also keeps what the log does not hold (the last producer epoch), as Kafka's cache does;
    a record read back from the log has none."""

    tid: str
    value: TransactionLogValue | None
    transit: TxnTransit | None = None

    @classmethod
    def of(cls, tid: str, transit: TxnTransit) -> TxnRecord:
        return cls(tid, None if transit.state == S.DEAD else transit.to_value(), transit)

    def key_bytes(self) -> bytes:
        return encode_key(self.tid)

    def value_bytes(self) -> bytes | None:
        return encode_value(self.value)


def _error(code: int) -> Result:
    return Result(response=TxnReply(error=code))


def _write(tid: str, transit: TxnTransit, error: int = ErrorCode.NONE) -> Result:
    """Write `transit`; answer with its producer id and epoch (or `error`)."""
    reply = TxnReply(error, transit.producer_id, transit.producer_epoch,
                     transit.state in PREPARE)
    return Result(records=[TxnRecord.of(tid, transit)], response=reply)


class TransactionCoordinator(Shard):
    """The transactional ids of one `__transaction_state` partition."""

    def __init__(self, next_producer_id: Callable[[], int],
                 max_timeout_ms: int = DEFAULT_MAX_TIMEOUT_MS,
                 transaction_version: int = 0,
                 timers: TxnTimers = TxnTimers()) -> None:
        """`transaction_version` is the broker's finalized `transaction.version`, at which
        the coordinator's own aborts (timeouts, fencing) run, as Kafka's
        `txnManager.transactionVersionLevel()`; `timers` sets the periodic passes."""
        self.next_producer_id = next_producer_id
        self.max_timeout_ms = max_timeout_ms
        self.transaction_version = transaction_version
        self.timers = timers
        self.txns: dict[str, TransactionMetadata] = {}
        # The highest producer id replayed (-1: none), for `ObserveProducerIds` at load.
        self.highest_producer_id = -1

    # -- log: replay is the one mutation path ------------------------------------------

    def decode(self, key: bytes, value: bytes | None) -> TxnRecord:
        value_obj, _version = decode_value(value)
        return TxnRecord(decode_key(key), value_obj)

    def replay(self, record: Any, offset: int = -1, producer_id: int = NO_PRODUCER_ID,
               producer_epoch: int = -1) -> None:
        """One `__transaction_state` record: the latest value wins, None deletes."""
        tid, value, transit = record.tid, record.value, record.transit
        if value is None:
            self.txns.pop(tid, None)
            return
        self.highest_producer_id = max(self.highest_producer_id, value.producer_id)
        md = self.txns.get(tid)
        if transit is None:
            self.txns[tid] = TransactionMetadata.from_value(tid, value)
        elif md is None:
            self.txns[tid] = TransactionMetadata.from_transit(tid, transit)
        else:
            md.apply(transit)

    def on_loaded(self, now_ms: int) -> Result:
        """PrepareCommit/PrepareAbort found in the log get their markers again; Ongoing
        transactions are left to time out, as Kafka's loader does. The periodic passes
        start (again) with the load."""
        effects: list[Effect] = []
        if self.highest_producer_id >= 0:
            effects.append(ObserveProducerIds(self.highest_producer_id))
        pending = self.pending_markers()
        if pending:
            effects.append(WriteMarkers(tuple(pending)))
        return Result(timers=[
            ScheduleTimer(ABORT_TIMER, now_ms + self.timers.abort_interval_ms),
            ScheduleTimer(EXPIRATION_TIMER, now_ms + self.timers.expiration_interval_ms)],
            effects=effects)

    def on_timer(self, key: tuple[Any, ...], now_ms: int) -> Result | None:
        """A periodic pass is due: run it and arm the next one."""
        if key == ABORT_TIMER:
            result = self.abort_pass(now_ms)
            interval = self.timers.abort_interval_ms
        elif key == EXPIRATION_TIMER:
            result = self.remove_expired(now_ms, self.timers.expiration_ms)
            interval = self.timers.expiration_interval_ms
        else:
            return None
        result.timers.append(ScheduleTimer(key, now_ms + interval))
        return result

    # -- InitProducerId ------------------------------------------------------------------

    def validate_timeout(self, timeout_ms: int) -> bool:
        return 0 < timeout_ms <= self.max_timeout_ms

    def init_producer_id(self, tid: str, timeout_ms: int, expected: tuple[int, int] | None,
                         now_ms: int) -> Result:
        """`expected` is the (producer id, epoch) a v3+ client resumes with, else None."""
        if tid == "":
            return _error(ErrorCode.INVALID_REQUEST)
        if not self.validate_timeout(timeout_ms):
            return _error(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        md = self.txns.get(tid)
        if md is None:
            # Kafka's putTransactionStateIfNotExists; cached by the replay of its record.
            md = TransactionMetadata(tid, self.next_producer_id(), timeout_ms=timeout_ms,
                                     last_update_ms=now_ms)
        if expected is not None and not _valid_expected_pid(md, expected):
            return _error(ErrorCode.PRODUCER_FENCED)
        if md.state in PREPARE:
            return _error(ErrorCode.CONCURRENT_TRANSACTIONS)
        if md.state == S.ONGOING:
            # Abort first with a bumped epoch the caller never sees; its retry bumps again.
            transit = self._fence_and_abort(md, now_ms)
            return _write(tid, transit, ErrorCode.CONCURRENT_TRANSACTIONS)
        if md.state in (S.EMPTY, *COMPLETE):
            return self._bump_or_rotate(md, timeout_ms, expected, now_ms)
        raise AssertionError(f"transactional id {tid} in state {md.state.kafka_name}")

    def _bump_or_rotate(self, md: TransactionMetadata, timeout_ms: int,
                        expected: tuple[int, int] | None, now_ms: int) -> Result:
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
        return _write(md.transactional_id, transit)

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
                       client_tv: int = 0) -> Result:
        error, md = self._check_producer(tid, pid, epoch)
        if md is None:
            return _error(error)
        if md.state in PREPARE:
            return _error(ErrorCode.CONCURRENT_TRANSACTIONS)
        added = frozenset(partitions)
        if md.state == S.ONGOING and added <= md.partitions:
            return Result(response=TxnReply(ErrorCode.NONE, pid, epoch))
        return _write(tid, md.prepare_add_partitions(added, now_ms, client_tv))

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
                client_tv: int = 0, from_client: bool = True) -> Result:
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
            return self._prepare_end(md, commit, client_tv, now_ms)
        if state in PREPARE:
            wanted_prepare = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            return _error(ErrorCode.CONCURRENT_TRANSACTIONS if state == wanted_prepare
                          else ErrorCode.INVALID_TXN_STATE)
        wanted_complete = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        if not tv2:
            # `endTransactionWithTV1`: a completed outcome again is a retry; Empty is invalid.
            if state == wanted_complete:
                return Result(response=TxnReply(ErrorCode.NONE, md.producer_id,
                                                md.producer_epoch))
            return _error(ErrorCode.INVALID_TXN_STATE)
        # TV2 (`endTransaction`): a retry carries the epoch before the bump; at the current
        # epoch an abort of Empty, CompleteCommit or CompleteAbort is a transaction of its
        # own with no partition (the producer cannot know whether its produces added any),
        # which bumps the epoch like any EndTxn; a commit there is invalid.
        retry = md.producer_epoch == epoch + 1 or retry_on_overflow
        if retry:
            if state == wanted_complete:
                return Result(response=TxnReply(ErrorCode.NONE, md.producer_id,
                                                md.producer_epoch))
            return _error(ErrorCode.INVALID_TXN_STATE)
        if commit:
            return _error(ErrorCode.INVALID_TXN_STATE)
        return self._prepare_end(md, commit, client_tv, now_ms, no_partition_added=True)

    def _prepare_end(self, md: TransactionMetadata, commit: bool, client_tv: int, now_ms: int,
                     no_partition_added: bool = False) -> Result:
        """Ongoing (or, at TV2, an empty abort) -> PrepareCommit/PrepareAbort; a TV2 bump
        past the last epoch takes a new producer id at completion."""
        next_pid = NO_PRODUCER_ID
        if client_tv >= 2 and is_epoch_exhausted(md.producer_epoch):
            next_pid = self.next_producer_id()
        return _write(md.transactional_id, md.prepare_abort_or_commit(
            commit, client_tv, next_pid, now_ms, no_partition_added))

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
            return bumped or retry_on_overflow or epoch == md.producer_epoch
        return epoch == md.producer_epoch

    def complete(self, tid: str, now_ms: int) -> Result:
        """Every marker is written: PrepareCommit/PrepareAbort -> CompleteCommit/Abort."""
        md = self.txns.get(tid)
        if md is None or md.state not in PREPARE:
            return _error(ErrorCode.INVALID_TXN_STATE)
        return _write(tid, md.prepare_complete(now_ms))

    # -- background work -------------------------------------------------------------------

    def timed_out(self, now_ms: int) -> list[str]:
        """Ongoing transactions older than their timeout (Kafka's timedOutTransactions)."""
        return [tid for tid, md in self.txns.items()
                if md.state == S.ONGOING and md.start_ms + md.timeout_ms < now_ms]

    def abort_timed_out(self, now_ms: int) -> Result:
        """Fence the producers of every transaction past its timeout and abort
        (abortTimedOutTransactions): PrepareAbort, epoch+1; the response lists their ids."""
        records, aborted = [], []
        for tid in self.timed_out(now_ms):
            records.append(TxnRecord.of(tid, self._fence_and_abort(self.txns[tid], now_ms)))
            aborted.append(tid)
        return Result(records=records, response=aborted)

    def abort_pass(self, now_ms: int) -> Result:
        """The `transaction-abort` task: abort the timed-out transactions, then write
        the markers of those and of every transaction whose markers are not all written
        yet (their writers start once the records are appended)."""
        result = self.abort_timed_out(now_ms)
        aborted: list[str] = result.response
        for tid in aborted:
            log.info("aborting transaction %r: it exceeded its timeout", tid)
        pending = self.pending_markers()
        markers = aborted + [tid for tid in pending if tid not in aborted]
        if markers:
            result.effects.append(WriteMarkers(tuple(markers)))
        return result

    def remove_expired(self, now_ms: int,
                       expiration_ms: int = DEFAULT_ID_EXPIRATION_MS) -> Result:
        """Tombstone the ids idle longer than `expiration_ms`; the response lists them."""
        expired = self.expired(now_ms, expiration_ms)
        return Result(records=[TxnRecord.of(tid, self.txns[tid].prepare_dead())
                               for tid in expired], response=expired)

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
