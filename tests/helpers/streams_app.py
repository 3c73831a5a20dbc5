"""The Kafka Streams word count (tests/interop/streams/WordCount.java) as a test process.

The program is compiled with `javac` on first use against `.cache/kafka-streams-4.4.0/libs`
(`make streams-jars`: kafka-streams 4.4.0 and its runtime dependencies from Maven Central)
into `tests/interop/streams/build/<hash>`, the hash covering the source, the jar names and
the javac version. An instance runs until its standard input closes (a clean close) or it
is killed; its JSON lines (state changes, task changes) are collected by a reader thread.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
JAR_DIR = REPO_ROOT / ".cache" / "kafka-streams-4.4.0" / "libs"
SOURCE = REPO_ROOT / "tests" / "interop" / "streams" / "WordCount.java"
BUILD_ROOT = SOURCE.parent / "build"
JVM_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx384m")


def unavailable_reason() -> str | None:
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            return f"{tool} not found (Java 17+ is required)"
    if not (JAR_DIR / "kafka-streams-4.4.0.jar").is_file():
        return f"kafka-streams-4.4.0.jar missing in {JAR_DIR}: run `make streams-jars`"
    return None


def _classpath() -> str:
    return os.pathsep.join(str(j) for j in sorted(JAR_DIR.glob("*.jar")))


def compile_app() -> Path:
    digest = hashlib.sha256(SOURCE.read_bytes())
    digest.update(",".join(j.name for j in sorted(JAR_DIR.glob("*.jar"))).encode())
    version = subprocess.run(["javac", "-version"], capture_output=True, text=True, check=True)
    digest.update((version.stdout + version.stderr).encode())
    target = BUILD_ROOT / digest.hexdigest()[:16]
    if (target / "WordCount.class").is_file():
        return target
    BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="tmp-", dir=BUILD_ROOT))
    result = subprocess.run(["javac", "-Xlint:all", "-Werror", "-cp", _classpath(), "-d",
                             str(scratch), str(SOURCE)], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise RuntimeError(f"javac failed:\n{result.stdout}\n{result.stderr}")
    try:
        scratch.rename(target)
    except OSError:  # a concurrent build finished first
        shutil.rmtree(scratch, ignore_errors=True)
    return target


class StreamsInstance:
    """One running word-count instance."""

    def __init__(self, classes: Path, bootstrap: str, app_id: str, source: str, sink: str,
                 state_dir: Path, guarantee: str, log_path: Path) -> None:
        self.log_path = log_path
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        cmd = ["java", *JVM_FLAGS, "-cp", os.pathsep.join([str(classes), _classpath()]),
               "WordCount", bootstrap, app_id, source, sink, str(state_dir), guarantee]
        self._stderr = log_path.open("wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            text = line.decode(errors="replace").strip()
            if text.startswith("{"):
                with self._lock:
                    self.events.append(json.loads(text))

    def of(self, event: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e.get("event") == event]

    @property
    def state(self) -> str | None:
        states = self.of("state")
        return states[-1]["state"] if states else None

    @property
    def tasks(self) -> tuple[list[str], list[str]]:
        found = self.of("tasks")
        return (found[-1]["active"], found[-1]["standby"]) if found else ([], [])

    def close(self, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        code = self.proc.wait(timeout)
        self._reader.join(5)
        self._stderr.close()
        return code

    def kill(self) -> None:
        """kill -9: no leave heartbeat, no commit; the session timeout fences it."""
        self.proc.kill()
        self.proc.wait(30)
        self._reader.join(5)
        self._stderr.close()


def expected_counts(lines: Iterable[str]) -> Counter[str]:
    """What the topology computes: lower-cased words split on non-word characters."""
    import re
    counts: Counter[str] = Counter()
    for line in lines:
        counts.update(w for w in re.split(r"\W+", line.lower()) if w)
    return counts
