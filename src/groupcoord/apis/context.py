"""What a handler may use: the request context protocol.

Handlers are `async def handle(ctx: RequestContext, header, request, version)`, or a plain
`def` returning an awaitable (the future of `groups.submit`, or a coroutine). They
never import asyncio, sockets or clocks; everything with a side effect outside the
handler's own response goes through this context, which the server implements
(`groupcoord.server.request_context`). Tests implement it with fakes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from groupcoord.apis.services import (
        FetchSessions,
        Producers,
        ProducerStateView,
        Shares,
        TopicMetadata,
        Transactions,
    )
    from groupcoord.security.acl_store import DurableAuthorizer
    from groupcoord.security.principal import KafkaPrincipal
    from groupcoord.security.scram import ScramCredential
    from groupcoord.storage import AppendInfo


class ScramCredentials(Protocol):
    """The part of `security.scram_store.ScramCredentialStore` handlers use."""

    def users(self) -> dict[str, dict[str, ScramCredential]]: ...
    def apply(self, upserts: Iterable[tuple[str, str, ScramCredential]] = (),
              deletions: Iterable[tuple[str, str]] = ()) -> None: ...


class BrokerSettings(Protocol):
    """The part of `server.config.BrokerConfig` handlers read."""

    @property
    def node_id(self) -> int: ...
    @property
    def cluster_id(self) -> str: ...
    @property
    def rack(self) -> str | None: ...
    @property
    def auto_create_topics(self) -> bool: ...
    @property
    def default_partitions(self) -> int: ...
    @property
    def data_dir(self) -> str: ...
    @property
    def offsets_partitions(self) -> int: ...
    @property
    def group_initial_rebalance_delay_ms(self) -> int: ...
    @property
    def max_request_size(self) -> int: ...
    @property
    def max_connections(self) -> int: ...
    @property
    def max_connections_per_ip(self) -> int: ...
    @property
    def max_connections_per_ip_overrides(self) -> str: ...
    @property
    def connections_max_idle_ms(self) -> int: ...
    @property
    def extra(self) -> dict[str, str]:
        """Kafka config keys given with `--config key=value`."""
        ...


class ClusterView(Protocol):
    """Several nodes in one process (`server.cluster_map.ClusterMap`), or the nodes of a
    cluster on PostgreSQL (`server.lease_cluster_map.LeaseClusterMap`): who serves what."""

    def owner(self, topic: str, partition: int) -> int: ...
    def leader_epoch(self, topic: str, partition: int) -> int: ...
    def coordinator(self, key_type: int, key: str) -> int: ...
    def live_nodes(self) -> list[Any]: ...
    def controller_id(self) -> int: ...
    def endpoint(self, node_id: int, listener_name: str) -> Any:
        """The node's advertised host and port on that listener (None if stopped)."""
        ...


class GroupRuntime(Protocol):
    """The coordinator runtime (`server.runtime.coordinator_runtime.CoordinatorRuntime`)."""

    @property
    def num_partitions(self) -> int: ...

    def partition_for(self, group_id: str) -> int: ...
    async def call(self, group_id: str, op: Callable[[Any, Any, int], Any]) -> Any: ...
    def submit(self, group_id: str, op: Callable[[Any, Any, int], Any]) -> Awaitable[Any]:
        """``call`` for a handler that is not a coroutine: the operation is queued at
        once (an ApiError is raised at once when the shard takes none), and the future
        returned is what the handler returns (see ``server.dispatch``)."""
        ...
    async def call_shard(self, shard: int, op: Callable[[Any, Any, int], Any]) -> Any: ...
    async def call_transactional(self, group_id: str, producer_id: int, producer_epoch: int,
                                 op: Callable[[Any, Any, int], Any]) -> Any:
        """``call``, with the records written in a transactional batch of that producer."""
        ...


class RequestContext(Protocol):
    """Per-request view of the broker."""

    api_key: int
    client_id: str | None
    # The group APIs' member host (`/127.0.0.1`, Java's `InetAddress.toString()`) and the
    # bare address the authorizer matches ACL hosts against (`getHostAddress()`).
    client_host: str
    client_address: str
    connection_id: str
    correlation_id: int

    @property
    def principal(self) -> KafkaPrincipal:
        """Who the connection authenticated as (`User:ANONYMOUS` until it does)."""
        ...
    @property
    def authorizer(self) -> DurableAuthorizer | None:
        """The ACL authorizer, or None when none is configured (every check passes)."""
        ...
    @property
    def config(self) -> BrokerSettings: ...
    @property
    def apis(self) -> Mapping[int, Any]: ...
    @property
    def topics(self) -> TopicMetadata: ...
    @property
    def producers(self) -> Producers: ...
    @property
    def fetch_sessions(self) -> FetchSessions: ...
    @property
    def groups(self) -> GroupRuntime: ...
    @property
    def node_id(self) -> int:
        """The node the request came in on (the broker's node id with one node)."""
        ...
    @property
    def cluster(self) -> ClusterView | None:
        """The ownership map with several nodes; None with one (it serves everything)."""
        ...
    @property
    def shares(self) -> Shares:
        """The share-partition manager (`server.share_runtime.ShareRuntime`)."""
        ...
    @property
    def transactions(self) -> Transactions:
        """The transaction coordinator runtime (`server.transactions.TransactionRuntime`)."""
        ...
    @property
    def broker_configs(self) -> dict[str, str]: ...
    @property
    def advertised_host(self) -> str: ...
    @property
    def advertised_port(self) -> int: ...
    @property
    def listener_name(self) -> str:
        """The name of the listener the request came in on (`PLAINTEXT`, `SASL_SSL`, ...)."""
        ...
    @property
    def scram_credentials(self) -> ScramCredentials:
        """The broker's SCRAM credential store (`security.scram_store`)."""
        ...

    def now_ms(self) -> int: ...
    def append_lock(self, topic: str, partition: int) -> AbstractAsyncContextManager[None]:
        """Held from the producer-state checks of an append to its end (`append`)."""
        ...
    async def append(self, topic: str, partition: int, data: bytes | memoryview,
                     now_ms: int) -> AppendInfo: ...
    def forget_partitions(self, topic: str, count: int) -> None: ...
    def close_connection(self) -> None: ...
    def producer_state(self, topic: str, partition: int) -> ProducerStateView: ...
    def wait_for_data(self, keys: Iterable[Hashable], timeout_ms: int) -> Awaitable[None]: ...
