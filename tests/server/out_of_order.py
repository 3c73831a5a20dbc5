"""A Metadata handler whose requests finish out of request order without a clock.

A request for topic `after N` completes once N other requests have; any other name
completes at once. Pipelining tests send `after 1` then `now` and so see the second request
finish first, deterministically, where a sleep of some milliseconds would only make it
likely."""

from __future__ import annotations

import asyncio
from typing import Any

from groupcoord.wire.generated.metadata import MetadataResponse, MetadataResponseTopic


class OutOfOrderMetadata:
    """Created per test: its condition belongs to the test's event loop."""

    def __init__(self) -> None:
        self.finished = 0
        self._changed: asyncio.Condition | None = None

    async def handle(self, ctx: Any, header: Any, request: Any, version: int) -> Any:
        """Answers with the topic name and the client host (`name@host`)."""
        name = request.topics[0].name
        if self._changed is None:
            self._changed = asyncio.Condition()
        async with self._changed:
            if name.startswith("after "):
                wanted = int(name.split()[1])
                await self._changed.wait_for(lambda: self.finished >= wanted)
            self.finished += 1
            self._changed.notify_all()
        return MetadataResponse(topics=[MetadataResponseTopic(name=f"{name}@{ctx.client_host}")])
