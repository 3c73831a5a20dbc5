"""Facts about the machine and software a result was produced on."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import time
from importlib import metadata
from typing import Any

from bench.common import REPO_ROOT

PACKAGES = ("groupcoord", "confluent-kafka", "uvloop", "crc32c", "cramjam")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError):
        pass
    return None


def _package_versions() -> dict[str, str]:
    versions: dict[str, str] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    try:
        import confluent_kafka

        versions["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    return versions


def _git_revision() -> str:
    """Short commit of the repository (with ``-dirty`` if the tree has changes)."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=10, check=False)
        if rev.returncode != 0:
            return "no commit"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=REPO_ROOT, capture_output=True, text=True, timeout=10,
                               check=False)
        return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def machine_info() -> dict[str, Any]:
    """CPU model, cores, RAM, OS, Python and package versions, date (UTC), git revision."""
    return {
        "date_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "cpu_model": cpu_model(),
        "cpu_cores": os.cpu_count(),
        "ram_gib": _mem_total_gib(),
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "packages": _package_versions(),
        "git_revision": _git_revision(),
    }


def machine_load() -> list[float]:
    """1/5/15-minute load averages, to flag runs disturbed by other work on the machine."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def wait_for_quiet(max_wait_s: float, poll_s: float = 10.0) -> bool:
    """Wait up to ``max_wait_s`` for the 1-minute load average to fall below the core
    count; return whether it did. Progress is printed while waiting."""
    from bench.common import progress

    cores = os.cpu_count() or 1
    deadline = time.monotonic() + max_wait_s
    while True:
        load = machine_load()
        if not load or load[0] < cores:
            return True
        if time.monotonic() >= deadline:
            progress("setup", f"load average still {load[0]} after {max_wait_s:.0f}s; going on")
            return False
        progress("setup", f"load average {load[0]} >= {cores} cores; waiting")
        time.sleep(poll_s)
