"""One share-partition's in-flight records (KIP-932), as pure code.

Mirrors Kafka's broker-side `SharePartition` with `InFlightState` / `RecordState`:
records in [start offset (SPSO), end offset (SPEO)) are tracked one by one as
AVAILABLE, ACQUIRED, ACKNOWLEDGED or ARCHIVED; everything below SPSO is done, everything
from SPEO on has never been acquired. Rules kept here:

- State changes go through `_move`, which checks the one transition table.
- Only acquisition increments the delivery count. A release or a lock expiry of a record
  whose count reached the delivery limit archives it instead of making it available.
- SPSO advances past the leading run of terminal records; an all-terminal window
  collapses to SPSO = SPEO.
- Every durable change is reported as `StateBatch`es (ACQUIRED is never persisted), which
  the caller writes as a ShareUpdate; replaying those in `state_store` rebuilds what a
  restart must see: acquired-but-unacknowledged records come back AVAILABLE.

No clock: every operation takes `now_ms`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from groupcoord.wire.errors import ErrorCode


class RecordState(IntEnum):
    """Kafka's `RecordState` ids (3 = ARCHIVING belongs to the KIP-1191 DLQ)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


TERMINAL = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})

# The one transition table (Kafka `RecordState.validateTransition`).
TRANSITIONS: dict[RecordState, frozenset[RecordState]] = {
    RecordState.AVAILABLE: frozenset({RecordState.ACQUIRED, RecordState.ARCHIVED}),
    RecordState.ACQUIRED: frozenset({RecordState.AVAILABLE, RecordState.ACKNOWLEDGED,
                                     RecordState.ARCHIVED}),
    RecordState.ACKNOWLEDGED: frozenset(),
    RecordState.ARCHIVED: frozenset(),
}


class AckType(IntEnum):
    """`AcknowledgeTypes` values of ShareFetch/ShareAcknowledge."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class InvalidTransition(Exception):
    """A transition the table forbids: a bug in the caller, never client input."""


@dataclass(frozen=True, slots=True)
class ShareConfig:
    """The share-group settings one partition obeys (group config over broker default)."""

    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2_000
    auto_offset_reset: str = "latest"
    # `share.isolation.level`: read_committed reads up to the last stable offset and never
    # delivers records of aborted transactions (`SharePartition` archives them).
    read_committed: bool = False


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A run of offsets with one durable state (ShareSnapshot/ShareUpdate StateBatches)."""

    first_offset: int
    last_offset: int
    state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class Acquired:
    """AcquiredRecords of a ShareFetch response."""

    first_offset: int
    last_offset: int
    delivery_count: int


class InFlight:
    """One record's `InFlightState`."""

    __slots__ = ("deadline_ms", "delivery_count", "member_id", "state")

    def __init__(self, state: RecordState = RecordState.AVAILABLE, delivery_count: int = 0) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = ""
        self.deadline_ms = 0


def _runs(items: Iterable[tuple[int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Merge sorted (offset, a, b) triples into (first, last, a, b) runs."""
    out: list[list[int]] = []
    for offset, a, b in items:
        if out and out[-1][1] == offset - 1 and out[-1][2] == a and out[-1][3] == b:
            out[-1][1] = offset
        else:
            out.append([offset, offset, a, b])
    return [(r[0], r[1], r[2], r[3]) for r in out]


def _split(run: Acquired, bases: Sequence[int], batch_size: int) -> list[Acquired]:
    """`createBatches`: cut `run` at the first log batch base at least `batch_size`
    offsets past the current piece's start, so pieces hold whole log batches."""
    if run.last_offset - run.first_offset + 1 <= batch_size:
        return [run]
    pieces, first = [], run.first_offset
    for base in bases:
        if base > run.last_offset:
            break
        if base > first and base - first >= batch_size:
            pieces.append(Acquired(first, base - 1, run.delivery_count))
            first = base
    pieces.append(Acquired(first, run.last_offset, run.delivery_count))
    return pieces


class SharePartition:
    """The in-flight window of one (group, topic id, partition)."""

    def __init__(self, group_id: str, topic_id: bytes, partition: int,
                 config: ShareConfig | None = None) -> None:
        self.group_id = group_id
        self.topic_id = topic_id
        self.partition = partition
        self.config = config or ShareConfig()
        self.start_offset = 0
        self.end_offset = 0
        self.records: dict[int, InFlight] = {}
        self.state_epoch = 0
        self.initialized = False
        # Durable changes not yet handed to the writer: offset -> (state, count).
        self._dirty: dict[int, tuple[int, int]] = {}
        self._start_dirty = False

    # -- initialization -----------------------------------------------------------------

    def initialize(self, start_offset: int, batches: Sequence[StateBatch],
                   state_epoch: int = 0) -> None:
        """Load the persisted state (Kafka `SharePartition.maybeInitialize`)."""
        self.start_offset = self.end_offset = start_offset
        self.state_epoch = state_epoch
        self.records.clear()
        for batch in batches:
            for offset in range(max(batch.first_offset, start_offset), batch.last_offset + 1):
                state = RecordState(batch.state)
                # A persisted ACQUIRED state cannot be owned after a restart.
                if state == RecordState.ACQUIRED:
                    state = RecordState.AVAILABLE
                self.records[offset] = InFlight(state, batch.delivery_count)
                self.end_offset = max(self.end_offset, offset + 1)
        for offset in range(self.start_offset, self.end_offset):
            self.records.setdefault(offset, InFlight())
        self.initialized = True
        self._advance_start()
        self._dirty.clear()
        self._start_dirty = False

    # -- transitions ----------------------------------------------------------------------

    def _move(self, offset: int, rec: InFlight, new: RecordState) -> None:
        if new not in TRANSITIONS[rec.state]:
            raise InvalidTransition(f"{offset}: {rec.state.name} -> {new.name}")
        rec.state = new
        if new != RecordState.ACQUIRED:
            rec.member_id = ""
            rec.deadline_ms = 0
            self._dirty[offset] = (int(new), rec.delivery_count)

    def _release_one(self, offset: int, rec: InFlight) -> None:
        """Lock expiry or release: archive at the delivery limit (`IFS.tryUpdateState`)."""
        limit = self.config.delivery_count_limit
        target = RecordState.ARCHIVED if rec.delivery_count >= limit else RecordState.AVAILABLE
        self._move(offset, rec, target)

    def _advance_start(self) -> None:
        start = self.start_offset
        while start < self.end_offset and self.records[start].state in TERMINAL:
            del self.records[start]
            start += 1
        if start != self.start_offset:
            self.start_offset = start
            self._start_dirty = True
            for offset in [o for o in self._dirty if o < start]:
                del self._dirty[offset]

    # -- acquisition ------------------------------------------------------------------------

    def next_fetch_offset(self) -> int:
        """The lowest AVAILABLE offset in the window, else SPEO."""
        for offset in range(self.start_offset, self.end_offset):
            if self.records[offset].state == RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def in_flight_count(self) -> int:
        return self.end_offset - self.start_offset

    def acquire(self, member_id: str, now_ms: int, batches: Sequence[tuple[int, int, bool]],
                max_records: int, record_limit: bool = False,
                batch_size: int = 0) -> list[Acquired]:
        """Acquire up to `max_records` records covered by the log `batches` read.

        New records are acquired in whole batches (Kafka's batch-optimized mode, which may
        exceed `max_records`), or exactly up to `max_records` with `record_limit`
        (ShareFetch v2 ShareAcquireMode 1). In batch-optimized mode a run longer than
        `batch_size` (ShareFetch BatchSize; 0 = none) is reported in pieces cut at log
        batch boundaries (`SharePartition.createBatches`).

        `batches` are (base offset, last offset, is_control) in log order, starting at or
        before `next_fetch_offset()`. Offsets in control batches or between batches are
        not records: new ones are archived at once, as the client would ack them as gaps.
        """
        if not batches:
            return []
        deadline = now_ms + self.config.record_lock_duration_ms
        covered_to = batches[-1][1]
        got: list[tuple[int, int, int]] = []
        budget = max_records if max_records > 0 else 500
        for offset in range(self.start_offset, min(self.end_offset, covered_to + 1)):
            if budget <= 0:
                break
            rec = self.records[offset]
            if rec.state == RecordState.AVAILABLE and _covered(batches, offset):
                self._acquire_one(offset, rec, member_id, deadline)
                got.append((offset, rec.delivery_count, 0))
                budget -= 1
        new_budget = min(budget, self.config.max_record_locks - self.in_flight_count())
        if new_budget > 0:
            self._acquire_new(member_id, deadline, batches, new_budget, got, record_limit)
        self._advance_start()
        runs = [Acquired(f, last, count) for f, last, count, _ in _runs(got)]
        if record_limit or batch_size <= 0:
            return runs
        bases = [base for base, _last, _control in batches]
        return [piece for run in runs for piece in _split(run, bases, batch_size)]

    def _acquire_one(self, offset: int, rec: InFlight, member_id: str, deadline: int) -> None:
        self._move(offset, rec, RecordState.ACQUIRED)
        rec.delivery_count += 1
        rec.member_id = member_id
        rec.deadline_ms = deadline

    def _acquire_new(self, member_id: str, deadline: int, batches: Sequence[tuple[int, int, bool]],
                     budget: int, got: list[tuple[int, int, int]], record_limit: bool) -> None:
        for base, last, is_control in batches:
            if last < self.end_offset:
                continue
            if budget <= 0:
                return
            # Offsets skipped before this batch (compacted away) are not records.
            for offset in range(self.end_offset, base):
                self._archive_new(offset)
            first = max(base, self.end_offset)
            if is_control:
                for offset in range(first, last + 1):
                    self._archive_new(offset)
                continue
            stop = min(last, first + budget - 1) if record_limit else last
            for offset in range(first, stop + 1):
                rec = self.records[offset] = InFlight()
                self._acquire_one(offset, rec, member_id, deadline)
                got.append((offset, rec.delivery_count, 0))
                budget -= 1
            self.end_offset = stop + 1

    def _archive_new(self, offset: int) -> None:
        rec = self.records[offset] = InFlight()
        self._move(offset, rec, RecordState.ARCHIVED)
        self.end_offset = offset + 1

    # -- acknowledgement ----------------------------------------------------------------------

    def acknowledge(self, member_id: str, batches: Sequence[tuple[int, int, Sequence[int]]],
                    now_ms: int) -> int:
        """Apply acknowledgement batches atomically; return the partition error code."""
        plan: list[tuple[int, InFlight, int]] = []
        for first, last, types in batches:
            for offset in range(first, last + 1):
                rec = self.records.get(offset)
                if rec is None or rec.state != RecordState.ACQUIRED or rec.member_id != member_id:
                    return ErrorCode.INVALID_RECORD_STATE
                kind = types[0] if len(types) == 1 else types[offset - first]
                plan.append((offset, rec, kind))
        for offset, rec, kind in plan:
            self._apply_ack(offset, rec, kind, now_ms)
        self._advance_start()
        return ErrorCode.NONE

    def _apply_ack(self, offset: int, rec: InFlight, kind: int, now_ms: int) -> None:
        if kind == AckType.ACCEPT:
            self._move(offset, rec, RecordState.ACKNOWLEDGED)
        elif kind == AckType.RELEASE:
            self._release_one(offset, rec)
        elif kind == AckType.RENEW:
            rec.deadline_ms = now_ms + self.config.record_lock_duration_ms
        else:  # GAP and REJECT
            self._move(offset, rec, RecordState.ARCHIVED)

    def release_member(self, member_id: str) -> int:
        """Release every record `member_id` holds (session closed, member gone)."""
        count = 0
        for offset in range(self.start_offset, self.end_offset):
            rec = self.records[offset]
            if rec.state == RecordState.ACQUIRED and rec.member_id == member_id:
                self._release_one(offset, rec)
                count += 1
        self._advance_start()
        return count

    def expire_locks(self, now_ms: int) -> int:
        """Release the acquired records whose lock deadline passed."""
        count = 0
        for offset in range(self.start_offset, self.end_offset):
            rec = self.records[offset]
            if rec.state == RecordState.ACQUIRED and rec.deadline_ms <= now_ms:
                self._release_one(offset, rec)
                count += 1
        self._advance_start()
        return count

    def next_deadline(self) -> int | None:
        deadlines = [r.deadline_ms for r in self.records.values()
                     if r.state == RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def move_start_offset(self, offset: int) -> None:
        """The log start (or an admin reset) moved past SPSO: drop what lies below."""
        if offset <= self.start_offset:
            return
        for old in [o for o in self.records if o < offset]:
            del self.records[old]
        for old in [o for o in self._dirty if o < offset]:
            del self._dirty[old]
        self.start_offset = offset
        self.end_offset = max(self.end_offset, offset)
        self._start_dirty = True

    # -- durable view ---------------------------------------------------------------------------

    def take_changes(self) -> tuple[int, list[StateBatch]] | None:
        """The durable changes since the last call: (start offset, batches), or None."""
        if not self._dirty and not self._start_dirty:
            return None
        items = sorted((o, s, c) for o, (s, c) in self._dirty.items())
        self._dirty.clear()
        self._start_dirty = False
        return self.start_offset, [StateBatch(*run) for run in _runs(items)]

    def durable_batches(self) -> list[StateBatch]:
        """The whole window as it must survive a restart (for a ShareSnapshot)."""
        items = []
        for offset in range(self.start_offset, self.end_offset):
            rec = self.records[offset]
            if rec.state == RecordState.ACQUIRED:
                # What was persisted before this acquisition: available, one delivery less.
                items.append((offset, int(RecordState.AVAILABLE), rec.delivery_count - 1))
            else:
                items.append((offset, int(rec.state), rec.delivery_count))
        return [StateBatch(*run) for run in _runs(items)]

    def counts(self) -> dict[str, int]:
        """In-flight records per state name (for describe tools)."""
        out = {s.name: 0 for s in RecordState}
        for rec in self.records.values():
            out[rec.state.name] += 1
        return out


def _covered(batches: Sequence[tuple[int, int, bool]], offset: int) -> bool:
    return any(base <= offset <= last and not control for base, last, control in batches)
