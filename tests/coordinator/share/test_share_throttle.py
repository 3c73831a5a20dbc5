"""Redelivery throttling near the delivery limit (Kafka 4.4 `SharePartition`
`throttleRecordsDeliveryLimit` / `acquireSubsetBatchRecords`), after `SharePartitionTest`'s
throttling cases."""

from __future__ import annotations

from groupcoord.coordinator.share.partition import (
    AckType,
    Acquired,
    RecordState,
    ShareConfig,
    SharePartition,
    StateBatch,
)
from groupcoord.coordinator.share.throttle import throttle_limit

TID = bytes(range(16))
LOG = [(0, 9, False)]  # one log batch of ten records
NEXT = [(0, 9, False), (10, 14, False)]  # and a second one of five


def new_sp(limit: int = 5, **cfg: object) -> SharePartition:
    sp = SharePartition("g", TID, 0, ShareConfig(delivery_count_limit=limit, **cfg))  # type: ignore[arg-type]
    sp.initialize(0, [])
    return sp


def release(sp: SharePartition, got: list[Acquired]) -> None:
    for run in got:
        assert sp.acknowledge("m", [(run.first_offset, run.last_offset, [AckType.RELEASE])],
                              0) == 0


def rounds(sp: SharePartition, log: list[tuple[int, int, bool]]) -> list[list[list[Acquired]]]:
    """Rounds until nothing is left: fetch while anything comes (holding what came), then
    release it all. Each round's fetches, each fetch's acquired runs."""
    out = []
    while True:
        fetches = []
        while got := sp.acquire("m", 0, log, 500, batch_size=500):
            fetches.append(got)
        if not fetches:
            return out
        out.append(fetches)
        for got in fetches:
            release(sp, got)


def test_throttle_limit_is_half_the_delivery_limit_at_least_two() -> None:
    assert [throttle_limit(n) for n in (2, 3, 4, 5, 6, 10)] == [2, 2, 2, 3, 3, 5]


def test_a_released_batch_is_redelivered_10_10_10_5_5_then_one_by_one() -> None:
    sp = new_sp()
    got = rounds(sp, LOG)
    assert got[:4] == [[[Acquired(0, 9, 1)]], [[Acquired(0, 9, 2)]], [[Acquired(0, 9, 3)]],
                       [[Acquired(0, 4, 4)], [Acquired(5, 9, 4)]]]
    # The last attempt: every record alone, so one poison record archives only itself.
    assert got[4:] == [[[Acquired(o, o, 5)] for o in range(10)]]
    assert sp.start_offset == 10 and sp.records == {}


def test_released_at_once_the_halves_shrink_by_the_first_record() -> None:
    """Released after every fetch: the piece size comes from the first throttled record,
    and a record on its last attempt goes alone."""
    sp = new_sp()
    sizes = []
    while got := sp.acquire("m", 0, LOG, 500, batch_size=500):
        sizes.append(sum(r.last_offset - r.first_offset + 1 for r in got))
        release(sp, got)
    assert sizes == [10, 10, 10, 5, 1, 1, 1, 1, 1, 5, 1, 1, 1, 1, 1]


def test_a_throttled_batch_is_not_delivered_with_other_records() -> None:
    sp = new_sp()
    for count in (1, 2, 3):
        got = sp.acquire("m", 0, LOG, 500, batch_size=500)
        assert got == [Acquired(0, 9, count)]
        release(sp, got)
    # At count 3 the batch is throttled: half of it, and no new records after it.
    assert sp.acquire("m", 0, NEXT, 500, batch_size=500) == [Acquired(0, 4, 4)]
    assert sp.end_offset == 10
    # The rest of it, still alone.
    assert sp.acquire("m", 0, NEXT, 500, batch_size=500) == [Acquired(5, 9, 4)]
    # Nothing available in the throttled batch now: the new records come.
    assert sp.acquire("m", 0, NEXT, 500, batch_size=500) == [Acquired(10, 14, 1)]


def test_records_acquired_first_stop_the_fetch_before_a_throttled_batch() -> None:
    sp = new_sp()
    assert sp.acquire("m", 0, NEXT, 500, batch_size=10) == [Acquired(0, 9, 1),
                                                           Acquired(10, 14, 1)]
    # The second batch goes round twice more while the first is held.
    for count in (2, 3):
        release(sp, [Acquired(10, 14, count - 1)])
        assert sp.acquire("m", 0, NEXT, 500, batch_size=10) == [Acquired(10, 14, count)]
    release(sp, [Acquired(0, 14, 0)])
    # The first batch (count 1), then the fetch stops before the throttled second one.
    assert sp.acquire("m", 0, NEXT, 500, batch_size=10) == [Acquired(0, 9, 2)]
    # Then the second alone, in pieces of 5 >> 1.
    assert sp.acquire("m", 0, NEXT, 500, batch_size=10) == [Acquired(10, 11, 4)]


def test_a_batch_loaded_from_the_state_is_throttled_by_its_persisted_size() -> None:
    sp = SharePartition("g", TID, 0, ShareConfig(delivery_count_limit=5))
    sp.initialize(0, [StateBatch(0, 9, int(RecordState.AVAILABLE), 3)])
    assert sp.acquire("m", 0, LOG, 500, batch_size=500) == [Acquired(0, 4, 4)]


def test_low_delivery_limits() -> None:
    """Limit 2: throttled from count 2, which is already the end; limit 3: the third
    delivery is the last attempt, record by record (`maxDeliveryCount > 2`)."""
    assert rounds(new_sp(limit=2), LOG) == [[[Acquired(0, 9, 1)]], [[Acquired(0, 9, 2)]]]
    assert rounds(new_sp(limit=3), LOG) == [[[Acquired(0, 9, 1)]], [[Acquired(0, 9, 2)]],
                                           [[Acquired(o, o, 3)] for o in range(10)]]
