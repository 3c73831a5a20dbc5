"""Message classes: the base class of every generated class, and the api key tables.

``WireStruct`` gives every generated message, struct and record class (see
``tools/gen_messages.py``) its entry points: ``encode``/``encode_into``/``encode_parts`` and
``decode``, plus equality and repr. ``decode`` is the one place where malformed input is
turned into :class:`~groupcoord.wire.errors.DecodeError`, so the generated straight-line
code needs no per-read checks. Mirrors Kafka's ``ApiMessage``/``Message`` interfaces.

``REQUESTS[api_key]`` / ``RESPONSES[api_key]`` give the generated classes (e.g.
``REQUESTS[ApiKey.JOIN_GROUP] is JoinGroupRequest``), the dispatch table of Kafka's
``ApiMessageType``. The tables are generated into ``generated/registry.py`` and loaded on
first use, because the generated modules themselves import this module.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, ClassVar

from groupcoord.wire.decode_error import DecodeError
from groupcoord.wire.primitives import Buffer

# Struct errors and slicing surprises are all "the input is not a valid message".
_DECODE_FAILURES = (IndexError, ValueError, struct.error, OverflowError, MemoryError, TypeError)
_ENCODE_FAILURES = (AttributeError, TypeError, struct.error, OverflowError, UnicodeEncodeError)

Encoder = Callable[..., Any]
Decoder = Callable[[Buffer, int], tuple[Any, int]]


class WireStruct:
    """Behaviour shared by every generated message, struct and record class.

    Subclasses provide ``__slots__`` (the snake_case field names) and the per-version
    ``_ENC``/``_DEC`` tables of straight-line functions written by ``tools/gen_messages.py``.
    Encoders append to a ``bytearray`` ``out``. Classes holding a ``records`` field (directly
    or nested) are ``_CHUNKED``: their encoders also take a ``parts`` list, hand each record
    payload over as a chunk of its own (never copied before the final join) and return the
    ``bytearray`` they are writing to. Decoders take ``bytes``; :meth:`decode` converts other
    buffers once, up front.
    """

    __slots__ = ()
    #: Field names in spec order (``__slots__`` holds the same names, sorted).
    _FIELDS: ClassVar[tuple[str, ...]] = ()
    _ENC: ClassVar[dict[int, Encoder]] = {}
    _DEC: ClassVar[dict[int, Decoder]] = {}
    _CHUNKED: ClassVar[bool] = False
    __hash__ = None  # type: ignore[assignment]  # mutable value objects

    def encode(self, version: int) -> bytes:
        fn = self._encoder(version)
        try:
            if not self._CHUNKED:
                out = bytearray()
                fn(self, out)
                return bytes(out)
            parts: list[Buffer] = []
            tail = fn(self, bytearray(), parts)
        except _ENCODE_FAILURES as exc:
            raise self._encode_error(version, exc) from exc
        if not parts:
            return bytes(tail)
        parts.append(tail)
        return b"".join(parts)

    def encode_into(self, out: bytearray, version: int) -> None:
        fn = self._encoder(version)
        parts: list[Buffer] = []
        try:
            if not self._CHUNKED:
                fn(self, out)
                return
            tail = fn(self, out, parts)
        except _ENCODE_FAILURES as exc:
            raise self._encode_error(version, exc) from exc
        # parts[0] is ``out`` itself when any records chunk was split off.
        for chunk in parts[1:]:
            out += chunk
        if tail is not out:
            out += tail

    def encode_parts(self, version: int) -> list[Buffer]:
        """The encoding as a list of chunks (records fields are passed through uncopied)."""
        fn = self._encoder(version)
        parts: list[Buffer] = []
        try:
            if not self._CHUNKED:
                out = bytearray()
                fn(self, out)
                return [out]
            parts.append(fn(self, bytearray(), parts))
        except _ENCODE_FAILURES as exc:
            raise self._encode_error(version, exc) from exc
        return parts

    def _encode_error(self, version: int, exc: Exception) -> ValueError:
        # A None in a non-nullable field, an int out of range, a str where bytes belong:
        # always the caller's bug, reported as one exception type.
        return ValueError(f"cannot encode {type(self).__name__} v{version}: {exc!r}")

    def _encoder(self, version: int) -> Encoder:
        try:
            return self._ENC[version]
        except KeyError:
            raise ValueError(f"{type(self).__name__} has no version {version}") from None

    @classmethod
    def decode(cls, buf: Buffer, pos: int, version: int) -> tuple[Any, int]:
        try:
            fn = cls._DEC[version]
        except KeyError:
            raise DecodeError(f"{cls.__name__} has no version {version}") from None
        if type(buf) is not bytes:
            # Generated decoders slice and .decode() bytes directly, the fastest path.
            buf = bytes(buf)
        try:
            obj, end = fn(buf, pos)
        except DecodeError:
            raise
        except _DECODE_FAILURES as exc:
            raise DecodeError(f"malformed {cls.__name__} v{version}: {exc}") from exc
        if end > len(buf):
            raise DecodeError(f"truncated {cls.__name__} v{version}")
        return obj, end

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    def __repr__(self) -> str:
        body = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS)
        return f"{type(self).__name__}({body})"


def __getattr__(name: str) -> Any:
    if name in ("REQUESTS", "RESPONSES"):
        from groupcoord.wire.generated import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
