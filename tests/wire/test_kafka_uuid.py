"""Kafka's Uuid: text form and `Uuid.randomUuid`'s rules (no "-" in the text, never 0 or 1)."""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from groupcoord.wire.kafka_uuid import random_uuid, uuid_text


def _source(*draws: bytes) -> Iterator[bytes]:
    return iter(draws)


def test_text_is_unpadded_url_safe_base64() -> None:
    assert uuid_text(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert uuid_text(bytes(15) + b"\x01") == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert uuid_text(b"\xfb" * 16) == "-_v7-_v7-_v7-_v7-_v7-w"


def test_a_draw_whose_text_has_a_dash_is_drawn_again() -> None:
    dashed = b"\xf8" + bytes(15)  # 0xf8 >> 2 == 62, base64url "-"
    plain = bytes(range(16))
    draws = _source(dashed, plain)
    raw = random_uuid(lambda n: next(draws)[:n])
    assert "-" not in uuid_text(raw)
    assert raw[6] >> 4 == 4 and raw[8] >> 6 == 2  # version 4, IETF variant
    assert raw[:6] == plain[:6]  # the second draw


@given(st.binary(min_size=16, max_size=16))
def test_random_uuid_text_never_has_a_dash(first: bytes) -> None:
    fallback = bytes(range(16))
    draws = _source(first, fallback)
    text = uuid_text(random_uuid(lambda n: next(draws)))
    assert len(text) == 22 and "-" not in text
