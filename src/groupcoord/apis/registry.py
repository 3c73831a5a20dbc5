"""The API table: api key -> supported versions and handler.

Mirrors Kafka's `ApiKeys` + `KafkaApis.handle` dispatch. Every handler module exports the
versions it serves (`MIN_VERSION, MAX_VERSION = 0, 6`) and `async def handle(ctx, header,
request, version)`; it may export `error_response(request, version, code)` for APIs whose
response has no top-level `error_code`, and `REQUEST`/`RESPONSE` to name the message classes
(by default those of the same-named generated module). Its api key is its request class's.
ApiVersions is computed from this table, so only what is really served is advertised.

The table is `served.py`, a literal table generated from the handler modules by
`tools/gen_served.py` (which lists them): api key, version range and a loader that imports
the handler module with its generated codecs on the first request for that api key.
ApiVersions and routing need only the first three, so the first ApiVersions is answered
without loading any other API. New APIs are added by listing their module in the generator
and running it.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.apis import served
from groupcoord.apis.api_spec import ApiSpec, ErrorResponse, Handler, HandlerTable, version_range

__all__ = ["ApiSpec", "ErrorResponse", "Handler", "HandlerTable", "handlers",
           "load_handlers", "version_range"]


def load_handlers(modules: Iterable[str] | None = None) -> dict[int, ApiSpec]:
    """The api key -> ApiSpec table of the named handler modules (all by default), every
    module imported now."""
    names = served.SERVED if modules is None else modules
    table: dict[int, ApiSpec] = {}
    for name in names:
        spec = served.SERVED[name].load()
        table[spec.api_key] = spec
    return table


_HANDLERS: HandlerTable | None = None


def handlers() -> HandlerTable:
    """The process-wide table; handler modules load on first use."""
    global _HANDLERS
    if _HANDLERS is None:
        _HANDLERS = HandlerTable(served.SERVED)
    return _HANDLERS
