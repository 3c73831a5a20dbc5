"""Small helpers shared by every benchmark module: paths, ports, stats, progress output."""

from __future__ import annotations

import math
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
TESTS_DIR = REPO_ROOT / "tests"
RESULTS_DIR = BENCH_DIR / "results"
LOG_DIR = REPO_ROOT / ".cache" / "bench-logs"
DATA_DIR = REPO_ROOT / ".cache" / "bench-data"

LOOPBACK = "127.0.0.1"


def rel(path: Path) -> str:
    """Return ``path`` relative to the repository root when possible (for printing/JSON)."""
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def scrub(text: str) -> str:
    """Remove machine-specific absolute paths (repo root, interpreter) from ``text``."""
    text = text.replace(sys.executable, "python")
    text = text.replace(str(REPO_ROOT) + "/", "").replace(str(REPO_ROOT), ".")
    home = str(Path.home())
    if home not in ("", "/"):
        text = text.replace(home + "/", "~/")
    return text


def free_port() -> int:
    """Return a TCP port that is currently free on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0..100) of a non-empty sequence."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence (mean of the middle two for even lengths)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2.0


_T0 = time.monotonic()


def progress(section: str, message: str) -> None:
    """Print one progress line, prefixed with elapsed seconds and the benchmark name."""
    print(f"[{time.monotonic() - _T0:7.1f}s] [{section}] {message}", file=sys.stdout, flush=True)


@dataclass
class Section:
    """One benchmark's results: a table (columns + rows of dicts) plus notes and raw data."""

    name: str
    title: str
    description: str
    columns: list[tuple[str, str]]  # (row key, column header)
    rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "columns": [list(c) for c in self.columns],
            "rows": self.rows,
            "notes": self.notes,
            "raw": self.raw,
        }


THROUGHPUT_COLUMNS: list[tuple[str, str]] = [
    ("records_per_s", "records/s (median)"),
    ("mb_per_s", "MB/s (median)"),
    ("best_records_per_s", "records/s (best)"),
    ("vs_peer", "rate vs Tansu"),
    ("vs_kafka", "rate vs Kafka"),
    ("broker_cpu_us_per_record", "broker CPU µs/record (median)"),
    ("broker_rss_mib", "broker peak RSS MiB"),
    ("runs", "runs"),
    ("status", "status"),
]


def throughput_summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate timed runs (each with records, bytes, seconds, cpu_s, rss_mib) into a row.

    MB/s counts record value bytes, 1 MB = 10^6 bytes.
    """
    if not samples:
        return {"runs": 0}
    rates = [s["records"] / s["seconds"] for s in samples]
    mbs = [s["bytes"] / s["seconds"] / 1e6 for s in samples]
    cpus = [s["cpu_s"] for s in samples if s.get("cpu_s") is not None]
    rss = [s["rss_mib"] for s in samples if s.get("rss_mib") is not None]
    return {
        "records_per_s": median(rates),
        "mb_per_s": median(mbs),
        "best_records_per_s": max(rates),
        "broker_cpu_s": median(cpus) if cpus else None,
        "broker_cpu_us_per_record": median(
            [s["cpu_s"] / s["records"] * 1e6 for s in samples if s.get("cpu_s") is not None]
        ) if cpus else None,
        "broker_rss_mib": max(rss) if rss else None,
        "runs": len(samples),
    }


PEER = "tansu"
#: Row key -> broker every other row is compared with (Tansu, the peer; Kafka, the reference).
RELATIVE_TO = {"vs_peer": PEER, "vs_kafka": "kafka"}


def add_relative(rows: list[dict[str, Any]], metric: str, match: Sequence[str] = ()) -> None:
    """Set ``row["vs_peer"]`` / ``row["vs_kafka"]`` = row's ``metric`` / Tansu's / Kafka's
    ``metric`` in the row with equal ``match`` fields (e.g. the same acks), like ``0.42x``."""
    for key, other in RELATIVE_TO.items():
        for row in rows:
            peer = next((r for r in rows if r.get("broker") == other
                         and all(r.get(m) == row.get(m) for m in match)), None)
            mine, theirs = row.get(metric), peer.get(metric) if peer else None
            if isinstance(mine, (int, float)) and isinstance(theirs, (int, float)) and theirs:
                row[key] = f"{mine / theirs:.2f}x"
