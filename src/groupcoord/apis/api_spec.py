"""The API table: what it holds for one served API (`ApiSpec`) and for one generated row
of `served.py` (`ServedApi`), and the lazy table built from those rows (`HandlerTable`).
A module of its own so that `served.py`, `registry.py` and the ApiVersions handler (which
`served.py` loads) can all import it without importing each other."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
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


class HandlerTable(Mapping[int, ApiSpec]):
    """Api key -> ApiSpec, each handler module imported on its first lookup."""

    def __init__(self, served: Mapping[str, ServedApi]) -> None:
        self._rows = {row.api_key: row for row in served.values()}
        self._specs: dict[int, ApiSpec] = {}

    def version_range(self, api_key: int) -> tuple[int, int]:
        row = self._rows[api_key]
        return row.min_version, row.max_version

    def __getitem__(self, api_key: int) -> ApiSpec:
        spec = self._specs.get(api_key)
        if spec is None:
            spec = self._specs[api_key] = self._rows[api_key].load()
        return spec

    def __iter__(self) -> Iterator[int]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, api_key: object) -> bool:
        return api_key in self._rows


def version_range(table: Mapping[int, ApiSpec], api_key: int) -> tuple[int, int]:
    """The served versions of `api_key`, without importing its handler when `table` is
    the lazy broker table."""
    if isinstance(table, HandlerTable):
        return table.version_range(api_key)
    spec = table[api_key]
    return spec.min_version, spec.max_version
