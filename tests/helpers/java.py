"""The Java Kafka client (3.9.1) as a test client, through tests/interop/java/Harness.java.

The jars come from `make jars` (see tests/interop/README.md) into `.cache/jars`. The harness
sources are compiled with `javac` on first use into `tests/interop/java/build/<hash>`, where
the hash covers the sources, the jar names and the javac version, so an edit recompiles and
an unchanged tree reuses the classes. The harness prints JSON lines; this module turns them
into Python values and `Consumed` records.
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
JARS_DIR = REPO_ROOT / ".cache" / "jars"
JAVA_SRC = REPO_ROOT / "tests" / "interop" / "java"
BUILD_ROOT = JAVA_SRC / "build"
REQUIRED_JARS = ("kafka-clients.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar",
                 "slf4j-api.jar")
# Short-lived client runs: quick start-up matters more than peak JIT performance.
JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx512m")
RUN_TIMEOUT_S = 180.0


class HarnessError(RuntimeError):
    """The harness exited with an unexpected code; carries its output."""


def unavailable_reason() -> str | None:
    """Why the Java harness cannot run here, or None when it can."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return f"{tool} not found (Java 17+ is required)"
    missing = [j for j in REQUIRED_JARS if not (JARS_DIR / j).is_file()]
    if missing:
        return f"missing {', '.join(missing)} in .cache/jars: run `make jars`"
    return None


def _source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(JAVA_SRC.glob("*.java")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(",".join(REQUIRED_JARS).encode())
    version = subprocess.run(["javac", "-version"], capture_output=True, text=True, check=True)
    digest.update((version.stdout + version.stderr).encode())
    return digest.hexdigest()[:16]


@functools.cache
def compile_harness() -> Path:
    """Compile the harness unless classes for these exact sources exist; returns the dir.
    Cached per test session: the sources do not change while tests run."""
    target = BUILD_ROOT / _source_hash()
    if not (target / "Harness.class").is_file():
        _compile_into(target)
    # Classes of older sources are never used again; builds younger than an hour are kept
    # because a concurrent test run with other sources may be using them.
    cutoff = time.time() - 3600
    for stale in BUILD_ROOT.iterdir():
        if stale != target and not stale.name.startswith("tmp-") and stale.stat().st_mtime < cutoff:
            shutil.rmtree(stale, ignore_errors=True)
    return target


def _compile_into(target: Path) -> None:
    BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    # Compile into a scratch dir and rename, so an interrupted build is never reused.
    scratch = Path(tempfile.mkdtemp(prefix="tmp-", dir=BUILD_ROOT))
    sources = [str(p) for p in sorted(JAVA_SRC.glob("*.java"))]
    result = subprocess.run(
        ["javac", "-Xlint:all", "-Werror", "-cp", _jar_classpath(), "-d", str(scratch), *sources],
        check=False, capture_output=True, text=True,
    )
    if result.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise HarnessError(f"javac failed:\n{result.stdout}\n{result.stderr}")
    try:
        scratch.rename(target)
    except OSError:  # another run finished the same build first
        shutil.rmtree(scratch, ignore_errors=True)


def _jar_classpath() -> str:
    return os.pathsep.join(str(JARS_DIR / j) for j in REQUIRED_JARS)


@dataclass
class HarnessRun:
    """A finished harness invocation."""

    returncode: int
    events: list[dict[str, Any]]
    stderr: str

    def of(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == event]


def run_harness(mode: str, bootstrap: str, *options: str, expect: tuple[int, ...] = (0,),
                timeout: float = RUN_TIMEOUT_S) -> HarnessRun:
    """Run `Harness <mode> --bootstrap <bootstrap> <options...>` and parse its JSON lines."""
    classes = compile_harness()
    cmd = ["java", *JVM_FLAGS, "-cp", os.pathsep.join([str(classes), _jar_classpath()]),
           "Harness", mode, "--bootstrap", bootstrap, *options]
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
