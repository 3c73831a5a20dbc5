"""`KafkaBroker`: a real groupcoord broker for a test suite, in-process or as a subprocess.

    with KafkaBroker() as broker:
        consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, ...})

In-process (the default) the broker runs on its own thread and event loop, so the test's
own code (blocking clients, or an asyncio loop of its own) never shares a loop with it.
`subprocess=True` runs `python -m groupcoord serve` instead, for tests that kill it.
Without `data_dir` the logs go to a temporary directory removed on `stop()`: there is no
in-memory storage mode, the broker keeps Kafka's on-disk layout even here (with
`fsync=never`, so the page cache absorbs it).

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
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

from groupcoord.coordinator.clock import Clock
from groupcoord.server.broker import Broker
from groupcoord.server.config import BrokerConfig, Listener
from groupcoord.testing.broker_process import ServeProcess
from groupcoord.testing.control_client import HttpClock, HttpControl
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
        self._given_data_dir = Path(data_dir) if data_dir is not None else None
        self.data_dir: Path | None = self._given_data_dir
        # Holds the temporary data dir and the subprocess's log; removed on stop.
        self._scratch: Path | None = None
        self._manual = LoopManualClock(start_ms) if start_ms is not None else LoopManualClock()
        # Set while a manual-clock broker runs: in-process, or over the control endpoint.
        self.clock: VirtualClock | HttpClock | None = None
        self.broker: Broker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._process: ServeProcess | None = None
        # The subprocess's control endpoint (cluster operations; the clock when manual).
        self._control: HttpControl | None = None

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.broker is not None or self._process is not None

    def start(self) -> Self:
        if self.running:
            raise RuntimeError("broker already started")
        self._scratch = Path(tempfile.mkdtemp(prefix="groupcoord-"))
        if self._given_data_dir is None:
            self.data_dir = self._scratch / "data"
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
                self.data_dir = self._given_data_dir

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

    # -- in-process ------------------------------------------------------------------------

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = LOOP_CALL_TIMEOUT_S) -> T:
        """Run a coroutine on the broker's loop and wait for its result."""
        if self._loop is None:
            coro.close()
            raise RuntimeError("the in-process broker is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def _config(self) -> BrokerConfig:
        from groupcoord.server.cluster_id import load_or_create_cluster_id

        values: dict[str, Any] = dict(TEST_DEFAULTS)
        values.update(self.config_overrides)
        values["listeners"] = (Listener(self.host, self.port),)
        values["nodes"] = self.nodes
        values["data_dir"] = str(self.data_dir)
        values.setdefault("cluster_id", load_or_create_cluster_id(str(self.data_dir), None))
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
        loop.close()

    # -- subprocess ------------------------------------------------------------------------

    def _start_process(self) -> None:
        args = ["--listen", f"{self.host}:{self.port}", "--data-dir", str(self.data_dir),
                "--fsync", "never", "--group-initial-rebalance-delay-ms", "0"]
        for name, value in self.group_config.items():
            args += ["--group-config", f"{name}={value}"]
        if self.nodes > 1:
            args += ["--nodes", str(self.nodes)]
        if self.clock_kind == "manual":
            args += ["--clock", "manual"]
        args += ["--control-listen", f"{self.host}:0"]
        assert self._scratch is not None
        process = ServeProcess(args + self.extra_args, self._scratch / "serve.log")
        self._process = process
        self.port = process.start()
        self._control = HttpControl(self.host, process.control_port())
        if self.clock_kind == "manual":
            self.clock = HttpClock(self.host, process.control_port())
