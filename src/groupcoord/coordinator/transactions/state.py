"""Transaction states, their transition table, and one transactional id's metadata.

Mirrors Kafka's `TransactionState` (ids and names as `DescribeTransactions` shows them),
`TransactionMetadata` and `TxnTransitMetadata` (core `kafka.coordinator.transaction`).

Rules kept:
- the state changes only through `check_transition`, against `VALID_PREVIOUS` (Kafka's
  `validPreviousStates`); a transition the table does not allow is a bug, not a client error;
- every change is first described as an immutable `TxnTransit` (what will be written to
  `__transaction_state`), and applied with `TransactionMetadata.apply` only after the record
  was appended: the one mutation path, used live and when replaying the log;
- `last_producer_epoch` is not in the log record (Kafka keeps it in memory only), so a
  metadata rebuilt from the log has -1 there, as in Kafka after a coordinator move;
- epochs stop at 32766 (`isEpochExhausted`) so that the coordinator can always fence once
  more with 32767.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

from groupcoord.logformat.transaction_records import TransactionLogValue

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
SHORT_MAX = 32767

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """A transaction's COMMIT/ABORT marker, as WriteTxnMarkers carries it: whose (producer
    id and epoch, the coordinator's epoch), its outcome and the transaction version."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    commit: bool
    transaction_version: int


class TransactionState(IntEnum):
    """Kafka's TransactionState with its on-disk ids."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return _NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        return _BY_NAME.get(name)


_NAMES = {
    TransactionState.EMPTY: "Empty",
    TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit",
    TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit",
    TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead",
    TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {name: state for state, name in _NAMES.items()}

S = TransactionState
VALID_PREVIOUS: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    # Empty and Complete*: a KIP-890 part 2 abort with no partition added.
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT,
                                S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
# States a transactional id may expire from (Kafka's isExpirationAllowed).
EXPIRATION_ALLOWED = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})
PENDING = frozenset({S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT})


class IllegalTransitionError(Exception):
    """A transition the table forbids: a coordinator bug (Kafka's IllegalStateException)."""


def check_transition(current: TransactionState, target: TransactionState) -> None:
    if current not in VALID_PREVIOUS[target]:
        raise IllegalTransitionError(f"illegal transaction transition {current.kafka_name} -> "
                                     f"{target.kafka_name}")


def is_epoch_exhausted(epoch: int) -> bool:
    return epoch >= SHORT_MAX - 1


@dataclass(frozen=True)
class TxnTransit:
    """The target of one transition (Kafka's TxnTransitMetadata): what gets written."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    start_ms: int
    last_update_ms: int
    client_tv: int = 0

    def to_value(self) -> TransactionLogValue:
        parts: dict[str, list[int]] | None = None
        if self.state != S.EMPTY:
            parts = {}
            for topic, partition in sorted(self.partitions):
                parts.setdefault(topic, []).append(partition)
        return TransactionLogValue(
            producer_id=self.producer_id, producer_epoch=self.producer_epoch,
            transaction_timeout_ms=self.timeout_ms, transaction_status=int(self.state),
            transaction_partitions=parts, transaction_last_update_timestamp_ms=self.last_update_ms,
            transaction_start_timestamp_ms=self.start_ms,
            previous_producer_id=self.prev_producer_id, next_producer_id=self.next_producer_id,
            client_transaction_version=self.client_tv)


@dataclass
class TransactionMetadata:
    """One transactional id (Kafka's TransactionMetadata, without locks or pending state)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 60_000
    state: TransactionState = S.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_tv: int = 0

    @classmethod
    def from_value(cls, tid: str, value: TransactionLogValue) -> TransactionMetadata:
        """Kafka's readTxnRecordValue: partitions are ignored for Empty."""
        state = TransactionState(value.transaction_status)
        parts: set[TopicPartition] = set()
        if state != S.EMPTY and value.transaction_partitions:
            parts = {(t, p) for t, ids in value.transaction_partitions.items() for p in ids}
        return cls(tid, value.producer_id, value.producer_epoch, NO_PRODUCER_EPOCH,
                   value.transaction_timeout_ms, state, parts,
                   value.transaction_start_timestamp_ms,
                   value.transaction_last_update_timestamp_ms, value.previous_producer_id,
                   value.next_producer_id, value.client_transaction_version)

    @classmethod
    def from_transit(cls, tid: str, transit: TxnTransit) -> TransactionMetadata:
        """A new id whose first record was written."""
        return cls(tid, transit.producer_id, transit.producer_epoch,
                   transit.last_producer_epoch, transit.timeout_ms, transit.state,
                   set(transit.partitions), transit.start_ms, transit.last_update_ms,
                   transit.prev_producer_id, transit.next_producer_id, transit.client_tv)

    # -- transits (pure: nothing here changes the metadata) ------------------------------

    def _transit(self, state: TransactionState, check: bool = True,
                 **changes: object) -> TxnTransit:
        """The current values with `changes`: every transit is the exact state after it
        (the fields Kafka's completeTransitionTo would not copy keep their values here)."""
        if check:
            check_transition(self.state, state)
        base = TxnTransit(
            producer_id=self.producer_id, prev_producer_id=self.prev_producer_id,
            next_producer_id=self.next_producer_id, producer_epoch=self.producer_epoch,
            last_producer_epoch=self.last_producer_epoch, timeout_ms=self.timeout_ms,
            state=state, partitions=frozenset(self.partitions), start_ms=self.start_ms,
            last_update_ms=self.last_update_ms, client_tv=self.client_tv)
        return replace(base, **changes)  # type: ignore[arg-type]

    def prepare_epoch_bump(self, epoch: int, last_epoch: int, timeout_ms: int,
                           now_ms: int) -> TxnTransit:
        """InitProducerId on an idle id: Empty with the new epoch, no partitions."""
        return self._transit(S.EMPTY, prev_producer_id=self.producer_id,
                             next_producer_id=NO_PRODUCER_ID, producer_epoch=epoch,
                             last_producer_epoch=last_epoch, timeout_ms=timeout_ms,
                             partitions=frozenset(), start_ms=-1, last_update_ms=now_ms,
                             client_tv=0)

    def prepare_producer_id_rotation(self, new_pid: int, timeout_ms: int, now_ms: int,
                                     record_last_epoch: bool) -> TxnTransit:
        """Epochs exhausted: a new producer id at epoch 0."""
        last = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._transit(S.EMPTY, producer_id=new_pid, prev_producer_id=self.producer_id,
                             next_producer_id=NO_PRODUCER_ID, producer_epoch=0,
                             last_producer_epoch=last, timeout_ms=timeout_ms,
                             partitions=frozenset(), start_ms=-1, last_update_ms=now_ms,
                             client_tv=0)

    def prepare_add_partitions(self, added: frozenset[TopicPartition], now_ms: int,
                               client_tv: int = 0) -> TxnTransit:
        """`client_tv` is the transaction version of the adding request (2 for partitions
        a TV2 producer adds implicitly), recorded as Kafka's `prepareAddPartitions` does."""
        starting = self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT)
        return self._transit(S.ONGOING, partitions=frozenset(self.partitions) | added,
                             start_ms=now_ms if starting else self.start_ms,
                             last_update_ms=now_ms, client_tv=client_tv)

    def prepare_fence_and_abort(self, now_ms: int, server_tv: int = 0,
                                next_pid: int = NO_PRODUCER_ID) -> TxnTransit:
        """Ongoing -> PrepareEpochFence -> PrepareAbort with the epoch bumped (Kafka's
        prepareFenceProducerEpoch followed by the abort it triggers); PrepareEpochFence is
        never written, as in Kafka. The abort runs at the broker's finalized transaction
        version (`server_tv`, "not from client, use server TV"): at 2 it is a KIP-890 part 2
        abort (`prepareAbortOrCommit` bumps the epoch once, keeps the fenced one as the last
        epoch, and `next_pid` replaces an exhausted producer id at completion), so the
        fenced producer's own abort at its old epoch is then answered as a retry."""
        if self.producer_epoch >= SHORT_MAX:
            raise IllegalTransitionError("cannot fence a producer at epoch 32767")
        check_transition(self.state, S.PREPARE_EPOCH_FENCE)
        check_transition(S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT)
        if server_tv >= 2:
            return self._transit(S.PREPARE_ABORT, check=False,
                                 producer_epoch=self.producer_epoch + 1,
                                 last_producer_epoch=self.producer_epoch,
                                 next_producer_id=next_pid, last_update_ms=now_ms,
                                 client_tv=server_tv)
        return self._transit(S.PREPARE_ABORT, check=False,
                             producer_epoch=self.producer_epoch + 1,
                             last_producer_epoch=NO_PRODUCER_EPOCH,
                             next_producer_id=NO_PRODUCER_ID, last_update_ms=now_ms, client_tv=0)

    def prepare_abort_or_commit(self, commit: bool, client_tv: int, next_pid: int,
                                now_ms: int, no_partition_added: bool = False) -> TxnTransit:
        """`no_partition_added`: a TV2 abort from Empty or Complete*, whose start time is
        unknown, so the update time stands for it (Kafka's prepareAbortOrCommit)."""
        epoch, last = self.producer_epoch, self.last_producer_epoch
        if client_tv >= 2:  # KIP-890 part 2: every EndTxn bumps the epoch
            epoch, last = self.producer_epoch + 1, self.producer_epoch
        return self._transit(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
                             producer_epoch=epoch, last_producer_epoch=last,
                             next_producer_id=next_pid, last_update_ms=now_ms,
                             start_ms=now_ms if no_partition_added else self.start_ms,
                             client_tv=client_tv)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """The last epoch stays the one before the EndTxn bump (after an overflow too: the
        last epoch the producer saw), so an InitProducerId at that epoch is a retry."""
        target = S.COMPLETE_COMMIT if self.state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if self.client_tv < 2:
            return self._transit(target, partitions=frozenset(), last_update_ms=now_ms)
        pid, epoch = self.producer_id, self.producer_epoch
        if self.next_producer_id != NO_PRODUCER_ID:  # the epoch bump overflowed
            pid, epoch = self.next_producer_id, 0
        return self._transit(target, producer_id=pid, prev_producer_id=self.producer_id,
                             next_producer_id=NO_PRODUCER_ID, producer_epoch=epoch,
                             partitions=frozenset(), last_update_ms=now_ms)

    def prepare_dead(self) -> TxnTransit:
        return self._transit(S.DEAD, partitions=frozenset())

    # -- the mutation ----------------------------------------------------------------------

    def apply(self, transit: TxnTransit) -> None:
        """Take the transit's values (after its record was appended)."""
        check_transition(self.state, transit.state)
        self.producer_id = transit.producer_id
        self.prev_producer_id = transit.prev_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.start_ms = transit.start_ms
        self.last_update_ms = transit.last_update_ms
        self.client_tv = transit.client_tv
