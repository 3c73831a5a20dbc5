"""Fixtures for the interop suite: the compiled Java harness (or a clear skip)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import java


@pytest.fixture(scope="session")
def java_harness() -> Path:
    """The compiled harness class dir. Missing Java or jars skip the Java cases locally but
    fail them in CI, where `make test` is expected to have provided both."""
    reason = java.unavailable_reason()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"Java harness unavailable in CI: {reason}")
        pytest.skip(reason)
    return java.compile_harness()
