"""The lifecycle of one shard task: load, reload after a failure, unload, and the states
they move through (Kafka's `CoordinatorRuntime.CoordinatorState`, `scheduleLoadOperation`,
`scheduleUnloadOperation`). `shard_task.ShardTask` serves the shard's operations between
them: this part never runs while a loaded shard answers requests.

A task replays its partition in slices of `LOAD_SLICE_S` (from its snapshot, see
`shard_loader`), one shard at a time, so other APIs are served while a large partition
loads; it is LOADING meanwhile, ACTIVE once the shard's `on_loaded` ran. A failed append
fail-stops the shard (`shard_task` says what each caller gets): RECOVERING until the reload
from its log ends. Unloading (UNLOADED) answers every queued and parked request
NOT_COORDINATOR and drops the state.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

from groupcoord.server.runtime import heap
from groupcoord.server.runtime.shard_loader import ShardLoader
from groupcoord.server.runtime.shard_log import ProducerEpochs
from groupcoord.wire.errors import ErrorCode

if TYPE_CHECKING:
    from groupcoord.coordinator.shard import Shard
    from groupcoord.server.runtime.append_errors import AppendFailed
    from groupcoord.server.runtime.shard_host import ShardHost

log = logging.getLogger("groupcoord.coordinator")

# Longest stretch a loading shard holds the event loop before letting other work run.
LOAD_SLICE_S = 0.005


class ShardState(enum.Enum):
    """Kafka's `CoordinatorRuntime.CoordinatorState`, without INITIAL (a task is created
    loading) and CLOSED (an unloaded task is dropped); RECOVERING is the reload after a
    failed append, which stands for Kafka's rollback to the last committed snapshot: the
    shard stays the coordinator and requests queue until the reload ends."""

    LOADING = "loading"
    ACTIVE = "active"
    RECOVERING = "recovering"
    UNLOADED = "unloaded"


class ShardLifecycle(ABC):
    """A shard task's load, reload and unload; the serving half (`ShardTask`) supplies the
    queue it drains and how the shard's `on_loaded` operation is applied."""

    # The task running `_main`, from `_start` on.
    task: asyncio.Task[None]

    def __init__(self, runtime: ShardHost, partition: int) -> None:
        self.runtime = runtime
        self.clock = runtime.broker.clock
        self.topic = runtime.topic
        self.partition = partition
        self.shard: Shard = runtime.new_shard(partition)
        self.state = ShardState.LOADING
        # Set while the shard is ACTIVE (or RECOVERING): its log has been replayed.
        self.loaded = asyncio.Event()
        # How many times a failed append made the shard reload from its log.
        self.reloads = 0
        self._load_started_ms = self.clock.now_ms()
        # Soft state re-derived from the log at each load, like Kafka's producer state.
        self.producers = ProducerEpochs()
        # The callers of a drain whose append failed, and their answer: given once the
        # shard has reloaded from its log (`_main`).
        self._unanswered: list[tuple[asyncio.Future[Any], AppendFailed]] = []

    # -- what serving supplies -------------------------------------------------------------

    @abstractmethod
    async def _main(self) -> None:
        """The task's body: `_load` while the shard is not ACTIVE, then serve its queue;
        `_fail_stop` when serving fails. (The serving half's, as the task resumes it for
        every operation.)"""

    @abstractmethod
    def _on_loaded(self) -> None:
        """Apply the shard's `on_loaded` operation and arm its periodic timers."""

    @abstractmethod
    def _fail_all(self, code: int = ErrorCode.COORDINATOR_NOT_AVAILABLE) -> None:
        """Answer every parked and queued request `code`; stop timers and offloads."""

    @abstractmethod
    def _drop_batch(self) -> None:
        """Forget the records staged for the next append."""

    # -- start, load, serve, reload --------------------------------------------------------

    def _start(self) -> None:
        """Start the task (`task`); a shard with nothing to replay is ACTIVE at once, so the first
        request of a new group never sees LOAD_IN_PROGRESS."""
        plog = self.runtime.broker.logs.get(self.topic, self.partition)
        # No log (or an empty one): nothing to replay. A log whose end is not known yet (a
        # torn tail before recovery) is replayed.
        if plog is None or plog.log_end_offset == plog.log_start_offset:
            try:
                self._loaded(0)  # nothing to replay: serving from the first request on
            except Exception:
                log.exception("shard %d failed to load; retrying", self.partition)
                self.state = ShardState.LOADING
        self.task = asyncio.get_running_loop().create_task(self._main())

    def _begin_load(self) -> None:
        rt = self.runtime
        self._load_started_ms = self.clock.now_ms()
        if self.state is not ShardState.RECOVERING:
            self.state = ShardState.LOADING
            self.loaded.clear()
        self.shard = rt.new_shard(self.partition)
        self.producers = ProducerEpochs()
        self._drop_batch()

    async def _load(self) -> None:
        """Replay the shard's partition (from its snapshot, see `shard_loader`), giving the
        loop back every few milliseconds so a large `__consumer_offsets` never stalls other
        APIs; requests for this shard are answered COORDINATOR_LOAD_IN_PROGRESS until the
        replay ends."""
        rt = self.runtime
        self._begin_load()
        # Only an existing partition is replayed; the directory is created by the first
        # append, so read-only calls (ListGroups over every shard) create nothing.
        plog = rt.broker.logs.get(self.topic, self.partition)
        loop = asyncio.get_running_loop()
        count = 0
        # One shard replays at a time (Kafka's loader is one thread too), so what the loop
        # gives to loading is one slice per turn, whatever the number of shards.
        loader = ShardLoader(plog, self.shard, self.producers, self.partition)
        async with rt.loading:
            if loader.snapshot_read_is_long():
                await asyncio.to_thread(loader.read_snapshot_file)
            slice_end = loop.time() + LOAD_SLICE_S
            for count in loader.steps():
                if loop.time() >= slice_end:
                    await asyncio.sleep(0)
                    slice_end = loop.time() + LOAD_SLICE_S
        self._loaded(count)
        loader.write_snapshot_if_due()

    def _loaded(self, count: int) -> None:
        if count:
            log.info("loaded %d records into shard %s-%d", count, self.topic, self.partition)
            heap.settle_after_load(count)
        self._on_loaded()
        self.state = ShardState.ACTIVE
        self.loaded.set()
        self.runtime.metrics.partition_loaded(self._load_started_ms, self.clock.now_ms())

    async def _fail_stop(self) -> None:
        """After serving failed (a failed append): the shard is RECOVERING, every queued
        and parked request is answered COORDINATOR_NOT_AVAILABLE, and `_main` loads it
        again, at once when callers of the failed drain wait for that reload."""
        self.reloads += 1
        self.state = ShardState.RECOVERING
        self._fail_all()
        if not self._unanswered:
            await asyncio.sleep(0.1)

    def _answer_failed_drain(self) -> None:
        """The callers of a drain whose append failed get its error once the reload that
        follows has ended (or failed: the shard then loads again), so a caller's retry
        meets the state the log holds."""
        unanswered, self._unanswered = self._unanswered, []
        for fut, error in unanswered:
            if not fut.done():
                fut.set_exception(error)

    # -- unload ----------------------------------------------------------------------------

    def unload(self) -> None:
        """Stop taking requests: every queued and parked one is answered NOT_COORDINATOR
        (Kafka's `onUnloaded`: parked JoinGroup and SyncGroup get NOT_COORDINATOR), timers
        stop and the task ends; the state goes with it."""
        self.state = ShardState.UNLOADED
        self._fail_all(ErrorCode.NOT_COORDINATOR)
        self.task.cancel()
        self.shard.on_unloaded()
