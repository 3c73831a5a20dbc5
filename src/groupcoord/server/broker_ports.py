"""What the coordinator runtimes use of the broker, as typed ports.

The group, share-state and transaction runtimes, their shards and the transaction-log helpers
take a `CoordinatorHost` instead of `broker.Broker`: the broker (the composition root)
imports them, none of them imports it. `Broker` satisfies the protocol structurally.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from groupcoord.coordinator.clock import Clock
    from groupcoord.server.cluster_map import ClusterMap
    from groupcoord.server.config import BrokerConfig
    from groupcoord.server.metrics.counters import GroupCounters
    from groupcoord.server.producer_state import PartitionProducerState, ProducerStateManager
    from groupcoord.server.topics import TopicStore
    from groupcoord.server.waiters import FetchWaiters
    from groupcoord.storage import AppendInfo, LogManager


class CoordinatorHost(Protocol):
    """The broker as a coordinator runtime sees it: its settings and clock, the logs and
    topics, the one append path, producer states, fetch waiters, what group events count, and
    who serves what with several nodes."""

    config: BrokerConfig
    clock: Clock
    logs: LogManager
    topics: TopicStore
    producers: ProducerStateManager
    waiters: FetchWaiters
    group_counters: GroupCounters
    broker_configs: dict[str, str]
    cluster: ClusterMap | None

    def append(self, topic: str, partition: int, data: bytes | memoryview,
               now_ms: int | None = None, *, allow_control: bool = False,
               trusted: bool = False, expected_end_offset: int | None = None
               ) -> AppendInfo: ...

    async def append_async(self, topic: str, partition: int, data: bytes | memoryview,
                           now_ms: int | None = None, *, allow_control: bool = False,
                           trusted: bool = False, expected_end_offset: int | None = None
                           ) -> AppendInfo: ...

    def append_lock(self, topic: str, partition: int) -> AbstractAsyncContextManager[None]: ...

    def producer_state(self, topic: str, partition: int) -> PartitionProducerState: ...


class BrokerRuntime(Protocol):
    """A runtime of the broker, as its parts use it: the broker that hosts it (whose clock
    it reads)."""

    broker: CoordinatorHost
