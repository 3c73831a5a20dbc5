"""Ctrl-C in `make demo` (`python -m groupcoord demo`): the terminal sends SIGINT to the whole
process group (the demo, its broker, its member processes); everything stops within
seconds, the demo says so in one line and exits 130, and no traceback or client reconnect
noise reaches the terminal."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.demo_process import interrupt_demo

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(180)]

STOPPED_WITHIN_S = 10


def test_ctrl_c_stops_the_demo_with_one_line(tmp_path: Path) -> None:
    demo = interrupt_demo(["demo", "--out-dir", str(tmp_path), "--step", "2", "--no-analytics"],
                          "assigned partitions",  # the workload runs: a member has partitions
                          STOPPED_WITHIN_S)
    assert demo.returncode == 130, demo.out + demo.err
    assert "Traceback" not in demo.out + demo.err
    assert demo.err == ""  # no traceback, no librdkafka "Connection refused" lines
    last = demo.out.splitlines()[-1]
    assert last.startswith("[demo] interrupted: broker, members, producer and analytics "
                           "stopped"), demo.out
    with pytest.raises(ProcessLookupError):  # nothing of the demo is left running
        os.killpg(demo.pid, 0)
    assert "groupcoord shutting down" in (tmp_path / "broker.log").read_text()
