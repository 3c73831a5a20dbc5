"""The API table: api key -> supported versions and handler.

Mirrors Kafka's `ApiKeys` + `KafkaApis.handle` dispatch. Every handler module exports
`API_KEY`, `MIN_VERSION`, `MAX_VERSION` and `async def handle(ctx, header, request,
version)`; it may export `error_response(request, version, code)` for APIs whose response
has no top-level `error_code`, and `REQUEST`/`RESPONSE` to name the message classes
(by default the generated classes with the module's API key that it imports). ApiVersions is
computed from this table, so only what is really served is advertised.

The broker's table (`handlers()`) imports a handler module, with its generated codecs, on
the first request for its api key: ApiVersions and routing need only the api keys and
version ranges, which `served.py` (generated from the modules by `tools/gen_served.py`)
lists, so the first ApiVersions is answered without loading any other API.

New APIs are added by listing their module here (and regenerating `served.py`). Group API
modules are optional: a module that does not exist yet is skipped, so the broker runs before
every handler is written.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("groupcoord.apis")

Handler = Callable[[Any, Any, Any, int], Awaitable[Any]]
ErrorResponse = Callable[[Any, int, int], Any]

BROKER_MODULES: tuple[str, ...] = (
    "api_versions",
    "metadata",
    "produce",
    "fetch",
    "list_offsets",
    "create_topics",
    "delete_topics",
    "create_partitions",
    "find_coordinator",
    "init_producer_id",
    "describe_cluster",
    "describe_configs",
    "incremental_alter_configs",
    "offset_for_leader_epoch",
    "delete_records",
    "add_partitions_to_txn",
    "add_offsets_to_txn",
    "end_txn",
    "list_transactions",
    "describe_transactions",
    "describe_producers",
    "describe_acls",
    "create_acls",
    "delete_acls",
    "update_features",
    "sasl_handshake",
    "sasl_authenticate",
    "describe_user_scram_credentials",
    "alter_user_scram_credentials",
)

GROUP_MODULES: tuple[str, ...] = (
    "join_group",
    "sync_group",
    "heartbeat",
    "leave_group",
    "offset_commit",
    "offset_fetch",
    "offset_delete",
    "describe_groups",
    "list_groups",
    "delete_groups",
    "consumer_group_heartbeat",
    "consumer_group_describe",
    "share_group_heartbeat",
    "share_group_describe",
    "streams_group_heartbeat",
    "streams_group_describe",
    "streams_group_topology_description_update",
    "share_fetch",
    "share_acknowledge",
    "describe_share_group_offsets",
    "alter_share_group_offsets",
    "delete_share_group_offsets",
    "read_share_group_state",
    "txn_offset_commit",
)


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """One served API: version range, handler and the request codec it decodes with."""

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


def _message_class(module: Any, api_key: int, suffix: str) -> Any | None:
    """The generated class for `api_key` the handler module imported (no registry import:
    loading every generated module would cost a second of start-up)."""
    for name, value in vars(module).items():
        if (name.endswith(suffix) and isinstance(value, type)
                and getattr(value, "API_KEY", None) == api_key):
            return value
    return None


def spec_from_module(module: Any) -> ApiSpec:
    """Build the ApiSpec a handler module declares."""
    api_key = int(module.API_KEY)
    request_cls = getattr(module, "REQUEST", None) or _message_class(module, api_key, "Request")
    response_cls = getattr(module, "RESPONSE", None) or _message_class(module, api_key, "Response")
    if request_cls is None or response_cls is None:
        # The generated module named like the handler module (`join_group`), else the
        # full table.
        short = module.__name__.rsplit(".", 1)[-1]
        try:
            generated = importlib.import_module(f"groupcoord.wire.generated.{short}")
        except ModuleNotFoundError:
            generated = None
        if generated is not None:
            request_cls = request_cls or _message_class(generated, api_key, "Request")
            response_cls = response_cls or _message_class(generated, api_key, "Response")
    if request_cls is None or response_cls is None:
        from groupcoord.wire.messages import REQUESTS, RESPONSES

        request_cls = request_cls or REQUESTS[api_key]
        response_cls = response_cls or RESPONSES[api_key]
    return ApiSpec(
        api_key=api_key,
        min_version=int(module.MIN_VERSION),
        max_version=int(module.MAX_VERSION),
        handler=module.handle,
        request_cls=request_cls,
        response_cls=response_cls,
        flexible_min=getattr(request_cls, "FLEXIBLE_MIN", None),
        error_response=getattr(module, "error_response", None),
    )


def import_optional(name: str) -> Any | None:
    qualified = f"{__package__}.{name}"
    try:
        return importlib.import_module(qualified)
    except ModuleNotFoundError as exc:
        # Only "this module does not exist yet" is tolerated; a broken import inside an
        # existing module is a bug and must surface.
        if exc.name == qualified:
            return None
        raise


def load_handlers(
    modules: Iterable[str] = BROKER_MODULES + GROUP_MODULES,
) -> dict[int, ApiSpec]:
    """Import the handler modules that exist and return the api key -> ApiSpec table."""
    table: dict[int, ApiSpec] = {}
    for name in modules:
        module = import_optional(name)
        if module is None or not hasattr(module, "handle"):
            continue
        spec = spec_from_module(module)
        table[spec.api_key] = spec
    return table


class HandlerTable(Mapping[int, ApiSpec]):
    """Api key -> ApiSpec, each handler module imported on its first lookup."""

    def __init__(self, served: Mapping[str, tuple[int, int, int]]) -> None:
        self._modules = {key: name for name, (key, _, _) in served.items()}
        self._ranges = {key: (low, high) for key, low, high in served.values()}
        self._specs: dict[int, ApiSpec] = {}

    def version_range(self, api_key: int) -> tuple[int, int]:
        return self._ranges[api_key]

    def __getitem__(self, api_key: int) -> ApiSpec:
        spec = self._specs.get(api_key)
        if spec is None:
            module = importlib.import_module(f"{__package__}.{self._modules[api_key]}")
            spec = self._specs[api_key] = spec_from_module(module)
        return spec

    def __iter__(self) -> Iterator[int]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __contains__(self, api_key: object) -> bool:
        return api_key in self._modules


def version_range(table: Mapping[int, ApiSpec], api_key: int) -> tuple[int, int]:
    """The served versions of `api_key`, without importing its handler when `table` is
    the lazy broker table."""
    if isinstance(table, HandlerTable):
        return table.version_range(api_key)
    spec = table[api_key]
    return spec.min_version, spec.max_version


_HANDLERS: HandlerTable | None = None


def handlers() -> HandlerTable:
    """The process-wide table; handler modules load on first use."""
    global _HANDLERS
    if _HANDLERS is None:
        from groupcoord.apis.served import SERVED

        _HANDLERS = HandlerTable(SERVED)
    return _HANDLERS


def __getattr__(name: str) -> Any:
    # `registry.HANDLERS` (the name docs/architecture.md uses) is the broker's table.
    if name == "HANDLERS":
        return handlers()
    raise AttributeError(name)
