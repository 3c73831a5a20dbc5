"""A real Prometheus server for tests (Debian's `prometheus`, installed by `make test`):
started on loopback in a temporary directory with a free port, scraping the given targets
every second, queried through its HTTP API, stopped (and its data removed) afterwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from helpers.broker import free_port
from helpers.polling import poll_until

SCRAPE_INTERVAL_S = 1
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


def prometheus_binary() -> str:
    """The `prometheus` binary; locally a missing one skips, in CI it fails (`make test`
    installs it)."""
    found = shutil.which("prometheus")
    if found is None:
        reason = "prometheus is not installed (make test installs Debian's package)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found


class PrometheusServer:
    def __init__(self, work_dir: Path, targets: dict[str, str]) -> None:
        """`targets`: job name -> `host:port` serving `/metrics`."""
        self.work_dir = work_dir
        self.targets = targets
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = work_dir / "prometheus.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        binary = prometheus_binary()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        config = self.work_dir / "prometheus.yml"
        jobs = "".join(
            f"  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n"
            for job, target in self.targets.items())
        config.write_text(f"global:\n  scrape_interval: {SCRAPE_INTERVAL_S}s\n"
                          f"  evaluation_interval: {SCRAPE_INTERVAL_S}s\n"
                          f"scrape_configs:\n{jobs}")
        self.port = free_port()
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [binary, f"--config.file={config}",
                 f"--storage.tsdb.path={self.work_dir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=self.work_dir)
        if not poll_until(self._ready, START_TIMEOUT_S, interval=0.1):
            self.stop()
            raise RuntimeError(f"prometheus did not start:\n{self.log_path.read_text()[-3000:]}")

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"prometheus exited:\n{self.log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        """An instant query: (labels, value) per series of the result vector."""
        url = self.url + "/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        assert body["data"]["resultType"] == "vector", body
        return [(r["metric"], float(r["value"][1])) for r in body["data"]["result"]]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        shutil.rmtree(self.work_dir / "data", ignore_errors=True)
