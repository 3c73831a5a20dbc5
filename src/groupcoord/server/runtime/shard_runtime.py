"""The generic coordinator runtime: every shard of one coordinator topic, each a
`ShardTask` over one of its partitions.

Mirrors Kafka's `CoordinatorRuntime` (coordinator-common), which hosts the group
coordinator's and the share coordinator's shards alike. A request goes to its shard and is
answered by Kafka's `activeContextOrThrow` rules (`shard_task`: LOAD_IN_PROGRESS while a
shard replays, NOT_COORDINATOR once it is unloaded or for no such partition). `unload` and
`load` resign and retake a shard (`scheduleUnloadOperation` / `scheduleLoadOperation`);
shards are created on first use, and at start-up those with a log load in the background.
Each kind subclasses it for its entry points: `coordinator_runtime.CoordinatorRuntime`
(`__consumer_offsets`, groups and offsets) and `share_state.ShareStateLog`'s runtime
(`__share_group_state`).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from groupcoord.apis.errors import ApiError
from groupcoord.coordinator.clock import Clock
from groupcoord.coordinator.result import Effect, OpContext
from groupcoord.coordinator.shard import Shard
from groupcoord.server.runtime.runtime_metrics import RuntimeMetrics
from groupcoord.server.runtime.shard_task import Operation, ShardState, ShardTask
from groupcoord.wire.errors import ErrorCode

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from groupcoord.server.broker_ports import CoordinatorHost

log = logging.getLogger("groupcoord.coordinator")

# The GIL switch interval once a shard offloads work (`offload_executor`).
OFFLOAD_SWITCH_INTERVAL_S = 0.0005


class ShardRuntime:
    """The shards of `topic` (`num_partitions` partitions), made by `shard_factory`."""

    def __init__(self, broker: CoordinatorHost, topic: str, num_partitions: int,
                 topic_configs: Mapping[str, str], shard_factory: Callable[[int], Shard],
                 run_effect: Callable[[Effect], None] | None = None) -> None:
        """`run_effect` runs the effects of the kind's operations once their records are
        appended (a kind whose operations have none passes nothing)."""
        self.broker = broker
        self.clock: Clock = broker.clock
        self.topic = topic
        self.num_partitions = num_partitions
        self.topic_configs = dict(topic_configs)
        self.fsync_always = broker.config.fsync == "always"
        self.cleanup_interval_ms = 600_000
        self.shard_factory = shard_factory
        # The one append every shard's records go through (fault tests replace it, or the
        # broker's append behind it). Only batches the runtime encoded pass here: trusted.
        self.append: Callable[..., Any] = (
            lambda *args, **kwargs: broker.append(*args, trusted=True, **kwargs))
        # Whether a drain's pending batch is appended off the loop where the partition's log
        # writes there (PostgreSQL): the queue fills on while it commits, so the next drain
        # commits more records at once. Off for a kind whose callers `run_now`, which must
        # never come between a batch's replay and its append.
        self.drains_off_loop = True
        # The answer to a caller whose operation's append raised (its kind's Kafka mapping;
        # by default the fail-stop's retriable COORDINATOR_NOT_AVAILABLE).
        self.append_error: Callable[[BaseException], int] = \
            lambda _exc: int(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        self.run_effect: Callable[[Effect], None] = run_effect or _no_effects
        self.shards: dict[int, ShardTask] = {}
        # Partitions unloaded on request: not recreated by use until `load` (NOT_COORDINATOR).
        self.unloaded: set[int] = set()
        self.written: dict[int, bool] = {}
        self.loading = asyncio.Lock()
        # Kafka's runtime metrics of these shards (tests replace it, before any shard
        # exists, with one reading a manual clock).
        self.metrics = RuntimeMetrics(enabled=broker.config.runtime_metrics)
        self._tokens = itertools.count(1)
        self._executor: ThreadPoolExecutor | None = None

    def offload_executor(self) -> ThreadPoolExecutor:
        """The thread that runs shards' offloaded work (Kafka's `CoordinatorExecutor`; one
        thread: pure-Python work holds the GIL, so more threads would only take turns)."""
        if self._executor is None:
            import sys
            from concurrent.futures import ThreadPoolExecutor

            # The loop waits up to one switch interval for the GIL each time it wants it
            # back from the worker (CPython's default: 5 ms, several times per request).
            sys.setswitchinterval(min(sys.getswitchinterval(), OFFLOAD_SWITCH_INTERVAL_S))
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="groupcoord-offload")
        return self._executor

    def new_shard(self, partition: int) -> Shard:
        """A fresh shard for `partition`, before its log is replayed into it."""
        return self.shard_factory(partition)

    def op_context(self, client_id: str, client_host: str, token: int) -> OpContext:
        return OpContext(client_id, client_host, token)

    async def start(self) -> None:
        """Register the topic; load the shards that already have a log."""
        self.broker.topics.ensure_internal(self.topic, self.num_partitions, self.topic_configs)
        for partition in range(self.num_partitions):
            if self.broker.logs.get(self.topic, partition) is not None:
                self.shard(partition)

    async def wait_loaded(self) -> None:
        """Until every shard created so far has replayed its log."""
        for task in list(self.shards.values()):
            await task.loaded.wait()

    async def stop(self) -> None:
        tasks = [s.task for s in self.shards.values()]
        for shard in self.shards.values():
            shard._fail_all()
            shard.task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.shards.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    def shard(self, partition: int) -> ShardTask:
        """The shard task, created (and its partition loaded) on first use."""
        task = self.shards.get(partition)
        if task is None:
            task = self.shards[partition] = ShardTask(self, partition)
        return task

    def active_shard(self, partition: int) -> ShardTask:
        """The shard a request may use; else the error Kafka's runtime answers
        (NOT_COORDINATOR when unloaded or not a partition, LOAD_IN_PROGRESS while loading)."""
        if not 0 <= partition < self.num_partitions or partition in self.unloaded:
            raise ApiError(ErrorCode.NOT_COORDINATOR)
        task = self.shard(partition)
        task.check_active()
        return task

    def unload(self, partition: int) -> None:
        """Resign the shard (Kafka's `scheduleUnloadOperation`): NOT_COORDINATOR from now on."""
        self.unloaded.add(partition)
        task = self.shards.pop(partition, None)
        if task is not None:
            task.unload()
            log.info("unloaded shard %s-%d", self.topic, partition)

    def load(self, partition: int) -> ShardTask:
        """Take the shard (Kafka's `scheduleLoadOperation`): replay its log in the
        background, COORDINATOR_LOAD_IN_PROGRESS until the replay ends."""
        self.unloaded.discard(partition)
        return self.shard(partition)

    def loading_partitions(self) -> list[int]:
        return [p for p, t in self.shards.items() if t.state is ShardState.LOADING]

    def flush_shard(self, partition: int) -> None:
        plog = self.broker.logs.get(self.topic, partition)
        if plog is not None:
            plog.flush()

    def log_end_offset(self, partition: int) -> int:
        plog = self.broker.logs.get(self.topic, partition)
        return 0 if plog is None else plog.log_end_offset

    def writes_off_loop(self, partition: int) -> bool:
        """Whether the partition's drained batches go through `append_off_loop`."""
        plog = self.broker.logs.get(self.topic, partition)
        return self.drains_off_loop and plog is not None and plog.writes_off_loop

    async def append_off_loop(self, partition: int, batch: bytes, now_ms: int,
                              expected_end_offset: int) -> None:
        """A drained batch's append, its PostgreSQL commit off the loop
        (`Broker.append_async`); as `append`, trusted."""
        broker = self.broker
        async with broker.append_lock(self.topic, partition):
            await broker.append_async(self.topic, partition, batch, now_ms, trusted=True,
                                      expected_end_offset=expected_end_offset)

    def discard_from(self, partition: int, offset: int) -> None:
        """Remove the shard's records at and after `offset` (never acknowledged)."""
        plog = self.broker.logs.get(self.topic, partition)
        if plog is not None and plog.log_end_offset > offset:
            log.error("shard %s-%d: removing unacknowledged records from offset %d to %d",
                      self.topic, partition, offset, plog.log_end_offset)
            plog.truncate_to(offset)

    async def call_shard(self, partition: int, op: Operation, client_id: str = "",
                         client_host: str = "") -> Any:
        return await self.submit_shard(partition, op, client_id, client_host)

    def submit_shard(self, partition: int, op: Operation, client_id: str = "",
                     client_host: str = "") -> asyncio.Future[Any]:
        """Queue `op` on the shard; the future gets its response (or ApiError). Raises
        ApiError at once when the shard takes no requests."""
        task = self.shards.get(partition)
        if task is None or task.state is not ShardState.ACTIVE:
            task = self.active_shard(partition)  # creates it, or raises the state's error
        fut: asyncio.Future[Any] = asyncio.Future(loop=task.loop)
        task.submit(op, OpContext(client_id or "", client_host, next(self._tokens)), fut)
        return fut


def _no_effects(effect: Effect) -> None:
    raise TypeError(f"this runtime's operations have no effects: {effect!r}")
