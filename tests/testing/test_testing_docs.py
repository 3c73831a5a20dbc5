"""The examples of docs/testing.md are tests a user would paste: run them as such; and the
shell examples of the control endpoint against a broker subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.testing import KafkaBroker

pytestmark = pytest.mark.interop

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
SH_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)


def test_the_documented_tests_pass(tmp_path: Path) -> None:
    tests = [block for block in PYTHON_BLOCK.findall(DOC.read_text()) if "def test_" in block]
    assert len(tests) == 3
    for index, block in enumerate(tests):
        (tmp_path / f"test_doc_example_{index}.py").write_text(block)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        check=False, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    assert f"{len(tests)} passed" in result.stdout


@pytest.mark.parametrize(("index", "clock"), [(0, "system"), (1, "manual")])
def test_the_documented_curl_calls_answer(index: int, clock: str) -> None:
    block = SH_BLOCK.findall(DOC.read_text())[index]
    calls = [line for line in block.splitlines() if line.startswith("curl ")]
    assert calls
    with KafkaBroker(subprocess=True, clock=clock) as broker:
        assert broker._process is not None
        env = {**os.environ, "CONTROL": f"http://127.0.0.1:{broker._process.control_port()}"}
        for call in calls:
            result = subprocess.run(["bash", "-c", call + " -w '\\n%{http_code}'"],
                                    check=False, capture_output=True, text=True, env=env,
                                    timeout=60)
            body, _, status = result.stdout.rpartition("\n")
            assert (result.returncode, status) == (0, "200"), (call, result.stdout)
            assert "error" not in json.loads(body), (call, body)
