"""The codec's decode error, in a module of its own so that the modules that decode the
first requests need not build the ``ErrorCode`` enum (``groupcoord.wire.errors``)."""

from __future__ import annotations


class DecodeError(ValueError):
    """Bytes that are not a valid encoding of the expected message or record.

    Every decoding failure (truncation, bad lengths, bad utf-8, overlong varints, null in a
    non-nullable field) surfaces as this one type, so callers need a single ``except``.
    """
