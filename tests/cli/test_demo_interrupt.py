"""Ctrl-C in `make demo` (`python -m groupcoord demo`): the terminal sends SIGINT to the whole
process group (the demo, its broker, its member processes); everything stops within
seconds, the demo says so in one line and exits 130, and no traceback or client reconnect
noise reaches the terminal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(180)]

SRC = str(Path(__file__).resolve().parents[2] / "src")
STOPPED_WITHIN_S = 10


def test_ctrl_c_stops_the_demo_with_one_line(tmp_path: Path) -> None:
    demo = subprocess.Popen(
        [sys.executable, "-m", "groupcoord", "demo", "--out-dir", str(tmp_path), "--step", "2",
         "--no-analytics"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=SRC), start_new_session=True)  # a terminal's group
    try:
        assert demo.stdout is not None
        before = []
        for line in demo.stdout:  # until the workload runs: a member has its partitions
            before.append(line)
            if "assigned partitions" in line:
                break
        assert before and "assigned partitions" in before[-1], "".join(before)
        os.killpg(demo.pid, signal.SIGINT)
        out, err = demo.communicate(timeout=STOPPED_WITHIN_S)
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
    assert demo.returncode == 130, out + err
    assert "Traceback" not in out + err
    assert err == ""  # no traceback, no librdkafka "Connection refused" lines
    last = out.splitlines()[-1]
    assert last.startswith("[demo] interrupted: broker, members, producer and analytics "
                           "stopped"), out
    with pytest.raises(ProcessLookupError):  # nothing of the demo is left running
        os.killpg(demo.pid, 0)
    assert "groupcoord shutting down" in (tmp_path / "broker.log").read_text()
