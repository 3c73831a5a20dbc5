"""Reading an internal topic's partition back at start-up: the keyed data records.

`__share_group_state` and `__transaction_state` are rebuilt by replaying every keyed record
of their partitions in log order; control batches carry no state and records without a key
are not coordinator records. (`shard_log` replays `__consumer_offsets` itself, because
transactional batches there need their producer and outcome.) The share DLQ writer scans its
topic's data batches the same way (`share_dlq`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from groupcoord.logformat.batch import decode_records, parse_header


def data_batches(plog: Any) -> Iterator[Any]:
    """The data (non-control) batches of ``plog`` (None: nothing), in log order."""
    if plog is None:
        return
    for view in plog.iter_batches():
        if not parse_header(view).is_control:
            yield view


def keyed_records(plog: Any) -> Iterator[Any]:
    """Every record with a key in the data batches of ``plog`` (None: nothing)."""
    for view in data_batches(plog):
        for rec in decode_records(view):
            if rec.key is not None:
                yield rec
