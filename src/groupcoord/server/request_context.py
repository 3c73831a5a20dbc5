"""The server's implementation of `groupcoord.apis.context.RequestContext`.

One small object per request: the header fields and the connection, with the broker's
shared services reached through properties (cheaper than copying references per request).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol

from groupcoord.server.broker_ports import CoordinatorHost

if TYPE_CHECKING:
    from groupcoord.apis.context import RequestContext
    from groupcoord.apis.registry import ApiSpec
    from groupcoord.security.acl_store import DurableAuthorizer
    from groupcoord.security.principal import KafkaPrincipal
    from groupcoord.security.scram_store import ScramCredentialStore
    from groupcoord.server.cluster_map import ClusterMap
    from groupcoord.server.config import BrokerConfig, Listener
    from groupcoord.server.connection import KafkaConnection, _Slot
    from groupcoord.server.fetch_sessions import FetchSessionCache
    from groupcoord.server.group_caller import GroupCaller
    from groupcoord.server.producer_state import PartitionProducerState, ProducerStateManager
    from groupcoord.server.runtime.coordinator_runtime import CoordinatorRuntime
    from groupcoord.server.share_runtime import ShareRuntime
    from groupcoord.server.topics import TopicStore
    from groupcoord.server.transactions import TransactionRuntime
    from groupcoord.storage import AppendInfo
    from groupcoord.wire.headers import RequestHeader


class ServedBroker(CoordinatorHost, Protocol):
    """The broker as a request sees it (`broker.Broker`): besides what the runtimes use, the
    handler table, the authorizer, fetch sessions, the runtimes themselves, the advertised
    endpoint and the SCRAM credentials."""

    handlers: Mapping[int, ApiSpec]
    authorizer: DurableAuthorizer | None
    fetch_sessions: FetchSessionCache
    groups: CoordinatorRuntime
    shares: ShareRuntime
    transactions: TransactionRuntime
    advertised: Listener

    def scram_store(self) -> ScramCredentialStore: ...

    def forget_partitions(self, topic: str, count: int) -> None: ...


class BrokerRequestContext:
    __slots__ = ("api_key", "broker", "client_address", "client_host", "client_id", "conn",
                 "connection_id", "correlation_id", "slot")

    def __init__(self, broker: ServedBroker, conn: KafkaConnection, header: RequestHeader) -> None:
        self.broker = broker
        self.conn = conn
        self.api_key = header.api_key
        self.client_id = header.client_id
        self.client_address = conn.client_address
        self.client_host = conn.client_host
        self.connection_id = conn.connection_id
        self.correlation_id = header.correlation_id
        # This request's response position, set by the dispatcher (see close_connection).
        self.slot: _Slot | None = None

    @property
    def principal(self) -> KafkaPrincipal:
        return self.conn.principal

    @property
    def authorizer(self) -> DurableAuthorizer | None:
        return self.broker.authorizer

    @property
    def config(self) -> BrokerConfig:
        return self.broker.config

    @property
    def apis(self) -> Mapping[int, ApiSpec]:
        return self.broker.handlers

    @property
    def topics(self) -> TopicStore:
        return self.broker.topics

    @property
    def producers(self) -> ProducerStateManager:
        return self.broker.producers

    @property
    def fetch_sessions(self) -> FetchSessionCache:
        return self.broker.fetch_sessions

    @property
    def groups(self) -> GroupCaller:
        return self.broker.groups.bind(self.client_id, self.client_host, self.conn.node_id)

    @property
    def node_id(self) -> int:
        return self.conn.node_id

    @property
    def cluster(self) -> ClusterMap | None:
        return self.broker.cluster

    @property
    def shares(self) -> ShareRuntime:
        return self.broker.shares

    @property
    def transactions(self) -> TransactionRuntime:
        return self.broker.transactions

    @property
    def broker_configs(self) -> dict[str, str]:
        return self.broker.broker_configs

    @property
    def advertised_host(self) -> str:
        listener = self.conn.listener
        return (listener.advertised if listener is not None else self.broker.advertised).host

    @property
    def advertised_port(self) -> int:
        listener = self.conn.listener
        return (listener.advertised if listener is not None else self.broker.advertised).port

    @property
    def listener_name(self) -> str:
        return self.conn.listener_name

    @property
    def scram_credentials(self) -> ScramCredentialStore:
        return self.broker.scram_store()

    def now_ms(self) -> int:
        return self.broker.clock.now_ms()

    def append_lock(self, topic: str, partition: int) -> AbstractAsyncContextManager[None]:
        return self.broker.append_lock(topic, partition)

    async def append(self, topic: str, partition: int, data: bytes | memoryview,
                     now_ms: int) -> AppendInfo:
        return await self.broker.append_async(topic, partition, data, now_ms)

    def forget_partitions(self, topic: str, count: int) -> None:
        self.broker.forget_partitions(topic, count)

    def close_connection(self) -> None:
        """Close after this request: earlier requests still get their responses."""
        self.conn.close_after_pending(self.slot)

    def producer_state(self, topic: str, partition: int) -> PartitionProducerState:
        return self.broker.producer_state(topic, partition)

    async def wait_for_data(self, keys: Iterable[Hashable], timeout_ms: int) -> None:
        await self.broker.waiters.wait(keys, timeout_ms / 1000.0)


if TYPE_CHECKING:
    def _implements_the_protocol(ctx: BrokerRequestContext) -> RequestContext:
        return ctx  # mypy checks BrokerRequestContext against the handlers' protocol
