"""Planning a share-partition operation: what it changes, computed without changing it.

An acquire, acknowledge, release or lock expiry runs on a `Draft`, a copy-on-write view
of the `SharePartition` (only the records it touches are copied, so a plan costs
O(records touched), not O(window)). The outcome is a `ShareChange`:

- the durable part, `start_offset` + `changed` StateBatches: what the runtime writes as a
  ShareUpdate (or a ShareSnapshot of `durable_batches()` when one is due) and what only the
  replay of that record applies (`SharePartition.replay`);
- the soft part, `locks`: records acquired (or renewed) by a live member, with owner,
  delivery count and lock deadline. Kafka keeps acquisition locks in memory only, and so
  does this: `SharePartition.apply_locks` takes them once the records are written;
- `causes`: why each record it moved to ARCHIVING goes to the dead-letter topic (soft, as
  Kafka keeps it; `SharePartition.apply_locks` takes them with the locks);
- `result`: what the caller answers (acquired records, an error code, a count).

Mirrors the order of Kafka's `SharePartition`: in-memory state changes are computed, the
persister writes, and only then is the change visible (Kafka rolls the in-memory state
back on a failed write; here there is nothing to roll back).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from groupcoord.coordinator.share.configs import ShareConfig
from groupcoord.coordinator.share.dlq import DlqCause
from groupcoord.coordinator.share.records_state import (
    TERMINAL,
    InFlight,
    RecordState,
    StateBatch,
    check_transition,
    runs,
)


class Window(Protocol):
    """What a plan reads of a share-partition (`SharePartition`): its in-flight records
    from `start_offset` to `end_offset`, and the settings it obeys."""

    records: dict[int, InFlight]
    start_offset: int
    end_offset: int
    config: ShareConfig


class Draft:
    """Copy-on-write view of one share-partition for one operation."""

    def __init__(self, sp: Window) -> None:
        self.sp = sp
        self.start = sp.start_offset
        self.end = sp.end_offset
        self.touched: dict[int, InFlight] = {}
        self.dirty: dict[int, tuple[int, int]] = {}
        self.causes: dict[int, DlqCause] = {}
        self.start_moved = False
        # Records acquired past the window by `acquire_new` (also in `touched`): locks
        # as they are, never below `start` (an acquired record stops its advance).
        self.fresh: dict[int, InFlight] = {}
        # Whether `touched` may hold an ACQUIRED record besides `fresh` (`edit`, `new`):
        # when not, `finish` need not look through it for locks.
        self.edited = False

    def peek(self, offset: int) -> InFlight:
        rec = self.touched.get(offset)
        return rec if rec is not None else self.sp.records[offset]

    def edit(self, offset: int) -> InFlight:
        self.edited = True
        rec = self.touched.get(offset)
        if rec is None:
            base = self.sp.records[offset]
            rec = self.touched[offset] = InFlight(base.state, base.delivery_count,
                                                  base.member_id, base.deadline_ms)
        return rec

    def new(self, offset: int) -> InFlight:
        self.edited = True
        rec = self.touched[offset] = InFlight()
        return rec

    def settle(self, first: int, last: int, new: RecordState) -> None:
        """Move the ACQUIRED records `first`..`last` (checked by the caller, untouched so
        far) to the non-ACQUIRED state `new`, keeping their delivery counts: `move` for a
        range, without copying each record first."""
        check_transition(first, RecordState.ACQUIRED, new)
        records, touched, dirty, state = self.sp.records, self.touched, self.dirty, int(new)
        for offset in range(first, last + 1):
            count = records[offset].delivery_count
            touched[offset] = InFlight(new, count)
            dirty[offset] = (state, count)

    def acquire_new(self, first: int, last: int, member_id: str, deadline_ms: int) -> None:
        """Acquire the never-delivered records `first`..`last` (`first` is the window's
        end) for `member_id`: delivery count 1, locked until `deadline_ms`."""
        check_transition(first, RecordState.AVAILABLE, RecordState.ACQUIRED)
        touched, fresh, acquired = self.touched, self.fresh, RecordState.ACQUIRED
        for offset in range(first, last + 1):
            touched[offset] = fresh[offset] = InFlight(acquired, 1, member_id, deadline_ms)
        self.end = last + 1

    def move(self, offset: int, rec: InFlight, new: RecordState) -> None:
        check_transition(offset, rec.state, new)
        rec.state = new
        if new != RecordState.ACQUIRED:
            rec.member_id = ""
            rec.deadline_ms = 0
            self.dirty[offset] = (int(new), rec.delivery_count)

    def release_one(self, offset: int, rec: InFlight) -> None:
        """Lock expiry or release: at the delivery limit the record is done, through the
        DLQ when the group has one (`InFlightState.tryUpdateState`)."""
        if rec.delivery_count < self.sp.config.delivery_count_limit:
            self.move(offset, rec, RecordState.AVAILABLE)
        else:
            self.archive(offset, rec, DlqCause.DELIVERY_COUNT_EXCEEDED)

    def archive(self, offset: int, rec: InFlight, cause: DlqCause) -> None:
        """ARCHIVING with `cause` when the group has a DLQ, else ARCHIVED at once."""
        if self.sp.config.dlq:
            self.move(offset, rec, RecordState.ARCHIVING)
            self.causes[offset] = cause
        else:
            self.move(offset, rec, RecordState.ARCHIVED)

    def advance_start(self) -> None:
        start, end, touched, records = self.start, self.end, self.touched, self.sp.records
        while start < end:
            rec = touched.get(start)
            if (rec if rec is not None else records[start]).state not in TERMINAL:
                break
            start += 1
        if start != self.start:
            self.move_start(start)

    def move_start(self, offset: int) -> None:
        if offset <= self.start:
            return
        self.start = offset
        self.end = max(self.end, offset)
        self.start_moved = True
        if self.dirty:
            self.dirty = {o: v for o, v in self.dirty.items() if o >= offset}

    def finish(self, result: object = None) -> ShareChange:
        items = sorted((o, s, c) for o, (s, c) in self.dirty.items())
        locks = self.fresh
        if self.edited:
            start, acquired = self.start, RecordState.ACQUIRED
            locks = {**locks, **{o: r for o, r in self.touched.items()
                                 if r.state == acquired and o >= start}}
        causes = {o: c for o, c in self.causes.items() if o >= self.start}
        return ShareChange(self.start, self.start_moved or bool(items),
                           [StateBatch(*run) for run in runs(items)], locks, self.end,
                           result, self, causes)


@dataclass(slots=True)
class ShareChange:
    """One operation's outcome; nothing of it is applied yet."""

    start_offset: int
    durable: bool
    changed: list[StateBatch]
    locks: dict[int, InFlight]
    end_offset: int
    result: object = None
    draft: Draft | None = field(default=None, repr=False)
    causes: dict[int, DlqCause] = field(default_factory=dict)
    # In-flight batches an acquisition of new records made, (first, last) in order (soft:
    # `SharePartition.apply_locks` takes them; they size redelivery throttling).
    batches: list[tuple[int, int]] = field(default_factory=list)

    def durable_batches(self) -> list[StateBatch]:
        """The whole window after the change, as a restart must see it (for a
        ShareSnapshot): an acquired record is persisted as available, one delivery less."""
        assert self.draft is not None
        d = self.draft
        items = []
        for offset in range(d.start, d.end):
            rec = d.touched.get(offset) or d.sp.records.get(offset) or InFlight()
            if rec.state == RecordState.ACQUIRED:
                items.append((offset, int(RecordState.AVAILABLE), rec.delivery_count - 1))
            else:
                items.append((offset, int(rec.state), rec.delivery_count))
        return [StateBatch(*run) for run in runs(items)]


def covered(batches: Sequence[tuple[int, int, bool]], offset: int) -> bool:
    return any(base <= offset <= last and not control for base, last, control in batches)
