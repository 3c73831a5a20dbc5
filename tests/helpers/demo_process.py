"""A demo run as a terminal runs it, then interrupted as Ctrl-C interrupts it: SIGINT to its
whole process group once a line shows the workload running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[2] / "src")


@dataclass(frozen=True)
class Interrupted:
    pid: int  # the process group's id too
    returncode: int
    before: list[str]  # stdout up to the line the interrupt waited for
    out: str  # stdout after it
    err: str


def interrupt_demo(args: list[str], running_marker: str, stopped_within_s: float
                   ) -> Interrupted:
    """Run `python -m groupcoord ARGS` in a process group of its own (a terminal's), send
    the group SIGINT after the first stdout line holding `running_marker`, and collect what
    it printed until it exited (SIGKILLed, if it outlived `stopped_within_s`)."""
    demo = subprocess.Popen(
        [sys.executable, "-m", "groupcoord", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=SRC), start_new_session=True)
    try:
        assert demo.stdout is not None
        before = []
        for line in demo.stdout:
            before.append(line)
            if running_marker in line:
                break
        assert before and running_marker in before[-1], "".join(before)
        os.killpg(demo.pid, signal.SIGINT)
        out, err = demo.communicate(timeout=stopped_within_s)
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
            demo.wait()
    return Interrupted(demo.pid, demo.returncode, before, out, err)

