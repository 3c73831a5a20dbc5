"""The Java Kafka client as a test client, through tests/interop/java/Harness.java.

Two clients are known. `CLIENT_4_4` (Maven Central, `make client-jars` into
`.cache/kafka-clients-4.4.0/libs`) runs the interop matrix and is every function's default;
`CLIENT_3_9` (a PyPI wheel, `make jars` into `.cache/jars`) stays for the share consumer's v0
RPCs. The harness sources shared by both (`tests/interop/java/*.java`) plus the client's own
directory (`kafka3/` or `kafka4/`) are compiled with `javac` on first use into
`tests/interop/java/build/<version>-<hash>`, where the hash covers the sources, the client
version, its jar names and the javac version, so an edit recompiles and an unchanged tree
reuses the classes. The harness prints JSON lines; this module turns them into Python values
and `Consumed` records.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.workload import Consumed, Workload

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE = REPO_ROOT / ".cache"
JAVA_SRC = REPO_ROOT / "tests" / "interop" / "java"
BUILD_ROOT = JAVA_SRC / "build"
# A build of older sources is removed once it is this old (see `remove_stale_builds`).
STALE_BUILD_AGE_S = 3600.0
# Short-lived client runs: quick start-up matters more than peak JIT performance.
JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx512m")
RUN_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class JavaClient:
    """One Kafka Java client release the harness runs on."""

    version: str
    jar_dir: Path
    # The jars of the classpath; empty means every jar in `jar_dir` (a Maven copy).
    jar_names: tuple[str, ...]
    clients_jar: str  # the kafka-clients jar among them
    sources: str  # the version-specific source directory under tests/interop/java
    make_target: str  # what fetches the jars

    def jars(self) -> list[Path]:
        if self.jar_names:
            return [self.jar_dir / name for name in self.jar_names]
        return sorted(self.jar_dir.glob("*.jar"))

    def classpath(self) -> str:
        return os.pathsep.join(str(j) for j in self.jars())

    def unavailable_reason(self) -> str | None:
        """Why this client cannot run here, or None when it can."""
        for tool in ("java", "javac"):
            if shutil.which(tool) is None:
                return f"{tool} not found (Java 17+ is required)"
        wanted = [self.jar_dir / n for n in (*self.jar_names, self.clients_jar)]
        missing = [p.name for p in wanted if not p.is_file()]
        if missing:
            return (f"missing {', '.join(sorted(set(missing)))} in {self.jar_dir}: "
                    f"run `make {self.make_target}`")
        return None


CLIENT_4_4 = JavaClient(
    version="4.4.0",
    jar_dir=CACHE / "kafka-clients-4.4.0" / "libs",
    jar_names=(),
    clients_jar="kafka-clients-4.4.0.jar",
    sources="kafka4",
    make_target="client-jars",
)
# The last client whose KafkaShareConsumer speaks v0 of every share RPC (ShareGroupHeartbeat,
# ShareFetch, ShareAcknowledge): KIP-932 early access.
CLIENT_3_9 = JavaClient(
    version="3.9.1",
    jar_dir=CACHE / "jars",
    jar_names=("kafka-clients.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar",
               "slf4j-api.jar"),
    clients_jar="kafka-clients.jar",
    sources="kafka3",
    make_target="jars",
)
DEFAULT_CLIENT = CLIENT_4_4


class HarnessError(RuntimeError):
    """The harness exited with an unexpected code; carries its output."""


def unavailable_reason(client: JavaClient = DEFAULT_CLIENT) -> str | None:
    """Why the Java harness cannot run here with `client`, or None when it can."""
    return client.unavailable_reason()


def _sources(client: JavaClient) -> list[Path]:
    return sorted(JAVA_SRC.glob("*.java")) + sorted((JAVA_SRC / client.sources).glob("*.java"))


def _source_hash(client: JavaClient) -> str:
    digest = hashlib.sha256()
    for path in _sources(client):
        digest.update(str(path.relative_to(JAVA_SRC)).encode() + b"\0" + path.read_bytes()
                      + b"\0")
    digest.update(client.version.encode() + b"\0")
    digest.update(",".join(j.name for j in client.jars()).encode())
    version = subprocess.run(["javac", "-version"], capture_output=True, text=True, check=True)
    digest.update((version.stdout + version.stderr).encode())
    return digest.hexdigest()[:16]


@functools.cache
def compile_harness(client: JavaClient = DEFAULT_CLIENT) -> Path:
    """Compile the harness for `client` unless classes for these exact sources exist; returns
    the dir. Cached per test session: the sources do not change while tests run."""
    target = BUILD_ROOT / f"{client.version}-{_source_hash(client)}"
    if not (target / "Harness.class").is_file():
        _compile_into(target, client)
    remove_stale_builds(BUILD_ROOT, client.version, target, time.time())
    return target


def remove_stale_builds(root: Path, version: str, current: Path, now: float) -> None:
    """Remove the builds of `version`'s older sources. Builds younger than an hour are kept
    because a concurrent test run with other sources may be using them. Other versions'
    builds are theirs to clean: one built in an earlier session is older than an hour and
    may be in use by this one."""
    for stale in root.glob(f"{version}-*"):
        if stale != current and stale.stat().st_mtime < now - STALE_BUILD_AGE_S:
            shutil.rmtree(stale, ignore_errors=True)


def _compile_into(target: Path, client: JavaClient) -> None:
    BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    # Compile into a scratch dir and rename, so an interrupted build is never reused.
    scratch = Path(tempfile.mkdtemp(prefix="tmp-", dir=BUILD_ROOT))
    result = subprocess.run(
        ["javac", "-Xlint:all", "-Werror", "-cp", client.classpath(), "-d", str(scratch),
         *map(str, _sources(client))],
        check=False, capture_output=True, text=True,
    )
    if result.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise HarnessError(f"javac failed for client {client.version}:\n{result.stdout}\n"
                           f"{result.stderr}")
    try:
        scratch.rename(target)
    except OSError:  # another run finished the same build first
        shutil.rmtree(scratch, ignore_errors=True)


def harness_command(mode: str, client: JavaClient = DEFAULT_CLIENT) -> list[str]:
    """`java ... Harness <mode>` for `client`, compiling first if needed; options follow."""
    classes = compile_harness(client)
    return ["java", *JVM_FLAGS, "-cp", os.pathsep.join([str(classes), client.classpath()]),
            "Harness", mode]


@dataclass
class HarnessRun:
    """A finished harness invocation."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str

    def of(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == event]


def run_harness(mode: str, bootstrap: str, *options: str, expect: tuple[int, ...] = (0,),
                timeout: float = RUN_TIMEOUT_S, client: JavaClient = DEFAULT_CLIENT
                ) -> HarnessRun:
    """Run `Harness <mode> --bootstrap <bootstrap> <options...>` on `client` and parse its
    JSON lines."""
    cmd = [*harness_command(mode, client), "--bootstrap", bootstrap, *options]
    result = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    run = HarnessRun(result.returncode, events, result.stderr)
    if result.returncode not in expect:
        summary = [e for e in events if e.get("event") != "record"][-5:]
        raise HarnessError(
            f"Harness {mode} exited {result.returncode}; last events {summary};\n"
            f"stderr tail:\n{result.stderr[-4000:]}"
        )
    return run


def decode_record(event: dict[str, Any]) -> Consumed:
    """A harness `record` event as a `Consumed` (bytes arrive base64-encoded)."""

    def b64(value: str | None) -> bytes | None:
        return None if value is None else base64.b64decode(value)

    return Consumed(
        partition=event["partition"],
        offset=event["offset"],
        key=b64(event["key"]),
        value=b64(event["value"]),
        headers=[(k, b64(v)) for k, v in event["headers"]],  # type: ignore[misc]
        timestamp=event["timestamp"],
    )


class JavaAdapter:
    """The Java client, same interface as the adapters in `helpers.clients`."""

    name = "java"
    codecs: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")

    def __init__(self, props: dict[str, str] | None = None) -> None:
        # Extra client configs, passed to every harness run as `--prop key=value`.
        self.props = [arg for key, value in (props or {}).items()
                      for arg in ("--prop", f"{key}={value}")]

    def create_topic(self, bootstrap: str, topic: str, partitions: int) -> None:
        run_harness("create-topic", bootstrap, "--topic", topic, "--partitions", str(partitions),
                    *self.props)

    def produce(self, bootstrap: str, workload: Workload, compression: str) -> None:
        run = run_harness("produce", bootstrap, "--topic", workload.topic,
                          "--count", str(workload.count), "--base-ts", str(workload.base_ts),
                          "--compression", compression, *self.props)
        assert run.of("produced")[-1]["acked"] == workload.count

    def consume_assign(
        self, bootstrap: str, topic: str, partitions: int, count: int
    ) -> list[Consumed]:
        run = run_harness("consume-assign", bootstrap, "--topic", topic, "--count", str(count),
                          *self.props, expect=(0, 2))
        return [decode_record(e) for e in run.of("record")]
