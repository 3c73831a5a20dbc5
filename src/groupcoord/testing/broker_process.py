"""`python -m groupcoord serve` as a child process: started, awaited, stopped.

Readiness is the line `groupcoord listening on HOST:PORT` that `serve` writes to stderr
once it accepts connections; stderr goes to a file so a long-running broker never blocks
on a full pipe, and the file is what a failing start reports.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

READY = re.compile(r"groupcoord listening on \S+:(\d+)")
# Logged before READY when `serve` has a control endpoint.
CONTROL = re.compile(r"groupcoord control listening on \S+:(\d+)")
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
POLL_S = 0.01


class BrokerStartError(RuntimeError):
    """`serve` exited, or stayed silent, instead of announcing its listener."""


class ServeProcess:
    def __init__(self, serve_args: Sequence[str], log_path: Path) -> None:
        self.args = [sys.executable, "-m", "groupcoord", "serve", *serve_args]
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> int:
        """Start and return the bound port once the broker listens."""
        with open(self.log_path, "ab") as log:
            offset = log.tell()
            self.proc = subprocess.Popen(self.args, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, env=dict(os.environ))
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            match = READY.search(self._log_from(offset))
            if match:
                return int(match.group(1))
            if self.proc.poll() is not None:
                raise BrokerStartError(f"groupcoord serve exited {self.proc.returncode}:\n"
                                       f"{self._log_from(offset)}")
            time.sleep(POLL_S)
        self.kill()
        raise BrokerStartError(f"groupcoord serve did not listen within {READY_TIMEOUT_S} s:\n"
                               f"{self._log_from(offset)}")

    def control_port(self) -> int:
        match = CONTROL.search(self.log_text())
        if match is None:
            raise BrokerStartError(f"no control endpoint announced:\n{self.log_text()}")
        return int(match.group(1))

    def stop(self) -> None:
        """SIGTERM (a clean shutdown), SIGKILL if it does not exit in time."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def log_text(self) -> str:
        return self._log_from(0)

    def _log_from(self, offset: int) -> str:
        try:
            with open(self.log_path, "rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except FileNotFoundError:
            return ""
