"""What a shard task (`shard_task`) needs of the runtime that hosts it (`shard_runtime`), as
a typed port, and the operation type they pass between them. The runtime imports the task;
the task and its parts import only this."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from groupcoord.server.broker_ports import BrokerRuntime

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from groupcoord.coordinator.result import OpContext
    from groupcoord.coordinator.shard import Shard
    from groupcoord.server.runtime.runtime_metrics import RuntimeMetrics

# An operation: (shard, op context, now ms) -> a Result, an EndTxnWrite or None.
Operation = Callable[[Any, Any, int], Any]


class ShardHost(BrokerRuntime, Protocol):
    """The runtime of a topic's shards, as each of its shard tasks uses it."""

    @property
    def topic(self) -> str: ...

    @property
    def metrics(self) -> RuntimeMetrics: ...

    # One shard replays at a time.
    @property
    def loading(self) -> asyncio.Lock: ...

    @property
    def cleanup_interval_ms(self) -> int: ...

    @property
    def coalesce_writes(self) -> bool: ...

    @property
    def fsync_always(self) -> bool: ...

    # Partitions appended to since their last fsync.
    @property
    def written(self) -> dict[int, bool]: ...

    @property
    def append(self) -> Callable[..., Any]: ...

    @property
    def append_error(self) -> Callable[[BaseException], int]: ...

    def new_shard(self, partition: int) -> Shard: ...

    def op_context(self, client_id: str, client_host: str, token: int) -> OpContext: ...

    def offload_executor(self) -> ThreadPoolExecutor: ...

    def log_end_offset(self, partition: int) -> int: ...

    def flush_shard(self, partition: int) -> None: ...

    def discard_from(self, partition: int, offset: int) -> None: ...
