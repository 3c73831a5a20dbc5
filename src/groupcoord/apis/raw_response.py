"""A response body already encoded as buffers, which the dispatcher writes as it is.

A module of its own: the dispatcher loads before the listener is bound, and the request
context's protocols (`apis.context`) are needed only by the handlers loaded after it.
"""

from __future__ import annotations


class RawResponse:
    """A response body already encoded as buffers (fast paths: Fetch, Produce).

    `parts` are written with `transport.writelines`, so stored log bytes go out as
    memoryviews without being copied into Python objects.
    """

    __slots__ = ("parts", "size")

    def __init__(self, parts: list[bytes | memoryview], size: int) -> None:
        self.parts = parts
        self.size = size
