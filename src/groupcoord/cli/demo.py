"""`groupcoord demo`: a consumer group at work, then the analytics that explain it.

Starts a broker as a subprocess on a free loopback port with its data under `demo-out/data`,
creates a topic and runs a scripted classic consumer group with real confluent-kafka clients
(`demo_workload`: a steady producer, members joining one by one, a slow member, a graceful
leave, a member killed without leaving). It then stops the broker with SIGTERM, runs
`groupcoord analyze run` over the broker's data dir and prints what the analytics found
(rebalances with their reasons, lag and Burrow status per partition) and where `report.html`
is. It needs the `[test]` extra (confluent-kafka) and the `[spark]` extra with Java 17+ for
the analytics, which `make demo` installs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, Any

from groupcoord.cli.demo_workload import Scenario, WorkloadResult

READY_LINE = "groupcoord listening on"
# `analyze run`'s options for the demo's short run: a Burrow evaluation every 10 s and a
# 2 s lag grid, so a run of a minute or so gets a status and a lag curve worth looking at.
ANALYTICS_OPTIONS = ("--eval-every", "10s", "--grid", "2s")
_say_lock = threading.Lock()


def say(text: str) -> None:
    """One progress line; members report from background threads, hence the lock."""
    with _say_lock:
        print(f"[demo] {text}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="groupcoord demo", description=__doc__)
    parser.add_argument("--out-dir", default="demo-out", help="where data, logs and the "
                        "analytics output go")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--rate", type=int, default=200, help="records produced per second")
    parser.add_argument("--step", type=float, default=10.0,
                        help="seconds between membership changes")
    parser.add_argument("--no-analytics", action="store_true",
                        help="stop after the workload (no Spark)")
    ns = parser.parse_args(argv)
    scenario = Scenario(partitions=ns.partitions, rate=ns.rate, step_s=ns.step,
                        tail_s=max(ns.step * 1.5, 5.0))
    return run_demo(Path(ns.out_dir), scenario, analytics=not ns.no_analytics)


def run_demo(out_dir: Path, scenario: Scenario, analytics: bool = True) -> int:
    """Run the demo; returns a process exit code (0 when everything worked, 130 when
    interrupted by Ctrl-C, which stops every process of the demo and says so in one line)."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        print("the demo needs confluent-kafka: pip install -e '.[test]'", file=sys.stderr)
        return 2
    out = out_dir.resolve()
    shutil.rmtree(out / "data", ignore_errors=True)  # every run starts from an empty log
    shutil.rmtree(out / "analytics", ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    client_log = out / "clients.log"
    previous = signal.signal(signal.SIGINT, interrupt_quietly(client_log))
    try:
        with client_log.open("ab") as log:
            return _run(out, scenario, analytics, log)
    except KeyboardInterrupt:
        say(f"interrupted: broker, members, producer and analytics stopped "
            f"(client log lines in {client_log})")
        return 130
    finally:
        signal.signal(signal.SIGINT, previous)


def interrupt_quietly(log_path: Path) -> Callable[[int, FrameType | None], None]:
    """A SIGINT handler: later Ctrl-Cs are ignored (they would interrupt the clean-up), and
    this process's stderr goes to `log_path` from now on, so the clients' complaints about
    a broker that stops with them (librdkafka writes them to fd 2) stay off the terminal."""
    def interrupted(_signum: int, _frame: FrameType | None) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        sys.stderr.flush()
        fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(fd, 2)
        os.close(fd)
        raise KeyboardInterrupt
    return interrupted


def _run(out: Path, scenario: Scenario, analytics: bool, client_log: IO[bytes]) -> int:
    from groupcoord.cli.demo_workload import committed_offsets, run_workload

    started = time.monotonic()
    broker, bootstrap = start_broker(out / "data", out / "broker.log")
    try:
        say(f"broker up at {bootstrap}, data in {out / 'data'}, log in {out / 'broker.log'}")
        create_topic(bootstrap, scenario.topic, scenario.partitions)
        result = run_workload(bootstrap, scenario, say, client_log)
        final = committed_offsets(bootstrap, scenario.group, scenario.topic,
                                  scenario.partitions)
    finally:
        code = stop_broker(broker)
    say(f"broker stopped with SIGTERM (exit code {code})")
    print_workload(result, final)
    if not analytics:
        return 0 if code == 0 else 1
    status = run_analytics(out / "data", out / "analytics")
    if status == 0:
        print_findings(out / "analytics")
    say(f"done in {time.monotonic() - started:.0f}s")
    return 0 if code == 0 and status == 0 else 1


def start_broker(data_dir: Path, log_path: Path, extra_args: Sequence[str] = (),
                 ready_timeout_s: float = 10.0) -> tuple[subprocess.Popen[bytes], str]:
    """`groupcoord serve` (with `extra_args`) on a free port; waits (`ready_timeout_s` at
    most) for its listening line.

    The initial rebalance delay is off so that the first member's join shows at once.
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    bootstrap = f"127.0.0.1:{port}"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "groupcoord", "serve", "--listen", bootstrap,
             "--data-dir", str(data_dir), "--group-initial-rebalance-delay-ms", "0",
             *extra_args],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.monotonic() + ready_timeout_s
    try:
        while READY_LINE not in log_path.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit(f"broker did not start; see {log_path}:\n"
                                 f"{log_path.read_text()}")
            time.sleep(0.02)  # polling the log file for the readiness line
    except KeyboardInterrupt:
        stop_broker(proc)
        raise
    return proc, bootstrap


def stop_broker(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    # Notices and worse only: librdkafka's info line about the queue it purges when the
    # admin client goes is no news on the demo's terminal.
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 5})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)
    say(f"created topic {topic} with {partitions} partitions")


def print_workload(result: WorkloadResult, final: dict[int, tuple[int, int]]) -> None:
    """What the clients did, and the offsets the group ended with."""
    seconds = (result.ended_ms - result.started_ms) / 1000
    say(f"workload: {seconds:.0f}s, {result.produced:,} records produced, "
        f"{len(result.commits()):,} offset commits by {len(result.members)} members")
    print("  partition  committed  end offset  lag")
    for p, (committed, end) in sorted(final.items()):
        print(f"  {p:9d}  {committed:9d}  {end:10d}  {end - max(committed, 0):4d}")


def run_analytics(data_dir: Path, out: Path) -> int:
    """`groupcoord analyze run` in a subprocess (its own JVM and Python workers), streaming
    its stage lines so the wait for Spark is visible."""
    say("running the analytics pipeline (PySpark; start-up takes a while)")
    cmd = [sys.executable, "-m", "groupcoord.analytics", "run", "--data-dir", str(data_dir),
           "--out", str(out), "--master", "local[2]", "--shuffle-partitions", "2",
           *ANALYTICS_OPTIONS]
    # A session of its own: the demo alone stops Spark (its JVM and Python workers are
    # this process's children), all at once when interrupted.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    tail: list[str] = []
    try:
        for line in proc.stdout:
            tail = (tail + [line.rstrip()])[-40:]
            if line.startswith("["):  # the pipeline's own "[  12.3s] stage" lines
                print(f"  {line.rstrip()}", flush=True)
        code = proc.wait()
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    if code != 0:
        say(f"analytics failed with exit code {code}; last output:")
        print("\n".join(tail))
    return code


def print_findings(out: Path) -> None:
    """Rebalances (with reasons) and the final Burrow status, from the pipeline's output."""
    summary: dict[str, Any] = json.loads((out / "summary.json").read_text())
    say(f"rebalances found by the analytics ({len(summary['rebalances'])}):")
    for r in summary["rebalances"]:
        gen = f"{r['from_epoch'] if r['from_epoch'] is not None else '-'} -> {r['to_epoch']}"
        took = f"{r['duration_ms']} ms" if r.get("duration_ms") is not None else "start unknown"
        print(f"  generation {gen:8s} {took:>10s}  members {r['members_before']} -> "
              f"{r['members_after']}")
        for reason in r.get("reasons") or []:
            print(f"      {_short_ids(reason)}")
    for group, v in summary["groups"].items():
        say(f"group {group}: Burrow status {v['status']}, total lag {v.get('total_lag')}")
    for s in summary.get("stuck_consumers", []):
        print(f"  p{s['partition']}: {s['status']}, lag {s['current_lag']}, owner "
              f"{_short_ids(str(s.get('member_id')))}")
    say(f"report: {out / 'report.html'}")


def _short_ids(text: str) -> str:
    """librdkafka member ids are `client.id-uuid`; the uuid adds nothing on a terminal."""
    import re

    return re.sub(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "", text)
