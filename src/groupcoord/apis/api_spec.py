"""What the API table holds for one served API (`ApiSpec`) and for one generated row of
`served.py` (`ServedApi`). A module of its own so that `served.py` and `registry.py` can
both import it without importing each other."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from groupcoord.security.settings import Settings

# `async def handle(ctx: RequestContext, header, request: <XRequest>, version) -> response`;
# the table holds handlers of every request type, hence the Any parameters here.
Handler = Callable[[Any, Any, Any, int], Awaitable[Any]]
ErrorResponse = Callable[[Any, int, int], Any]


class ApiSpec(Settings):
    """One served API: version range, handler and the request codec it decodes with.
    (A `Settings` record: the table is built before the broker binds its listeners, where a
    dataclass costs its generated code.)"""

    api_key: int
    min_version: int
    max_version: int
    handler: Handler
    request_cls: Any
    response_cls: Any
    flexible_min: int | None
    error_response: ErrorResponse | None = None

    def is_flexible(self, version: int) -> bool:
        return self.flexible_min is not None and version >= self.flexible_min


class ServedApi(Settings):
    """A row of the generated table: the api key and versions a handler module serves, and
    the function that imports the module and builds its `ApiSpec`."""

    api_key: int
    min_version: int
    max_version: int
    load: Callable[[], ApiSpec]
