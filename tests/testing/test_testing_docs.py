"""The examples of docs/testing.md are tests a user would paste: run them as such."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.interop

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def test_the_documented_tests_pass(tmp_path: Path) -> None:
    tests = [block for block in PYTHON_BLOCK.findall(DOC.read_text()) if "def test_" in block]
    assert len(tests) == 2
    for index, block in enumerate(tests):
        (tmp_path / f"test_doc_example_{index}.py").write_text(block)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        check=False, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    assert f"{len(tests)} passed" in result.stdout
