"""One owner per data dir: the `.lock` Kafka takes on a log dir, taken by every broker.

- A second `groupcoord serve` on a held dir exits 1 at once with one line naming the dir
  and the holder's pid, and leaves every byte of the dir as it was; the first keeps serving.
- Two brokers in one process (POSIX locks do not exclude within a process) exclude each
  other too, and a stopped broker's dir can be taken again.
- Read-only commands (`groupcoord analyze dump`) read a held dir and write nothing to it.

The holder is SIGSTOPped while the second one tries, so the byte comparison sees only what
the second could have done.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.broker import BrokerProcess, _child_env
from helpers.confluent_io import AckLog, acks_all_producer, create_topic, produce, read_all
from helpers.dir_snapshot import changes, snapshot_dir

from groupcoord.storage.dir_lock import LOCK_FILE, DataDirLocked, lock_data_dir
from groupcoord.testing import KafkaBroker

pytestmark = pytest.mark.timeout(120)


@contextmanager
def stopped(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """The process frozen (it keeps its descriptors, so its lock) for the block."""
    proc.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        proc.send_signal(signal.SIGCONT)


def groupcoord(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "groupcoord", *args], capture_output=True,
                          text=True, timeout=60, env=_child_env(), check=False)


def produce_three(bootstrap: str, topic: str, prefix: str) -> None:
    log = AckLog()
    producer = acks_all_producer(bootstrap)
    produce(producer, topic, [f"{prefix}-{i}".encode() for i in range(3)], log)
    assert producer.flush(30) == 0 and len(log.acked) == 3, log


def test_second_serve_on_a_held_dir_exits_at_once_and_touches_nothing(
        broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap, "held", 1)
    produce_three(broker.bootstrap, "held", "before")
    assert broker.proc is not None
    with stopped(broker.proc):
        before = snapshot_dir(broker.data_dir)
        second = groupcoord("serve", "--listen", "127.0.0.1:0", "--data-dir",
                            str(broker.data_dir))
        after = snapshot_dir(broker.data_dir)
    assert second.returncode == 1, second
    lines = second.stderr.splitlines()
    assert len(lines) == 1, second.stderr
    assert str(broker.data_dir.resolve()) in lines[0]
    assert f"process {broker.proc.pid}" in lines[0]
    assert changes(before, after) == []
    # The first still owns and serves the dir.
    produce_three(broker.bootstrap, "held", "after")
    values = sorted(read_all(broker.bootstrap, "held", 1).values())
    assert values == sorted(f"{p}-{i}".encode() for p in ("before", "after") for i in range(3))


def test_read_only_commands_read_a_held_dir_and_write_nothing(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer, TopicPartition

    create_topic(broker.bootstrap, "read", 1)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "readers",
                         "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition("read", 0, 7)], asynchronous=False)
    consumer.close()
    assert broker.proc is not None
    with stopped(broker.proc):
        before = snapshot_dir(broker.data_dir)
        dumped = groupcoord("analyze", "dump", "--data-dir", str(broker.data_dir))
        after = snapshot_dir(broker.data_dir)
    assert dumped.returncode == 0, dumped.stderr
    assert '"readers"' in dumped.stdout
    assert changes(before, after) == []


def test_two_brokers_in_one_process_exclude_each_other(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with KafkaBroker(data_dir=data) as first:
        second = KafkaBroker(data_dir=data)
        with pytest.raises(DataDirLocked) as refused:
            second.start()
        assert refused.value.holder_pid == os.getpid()
        assert not second.running
        # The refused start must not have dropped the holder's fcntl lock (closing any
        # descriptor of `.lock` in this process would): another process is still refused.
        other = groupcoord("serve", "--listen", "127.0.0.1:0", "--data-dir", str(data))
        assert other.returncode == 1 and f"process {os.getpid()}" in other.stderr, other
        assert first.running
    with KafkaBroker(data_dir=data):  # released on stop
        pass


def test_lock_is_kafkas_fcntl_lock_on_dot_lock(tmp_path: Path) -> None:
    held = lock_data_dir(str(tmp_path))
    try:
        # Empty, as Kafka's (stat only: opening and closing it here would drop the lock).
        assert (tmp_path / LOCK_FILE).stat().st_size == 0
        # Another process asking with fcntl, as Java's FileChannel.tryLock does, is refused.
        probe = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR)\n"
                 "try: fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
                 "except OSError: sys.exit(3)\n")
        done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / LOCK_FILE)],
                              check=False, timeout=30)
        assert done.returncode == 3
        with pytest.raises(DataDirLocked):
            lock_data_dir(str(tmp_path / "."))
    finally:
        held.release()
    lock_data_dir(str(tmp_path)).release()
