"""`ctx.groups` for API handlers: the coordinator runtime bound to the caller's client id,
host and node (the `GroupRuntime` protocol of `apis.context`).

With several nodes (`server.cluster_map`), a shard answers only requests that came in on
the node coordinating its partition; the others get NOT_COORDINATOR, as a Kafka broker
that does not lead that `__consumer_offsets` partition answers."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from groupcoord.apis.errors import ApiError
from groupcoord.logformat.internal_topics import OFFSETS_TOPIC
from groupcoord.wire.errors import ErrorCode

if TYPE_CHECKING:
    from groupcoord.server.broker_ports import CoordinatorHost
    from groupcoord.server.runtime.shard_task import Operation

_NOT_COORDINATOR = int(ErrorCode.NOT_COORDINATOR)


class GroupShards(Protocol):
    """What a caller uses of the group coordinator runtime (`coordinator_runtime`)."""

    @property
    def broker(self) -> CoordinatorHost: ...

    @property
    def num_partitions(self) -> int: ...

    def partition_for(self, group_id: str) -> int: ...

    def submit_shard(self, partition: int, op: Operation, client_id: str = "",
                     client_host: str = "") -> asyncio.Future[Any]: ...

    async def call_shard(self, partition: int, op: Operation, client_id: str = "",
                         client_host: str = "") -> Any: ...

    async def call_transactional(self, group_id: str, producer_id: int, producer_epoch: int,
                                 op: Operation, client_id: str, client_host: str) -> Any: ...


class GroupCaller:
    """`ctx.groups`: the runtime with the caller's client id, host and node filled in."""

    __slots__ = ("client_host", "client_id", "node_id", "runtime")

    def __init__(self, runtime: GroupShards, client_id: str, client_host: str,
                 node_id: int = 0) -> None:
        self.runtime = runtime
        self.client_id = client_id
        self.client_host = client_host
        self.node_id = node_id

    @property
    def num_partitions(self) -> int:
        return self.runtime.num_partitions

    def partition_for(self, group_id: str) -> int:
        return self.runtime.partition_for(group_id)

    def _owned(self, partition: int) -> int:
        cluster = self.runtime.broker.cluster
        if cluster is not None and cluster.owner(OFFSETS_TOPIC, partition) != self.node_id:
            raise ApiError(_NOT_COORDINATOR)
        return partition

    async def call(self, group_id: str, op: Operation) -> Any:
        return await self.submit(group_id, op)

    def submit(self, group_id: str, op: Operation) -> asyncio.Future[Any]:
        partition = self._owned(self.runtime.partition_for(group_id))
        return self.runtime.submit_shard(partition, op, self.client_id, self.client_host)

    async def call_shard(self, partition: int, op: Operation) -> Any:
        return await self.runtime.call_shard(self._owned(partition), op, self.client_id,
                                             self.client_host)

    async def call_transactional(self, group_id: str, producer_id: int, producer_epoch: int,
                                 op: Operation) -> Any:
        self._owned(self.runtime.partition_for(group_id))
        return await self.runtime.call_transactional(group_id, producer_id, producer_epoch, op,
                                                     self.client_id, self.client_host)
