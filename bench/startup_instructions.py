"""Instructions a Python broker executes from spawn to binding its listener, counted by
valgrind (`cachegrind --cache-sim=no`).

Wall time to the first ApiVersions moves with the machine's load by tens of percent; the
instruction count does not (the same to 0.1% from run to run), so it shows what a start-up
change did even when the machine is busy. The process exits at its first `socket.bind`
(an audit hook), so the count covers the interpreter, the imports and the set-up before the
bind, not the wait for a client. Used by `bench/startup.py` when valgrind is installed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence

# Runs `-m MODULE ARGS` or `SCRIPT ARGS` as the interpreter would, exiting at the first bind.
_AT_BIND = """
import os, runpy, sys

def _at_bind(event, args):
    if event == "socket.bind":
        os._exit(0)

sys.addaudithook(_at_bind)
kind, target = sys.argv[1], sys.argv[2]
sys.argv = [target, *sys.argv[3:]]
if kind == "-m":
    runpy.run_module(target, run_name="__main__", alter_sys=True)
else:
    runpy.run_path(target, run_name="__main__")
"""

_TOTAL = re.compile(r"I\s+refs:\s+([\d,]+)")
TIMEOUT_S = 300.0


def available() -> bool:
    return shutil.which("valgrind") is not None


def count(argv: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    """Instructions `argv` executes to its exit; ValueError if valgrind reports none."""
    with tempfile.TemporaryDirectory(prefix="cachegrind-") as scratch:
        out = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no",
             f"--cachegrind-out-file={os.path.join(scratch, 'out')}", *argv],
            capture_output=True, text=True, timeout=TIMEOUT_S, check=False,
            env={**(env if env is not None else os.environ), "PYTHONHASHSEED": "0"})
    found = _TOTAL.search(out.stderr)
    if found is None:
        raise ValueError(f"no instruction count from valgrind: {out.stderr.strip()[-300:]}")
    return int(found.group(1).replace(",", ""))


def to_bind(command: Sequence[str], env: Mapping[str, str] | None = None) -> int:
    """Instructions of a Python server `command` (`python -m MODULE ...` or
    `python SCRIPT ...`) up to its first bind."""
    python, first, *rest = command
    if first == "-m":
        module, *args = rest
        argv = [python, "-c", _AT_BIND, "-m", module, *args]
    else:
        argv = [python, "-c", _AT_BIND, "script", first, *rest]
    return count(argv, env)


if __name__ == "__main__":
    # `python -m bench.startup_instructions -m groupcoord serve --listen 127.0.0.1:0 ...`
    print(f"{to_bind([sys.executable, *sys.argv[1:]]) / 1e6:.1f} M instructions to the bind")
