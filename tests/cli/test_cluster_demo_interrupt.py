"""Ctrl-C in `make cluster-demo` (`python -m groupcoord cluster-demo`): the terminal sends
SIGINT to the whole process group (the demo and its three nodes); everything stops within
seconds, PostgreSQL is stopped and its files removed, the demo says so in one line and exits
130, and no traceback or client noise reaches the terminal."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(240)]

SRC = str(Path(__file__).resolve().parents[2] / "src")
STOPPED_WITHIN_S = 30
POSTGRES_DIR = re.compile(r"data in (\S+), removed at the end")


def test_ctrl_c_stops_the_cluster_demo_with_one_line(tmp_path: Path) -> None:
    from helpers.postgres_server import postgres_bin_dir

    postgres_bin_dir()  # skips (fails in CI) without PostgreSQL
    demo = subprocess.Popen(
        [sys.executable, "-m", "groupcoord", "cluster-demo", "--out-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=SRC), start_new_session=True)  # a terminal's group
    try:
        assert demo.stdout is not None
        before = []
        for line in demo.stdout:  # until the workload runs: a progress line
            before.append(line)
            if " acked " in line:
                break
        assert before and " acked " in before[-1], "".join(before)
        os.killpg(demo.pid, signal.SIGINT)
        out, err = demo.communicate(timeout=STOPPED_WITHIN_S)
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
    assert demo.returncode == 130, out + err
    assert "Traceback" not in out + err
    assert err == ""
    last = out.splitlines()[-1]
    assert last.startswith("[demo] interrupted: nodes, clients and PostgreSQL stopped"), out
    with pytest.raises(ProcessLookupError):  # nothing of the demo is left running
        os.killpg(demo.pid, 0)
    found = POSTGRES_DIR.search("".join(before))
    assert found is not None and not Path(found.group(1)).exists()
