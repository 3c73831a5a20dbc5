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

    from groupcoord.coordinator.result import Effect, OpContext
    from groupcoord.coordinator.shard import Shard
    from groupcoord.server.runtime.runtime_metrics import RuntimeMetrics

# An operation: (shard, op context, now ms) -> a Result, an EndTxnWrite or None.
Operation = Callable[[Any, Any, int], Any]


class ShardHost(BrokerRuntime, Protocol):
    """The runtime of a topic's shards, as each of its shard tasks uses it. The members are
    the runtime's plain attributes; its owner sets some after building it (the append path
    and its error answer)."""

    topic: str
    metrics: RuntimeMetrics
    # One shard replays at a time.
    loading: asyncio.Lock
    cleanup_interval_ms: int
    fsync_always: bool
    # Partitions appended to since their last fsync.
    written: dict[int, bool]
    append: Callable[..., Any]
    append_error: Callable[[BaseException], int]
    # Runs an effect of appended records (`coordinator.result.Effect`).
    run_effect: Callable[[Effect], None]

    def new_shard(self, partition: int) -> Shard: ...

    def op_context(self, client_id: str, client_host: str, token: int) -> OpContext: ...

    def offload_executor(self) -> ThreadPoolExecutor: ...

    def log_end_offset(self, partition: int) -> int: ...

    def flush_shard(self, partition: int) -> None: ...

    def discard_from(self, partition: int, offset: int) -> None: ...

    def writes_off_loop(self, partition: int) -> bool: ...

    async def append_off_loop(self, partition: int, batch: bytes, now_ms: int,
                              expected_end_offset: int) -> None: ...
