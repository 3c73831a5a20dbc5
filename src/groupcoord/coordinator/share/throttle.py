"""Redelivery throttling near the delivery limit (Kafka 4.4 `SharePartition`:
`throttleRecordsDeliveryLimit`, `shouldThrottleRecordsDelivery`, `acquireSubsetBatchRecords`).

A batch whose available records have been delivered `throttle_limit` times or more is
handed out in shrinking pieces, so that one poison record does not take its whole batch to
the delivery limit (and the dead-letter queue):

- at delivery count c >= limit, at most max(1, batch size >> (c - limit + 1)) records of the
  batch per fetch, the batch size being that of the in-flight batch (the records first
  acquired together), and the size fixed by the first throttled record of the fetch;
- a record on its last attempt (count = delivery limit - 1, for a limit above 2) is
  delivered alone: it ends the piece before it, and nothing follows it;
- a throttled batch is never delivered with other records: a fetch that has acquired
  anything stops before it, and one that acquired from it stops there (no new records).

With the default limit of 5 (throttle limit 3) a released 10-record batch goes out as 10,
10, 10, then 5 + 5, then one record per fetch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT = 2


def throttle_limit(delivery_count_limit: int) -> int:
    """`throttleRecordsDeliveryLimit`: the delivery count from which a batch is throttled."""
    return max(MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT, -(-delivery_count_limit // 2))


def take_throttled(offsets: Iterable[tuple[int, int]], batch_size: int,
                   delivery_count_limit: int, budget: int,
                   acquire: Callable[[int], None]) -> int:
    """Acquire from one throttled in-flight batch (`acquireSubsetBatchRecords`): `offsets`
    are its AVAILABLE (offset, delivery count) in order, `acquire` takes one, at most
    `budget` in all. Returns how many were acquired."""
    limit = throttle_limit(delivery_count_limit)
    isolate = delivery_count_limit > 2
    cap = -1
    taken = 0
    for offset, count in offsets:
        if isolate and count == delivery_count_limit - 1 and taken > 0:
            break  # on its last attempt: alone, in the next fetch
        if count >= limit and cap < 0:
            cap = max(1, batch_size >> (count - limit + 1))
        acquire(offset)
        taken += 1
        if isolate and count + 1 == delivery_count_limit:
            break  # delivered alone
        if taken == cap or taken == budget:
            break
    return taken
