"""Ctrl-C in `make cluster-demo` (`python -m groupcoord cluster-demo`): the terminal sends
SIGINT to the whole process group (the demo and its three nodes); everything stops within
seconds, PostgreSQL is stopped and its files removed, the demo says so in one line and exits
130, and no traceback or client noise reaches the terminal."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from helpers.demo_process import interrupt_demo

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.timeout(240)]

STOPPED_WITHIN_S = 30
POSTGRES_DIR = re.compile(r"data in (\S+), removed at the end")


def test_ctrl_c_stops_the_cluster_demo_with_one_line(tmp_path: Path) -> None:
    from helpers.postgres_server import postgres_bin_dir

    postgres_bin_dir()  # skips (fails in CI) without PostgreSQL
    demo = interrupt_demo(["cluster-demo", "--out-dir", str(tmp_path)],
                          " acked ",  # the workload runs: a progress line
                          STOPPED_WITHIN_S)
    assert demo.returncode == 130, demo.out + demo.err
    assert "Traceback" not in demo.out + demo.err
    assert demo.err == ""
    last = demo.out.splitlines()[-1]
    assert last.startswith("[demo] interrupted: nodes, clients and PostgreSQL stopped"), demo.out
    with pytest.raises(ProcessLookupError):  # nothing of the demo is left running
        os.killpg(demo.pid, 0)
    found = POSTGRES_DIR.search("".join(demo.before))
    assert found is not None and not Path(found.group(1)).exists()
