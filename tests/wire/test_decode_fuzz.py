"""Bad input never escapes as anything but DecodeError.

Every request and response decoder (and the record decoders) is fed truncated and mutated
encodings of valid messages: truncation must always raise DecodeError; a mutation may decode
or raise DecodeError, nothing else (no IndexError, struct.error, UnicodeDecodeError, ...).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire_strategies import Case, all_cases, instance

from groupcoord.wire.errors import DecodeError

# Lowest and highest version of every spec (the extremes differ most in layout).
EDGES = sorted({(c, v) for c in all_cases() for v in (c.spec.valid.lo, c.spec.valid.hi)},
               key=lambda cv: (cv[0].id, cv[1]))
IDS = [f"{c.id}-v{v}" for c, v in EDGES]
SETTINGS = settings(max_examples=5, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize(("case", "version"), EDGES, ids=IDS)
def test_truncated_and_mutated_inputs(case: Case, version: int) -> None:
    @SETTINGS
    @given(obj=instance(case, version), data=st.data())
    def check(obj: Any, data: st.DataObject) -> None:
        encoded = obj.encode(version)
        if encoded:
            cut = data.draw(st.integers(0, len(encoded) - 1))
            with pytest.raises(DecodeError):
                case.cls.decode(encoded[:cut], 0, version)
            mutated = bytearray(encoded)
            for _ in range(data.draw(st.integers(1, 3))):
                mutated[data.draw(st.integers(0, len(encoded) - 1))] = data.draw(
                    st.integers(0, 255))
            _decode_or_decode_error(case, bytes(mutated), version)
        junk = data.draw(st.binary(max_size=64))
        _decode_or_decode_error(case, junk, version)

    check()


def _decode_or_decode_error(case: Case, raw: bytes, version: int) -> None:
    try:
        case.cls.decode(raw, 0, version)
    except DecodeError:
        pass


def test_huge_array_count_is_rejected_quickly() -> None:
    from groupcoord.wire.generated.join_group import JoinGroupRequest

    # group "g", session timeout, member "", protocol type "", then 2**31 - 1 protocols
    raw = b"\x00\x01g" + b"\x00\x00\x00\x01" + b"\x00\x00" + b"\x00\x00" + b"\x7f\xff\xff\xff"
    with pytest.raises(DecodeError):
        JoinGroupRequest.decode(raw, 0, 0)


def test_unknown_version_is_a_decode_error() -> None:
    from groupcoord.wire.generated.join_group import JoinGroupRequest

    with pytest.raises(DecodeError):
        JoinGroupRequest.decode(b"", 0, 99)
    with pytest.raises(ValueError):
        JoinGroupRequest().encode(99)
