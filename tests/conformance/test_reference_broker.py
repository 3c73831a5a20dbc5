"""The reference broker helper fails loudly: a Kafka that cannot start raises with its log
tail (never a skip), and a second `make reference` with the cache in place does nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from helpers.reference_broker import (
    CACHE_DIR,
    KAFKA_VERSION,
    REPO_ROOT,
    ReferenceBroker,
    ReferenceBrokerError,
)

pytestmark = pytest.mark.reference


def test_a_data_dir_that_cannot_be_formatted_fails_with_the_tool_output(tmp_path: Path) -> None:
    broker = ReferenceBroker(tmp_path, overrides={"node.id": "not-a-number"})
    with pytest.raises(ReferenceBrokerError, match="format failed(.|\n)*not-a-number"):
        broker.start(timeout=60)
    assert broker.proc is None


def test_a_broker_that_cannot_start_fails_with_its_log_tail(tmp_path: Path) -> None:
    # Valid for the storage tool; the broker instantiates its metric reporters at start-up.
    broker = ReferenceBroker(tmp_path, overrides={"metric.reporters": "no.such.Reporter"})
    with pytest.raises(ReferenceBrokerError, match="(exited|not ready)(.|\n)*no.such.Reporter"):
        broker.start(timeout=60)
    assert broker.proc is not None and broker.proc.poll() is not None


def test_make_reference_is_stamped_by_version() -> None:
    assert (CACHE_DIR / ".stamp").read_text().strip() == KAFKA_VERSION
    again = subprocess.run(["make", "--no-print-directory", "-n", "reference"], cwd=REPO_ROOT,
                           capture_output=True, text=True, check=True)
    assert "mvn" not in again.stdout, again.stdout
    assert (CACHE_DIR / "libs" / f"kafka_2.13-{KAFKA_VERSION}.jar").is_file()
