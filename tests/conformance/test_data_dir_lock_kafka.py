"""groupcoord and a running Apache Kafka exclude each other on one log dir.

Kafka holds `<log dir>/.lock` (`LogManager.lockLogDirs`: an fcntl write lock over the file).
`groupcoord serve` pointed at that dir must refuse with one line naming the dir and Kafka's
pid, and leave every byte of it as it was: no truncated `.index`/`.timeindex`, no snapshot or
checkpoint files of its own. Kafka is SIGSTOPped (it keeps its lock) while groupcoord tries,
so the comparison sees only what groupcoord could have done; it serves again afterwards.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from helpers.broker import _child_env
from helpers.dir_snapshot import changes, snapshot_dir
from helpers.reference_broker import ReferenceBroker

from groupcoord.logformat.internal_topics import OFFSETS_TOPIC

pytestmark = [pytest.mark.reference, pytest.mark.timeout(180)]


def test_groupcoord_refuses_a_running_kafkas_log_dir(kafka_reference: ReferenceBroker) -> None:
    proc = kafka_reference.proc
    assert proc is not None and proc.poll() is None
    data_dir = kafka_reference.data_dir
    # What groupcoord used to damage: Kafka's preallocated indexes of __consumer_offsets.
    assert any(p.name.endswith(".index") and p.stat().st_size > 0
               for p in data_dir.glob(f"{OFFSETS_TOPIC}-*/*"))
    proc.send_signal(signal.SIGSTOP)
    try:
        before = snapshot_dir(data_dir)
        refused = subprocess.run(
            [sys.executable, "-m", "groupcoord", "serve", "--listen", "127.0.0.1:0",
             "--data-dir", str(data_dir)],
            capture_output=True, text=True, timeout=60, env=_child_env(), check=False)
        after = snapshot_dir(data_dir)
    finally:
        proc.send_signal(signal.SIGCONT)
    assert refused.returncode == 1, refused
    lines = refused.stderr.splitlines()
    assert len(lines) == 1, refused.stderr
    assert str(data_dir.resolve()) in lines[0] and f"process {proc.pid}" in lines[0]
    assert changes(before, after) == []
    assert kafka_reference._probe() == ""  # Kafka still serves
