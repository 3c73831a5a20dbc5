"""The fault run's checker (helpers.cluster_checks) on made-up histories: it finds each kind of
violation it is there for, and none in a correct history (no broker: the checks are pure)."""

from __future__ import annotations

from helpers.cluster_checks import (
    EARLIER_COPY,
    Stored,
    Verdict,
    check_offsets_monotonic,
    check_producers,
    check_transactions,
    ownership_overlaps,
)
from helpers.cluster_workload import (
    Ack,
    Change,
    GroupView,
    OwnershipChange,
    ProducerLog,
    TxnLog,
    TxnOutcome,
    txn_value,
)


def _producer_log(acked: dict[int, tuple[int, int]], sent: int,
                  name: str = "idempotent") -> ProducerLog:
    log = ProducerLog(name, deduplicated=name == "idempotent")
    log.sent = {seq: 0.0 for seq in range(sent)}
    log.acked = {seq: Ack(p, o, 1.0) for seq, (p, o) in acked.items()}
    return log


def test_acknowledged_records_lost_moved_or_stored_twice_are_found() -> None:
    log = _producer_log({0: (0, 0), 1: (0, 1), 2: (1, 0)}, sent=4)
    fine = [Stored(0, 0, b"idempotent:0"), Stored(0, 1, b"idempotent:1"),
            Stored(1, 0, b"idempotent:2")]
    verdict = Verdict()
    check_producers([log], fine, verdict)
    assert verdict.violations == []

    broken = [Stored(0, 0, b"idempotent:0"), Stored(0, 5, b"idempotent:0"),  # acked, twice
              Stored(1, 0, b"idempotent:2"),  # 1 lost
              Stored(1, 1, b"idempotent:3"), Stored(1, 2, b"idempotent:3")]  # unacked, twice
    verdict = Verdict()
    check_producers([log], broken, verdict)
    assert len(verdict.violations) == 3, verdict.violations
    assert any("idempotent 0 acknowledged at 0/0, stored at [(0, 0), (0, 5)]" in v
               for v in verdict.violations)
    assert any("idempotent 1 acknowledged at 0/1, lost" in v for v in verdict.violations)
    assert any("idempotent 3 stored twice" in v for v in verdict.violations)


def test_a_plain_producer_s_repeated_send_is_told_apart_from_a_record_stored_twice() -> None:
    """librdkafka sends a plain producer's request again when it counts it as not persisted
    (retries off or not): the record also stored before the acknowledged copy, in the same
    partition, is the client's at-least-once. Any other second copy is still a violation,
    and none is allowed to the idempotent producer."""
    plain = _producer_log({0: (0, 5), 1: (0, 6), 2: (1, 3)}, sent=3, name="plain")
    history = [Stored(0, 1, b"plain:0"), Stored(0, 2, b"plain:1"),  # sent, then again
               Stored(0, 5, b"plain:0"), Stored(0, 6, b"plain:1"),  # acknowledged here
               Stored(1, 3, b"plain:2")]
    verdict = Verdict()
    check_producers([plain], history, verdict)
    assert verdict.violations == []
    assert verdict.figures["plain re-sent by the client"] == 2

    wrong = [Stored(0, 5, b"plain:0"), Stored(0, 9, b"plain:0"),  # after the acknowledged one
             Stored(0, 6, b"plain:1"), Stored(1, 0, b"plain:1"),  # in another partition
             Stored(1, 3, b"plain:2"), Stored(1, 3, b"plain:2")]  # twice at one offset
    verdict = Verdict()
    check_producers([plain], wrong, verdict)
    assert len(verdict.violations) == 3, verdict.violations
    assert verdict.figures["plain re-sent by the client"] == 0

    idempotent = _producer_log({0: (0, 5)}, sent=1)
    verdict = Verdict()
    check_producers([idempotent], [Stored(0, 1, b"idempotent:0"), Stored(0, 5, b"idempotent:0")],
                    verdict)
    assert verdict.violations == [
        f"idempotent 0 acknowledged at 0/5, stored at [(0, 1), (0, 5)] {EARLIER_COPY}"]


def test_transactions_seen_in_part_or_against_their_outcome_are_found() -> None:
    log = TxnLog(sizes={0: 2, 1: 3, 2: 2, 3: 2},
                 outcomes={0: TxnOutcome.COMMITTED, 1: TxnOutcome.COMMITTED,
                           2: TxnOutcome.ABORTED, 3: TxnOutcome.UNKNOWN})
    records = [Stored(0, i, txn_value(txn, index, log.sizes[txn]))
               for i, (txn, index) in enumerate([(0, 0), (0, 1), (1, 0), (1, 2), (2, 0),
                                                 (2, 1)])]
    verdict = Verdict()
    check_transactions(log, records, verdict)
    assert sorted(verdict.violations) == [
        "transaction 1 (committed) seen in part: records [0, 2] of 3",
        "transaction 2 aborted, seen",
    ]


def _view(committed: dict[int, int] | None) -> GroupView:
    return GroupView(0.0, committed, "STABLE", 2, 6)


def test_a_committed_offset_moving_back_or_vanishing_is_found() -> None:
    verdict = Verdict()
    check_offsets_monotonic("g", [_view({0: 5}), _view(None), _view({0: 7}), _view({0: 7})],
                            verdict)
    assert verdict.violations == []
    check_offsets_monotonic("g", [_view({0: 5}), _view({0: 3}), _view({0: -1001})], verdict)
    assert verdict.violations == ["g partition 0: committed offset moved back from 5 to 3",
                                  "g partition 0: committed offset moved back from 5 to -1"]


def _change(member: str, change: Change, partitions: tuple[int, ...],
            at: float) -> OwnershipChange:
    return OwnershipChange(member, change, partitions, at)


def test_two_members_owning_a_partition_at_once_are_found() -> None:
    handed_over = [_change("a", Change.ASSIGNED, (0, 1), 1.0),
                   _change("a", Change.REVOKED, (1,), 2.0),
                   _change("b", Change.ASSIGNED, (1,), 2.5)]
    assert ownership_overlaps(handed_over) == []
    too_early = [*handed_over[:1], _change("b", Change.ASSIGNED, (1,), 1.5),
                 _change("a", Change.REVOKED, (1,), 2.0)]
    found = ownership_overlaps(too_early)
    assert len(found) == 1 and found[0].startswith("partition 1 owned by a")
    never_revoked = [_change("a", Change.ASSIGNED, (0,), 1.0),
                     _change("b", Change.ASSIGNED, (0,), 9.0)]
    assert len(ownership_overlaps(never_revoked)) == 1
