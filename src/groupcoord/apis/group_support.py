"""Helpers shared by the group API handlers: calling a group's shard, splitting
multi-group requests per shard, and resolving topics as Kafka's `KafkaApis` does before
a request reaches the coordinator."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from groupcoord.apis.context import RequestContext
from groupcoord.apis.errors import ApiError

if TYPE_CHECKING:
    from groupcoord.coordinator.result import OpContext, Result
    from groupcoord.coordinator.shard import GroupCoordinatorShard

UUID_ZERO = bytes(16)


# A shard's request method: `GroupCoordinatorShard.join_group` and its siblings.
ShardMethod = Callable[["GroupCoordinatorShard", Any, int, "OpContext", int], "Result"]


def op(method: ShardMethod, request: Any, version: int
       ) -> Callable[[GroupCoordinatorShard, OpContext, int], Result]:
    """The runtime operation calling `method(shard, request, version, op_ctx, now)`."""
    def run(shard: GroupCoordinatorShard, op_ctx: OpContext, now_ms: int) -> Result:
        return method(shard, request, version, op_ctx, now_ms)
    return run


async def call_group(ctx: RequestContext, group_id: str, method: ShardMethod, request: Any,
                     version: int) -> Any:
    return await ctx.groups.call(group_id, op(method, request, version))


async def call_or_error(ctx: RequestContext, group_id: str, fn: Callable[[Any, Any, int], Any]
                        ) -> tuple[Any, int]:
    """(response, 0) or (None, error code) when the shard is unavailable."""
    try:
        return await ctx.groups.call(group_id, fn), 0
    except ApiError as exc:
        return None, exc.code


def groups_with_error(result: type, group_ids: Iterable[str], code: int) -> list[Any]:
    """One `result` (a generated per-group entry with `group_id` and `error_code`) for each
    group, all answering `code`: the group APIs' `error_response`."""
    return [result(group_id=g, error_code=code) for g in group_ids]


def by_partition(ctx: RequestContext, group_ids: list[str]) -> dict[int, list[str]]:
    """Group ids per `__consumer_offsets` partition, keeping request order in each."""
    shards: dict[int, list[str]] = {}
    for gid in group_ids:
        shards.setdefault(ctx.groups.partition_for(gid), []).append(gid)
    return shards


def topic_info(ctx: RequestContext, name: str | None = None, topic_id: bytes | None = None) -> Any:
    topics = ctx.topics
    if topic_id is not None and bytes(topic_id) != UUID_ZERO:
        return topics.by_id(bytes(topic_id))
    if name is None:
        return None
    return topics.get(name)


def group_overrides(ctx: RequestContext, group_id: str) -> dict[str, str]:
    """The group's stored dynamic configs (`GroupConfigStore`, IncrementalAlterConfigs)."""
    return dict(ctx.shares.group_configs.get(group_id))


def partition_exists(info: Any, partition: int) -> bool:
    return info is not None and 0 <= partition < info.num_partitions
