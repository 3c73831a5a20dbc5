"""Fixtures for the interop suite: the compiled Java harness per client (or a clear skip), and
a reference Apache Kafka broker of the test's own for tests that run on both brokers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import java
from helpers.reference_broker import ReferenceBroker


def _harness(client: java.JavaClient) -> Path:
    """The harness compiled for `client`. Missing Java or jars skip the Java cases locally
    but fail them in CI, where `make test` is expected to have provided both."""
    reason = java.unavailable_reason(client)
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"Java harness unavailable in CI: {reason}")
        pytest.skip(reason)
    return java.compile_harness(client)


@pytest.fixture(scope="session")
def java_harness() -> Path:
    """The harness on the matrix's client (4.4)."""
    return _harness(java.DEFAULT_CLIENT)


@pytest.fixture(scope="session")
def java39_harness() -> Path:
    """The harness on the 3.9 client, kept for the share consumer's v0 RPCs."""
    return _harness(java.CLIENT_3_9)


@pytest.fixture
def kafka(tmp_path: Path) -> Iterator[ReferenceBroker]:
    broker = ReferenceBroker(tmp_path / "kafka")
    broker.start()
    yield broker
    broker.stop()
