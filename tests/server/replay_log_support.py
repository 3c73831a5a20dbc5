"""Random `__consumer_offsets` logs for replay tests: batches of offset commits (some
superseded, some tombstones, some with undecodable values or unknown record types),
classic and consumer group records, and transactional offset commits of two producers
whose COMMIT or ABORT markers come later or never (left pending at the end)."""

from __future__ import annotations

import random

from groupcoord.coordinator.consumer import records as consumer_records
from groupcoord.coordinator.records import (
    group_metadata_record,
    group_tombstone,
    offset_commit_record,
    offset_tombstone,
)
from groupcoord.logformat.batch import build_batch
from groupcoord.server.runtime.shard_log import encode_end_txn_marker

GROUPS = ("g0", "g1", "g2", "g3")
TOPICS = ("t0", "t1")
PRODUCERS = (7, 8)
UNKNOWN_KEY = b"\x00\x63unknown"  # record type 99: no writer of ours knows it


def _record(rng: random.Random, n: int) -> tuple[bytes, bytes | None]:
    group = rng.choice(GROUPS)
    topic, partition = rng.choice(TOPICS), rng.randrange(3)
    roll = rng.random()
    if roll < 0.70:
        expire = 5_000 if rng.random() < 0.1 else -1
        rec = offset_commit_record(group, topic, partition, n, rng.choice((-1, 3)), f"m{n}",
                                   1_000 + n, expire, bytes(16))
    elif roll < 0.80:
        rec = offset_tombstone(group, topic, partition)
    elif roll < 0.85:
        rec = group_metadata_record(group, "consumer", n, None, None, 1_000, [])
    elif roll < 0.87:
        rec = group_tombstone(group)
    elif roll < 0.92:
        rec = consumer_records.group_metadata(group, n, 0)
    elif roll < 0.94:
        rec = consumer_records.group_metadata_tombstone(group)
    elif roll < 0.97:
        key = offset_tombstone(group, topic, partition).key_bytes()
        return key, b"\x00\x03\xff"  # an offset commit value that does not decode
    else:
        return UNKNOWN_KEY, b"\x00\x00"
    return rec.key_bytes(), rec.value_bytes()


def random_log(rng: random.Random, batches: int) -> list[bytes]:
    """Whole batches at consecutive offsets."""
    out: list[bytes] = []
    offset = 0
    open_txns: set[int] = set()
    for _ in range(batches):
        roll = rng.random()
        if roll < 0.12:
            pid = rng.choice(PRODUCERS)
            rows = []
            for j in range(rng.randint(1, 4)):
                rec = offset_commit_record(rng.choice(GROUPS), rng.choice(TOPICS),
                                           rng.randrange(3), offset + j, -1, "tx", 1_000, -1,
                                           bytes(16))
                rows.append((rec.key_bytes(), rec.value_bytes(), (), 1_000))
            out.append(build_batch(rows, base_offset=offset, producer_id=pid,
                                   producer_epoch=0, base_sequence=0, transactional=True))
            open_txns.add(pid)
            offset += len(rows)
        elif roll < 0.2 and open_txns:
            pid = rng.choice(sorted(open_txns))
            open_txns.discard(pid)
            marker = bytearray(encode_end_txn_marker(pid, 0, 0, rng.random() < 0.6, 1_000))
            from groupcoord.logformat.batch import set_base_offset

            set_base_offset(marker, 0, offset)
            out.append(bytes(marker))
            offset += 1
        else:
            rows = [(*_record(rng, offset + j), (), 1_000) for j in range(rng.randint(1, 12))]
            out.append(build_batch(rows, base_offset=offset,
                                   compression=1 if rng.random() < 0.1 else 0))
            offset += len(rows)
    return out
