"""examples/pytest-project, run the way its owners would: `pytest` in its directory, with
groupcoord installed and nothing else configured (the plugin comes from the entry point)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.interop

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pytest-project"
EXAMPLE_TESTS = 3


def test_the_example_project_passes_its_own_tests() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        check=False, cwd=EXAMPLE, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    assert f"{EXAMPLE_TESTS} passed" in result.stdout, result.stdout
