"""Fixtures for storage tests: a partition directory and a log opener that closes logs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.storage.config import LogConfig
from groupcoord.storage.log import PartitionLog


@pytest.fixture
def log_dir(tmp_path: Path) -> str:
    return str(tmp_path / "topic-0")


@pytest.fixture
def open_log(log_dir: str) -> Iterator[Callable[..., PartitionLog]]:
    opened: list[PartitionLog] = []

    def _open(now_ms: int | None = None, **cfg: Any) -> PartitionLog:
        log = PartitionLog.open(log_dir, LogConfig(**cfg), now_ms=now_ms)
        opened.append(log)
        return log

    yield _open
    for log in opened:
        log.close()
