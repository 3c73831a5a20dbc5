"""Golden frames captured from real clients (see tools/capture_golden.py) against our codec.

`tests/wire/golden/<client>/<api>_v<version>_<direction>.bin` holds one whole frame (size
prefix included) per client, api, version and direction, exactly as it crossed the wire;
`index.json` lists them with their sha256. Nothing here touches the network.

- Request frames were written by real clients: our header and body decoders must read all of
  each one, and re-encoding must give the client's exact bytes. A client may send tagged
  fields our specs do not know; those are skipped on decode and so missing on re-encode. Such
  a difference is accepted only when it is fully explained by dropped unknown tagged fields.
- Response frames were written by our broker: besides our own decode/re-encode, each body must
  be read whole by kio and, where it knows the api and version, by kafka-python.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import io
import json
import pkgutil
import struct
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from groupcoord.wire.headers import (
    decode_request_header,
    decode_response_header,
    encode_request_header,
    is_flexible,
    response_header_bytes,
    response_header_version,
)
from groupcoord.wire.messages import REQUESTS, RESPONSES
from groupcoord.wire.primitives import read_uvarint

GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
INDEX: list[dict[str, Any]] = json.loads((GOLDEN_DIR / "index.json").read_text())
REQUEST_ENTRIES = [e for e in INDEX if e["direction"] == "request"]
RESPONSE_ENTRIES = [e for e in INDEX if e["direction"] == "response"]
MIN_REQUEST_PAIRS = 30
MIN_CLIENTS = 4
_SIZE = struct.Struct(">i")


def _entry_id(entry: dict[str, Any]) -> str:
    return f"{entry['client']}-{entry['api']}-v{entry['version']}"


def _frame(entry: dict[str, Any]) -> bytes:
    """The golden frame, checked against its index entry (hash and size prefix)."""
    data = (GOLDEN_DIR / entry["file"]).read_bytes()
    assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    (size,) = _SIZE.unpack_from(data, 0)
    assert size == len(data) - 4, "size prefix does not match the frame"
    return data


# -- unknown tagged fields --------------------------------------------------------------------


@dataclass(frozen=True)
class DroppedTag:
    """An unknown tagged field present in the client's frame and absent after re-encoding."""

    offset: int
    tag: int
    size: int


def _read_tag_section(buf: bytes, pos: int) -> tuple[list[tuple[int, bytes]], int]:
    count, pos = read_uvarint(buf, pos)
    fields = []
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        fields.append((tag, buf[pos:pos + size]))
        pos += size
    return fields, pos


def dropped_unknown_tags(original: bytes, reencoded: bytes) -> list[DroppedTag] | None:
    """Explain `reencoded` as `original` minus some tagged fields, or return None.

    Kafka structs carry no length prefix around their tagged-field sections, so dropping an
    unknown tagged field changes only that section: its count, and the field's bytes. Both
    frames are walked in step; where they first differ, both must be at a tagged-field
    section whose re-encoded fields are a subset of the original ones. Size prefixes are
    skipped (the frame size legitimately shrinks).
    """
    i, j = 4, 4
    dropped: list[DroppedTag] = []
    while i < len(original) and j < len(reencoded):
        if original[i] == reencoded[j]:
            i, j = i + 1, j + 1
            continue
        try:
            theirs, next_i = _read_tag_section(original, i)
            ours, next_j = _read_tag_section(reencoded, j)
        except ValueError:
            return None
        missing = [f for f in theirs if f not in ours]
        if not missing or any(f not in theirs for f in ours):
            return None
        dropped += [DroppedTag(i, tag, len(value)) for tag, value in missing]
        i, j = next_i, next_j
    if i != len(original) or j != len(reencoded):
        return None
    return dropped


# -- requests ---------------------------------------------------------------------------------


def _decode_request(data: bytes) -> tuple[Any, Any]:
    header, pos = decode_request_header(data, 4)
    obj, end = REQUESTS[header.api_key].decode(data, pos, header.api_version)
    assert end == len(data), f"{len(data) - end} bytes left after the body"
    return header, obj


def _encode_request(header: Any, obj: Any) -> bytes:
    out = bytearray()
    encode_request_header(out, header, header.header_version)
    out += obj.encode(header.api_version)
    return _SIZE.pack(len(out)) + bytes(out)


@pytest.mark.parametrize("entry", REQUEST_ENTRIES, ids=_entry_id)
def test_request_reencodes_to_client_bytes(entry: dict[str, Any]) -> None:
    data = _frame(entry)
    header, obj = _decode_request(data)
    assert (header.api_key, header.api_version) == (entry["api_key"], entry["version"])
    again = _encode_request(header, obj)
    if again == data:
        return
    dropped = dropped_unknown_tags(data, again)
    assert dropped, (
        f"re-encoding differs from the client's bytes at offset "
        f"{next(i for i, (a, b) in enumerate(zip(data, again, strict=False)) if a != b)} "
        f"and not by unknown tagged fields only"
    )
    assert is_flexible(header.api_key, header.api_version)
    assert _decode_request(again)[1] == obj


def test_unknown_tag_detection() -> None:
    """The tagged-field explanation finds a field injected into a real frame, and only that."""
    entry = next(e for e in REQUEST_ENTRIES
                 if is_flexible(e["api_key"], e["version"]) and _frame(e)[-1] == 0)
    data = _frame(entry)
    extra = bytes([1, 0xE7, 0x07, 3]) + b"abc"  # one field: tag 999, three bytes
    body = data[4:-1] + extra
    injected = _SIZE.pack(len(body)) + body
    header, obj = _decode_request(injected)
    again = _encode_request(header, obj)
    assert again == data
    assert dropped_unknown_tags(injected, again) == [DroppedTag(len(data) - 1, 999, 3)]
    corrupted = again[:-2] + bytes([again[-2] ^ 1]) + again[-1:]
    assert dropped_unknown_tags(injected, corrupted) is None


# -- responses --------------------------------------------------------------------------------


def _response_body(entry: dict[str, Any], data: bytes) -> tuple[int, int]:
    """(correlation id, body offset) of a response frame."""
    version = response_header_version(entry["api_key"], entry["version"])
    return decode_response_header(data, 4, version)


@cache
def _kafka_python_classes() -> dict[str, Any]:
    from kafka.protocol.api_message import ApiMessage

    found: dict[str, Any] = {}
    for info in pkgutil.walk_packages(kafka_protocol().__path__, "kafka.protocol."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            continue
        for obj in vars(module).values():
            if (inspect.isclass(obj) and issubclass(obj, ApiMessage) and obj is not ApiMessage
                    and getattr(obj, "_json", None)):
                found[obj._json["name"]] = obj
    return found


def kafka_protocol() -> Any:
    return pytest.importorskip("kafka.protocol")


@pytest.mark.parametrize("entry", RESPONSE_ENTRIES, ids=_entry_id)
def test_response_reencodes(entry: dict[str, Any]) -> None:
    """Our own decoder reads the broker's response whole and writes it back identically."""
    data = _frame(entry)
    correlation_id, pos = _response_body(entry, data)
    cls = RESPONSES[entry["api_key"]]
    obj, end = cls.decode(data, pos, entry["version"])
    assert end == len(data)
    header_version = response_header_version(entry["api_key"], entry["version"])
    again = response_header_bytes(correlation_id, header_version) + obj.encode(entry["version"])
    assert _SIZE.pack(len(again)) + again == data


@pytest.mark.parametrize("entry", RESPONSE_ENTRIES, ids=_entry_id)
def test_response_read_by_kio(entry: dict[str, Any]) -> None:
    kio_index = pytest.importorskip("kio.index")
    kio_serial = pytest.importorskip("kio.serial")
    data = _frame(entry)
    _, pos = _response_body(entry, data)
    body = data[pos:]
    schema = kio_index.load_response_schema(entry["api_key"], entry["version"])
    value, size = kio_serial.entity_reader(schema)(body, 0)
    assert size == len(body), f"kio read {size} of {len(body)} body bytes"
    out = io.BytesIO()
    kio_serial.entity_writer(schema)(out, value)
    assert out.getvalue() == body


def _kafka_python_class(entry: dict[str, Any]) -> Any:
    name = RESPONSES[entry["api_key"]].__name__
    cls = _kafka_python_classes().get(name)
    if cls is None or not cls.min_version <= entry["version"] <= cls.max_version:
        return None
    return cls


# kafka-python has no classes for the KIP-848 responses; kio checks those alone.
KAFKA_PYTHON_ENTRIES = [e for e in RESPONSE_ENTRIES if _kafka_python_class(e) is not None]


@pytest.mark.parametrize("entry", KAFKA_PYTHON_ENTRIES, ids=_entry_id)
def test_response_read_by_kafka_python(entry: dict[str, Any]) -> None:
    cls = _kafka_python_class(entry)
    data = _frame(entry)
    _, pos = _response_body(entry, data)
    body = data[pos:]
    theirs = cls.decode(body, version=entry["version"])
    theirs._header = None  # decode() leaves it unset; encode() reads it
    assert bytes(theirs.encode(version=entry["version"])) == body


# -- coverage ---------------------------------------------------------------------------------


def test_golden_coverage() -> None:
    """Enough real-client requests, from enough clients, with a response for each."""
    assert len(KAFKA_PYTHON_ENTRIES) >= len(RESPONSE_ENTRIES) // 2
    pairs = {(e["api_key"], e["version"]) for e in REQUEST_ENTRIES}
    clients = {e["client"] for e in REQUEST_ENTRIES}
    assert len(pairs) >= MIN_REQUEST_PAIRS, sorted(pairs)
    assert len(clients) >= MIN_CLIENTS, sorted(clients)
    requests = {(e["client"], e["api_key"], e["version"]) for e in REQUEST_ENTRIES}
    responses = {(e["client"], e["api_key"], e["version"]) for e in RESPONSE_ENTRIES}
    assert requests == responses
    files = {p.relative_to(GOLDEN_DIR).as_posix() for p in GOLDEN_DIR.rglob("*.bin")}
    assert files == {e["file"] for e in INDEX}
    assert sum(e["size"] for e in INDEX) <= 1 << 20


def test_kafka_python_oracle_used() -> None:
    """The kafka-python oracle really reads a good share of the responses."""
    kafka_protocol()
    known = [e for e in RESPONSE_ENTRIES if _kafka_python_class(e) is not None]
    assert len(known) >= len(RESPONSE_ENTRIES) // 2
