"""A deterministic keyed workload and the checks run on what comes back.

Every client (and the Java harness, see tests/interop/java/Workload.java) produces record `i`
of a workload with exactly these bytes, so a test only passes the workload's parameters to a
producer and can check the consumed records field by field without shipping data around.
Timestamps are explicit and recent (an hour back) so time-based retention never touches them.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

KEY_SPACE = 997  # prime, so keys spread over any partition count
HOUR_MS = 3_600_000


@dataclass(frozen=True)
class Workload:
    """Parameters that fully determine the records to produce."""

    topic: str
    count: int
    base_ts: int = field(default_factory=lambda: int(time.time() * 1000) - HOUR_MS)

    def key(self, i: int) -> bytes:
        return f"key-{i % KEY_SPACE}".encode()

    def value(self, i: int) -> bytes:
        return f"{self.topic}:{i}:".encode() + b"abcdefghij" * (i % 8)

    def headers(self, i: int) -> list[tuple[str, bytes]]:
        return [
            ("seq", str(i).encode()),
            ("src", self.topic.encode()),
            ("bin", bytes([0, 255, i & 0xFF])),
        ]

    def timestamp(self, i: int) -> int:
        return self.base_ts + i * 7

    def seq_of(self, value: bytes) -> int:
        """Recover `i` from a value this workload produced."""
        return int(value.split(b":")[1])


@dataclass(frozen=True)
class Consumed:
    """One record as a consumer saw it, normalised across clients."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]
    timestamp: int


def check_consumed(workload: Workload, records: list[Consumed], partitions: int) -> None:
    """Assert the consumed records are exactly the workload: each once, in order per
    partition, fields intact, offsets dense from 0 in every partition."""
    assert records, "nothing consumed"
    seqs = [workload.seq_of(r.value or b"") for r in records]
    duplicates = len(seqs) - len(set(seqs))
    missing = set(range(workload.count)) - set(seqs)
    assert duplicates == 0, f"{duplicates} records consumed more than once"
    assert not missing, f"{len(missing)} records missing, e.g. {sorted(missing)[:10]}"
    assert len(records) == workload.count
    by_partition: dict[int, list[Consumed]] = defaultdict(list)
    key_partition: dict[bytes | None, int] = {}
    for record in records:
        by_partition[record.partition].append(record)
        assert key_partition.setdefault(record.key, record.partition) == record.partition, (
            f"key {record.key!r} in two partitions"
        )
        _check_fields(workload, record)
    assert set(by_partition) == set(range(partitions)), f"partitions used: {sorted(by_partition)}"
    for partition, rows in by_partition.items():
        offsets = [r.offset for r in rows]
        assert offsets == list(range(len(rows))), f"partition {partition}: offsets not dense"
        order = [workload.seq_of(r.value or b"") for r in rows]
        assert order == sorted(order), f"partition {partition}: records out of order"


def _check_fields(workload: Workload, record: Consumed) -> None:
    i = workload.seq_of(record.value or b"")
    where = f"record {i} at {record.partition}/{record.offset}"
    assert record.key == workload.key(i), f"{where}: key {record.key!r}"
    assert record.value == workload.value(i), f"{where}: value {record.value!r}"
    assert record.headers == workload.headers(i), f"{where}: headers {record.headers!r}"
    assert record.timestamp == workload.timestamp(i), f"{where}: timestamp {record.timestamp}"
