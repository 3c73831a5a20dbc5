"""`KafkaBroker`: a real groupcoord broker for a test suite, in-process or as a subprocess.

    with KafkaBroker() as broker:
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, ...})

In-process (the default) the broker runs on its own thread and event loop, so the test's
own code (blocking clients, or an asyncio loop of its own) never shares a loop with it.
`subprocess=True` runs `python -m groupcoord serve` instead, for tests that kill it.
Without `data_dir` (or with `data_dir="memory"`) every log is kept in memory
(`storage.memory_io.MemoryFileIO`, behind the same `FileIO` seam as the disk, so all the code
above storage is the one that runs in production) and is gone on `stop()`; a `data_dir`
path keeps Kafka's on-disk layout there, and survives restarts.

`clock="manual"` gives virtual time: the broker's clock stands still until `advance(ms)`
(or `broker.clock.advance(ms)`), so a 45 s session timeout expires in milliseconds of wall
time. A subprocess on virtual time is `serve --clock manual --control-listen`, advanced
over its HTTP control endpoint.

Test-friendly defaults, as Kafka's test images set them: no initial rebalance delay
(`group.initial.rebalance.delay.ms=0`) and no fsync. Anything else is a keyword argument
named like a `BrokerConfig` field (in-process) or `extra_args` for `serve` (subprocess);
`group_config` takes coordinator settings by their Kafka names in both modes.

`nodes=3` serves three nodes from the one broker (`serve --nodes`): `bootstrap_servers`
lists them all, and `move_group_coordinator`, `stop_node` and `start_node` move work between
them (`testing.cluster_control`; a subprocess is driven over its control endpoint).
`unload_group_coordinator` / `load_group_coordinator` resign and retake a group's shard on
any number of nodes.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

from groupcoord.coordinator.clock import Clock
from groupcoord.server.broker import Broker
from groupcoord.server.config import BrokerConfig, Listener
from groupcoord.storage.fileio import MEMORY, OS_FILE_IO
from groupcoord.storage.memory_io import MemoryFileIO, memory_data_dir
from groupcoord.testing import faults
from groupcoord.testing.broker_process import ServeProcess
from groupcoord.testing.control_client import ControlClient, HttpClock
from groupcoord.testing.group_state import describe_group
from groupcoord.testing.virtual_clock import LoopManualClock, VirtualClock

T = TypeVar("T")
ClockKind = Literal["system", "manual"]
CLOCKS: tuple[str, ...] = ("system", "manual")
LOOP_CALL_TIMEOUT_S = 60.0
TEST_DEFAULTS: dict[str, Any] = {"fsync": "never", "group_initial_rebalance_delay_ms": 0}


class KafkaBroker:
    """One broker; `start()`/`stop()` or a `with` block."""

    def __init__(self, *, clock: ClockKind = "system", subprocess: bool = False,
                 data_dir: str | Path | None = None, host: str = "127.0.0.1", port: int = 0,
                 group_config: Mapping[str, str] | None = None,
                 extra_args: Sequence[str] = (), start_ms: int | None = None,
                 nodes: int = 1, **config: Any) -> None:
        if clock not in CLOCKS:
            raise ValueError(f"clock must be one of {CLOCKS}, got {clock!r}")
        if subprocess and config:
            raise ValueError(f"BrokerConfig fields are for the in-process broker; pass "
                             f"`serve` options as extra_args: {sorted(config)}")
        if not subprocess and extra_args:
            raise ValueError("extra_args are `serve` options, for subprocess=True")
        self.clock_kind = clock
        self.nodes = nodes
        self.subprocess = subprocess
        self.host = host
        self.port = port
        self.group_config = dict(group_config or {})
        self.extra_args = list(extra_args)
        self.config_overrides = config
        in_memory = data_dir is None or str(data_dir) == MEMORY
        if in_memory and "file_io" in config:
            raise ValueError("memory storage brings its own file_io; pass a data_dir to run "
                             "another FileIO over the disk")
        self.storage: Literal["memory", "disk"] = "memory" if in_memory else "disk"
        # The data dir on disk; None when the logs are in memory.
        self.data_dir: Path | None = None if in_memory else Path(data_dir)  # type: ignore[arg-type]
        # Holds the subprocess's log; removed on stop.
        self._scratch: Path | None = None
        self._manual = LoopManualClock(start_ms) if start_ms is not None else LoopManualClock()
        # Set while a manual-clock broker runs: in-process, or over the control endpoint.
        self.clock: VirtualClock | HttpClock | None = None
        self.broker: Broker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._process: ServeProcess | None = None
        # A subprocess's control endpoint (always served, for faults and group state).
        self._control: ControlClient | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.broker is not None or self._process is not None

    def start(self) -> Self:
        if self.running:
            raise RuntimeError("broker already started")
        try:
            if self.subprocess:
                self._start_process()
            else:
                self._start_in_process()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the broker cleanly (logs flushed and closed) and remove a temporary data dir."""
        try:
            if self._process is not None:
                self._process.stop()
                self._process = None
                self._control = None
                self.clock = None
            if self.broker is not None:
                broker, self.broker = self.broker, None
                self.call(broker.stop())
        finally:
            self._stop_loop()
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bootstrap_servers(self) -> str:
        """`host:port` for a client's `bootstrap.servers`."""
        if not self.running:
            raise RuntimeError("broker not started")
        if self.nodes == 1:
            return f"{self.host}:{self.port}"
        return ",".join(f"{self.host}:{port}" for port in self.node_ports().values())

    # -- nodes and coordinators ------------------------------------------------------------

    def node_ports(self) -> dict[int, int]:
        """Each node's (first listener's) port, stopped nodes included."""
        nodes = self._cluster("GET", "/cluster")["nodes"]
        return {int(n["node_id"]): int(n["ports"][0]) for n in nodes}

    def live_nodes(self) -> list[int]:
        return [int(n["node_id"]) for n in self._cluster("GET", "/cluster")["nodes"]
                if n["live"]]

    def group_coordinator(self, group_id: str) -> int:
        """The node coordinating a group now."""
        return int(self._cluster("POST", "/cluster/group", {"group": group_id})["node"])

    def move_group_coordinator(self, group_id: str, node_id: int) -> int:
        """Move a group's coordinator to a node: unloaded on its node (NOT_COORDINATOR),
        loaded on `node_id` (COORDINATOR_LOAD_IN_PROGRESS until replayed). Returns the
        group's `__consumer_offsets` partition."""
        got = self._cluster("POST", "/cluster/move-group", {"group": group_id, "node": node_id})
        return int(got["partition"])

    def stop_node(self, node_id: int) -> None:
        """Close a node's listeners and connections; the others take over its work."""
        self._cluster("POST", "/cluster/stop-node", {"node": node_id})

    def start_node(self, node_id: int) -> None:
        """Start a stopped node again on its ports; it takes back what it prefers."""
        self._cluster("POST", "/cluster/start-node", {"node": node_id})

    def unload_group_coordinator(self, group_id: str) -> int:
        return int(self._cluster("POST", "/cluster/unload-group", {"group": group_id})
                   ["partition"])

    def load_group_coordinator(self, group_id: str) -> int:
        return int(self._cluster("POST", "/cluster/load-group", {"group": group_id})
                   ["partition"])

    def _cluster(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        if self._control is not None:
            return self._control.call(method, path, body)
        if self.broker is None:
            raise RuntimeError("broker not started")
        from groupcoord.testing.cluster_control import route

        return self.call(route(self.broker, method, path, body or {}))

    # -- virtual time ----------------------------------------------------------------------

    def advance(self, ms: int) -> int:
        """Move virtual time on by `ms`; returns how many timers fired, after everything
        they set off has run on the broker."""
        if self.clock is None:
            raise RuntimeError("advance() needs KafkaBroker(clock='manual'), started")
        return self.clock.advance(ms)

    # -- faults and group state ------------------------------------------------------------

    def inject(self, api: int | str, *, error: int | str | None = None, drop: bool = False,
               delay_ms: int | None = None, count: int = 1, group_id: str | None = None,
               topic: str | None = None) -> dict[str, Any]:
        """Make the next `count` requests of `api` (optionally only those naming `group_id`
        or `topic`) answer `error`, drop their connection, or answer `delay_ms` late.
        Returns the rule; see docs/testing.md."""
        if self._control is not None:
            return self._control.inject(api, error=error, drop=drop or None,
                                        delay_ms=delay_ms, count=count, group_id=group_id,
                                        topic=topic)
        broker = self._running_broker()
        return self._on_loop(lambda: faults.inject(
            broker, api, error=error, drop=drop, delay_ms=delay_ms, count=count,
            group_id=group_id, topic=topic))

    def injections(self) -> dict[str, Any]:
        """`{"rules": [still armed], "fired": [every firing, oldest first]}`."""
        if self._control is not None:
            return self._control.injections()
        broker = self._running_broker()
        return self._on_loop(lambda: faults.injections(broker))

    def clear_injections(self) -> int:
        """Disarm every rule; returns how many were armed."""
        if self._control is not None:
            return self._control.clear_injections()
        broker = self._running_broker()
        return self._on_loop(lambda: faults.clear(broker))

    def describe_group(self, group_id: str) -> dict[str, Any]:
        """The group's internal state: state, generation, members with their session
        deadlines, armed timers, committed offsets (`testing.group_state`)."""
        if self._control is not None:
            return self._control.describe_group(group_id)
        return self.call(describe_group(self._running_broker(), group_id))

    def _running_broker(self) -> Broker:
        if self.broker is None:
            raise RuntimeError("broker not started")
        return self.broker

    def _on_loop(self, fn: Callable[[], T]) -> T:
        async def run() -> T:
            return fn()
        return self.call(run())

    # -- in-process ------------------------------------------------------------------------

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = LOOP_CALL_TIMEOUT_S) -> T:
        """Run a coroutine on the broker's loop and wait for its result."""
        if self._loop is None:
            coro.close()
            raise RuntimeError("the in-process broker is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _config(self) -> BrokerConfig:
        from groupcoord.server.cluster_id import new_cluster_id, stored_cluster_id

        values: dict[str, Any] = dict(TEST_DEFAULTS)
        values.update(self.config_overrides)
        values["listeners"] = (Listener(self.host, self.port),)
        if self.data_dir is None:
            values.setdefault("file_io", MemoryFileIO())
            values["data_dir"] = memory_data_dir()
        else:
            values["data_dir"] = str(self.data_dir)
        # Only read here: the broker stores it once it holds the data dir's lock.
        values.setdefault("cluster_id", stored_cluster_id(
            values["data_dir"], values.get("file_io", OS_FILE_IO)) or new_cluster_id())
        values["nodes"] = self.nodes
        values["extra"] = {**values.get("extra", {}), **self.group_config}
        return BrokerConfig(**values)

    def _start_in_process(self) -> None:
        config = self._config()
        loop = self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, name="groupcoord-broker",
                                        daemon=True)
        self._thread.start()
        clock: Clock | None = self._manual if self.clock_kind == "manual" else None
        broker = Broker(config, clock=clock)
        self.call(broker.start())
        self.broker = broker
        self.port = broker.bound[0].port
        if self.clock_kind == "manual":
            self.clock = VirtualClock(self._manual, self.call, lambda: self.broker)

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        self._loop = self._thread = None
        self.clock = None
        if loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(LOOP_CALL_TIMEOUT_S)
        # The loop's executor threads (getaddrinfo, ...) end with it, not after.
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()

    # -- subprocess ------------------------------------------------------------------------

    def _start_process(self) -> None:
        data_dir = MEMORY if self.data_dir is None else str(self.data_dir)
        args = ["--listen", f"{self.host}:{self.port}", "--data-dir", data_dir,
                "--fsync", "never", "--group-initial-rebalance-delay-ms", "0"]
        for name, value in self.group_config.items():
            args += ["--group-config", f"{name}={value}"]
        if self.nodes > 1:
            args += ["--nodes", str(self.nodes)]
        args += ["--control-listen", f"{self.host}:0"]
        if self.clock_kind == "manual":
            args += ["--clock", "manual"]
        self._scratch = Path(tempfile.mkdtemp(prefix="groupcoord-"))
        process = ServeProcess(args + self.extra_args, self._scratch / "serve.log")
        self._process = process
        self.port = process.start()
        control_port = process.control_port()
        if self.clock_kind == "manual":
            self.clock = HttpClock(self.host, control_port)
            self._control = self.clock
        else:
            self._control = ControlClient(self.host, control_port)
