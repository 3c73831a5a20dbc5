"""Property test: every message, data, header and record spec round-trips at every version.

``decode(encode(x, v), v) == x`` for random ``x`` holding only the fields of version ``v``,
and the decoder consumes exactly the bytes the encoder wrote (also when the encoding sits
inside a larger buffer).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire_strategies import Case, instance, message_versions

CASES = message_versions()


@pytest.mark.parametrize(("case", "version"), CASES,
                         ids=[f"{c.id}-v{v}" for c, v in CASES])
def test_round_trip(case: Case, version: int) -> None:
    @settings(max_examples=3, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(obj=instance(case, version), prefix=st.binary(max_size=3))
    def check(obj: object, prefix: bytes) -> None:
        data = obj.encode(version)  # type: ignore[attr-defined]
        decoded, end = case.cls.decode(data, 0, version)
        assert end == len(data)
        assert decoded == obj
        # Same bytes through encode_into, and decoding at an offset of a memoryview.
        out = bytearray(prefix)
        obj.encode_into(out, version)  # type: ignore[attr-defined]
        assert bytes(out[len(prefix):]) == data
        again, end = case.cls.decode(memoryview(bytes(out) + b"\x00"), len(prefix), version)
        assert end == len(out)
        assert again == obj

    check()
