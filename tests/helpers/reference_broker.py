"""Apache Kafka itself as a test subject: a single-node KRaft broker run from Maven's jars.

`ReferenceBroker` lays out, formats and starts a `KraftNode` (helpers/kraft_node.py, shared
with the benchmark harness):

- fetches the jars through `make reference` when the stamp is missing or names another version;
- starts `java -cp '<libs>/*' kafka.Kafka server.properties` on two free loopback ports
  (client and controller listeners) with the group settings groupcoord's tests use;
- is ready when ApiVersions is answered and the group and transaction coordinators answer
  FindCoordinator (Kafka creates `__consumer_offsets`/`__transaction_state` on first lookup);
- logs start, ready and stop times to stderr and to its log dir; a broker that does not come
  up raises `ReferenceBrokerError` with the tail of its log. Never a skip.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from helpers.broker import free_port
from helpers.kraft_node import (
    CACHE_DIR,
    GROUP_SETTINGS,
    KAFKA_VERSION,
    REPO_ROOT,
    KafkaNodeError,
    KraftNode,
    log_event,
)
from helpers.wire_client import WireConnection

__all__ = ["CACHE_DIR", "GROUP_SETTINGS", "KAFKA_VERSION", "REPO_ROOT", "ReferenceBroker",
           "ReferenceBrokerError", "log_event"]

READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.1
HEAP = "-Xmx512m"

#: The suite's name for a Kafka that could not be fetched, formatted or started.
ReferenceBrokerError = KafkaNodeError


class ReferenceBroker:
    """One Apache Kafka broker (KRaft, combined roles, node id 1) under `base_dir`."""

    def __init__(self, base_dir: Path, overrides: Mapping[str, str] | None = None,
                 features: Mapping[str, str] | None = None) -> None:
        self.base_dir = Path(base_dir)
        self.features = dict(features) if features is not None else None
        self.data_dir = self.base_dir / "data"
        self.log_path = self.base_dir / "server.log"
        self.stdout_path = self.base_dir / "stdout.log"
        self.overrides = dict(overrides or {})
        self.port = 0
        self.controller_port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _node(self) -> KraftNode:
        return KraftNode(self.base_dir, self.port, self.controller_port, [HEAP], self.overrides,
                         log_file=self.log_path, features=self.features)

    def properties(self) -> dict[str, str]:
        return self._node().properties()

    def start(self, timeout: float = READY_TIMEOUT_S) -> None:
        self.port, self.controller_port = free_port(), free_port()
        node = self._node()
        started = time.monotonic()
        log_event(f"formatting {self.data_dir}")
        node.format(timeout, self.properties())  # a subclass may add listeners
        self._launch(node, started, timeout)

    def restart(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Start again on the same data dir and ports after `stop` (no format)."""
        self._launch(self._node(), time.monotonic(), timeout)

    def _launch(self, node: KraftNode, started: float, timeout: float) -> None:
        log_event(f"starting Apache Kafka {KAFKA_VERSION} on {self.bootstrap}")
        with self.stdout_path.open("ab") as out:
            self.proc = subprocess.Popen(node.server_command(),
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        try:
            self._wait_ready(started + timeout)
        except ReferenceBrokerError:
            self.stop()
            raise
        log_event(f"ready after {time.monotonic() - started:.1f}s (format + start + coordinators)")

    def _wait_ready(self, deadline: float) -> None:
        waiting_for = "ApiVersions"
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise ReferenceBrokerError(
                    f"Kafka exited with {self.proc.returncode} while starting\n{self.log_tail()}")
            try:
                waiting_for = self._probe()
            except OSError:
                waiting_for = "ApiVersions"
            if not waiting_for:
                return
            time.sleep(POLL_INTERVAL_S)  # a Kafka process: nothing to await, so look again
        raise ReferenceBrokerError(f"Kafka not ready ({waiting_for}) in time\n{self.log_tail()}")

    def _probe(self) -> str:
        """What readiness still waits for ('' when ready)."""
        conn = WireConnection("127.0.0.1", self.port, client_id="readiness", timeout=5.0)
        try:
            versions = conn.call(ApiVersionsRequest(client_software_name="readiness",
                                                    client_software_version="1"), 3)
            assert isinstance(versions, ApiVersionsResponse)
            if versions.error_code != ErrorCode.NONE:
                return "ApiVersions"
            for key_type, key in ((0, "readiness-group"), (1, "readiness-txn")):
                found = conn.call(FindCoordinatorRequest(key_type=key_type,
                                                         coordinator_keys=[key]), 4)
                assert isinstance(found, FindCoordinatorResponse)
                if found.coordinators[0].error_code != ErrorCode.NONE:
                    return f"FindCoordinator key_type={key_type}"
            return ""
        finally:
            conn.close()

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        started = time.monotonic()
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
            log_event(f"stopped in {time.monotonic() - started:.1f}s "
                      f"(exit {self.proc.returncode})")
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout)
            log_event(f"killed: no exit within {timeout}s of SIGTERM")

    def rss_kib(self) -> int:
        """Resident set size of the JVM, from /proc (Linux)."""
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def log_tail(self, lines: int = 80) -> str:
        parts = []
        for path in (self.stdout_path, self.log_path):
            if path.is_file():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                parts.append(f"--- {path.name} ---\n" + "\n".join(text))
        return "\n".join(parts)

