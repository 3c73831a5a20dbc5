"""`ctx.groups` for API handlers: the coordinator runtime bound to the caller's client id
and host (the `GroupRuntime` protocol of `apis.context`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groupcoord.server.coordinator_runtime import CoordinatorRuntime, Operation


class GroupCaller:
    """`ctx.groups`: the runtime with the caller's client id and host filled in."""

    __slots__ = ("client_host", "client_id", "runtime")

    def __init__(self, runtime: CoordinatorRuntime, client_id: str, client_host: str) -> None:
        self.runtime = runtime
        self.client_id = client_id
        self.client_host = client_host

    @property
    def num_partitions(self) -> int:
        return self.runtime.num_partitions

    def partition_for(self, group_id: str) -> int:
        return self.runtime.partition_for(group_id)

    async def call(self, group_id: str, op: Operation) -> Any:
        return await self.runtime.call(group_id, op, self.client_id, self.client_host)

    async def call_shard(self, partition: int, op: Operation) -> Any:
        return await self.runtime.call_shard(partition, op, self.client_id, self.client_host)

    async def call_transactional(self, group_id: str, producer_id: int, producer_epoch: int,
                                 op: Operation) -> Any:
        return await self.runtime.call_transactional(group_id, producer_id, producer_epoch, op,
                                                     self.client_id, self.client_host)
