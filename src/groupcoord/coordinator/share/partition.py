"""One share-partition's in-flight records (KIP-932), as pure code.

Mirrors Kafka's broker-side `SharePartition` with `InFlightState` / `RecordState`:
records in [start offset (SPSO), end offset (SPEO)) are tracked one by one as
AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVING or ARCHIVED; everything below SPSO is done,
everything from SPEO on has never been acquired. Rules kept here:

- Operations plan, they do not mutate: `plan_acquire`, `plan_acknowledge`,
  `plan_release_member`, `plan_expire_locks`, `plan_move_start` return a `ShareChange`
  (see `change`), every transition checked against the one table.
- The durable state (SPSO and each record's state and delivery count; ACQUIRED is
  persisted as AVAILABLE with the count before the acquisition) changes only by
  `replay` of a ShareUpdate/ShareSnapshot's content, so after every write the durable view
  equals what a replay of `__share_group_state` rebuilds. Acquisition locks (owner,
  deadline) are soft state, taken by `apply_locks` after the write, as Kafka keeps them.
- Only acquisition increments the delivery count. A release or a lock expiry of a record
  whose count reached the delivery limit archives it instead of making it available.
- SPSO advances past the leading run of terminal records.
- Dead-letter queue (KIP-1191), when the group has one (`ShareConfig.dlq`): a rejected
  record, and one released or expired at the delivery limit, goes ARCHIVING (persisted,
  non-terminal, never delivered) instead of ARCHIVED; `plan_archive` ends it once its DLQ
  record is written (`SharePartition.initiateDLQAndArchive`, phase 2). A GAP is ARCHIVED.

`acquire`, `acknowledge`, ... plan and apply at once, without a log: for the pure tests
and tools; the server always writes between the two.

No clock: every operation takes `now_ms`.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from groupcoord.coordinator.share.change import Draft, ShareChange, covered
from groupcoord.coordinator.share.configs import ShareConfig
from groupcoord.coordinator.share.dlq import DlqCause, resumed_cause
from groupcoord.coordinator.share.records_state import (
    TERMINAL,
    TRANSITIONS,
    AckType,
    InFlight,
    InvalidTransition,
    RecordState,
    StateBatch,
    check_transition,
    runs,
)
from groupcoord.coordinator.share.throttle import take_throttled, throttle_limit
from groupcoord.wire.errors import ErrorCode

__all__ = ["TERMINAL", "TRANSITIONS", "AckType", "Acquired", "InFlight", "InvalidTransition",
           "RecordState", "ShareChange", "ShareConfig", "SharePartition", "StateBatch",
           "check_transition"]


@dataclass(frozen=True, slots=True)
class Acquired:
    """AcquiredRecords of a ShareFetch response."""

    first_offset: int
    last_offset: int
    delivery_count: int


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
        # Why each ARCHIVING record goes to the DLQ, when known (soft, like the locks).
        self.dlq_causes: dict[int, DlqCause] = {}
        # In-flight batches, Kafka's `cachedState` keys (soft): the records first acquired
        # together, or after a load the persisted state batches. First offsets ascending,
        # and each one's last offset. They size redelivery throttling (`throttle`).
        self.batch_firsts: list[int] = []
        self.batch_lasts: dict[int, int] = {}

    @property
    def key(self) -> tuple[str, bytes, int]:
        return self.group_id, self.topic_id, self.partition

    # -- the durable state: loading and replay -------------------------------------------

    def initialize(self, start_offset: int, batches: Sequence[StateBatch],
                   state_epoch: int = 0) -> None:
        """Load the persisted state (Kafka `SharePartition.maybeInitialize`)."""
        self.start_offset = self.end_offset = start_offset
        self.state_epoch = state_epoch
        self.records.clear()
        self._overlay(batches)
        for offset in range(self.start_offset, self.end_offset):
            self.records.setdefault(offset, InFlight())
        self.initialized = True
        self._advance_start()
        self.batch_firsts, self.batch_lasts = [], {}
        self._add_batches((max(b.first_offset, self.start_offset), b.last_offset)
                          for b in batches if b.last_offset >= self.start_offset)

    def reload(self, start_offset: int, batches: Sequence[StateBatch],
               state_epoch: int = 0) -> None:
        """`initialize` from the log again, keeping the acquisition locks the persisted
        state agrees with (the record available with the count before the acquisition)."""
        locks = {o: r for o, r in self.records.items() if r.state == RecordState.ACQUIRED}
        self.initialize(start_offset, batches, state_epoch)
        for offset in sorted(locks):
            if offset < self.start_offset:
                continue
            for gap in range(self.end_offset, offset + 1):
                self.records[gap] = InFlight()
            self.end_offset = max(self.end_offset, offset + 1)
            if _agrees(self.records[offset], locks[offset]):
                self.records[offset] = locks[offset]

    def replay(self, start_offset: int, batches: Sequence[StateBatch]) -> None:
        """Apply a written ShareUpdate (or a snapshot of the window): the only change of
        the durable state. A live acquisition the record agrees with stays."""
        if start_offset > self.start_offset:
            records = self.records
            if start_offset - self.start_offset < len(records):
                # The window holds exactly [start, end): drop what the start passed.
                for old in range(self.start_offset, min(start_offset, self.end_offset)):
                    records.pop(old, None)
            else:
                for old in [o for o in records if o < start_offset]:
                    del records[old]
        elif start_offset < self.start_offset:
            for offset in range(start_offset, self.start_offset):
                self.records[offset] = InFlight()
        self.start_offset = start_offset
        self.end_offset = max(self.end_offset, start_offset)
        self._overlay(batches)
        for offset in [o for o in self.dlq_causes
                       if o not in self.records or self.records[o].state != RecordState.ARCHIVING]:
            del self.dlq_causes[offset]

    def _overlay(self, batches: Sequence[StateBatch]) -> None:
        for batch in batches:
            state = RecordState(batch.state)
            # A persisted ACQUIRED state cannot be owned by anyone after a restart.
            if state == RecordState.ACQUIRED:
                state = RecordState.AVAILABLE
            for offset in range(max(batch.first_offset, self.start_offset),
                                batch.last_offset + 1):
                live = self.records.get(offset)
                if live is not None and live.state == RecordState.ACQUIRED and _agrees(
                        InFlight(state, batch.delivery_count), live):
                    continue
                self.records[offset] = InFlight(state, batch.delivery_count)
            if batch.last_offset >= self.end_offset:
                for gap in range(self.end_offset, batch.first_offset):
                    self.records.setdefault(gap, InFlight())
                self.end_offset = batch.last_offset + 1

    def _advance_start(self) -> None:
        start = self.start_offset
        while start < self.end_offset and self.records[start].state in TERMINAL:
            del self.records[start]
            start += 1
        self.start_offset = start

    def _add_batches(self, batches: Iterable[tuple[int, int]]) -> None:
        firsts, lasts = self.batch_firsts, self.batch_lasts
        for first, last in batches:
            if first not in lasts:
                if firsts and first < firsts[-1]:
                    bisect.insort(firsts, first)
                else:
                    firsts.append(first)
            lasts[first] = last
        # Forget batches wholly below the start offset.
        drop = 0
        while drop < len(firsts) and lasts[firsts[drop]] < self.start_offset:
            del lasts[firsts[drop]]
            drop += 1
        if drop:
            del firsts[:drop]

    def in_flight_batch(self, offset: int) -> tuple[int, int] | None:
        """(first, last) of the in-flight batch holding `offset`, if one does."""
        index = bisect.bisect_right(self.batch_firsts, offset) - 1
        if index < 0:
            return None
        first = self.batch_firsts[index]
        last = self.batch_lasts[first]
        return (first, last) if offset <= last else None

    def apply_locks(self, change: ShareChange) -> None:
        """Take the change's acquisition locks, in-flight batches and DLQ causes (after its
        records were written)."""
        if change.batches or (self.batch_firsts and
                              self.batch_lasts[self.batch_firsts[0]] < self.start_offset):
            self._add_batches(change.batches)
        for offset, cause in change.causes.items():
            rec = self.records.get(offset)
            if rec is not None and rec.state == RecordState.ARCHIVING:
                self.dlq_causes[offset] = cause
        locks = change.locks
        if not locks:
            return
        start = self.start_offset
        if min(locks) < start:
            locks = {o: r for o, r in locks.items() if o >= start}
            if not locks:
                return
        top = max(locks)
        records = self.records
        if top >= self.end_offset:
            # Every offset in [start, end) has a record: fill the gaps up to the new end.
            for gap in range(self.end_offset, top):
                if gap not in locks:
                    records[gap] = InFlight()
            self.end_offset = top + 1
        records.update(locks)

    def apply(self, change: ShareChange) -> object:
        """Apply a change without a log (pure tests and tools): replay, then locks."""
        if change.durable:
            self.replay(change.start_offset, change.changed)
        self.apply_locks(change)
        return change.result

    # -- queries ----------------------------------------------------------------------------

    def next_fetch_offset(self) -> int:
        """The lowest AVAILABLE offset in the window, else SPEO."""
        for offset in range(self.start_offset, self.end_offset):
            if self.records[offset].state == RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def in_flight_count(self) -> int:
        return self.end_offset - self.start_offset

    def next_deadline(self) -> int | None:
        deadlines = [r.deadline_ms for r in self.records.values()
                     if r.state == RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def archiving(self, limit: int = 0) -> list[tuple[int, int, DlqCause]]:
        """(offset, delivery count, cause) of the ARCHIVING records, lowest first (at most
        `limit` when given); a cause not known live is inferred as after a restart."""
        out = []
        for offset in range(self.start_offset, self.end_offset):
            rec = self.records[offset]
            if rec.state == RecordState.ARCHIVING:
                cause = self.dlq_causes.get(offset) or resumed_cause(
                    rec.delivery_count, self.config.delivery_count_limit)
                out.append((offset, rec.delivery_count, cause))
                if len(out) == limit:
                    break
        return out

    def durable_batches(self) -> list[StateBatch]:
        """The whole window as it must survive a restart (for a ShareSnapshot)."""
        return Draft(self).finish().durable_batches()

    def counts(self) -> dict[str, int]:
        """In-flight records per state name (for describe tools)."""
        out = {s.name: 0 for s in RecordState}
        for rec in self.records.values():
            out[rec.state.name] += 1
        return out

    # -- planning ---------------------------------------------------------------------------

    def plan_acquire(self, member_id: str, now_ms: int,
                     batches: Sequence[tuple[int, int, bool]], max_records: int,
                     record_limit: bool = False, batch_size: int = 0) -> ShareChange:
        """Acquire up to `max_records` records covered by the log `batches` read; the
        result is the list of `Acquired`.

        New records are acquired in whole batches (Kafka's batch-optimized mode, which may
        exceed `max_records`), or exactly up to `max_records` with `record_limit`
        (ShareFetch v2 ShareAcquireMode 1). In batch-optimized mode a run longer than
        `batch_size` (ShareFetch BatchSize; 0 = none) is reported in pieces cut at log
        batch boundaries (`SharePartition.createBatches`).

        `batches` are (base offset, last offset, is_control) in log order, starting at or
        before `next_fetch_offset()`. Offsets in control batches or between batches are
        not records: new ones are archived at once, as the client would ack them as gaps.
        """
        d = Draft(self)
        if not batches:
            return d.finish([])
        deadline = now_ms + self.config.record_lock_duration_ms
        got: list[tuple[int, int, int]] = []
        budget = max_records if max_records > 0 else 500

        def take(offset: int) -> None:
            rec = _acquire_one(d, offset, d.edit(offset), member_id, deadline)
            got.append((offset, rec.delivery_count, 0))

        budget, throttled = self._acquire_redeliveries(d, batches, budget, take)
        acquired = [Acquired(f, last, count) for f, last, count, _ in runs(got)]
        new_budget = 0 if throttled else \
            min(budget, self.config.max_record_locks - (d.end - d.start))
        bases = [base for base, _last, _control in batches]
        new_batches: list[tuple[int, int]] = []
        if new_budget > 0:
            fresh: list[tuple[int, int, int]] = []
            _acquire_new(d, member_id, deadline, batches, new_budget, fresh, record_limit)
            for first, last, count in fresh:
                run = Acquired(first, last, count)
                pieces = [run] if record_limit or batch_size <= 0 else \
                    _split(run, bases, batch_size)
                new_batches.extend((p.first_offset, p.last_offset) for p in pieces)
                if acquired and acquired[-1].last_offset == first - 1 \
                        and acquired[-1].delivery_count == count:
                    first = acquired.pop().first_offset
                acquired.append(Acquired(first, last, count))
        d.advance_start()
        if not record_limit and batch_size > 0:
            acquired = [piece for run in acquired for piece in _split(run, bases, batch_size)]
        change = d.finish(acquired)
        change.batches = new_batches
        return change

    def _acquire_redeliveries(self, d: Draft, batches: Sequence[tuple[int, int, bool]],
                              budget: int, take: Callable[[int], None]) -> tuple[int, bool]:
        """Acquire AVAILABLE records of the window covered by the log `batches`, in-flight
        batch by in-flight batch, throttled near the delivery limit (`throttle`). Returns
        the budget left and whether throttling ends the fetch (no new records then)."""
        limit = self.config.delivery_count_limit
        from_count = throttle_limit(limit)
        # Offsets before the first batch read are not covered by it.
        offset, end = max(d.start, batches[0][0]), min(d.end, batches[-1][1] + 1)
        taken_any = False
        while offset < end and budget > 0:
            span = self.in_flight_batch(offset)
            first, last = span if span is not None else (offset, offset)
            stop = min(last + 1, end)
            available = [(o, d.peek(o).delivery_count) for o in range(offset, stop)
                         if d.peek(o).state == RecordState.AVAILABLE and covered(batches, o)]
            offset = stop
            if not available:
                continue
            if max(count for _o, count in available) >= from_count:
                if taken_any:
                    return budget, True
                taken = take_throttled(available, last - first + 1, limit, budget, take)
                budget -= taken
                if taken:
                    return budget, True
                continue
            for o, _count in available[:budget]:
                take(o)
            budget -= min(budget, len(available))
            taken_any = True
        return budget, False

    def plan_acknowledge(self, member_id: str,
                         batches: Sequence[tuple[int, int, Sequence[int]]],
                         now_ms: int) -> ShareChange:
        """Acknowledgement batches, all or nothing; the result is the error code."""
        d = Draft(self)
        records, acquired = self.records, RecordState.ACQUIRED
        for first, last, _types in batches:
            for offset in range(first, last + 1):
                rec = records.get(offset)
                if rec is None or rec.state != acquired or rec.member_id != member_id:
                    return d.finish(ErrorCode.INVALID_RECORD_STATE)
        plan: list[tuple[int, int]] = []
        seen_to = -1
        for first, last, types in batches:
            if len(types) == 1 and first > seen_to and types[0] in _SETTLED_BY:
                # One ACCEPT or GAP for a whole batch past the others (the common case):
                # one range move.
                d.settle(first, last, _SETTLED_BY[types[0]])
            else:
                plan.extend((offset, types[0] if len(types) == 1 else types[offset - first])
                            for offset in range(first, last + 1))
            seen_to = max(seen_to, last)
        for offset, kind in plan:
            rec = d.edit(offset)
            if kind == AckType.ACCEPT:
                d.move(offset, rec, RecordState.ACKNOWLEDGED)
            elif kind == AckType.RELEASE:
                d.release_one(offset, rec)
            elif kind == AckType.RENEW:
                rec.deadline_ms = now_ms + self.config.record_lock_duration_ms
            elif kind == AckType.REJECT:
                d.archive(offset, rec, DlqCause.CLIENT_REJECT)
            else:  # GAP
                d.move(offset, rec, RecordState.ARCHIVED)
        d.advance_start()
        return d.finish(ErrorCode.NONE)

    def plan_release_member(self, member_id: str) -> ShareChange:
        """Release every record `member_id` holds (session closed, member gone); the
        result is how many."""
        return self._release_where(lambda rec: rec.member_id == member_id)

    def plan_expire_locks(self, now_ms: int) -> ShareChange:
        """Release the acquired records whose lock deadline passed; the result is how many."""
        return self._release_where(lambda rec: rec.deadline_ms <= now_ms)

    def _release_where(self, match: object) -> ShareChange:
        assert callable(match)
        d = Draft(self)
        count = 0
        for offset in range(self.start_offset, self.end_offset):
            rec = self.records[offset]
            if rec.state == RecordState.ACQUIRED and match(rec):
                d.release_one(offset, d.edit(offset))
                count += 1
        d.advance_start()
        return d.finish(count)

    def plan_archive(self, offsets: Sequence[int]) -> ShareChange:
        """ARCHIVING -> ARCHIVED for `offsets` whose DLQ write is done (or given up); those
        no longer ARCHIVING (moved below SPSO meanwhile) are skipped. The result is how
        many were archived."""
        d = Draft(self)
        count = 0
        for offset in offsets:
            rec = self.records.get(offset)
            if offset >= self.start_offset and rec is not None \
                    and rec.state == RecordState.ARCHIVING:
                d.move(offset, d.edit(offset), RecordState.ARCHIVED)
                count += 1
        d.advance_start()
        return d.finish(count)

    def plan_move_start(self, offset: int) -> ShareChange:
        """The log start (or an admin reset) moved past SPSO: drop what lies below."""
        d = Draft(self)
        d.move_start(offset)
        return d.finish()

    # -- plan and apply without a log (pure tests, tools) -----------------------------------

    def acquire(self, member_id: str, now_ms: int, batches: Sequence[tuple[int, int, bool]],
                max_records: int, record_limit: bool = False,
                batch_size: int = 0) -> list[Acquired]:
        result = self.apply(self.plan_acquire(member_id, now_ms, batches, max_records,
                                              record_limit, batch_size))
        assert isinstance(result, list)
        return result

    def acknowledge(self, member_id: str, batches: Sequence[tuple[int, int, Sequence[int]]],
                    now_ms: int) -> int:
        return int(self.apply(self.plan_acknowledge(member_id, batches, now_ms)))  # type: ignore[call-overload]

    def release_member(self, member_id: str) -> int:
        return int(self.apply(self.plan_release_member(member_id)))  # type: ignore[call-overload]

    def expire_locks(self, now_ms: int) -> int:
        return int(self.apply(self.plan_expire_locks(now_ms)))  # type: ignore[call-overload]

    def move_start_offset(self, offset: int) -> None:
        self.apply(self.plan_move_start(offset))


# Ack types that end a record the same way whatever its delivery count or the group's DLQ.
_SETTLED_BY: dict[int, RecordState] = {AckType.ACCEPT: RecordState.ACKNOWLEDGED,
                                       AckType.GAP: RecordState.ARCHIVED}


def _agrees(persisted: InFlight, lock: InFlight) -> bool:
    """A persisted record agrees with a live lock when it is the state the acquisition
    started from: available, one delivery less."""
    return persisted.state == RecordState.AVAILABLE and \
        persisted.delivery_count == lock.delivery_count - 1


def _acquire_one(d: Draft, offset: int, rec: InFlight, member_id: str,
                 deadline: int) -> InFlight:
    d.move(offset, rec, RecordState.ACQUIRED)
    rec.delivery_count += 1
    rec.member_id = member_id
    rec.deadline_ms = deadline
    return rec


def _acquire_new(d: Draft, member_id: str, deadline: int,
                 batches: Sequence[tuple[int, int, bool]], budget: int,
                 got: list[tuple[int, int, int]], record_limit: bool) -> None:
    """Acquire past the window's end; `got` takes (first, last, delivery count) runs."""
    for base, last, is_control in batches:
        if last < d.end:
            continue
        if budget <= 0:
            return
        # Offsets skipped before this batch (compacted away) are not records.
        for offset in range(d.end, base):
            _archive_new(d, offset)
        first = max(base, d.end)
        if is_control:
            for offset in range(first, last + 1):
                _archive_new(d, offset)
            continue
        stop = min(last, first + budget - 1) if record_limit else last
        d.acquire_new(first, stop, member_id, deadline)
        got.append((first, stop, 1))
        budget -= stop - first + 1


def _archive_new(d: Draft, offset: int) -> None:
    d.move(offset, d.new(offset), RecordState.ARCHIVED)
    d.end = offset + 1
