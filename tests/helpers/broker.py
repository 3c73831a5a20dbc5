"""Run the groupcoord broker as a subprocess, the way a user would.

Tests talk to a real `python -m groupcoord serve` process over loopback so that the wire,
the server shell and storage are exercised together with real clients. This module keeps:

- readiness is the log line `groupcoord listening on HOST:PORT`, polled from the captured
  stderr file, never a fixed sleep;
- every start of one `BrokerProcess` appends to the same stderr file, so a failure report can
  show the whole history (start, crash, restart) of the broker a test used;
- a broker that does not exit within the stop timeout after SIGTERM is killed and reported as
  an error: stopping cleanly is part of what is tested.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

# Replaces `python -m groupcoord` as the command prefix, e.g. to check the tests themselves
# against another broker; the command must accept the `serve` arguments and print the line.
BROKER_CMD_ENV = "GROUPCOORD_TEST_BROKER_CMD"
READY_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
POLL_INTERVAL_S = 0.02
REPO_ROOT = Path(__file__).resolve().parents[2]
READY_PATTERN = re.compile(r"groupcoord listening on (\S+):(\d+)")
LISTENER_PATTERN = re.compile(r"groupcoord listening on (\S+):(\d+) \((\w+)\)")
ADDRESS_IN_USE = re.compile(r"address already in use|errno 98", re.IGNORECASE)


class BrokerStartError(RuntimeError):
    """The broker exited or stayed silent instead of announcing that it listens."""


def free_port() -> int:
    """Return a loopback port that was free a moment ago (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# The brokers a test can run against (the parameter of its broker fixture): one node of its
# own, or the bootstrap node of the session's three-node cluster on PostgreSQL.
ONE_NODE, THREE_NODE_CLUSTER = "one-node", "three-node-cluster"
BROKER_KINDS = (ONE_NODE, THREE_NODE_CLUSTER)

class BrokerProcess:
    """One broker on one data dir; can be started, stopped, killed and restarted.

    Unpacks as `(bootstrap, data_dir, proc)` for tests that only need those three.
    """

    def __init__(
        self,
        data_dir: Path,
        log_path: Path,
        extra_args: Sequence[str] = (),
        command: Sequence[str] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.log_path = Path(log_path)
        self.extra_args = list(extra_args)
        self.command = list(command) if command else default_command()
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.run_log_offset = 0
        self.starts = 0

    @property
    def bootstrap(self) -> str:
        """`host:port` for client configuration."""
        return f"127.0.0.1:{self.port}"

    @property
    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __iter__(self) -> Iterator[object]:
        return iter((self.bootstrap, self.data_dir, self.proc))

    def start(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Start on the previous port (or a fresh one) and wait for the listening line.

        A restart may find its old port taken by another process in the meantime; then a new
        port is tried, since tests address the broker through `bootstrap` anyway.
        """
        if self.is_running:
            raise RuntimeError("broker already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        port = self.port or free_port()
        for _attempt in range(3):
            try:
                self._start_once(port, timeout)
                return
            except BrokerStartError:
                if not ADDRESS_IN_USE.search(self.log_text(current_run=True)):
                    raise
                port = free_port()
        raise BrokerStartError(f"no free port found; log:\n{self.log_tail()}")

    def _start_once(self, port: int, timeout: float) -> None:
        self.port = port
        self.starts += 1
        with self.log_path.open("ab") as log:
            log.write(f"\n=== start #{self.starts} on port {port} ===\n".encode())
            log.flush()
            self.run_log_offset = log.tell()
            self.proc = subprocess.Popen(
                [*self.command, *self.serve_args()],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=_child_env(),
                cwd=REPO_ROOT,
            )
        self._wait_ready(timeout)

    def serve_args(self) -> list[str]:
        """Arguments after the command prefix: `serve --listen ... --data-dir ...`."""
        return [
            "serve",
            "--listen",
            f"127.0.0.1:{self.port}",
            "--data-dir",
            str(self.data_dir),
            *self.extra_args,
        ]

    def _wait_ready(self, timeout: float) -> None:
        """Poll the subprocess's log for its readiness line (another process: it cannot
        signal us, so the polls sleep)."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if READY_PATTERN.search(self.log_text(current_run=True)):
                return
            if self.proc.poll() is not None:
                raise BrokerStartError(
                    f"broker exited with {self.proc.returncode} before listening; log:\n"
                    f"{self.log_tail()}"
                )
            time.sleep(POLL_INTERVAL_S)
        self.kill()
        raise BrokerStartError(f"broker not listening after {timeout}s; log:\n{self.log_tail()}")

    def listener_port(self, name: str, timeout: float = READY_TIMEOUT_S) -> int:
        """The bound port of the listener called `name` (e.g. `SASL_SSL`), from its
        readiness line (a `--listener NAME://127.0.0.1:0` gets a free port)."""
        deadline = time.monotonic() + timeout
        while True:
            for match in LISTENER_PATTERN.finditer(self.log_text(current_run=True)):
                if match.group(3) == name:
                    return int(match.group(2))
            if time.monotonic() > deadline:
                raise BrokerStartError(f"no listener {name}; log:\n{self.log_tail()}")
            time.sleep(POLL_INTERVAL_S)  # the subprocess logs it; nothing to await

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM and wait; returns the exit code. Not exiting in time is an error."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError(
                    f"broker did not exit within {timeout}s of SIGTERM; log:\n{self.log_tail()}"
                ) from None
        return int(self.proc.returncode)

    def kill(self) -> None:
        """SIGKILL, as a crash would: no chance to flush or close anything."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(STOP_TIMEOUT_S)

    def restart(self, timeout: float = READY_TIMEOUT_S) -> None:
        """Stop cleanly if still running, then start again on the same data dir."""
        self.stop()
        self.start(timeout)

    def log_text(self, current_run: bool = False) -> str:
        """The captured stderr: everything, or only what the latest start wrote."""
        try:
            with self.log_path.open("rb") as log:
                if current_run:
                    log.seek(self.run_log_offset)
                return log.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 200) -> str:
        """The last lines of the captured stderr, for failure messages."""
        return "\n".join(self.log_text().splitlines()[-lines:])


def default_command() -> list[str]:
    """`python -m groupcoord` with this interpreter, unless overridden by the environment."""
    override = os.environ.get(BROKER_CMD_ENV)
    return shlex.split(override) if override else [sys.executable, "-m", "groupcoord"]


def _child_env() -> dict[str, str]:
    """Environment for the broker: unbuffered output, and the source tree importable
    even when the package is not installed into the running interpreter."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    src = str(REPO_ROOT / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    return env


class BrokerFactory:
    """Makes brokers under one base directory and stops them all at teardown."""

    def __init__(self, base_dir: Path, default_args: Sequence[str] = ()) -> None:
        self.base_dir = Path(base_dir)
        self.default_args = list(default_args)
        self.brokers: list[BrokerProcess] = []

    def create(self, extra_args: Sequence[str] | None = None, start: bool = True) -> BrokerProcess:
        """A new broker with its own data dir and stderr file, started unless asked not to."""
        index = len(self.brokers)
        broker = BrokerProcess(
            data_dir=self.base_dir / f"broker{index}-data",
            log_path=self.base_dir / f"broker{index}-stderr.log",
            extra_args=self.default_args if extra_args is None else extra_args,
        )
        self.brokers.append(broker)
        if start:
            broker.start()
        return broker

    def close(self) -> None:
        """Stop every broker; a broker that ignores SIGTERM fails the test after the rest stop."""
        errors: list[AssertionError] = []
        for broker in self.brokers:
            try:
                broker.stop()
            except AssertionError as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
