"""One single-node Apache Kafka (KRaft, combined broker+controller, node id 1) on disk.

`make reference` puts Kafka's server jar and its runtime dependencies in
`.cache/kafka-<version>/libs` (stamped by version). `KraftNode` writes `server.properties` and a
log4j2 config under its base dir, formats the data dir (`kafka.tools.StorageTool format
--standalone`, with `share.version=2`, 4.4's default: share groups and their DLQ) and gives the
`java -cp '<libs>/*' kafka.Kafka server.properties` command line. Starting, readiness and
stopping are the caller's: the conformance suite's `ReferenceBroker` and the benchmark harness
(`bench/brokers.py`) each wait for what they need. Nothing here imports groupcoord, so the
harness measures Kafka without sharing groupcoord's code.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from groupcoord.wire.kafka_uuid import random_uuid, uuid_text

KAFKA_VERSION = "4.4.0"
REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = REPO_ROOT / ".cache" / f"kafka-{KAFKA_VERSION}"

# Group settings groupcoord's tests and benchmarks give both brokers (groupcoord gets the same
# values on its command line). Kafka names and, where not listed, Kafka defaults.
GROUP_SETTINGS: Mapping[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.coordinator.rebalance.protocols": "classic,consumer,share,streams",
    "num.partitions": "1",
}

# Kafka 4.3+ computes a consumer group's target assignment at most once per
# `group.consumer.assignment.interval.ms` (KIP-1263), optionally off the request path.
# Differential runs set the interval to 0 on both brokers (4.2's timing: a target on every
# epoch bump) so the two compare step by step;
# `test_consumer_assignment_interval_holds_the_second_assignment` compares the batching
# through the group-level `consumer.assignment.interval.ms`.
CONSUMER_ASSIGNMENT_ON_HEARTBEAT: Mapping[str, str] = {
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "false",
    # For streams groups both brokers run with a 0 ms interval (groupcoord's streams groups
    # know the setting; the differential suite gives both the same value) and Kafka without
    # its background assignor (docs/streams-groups.md).
    "group.streams.assignment.interval.ms": "0",
    "group.streams.assignor.offload.enable": "false",
}

_INTERNAL_TOPICS_SINGLE_REPLICA: Mapping[str, str] = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}


class KafkaNodeError(RuntimeError):
    """Kafka could not be fetched, formatted or started."""


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
            raise KafkaNodeError(
                f"`make reference` failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        log_event(f"fetched in {time.monotonic() - started:.1f}s")
    return CACHE_DIR / "libs"


def cluster_id() -> str:
    """A random Kafka cluster id, as `Uuid.randomUuid` makes it (never one starting with "-":
    the storage tool's argument parser would take it for an option)."""
    return uuid_text(random_uuid(os.urandom))


# share.version=1 turns share groups on; 2 (Kafka 4.4's default, named so it stays put if the
# default moves) adds the KIP-1191 DLQ.
FORMAT_FEATURES: Mapping[str, str] = {"share.version": "2"}


@dataclass(frozen=True)
class Quorum:
    """The controllers of a several-node cluster, each node formatted with the same cluster
    id and `--initial-controllers` (KIP-853: `id@host:port:directory-id`, comma-separated)."""

    cluster_id: str
    initial_controllers: str

    @staticmethod
    def of(controller_ports: Mapping[int, int]) -> Quorum:
        """node id -> controller port on 127.0.0.1."""
        return Quorum(cluster_id(), ",".join(
            f"{node}@127.0.0.1:{port}:{cluster_id()}"
            for node, port in sorted(controller_ports.items())))

    def bootstrap_servers(self) -> str:
        """controller.quorum.bootstrap.servers for every node."""
        return ",".join(entry.split("@", 1)[1].rsplit(":", 1)[0]
                        for entry in self.initial_controllers.split(","))


class KraftNode:
    """Config, format step and command line of one node serving on `127.0.0.1:port`.

    `jvm_options` go before the class name (heap, GC); `log_file` is where log4j writes
    Kafka's log (None: standard output).
    """

    def __init__(self, base_dir: Path, port: int, controller_port: int,
                 jvm_options: Sequence[str], overrides: Mapping[str, str] | None = None,
                 log_file: Path | None = None,
                 features: Mapping[str, str] | None = None) -> None:
        self.base_dir = Path(base_dir)
        self.data_dir = self.base_dir / "data"
        self.config_path = self.base_dir / "server.properties"
        self.log4j_path = self.base_dir / "log4j2.properties"
        self.port, self.controller_port = port, controller_port
        self.jvm_options = list(jvm_options)
        self.overrides = dict(overrides or {})
        self.log_file = log_file
        # Feature levels the data dir is formatted with (`--feature`).
        self.features = dict(features or FORMAT_FEATURES)

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
            **CONSUMER_ASSIGNMENT_ON_HEARTBEAT,
            **self.overrides,
        }

    def java(self) -> list[str]:
        """`java` with the JVM options, the log4j config and Kafka's classpath."""
        return ["java", *self.jvm_options, f"-Dlog4j2.configurationFile={self.log4j_path}",
                "-cp", f"{ensure_jars()}/*"]

    def format(self, timeout: float, properties: Mapping[str, str] | None = None,
               quorum: Quorum | None = None) -> None:
        """Write the config files (`properties`, default `self.properties()`) and format the
        data dir for a fresh single-node cluster, or as one controller of `quorum`."""
        self.base_dir.mkdir(parents=True, exist_ok=True)
        config = self.properties() if properties is None else properties
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in config.items()))
        self.log4j_path.write_text(_log4j_config(self.log_file))
        controllers = (["--standalone"] if quorum is None
                       else ["--initial-controllers", quorum.initial_controllers])
        formatted = subprocess.run(
            [*self.java(), "kafka.tools.StorageTool", "format", "--cluster-id",
             cluster_id() if quorum is None else quorum.cluster_id,
             "--config", str(self.config_path), *controllers,
             *(arg for name, level in self.features.items()
               for arg in ("--feature", f"{name}={level}"))],
            capture_output=True, text=True, check=False, timeout=timeout)
        if formatted.returncode != 0:
            raise KafkaNodeError(
                f"kafka-storage format failed:\n{formatted.stdout}\n{formatted.stderr}")

    def server_command(self) -> list[str]:
        """The broker's command line; run it after `format`."""
        return [*self.java(), "kafka.Kafka", str(self.config_path)]


def _log4j_config(log_file: Path | None) -> str:
    # Kafka's own layout, one destination; the JVM's stdout keeps only what log4j does not catch.
    if log_file is None:
        appender = ["appender.out.type = Console", "appender.out.target = SYSTEM_OUT"]
    else:
        appender = ["appender.out.type = File", f"appender.out.fileName = {log_file}"]
    return "\n".join([
        "status = warn",
        *appender,
        "appender.out.name = out",
        "appender.out.layout.type = PatternLayout",
        "appender.out.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = INFO",
        "rootLogger.appenderRef.out.ref = out",
        "",
    ])
