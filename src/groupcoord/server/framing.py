"""Response framing on raw frame bytes; request headers are parsed by ``wire.headers``.

Mirrors `org.apache.kafka.common.requests.ResponseHeader`, hand-written because it runs for
every response: a precompiled struct, no intermediate objects.
"""

from __future__ import annotations

import struct

from groupcoord.wire import api_key_numbers

_SIZE_CORR = struct.Struct(">ii")
API_VERSIONS_KEY = api_key_numbers.API_VERSIONS  # compared on every request


def response_head(correlation_id: int, body_len: int, flexible_header: bool) -> bytes:
    """Size prefix + response header; header v1 (flexible) adds an empty tagged-field section."""
    if flexible_header:
        return _SIZE_CORR.pack(body_len + 5, correlation_id) + b"\x00"
    return _SIZE_CORR.pack(body_len + 4, correlation_id)
