"""Helpers for storage tests: small client-style batches with predictable sizes."""

from __future__ import annotations

from groupcoord.logformat.batch import build_batch


def make_batch(n: int = 1, ts: int = 1000, value_size: int = 100, key: bytes = b"k",
               **kwargs: object) -> bytes:
    """A batch (base offset 0 unless given) of ``n`` records stamped ``ts``."""
    records = [(key + b"%d" % i, b"v" * value_size, [], ts) for i in range(n)]
    return build_batch(records, **kwargs)  # type: ignore[arg-type]
