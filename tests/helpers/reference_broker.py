"""Apache Kafka itself as a test subject: a single-node KRaft broker run from Maven's jars.

`make reference` puts Kafka's server jar and its runtime dependencies in
`.cache/kafka-<version>/libs` (stamped by version). `ReferenceBroker`:

- fetches them through `make reference` when the stamp is missing or names another version;
- formats a combined broker+controller data dir (`kafka.tools.StorageTool format --standalone`,
  with `share.version=1` so share groups are on);
- starts `java -cp '<libs>/*' kafka.Kafka server.properties` on two free loopback ports
  (client and controller listeners) with the group settings groupcoord's tests use;
- is ready when ApiVersions is answered and the group and transaction coordinators answer
  FindCoordinator (Kafka creates `__consumer_offsets`/`__transaction_state` on first lookup);
- logs start, ready and stop times to stderr and to its log dir; a broker that does not come
  up raises `ReferenceBrokerError` with the tail of its log. Never a skip.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from groupcoord.wire.errors import ErrorCode
from groupcoord.wire.generated.api_versions import ApiVersionsRequest, ApiVersionsResponse
from groupcoord.wire.generated.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from helpers.broker import free_port
from helpers.wire_client import WireConnection

KAFKA_VERSION = "4.4.0"
REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO_ROOT / ".cache" / f"kafka-{KAFKA_VERSION}"
READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.1
HEAP = "-Xmx512m"

# Settings both brokers of the conformance suite share (groupcoord gets the same values on its
# command line). Kafka names and, where not listed, Kafka defaults.
GROUP_SETTINGS: Mapping[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "group.coordinator.rebalance.protocols": "classic,consumer,share,streams",
    "num.partitions": "1",
}

# Kafka 4.3+ computes a consumer group's target assignment at most once per
# `group.consumer.assignment.interval.ms` (KIP-1263), optionally off the request path;
# groupcoord computes it on every epoch bump, as 4.2 did. The reference runs 4.2's timing so
# the two can be compared at all; docs/conformance.md lists the difference and the strict
# xfail `test_consumer_assignment_interval_holds_the_second_assignment` keeps it in view.
_CONSUMER_ASSIGNMENT_ON_HEARTBEAT: Mapping[str, str] = {
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "false",
}

_INTERNAL_TOPICS_SINGLE_REPLICA: Mapping[str, str] = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}


class ReferenceBrokerError(RuntimeError):
    """The reference broker could not be fetched, formatted or started."""


def log_event(message: str) -> None:
    print(f"[reference-broker {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr,
          flush=True)


def ensure_jars() -> Path:
    """The libs directory of Kafka `KAFKA_VERSION`, fetched by `make reference` if missing."""
    stamp = CACHE_DIR / ".stamp"
    if not (stamp.is_file() and stamp.read_text().strip() == KAFKA_VERSION):
        started = time.monotonic()
        log_event(f"fetching Apache Kafka {KAFKA_VERSION} with `make reference`")
        done = subprocess.run(["make", "--no-print-directory", "reference"], cwd=REPO_ROOT,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise ReferenceBrokerError(
                f"`make reference` failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        log_event(f"fetched in {time.monotonic() - started:.1f}s")
    return CACHE_DIR / "libs"


def _cluster_id() -> str:
    """A random Kafka cluster id: a UUID in URL-safe base64 without padding, as `Uuid`.
    Like `Uuid.randomUuid`, never one starting with "-": the storage tool's argument parser
    would take it for an option (1 start in 64 failed that way)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class ReferenceBroker:
    """One Apache Kafka broker (KRaft, combined roles, node id 1) under `base_dir`."""

    def __init__(self, base_dir: Path, overrides: Mapping[str, str] | None = None) -> None:
        self.base_dir = Path(base_dir)
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

    def properties(self) -> dict[str, str]:
        listener = f"127.0.0.1:{self.port}"
        controller = f"127.0.0.1:{self.controller_port}"
        return {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": controller,
            "listeners": f"PLAINTEXT://{listener},CONTROLLER://{controller}",
            "advertised.listeners": f"PLAINTEXT://{listener}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            **_INTERNAL_TOPICS_SINGLE_REPLICA,
            **GROUP_SETTINGS,
            **_CONSUMER_ASSIGNMENT_ON_HEARTBEAT,
            **self.overrides,
        }

    def start(self, timeout: float = READY_TIMEOUT_S) -> None:
        libs = ensure_jars()
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.port, self.controller_port = free_port(), free_port()
        config = self.base_dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        log4j = self.base_dir / "log4j2.properties"
        log4j.write_text(_log4j_config(self.log_path))
        classpath = f"{libs}/*"
        java = ["java", HEAP, f"-Dlog4j2.configurationFile={log4j}", "-cp", classpath]
        started = time.monotonic()
        log_event(f"formatting {self.data_dir}")
        formatted = subprocess.run(
            [*java, "kafka.tools.StorageTool", "format", "--cluster-id", _cluster_id(),
             "--config", str(config), "--standalone", "--feature", "share.version=1"],
            capture_output=True, text=True, check=False, timeout=timeout)
        if formatted.returncode != 0:
            raise ReferenceBrokerError(
                f"kafka-storage format failed:\n{formatted.stdout}\n{formatted.stderr}")
        log_event(f"starting Apache Kafka {KAFKA_VERSION} on {self.bootstrap}")
        with self.stdout_path.open("wb") as out:
            self.proc = subprocess.Popen([*java, "kafka.Kafka", str(config)],
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
            time.sleep(POLL_INTERVAL_S)
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


def _log4j_config(log_path: Path) -> str:
    # Kafka's own layout, one file; the JVM's stdout keeps only what log4j does not catch.
    return "\n".join([
        "status = warn",
        "appender.file.type = File",
        "appender.file.name = file",
        f"appender.file.fileName = {log_path}",
        "appender.file.layout.type = PatternLayout",
        "appender.file.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.file.ref = file",
        "",
    ])
