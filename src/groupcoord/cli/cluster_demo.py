"""`groupcoord cluster-demo`: three nodes on one PostgreSQL, one killed, the group moving on.

Starts a throwaway PostgreSQL server in a temporary directory (`cli.local_postgres`; `make
cluster-demo` installs Debian's package), three `groupcoord serve --storage` nodes on it with
short leases (3 s, renewed every 0.5 s), creates a topic and runs an idempotent producer and
a consumer-protocol group of two members (real confluent-kafka clients bootstrapped from all
three nodes), printing progress every second. After a while the node coordinating the group is
SIGKILLed; the progress lines show the partitions' leaders and the group's coordinator moving
to the survivors once the dead node's leases lapse, and the group committing again. At the end
every acknowledged record is checked to have been consumed. Ctrl-C stops everything and says so
in one line.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from groupcoord.cli.demo import interrupt_quietly, say, start_broker, stop_broker
from groupcoord.cli.local_postgres import DATABASE, LocalPostgres, find_bin_dir

TOPIC = "demo-events"
PARTITIONS = 6
GROUP = "demo-group"
NODE_IDS = (1, 2, 3)
LEASE_MS, HEARTBEAT_MS = 3000, 500
NODE_READY_S = 60.0  # a node opens every partition before it listens: slow on a busy machine


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="groupcoord cluster-demo", description=__doc__)
    parser.add_argument("--out-dir", default="cluster-demo-out",
                        help="where the nodes' data dirs and logs go")
    parser.add_argument("--rate", type=int, default=100, help="records produced per second")
    parser.add_argument("--kill-after", type=float, default=12.0,
                        help="seconds of workload before the group's coordinator is killed")
    parser.add_argument("--run-after", type=float, default=15.0,
                        help="seconds of workload after the kill")
    ns = parser.parse_args(argv)
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        print("the demo needs confluent-kafka: pip install -e '.[test]'", file=sys.stderr)
        return 2
    bin_dir = find_bin_dir()
    if bin_dir is None:
        print("the demo needs PostgreSQL's server (make cluster-demo installs Debian's "
              "postgresql)", file=sys.stderr)
        return 2
    out = Path(ns.out_dir).resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    client_log = out / "clients.log"
    previous = signal.signal(signal.SIGINT, interrupt_quietly(client_log))
    nodes: dict[int, subprocess.Popen[bytes]] = {}
    server = LocalPostgres(bin_dir)
    try:
        return _run(server, nodes, out, ns.rate, ns.kill_after, ns.run_after)
    except KeyboardInterrupt:
        say(f"interrupted: nodes, clients and PostgreSQL stopped (logs in {out})")
        return 130
    finally:
        for proc in nodes.values():
            if proc.poll() is None:
                stop_broker(proc)
        server.stop()
        signal.signal(signal.SIGINT, previous)


@dataclass
class Progress:
    """What the clients did, counted by their threads."""

    acked: set[bytes] = field(default_factory=set)
    consumed: set[bytes] = field(default_factory=set)
    commits: int = 0
    last_commit: float = 0.0
    stop_producing: threading.Event = field(default_factory=threading.Event)
    stop_consuming: threading.Event = field(default_factory=threading.Event)


def _produce(bootstrap: str, rate: int, progress: Progress) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5, "log_level": 2})

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            progress.acked.add(cast(bytes, msg.value()))
    seq = 0
    started = time.monotonic()
    while not progress.stop_producing.is_set():
        producer.produce(TOPIC, key=str(seq % 31).encode(), value=f"record-{seq}".encode(),
                         on_delivery=delivered)
        producer.poll(0)
        seq += 1
        progress.stop_producing.wait(max(0.0, started + seq / rate - time.monotonic()))
    producer.flush(60)


def _consume(bootstrap: str, name: str, progress: Progress) -> None:
    from confluent_kafka import Consumer, KafkaException

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "client.id": name, "log_level": 2})
    consumer.subscribe([TOPIC])
    last = time.monotonic()
    try:
        while not progress.stop_consuming.is_set():
            for msg in consumer.consume(num_messages=500, timeout=0.2):
                if msg.error() is None:
                    progress.consumed.add(cast(bytes, msg.value()))
            if time.monotonic() - last >= 0.5:
                last = time.monotonic()
                try:
                    consumer.commit(asynchronous=False)
                    progress.commits += 1
                    progress.last_commit = last
                except KafkaException:
                    pass  # nothing to commit yet, or the coordinator is moving: next time
    finally:
        consumer.close()


def _who_leads(bootstrap: str) -> tuple[dict[int, int], int | None]:
    """partition -> leader from Metadata, and the group's coordinator, as the cluster says."""
    from confluent_kafka.admin import AdminClient

    from groupcoord.cli.wire_client import WireClient
    from groupcoord.wire.generated.find_coordinator import FindCoordinatorRequest

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    try:
        topic = admin.list_topics(TOPIC, timeout=2).topics[TOPIC]
        leaders = {p: meta.leader for p, meta in topic.partitions.items()}
    except Exception:  # noqa: BLE001 - a node is dying: no answer this second
        leaders = {}
    for address in bootstrap.split(","):
        try:
            with WireClient(address, timeout_s=1.0) as client:
                response, _ = client.request(FindCoordinatorRequest(
                    key_type=0, coordinator_keys=[GROUP]), 4)
        except OSError:
            continue
        found = response.coordinators[0]
        if found.error_code == 0:
            return leaders, int(found.node_id)
    return leaders, None


def _run(server: LocalPostgres, nodes: dict[int, subprocess.Popen[bytes]], out: Path,
         rate: int, kill_after: float, run_after: float) -> int:
    from groupcoord.cli.demo import create_topic

    server.start()
    url = server.url_for(DATABASE)
    say(f"PostgreSQL {server.bin_dir.parent.name} up on 127.0.0.1:{server.port} "
        f"(data in {server.work_dir}, removed at the end)")
    addresses = []
    for node_id in NODE_IDS:
        proc, bootstrap = start_broker(
            out / f"node{node_id}", out / f"node{node_id}.log",
            ["--storage", url, "--node-id", str(node_id), "--offsets-partitions", "3",
             "--broker-session-timeout-ms", str(LEASE_MS),
             "--broker-heartbeat-interval-ms", str(HEARTBEAT_MS)], NODE_READY_S)
        nodes[node_id] = proc
        addresses.append(bootstrap)
        say(f"node {node_id} up at {bootstrap} (log {out / f'node{node_id}.log'})")
    bootstrap = ",".join(addresses)
    create_topic(bootstrap, TOPIC, PARTITIONS)
    progress = Progress()
    threads = [threading.Thread(target=_produce, args=(bootstrap, rate, progress), daemon=True),
               *(threading.Thread(target=_consume, args=(bootstrap, f"member-{i}", progress),
                                  daemon=True) for i in (1, 2))]
    for thread in threads:
        thread.start()
    say(f"an idempotent producer ({rate}/s) and a consumer-protocol group of two members "
        f"running; the group's coordinator is killed after {kill_after:.0f} s")
    started = time.monotonic()
    killed_at: float | None = None
    moved_on: float | None = None
    victim = None
    while time.monotonic() - started < kill_after + run_after:
        progress.stop_consuming.wait(1.0)  # a progress line a second
        leaders, coordinator = _who_leads(bootstrap)
        now = time.monotonic()
        shown = " ".join(f"p{p}:{leader}" for p, leader in sorted(leaders.items()))
        say(f"{now - started:5.1f} s  acked {len(progress.acked):6,}  consumed "
            f"{len(progress.consumed):6,}  commits {progress.commits:4}  leaders {shown}  "
            f"coordinator {coordinator}")
        if killed_at is None and now - started >= kill_after and coordinator is not None:
            victim = coordinator
            nodes[victim].kill()
            nodes[victim].wait()
            killed_at = time.monotonic()
            say(f"SIGKILL node {victim}: its leases lapse in {LEASE_MS / 1000:.1f} s, then the "
                "survivors take its partitions and the group")
        elif (killed_at is not None and moved_on is None and coordinator not in (None, victim)
              and progress.last_commit > killed_at
              and leaders and all(leader not in (-1, victim) for leader in leaders.values())):
            moved_on = now
            say(f"the group moved on: coordinator node {coordinator}, committing again, "
                f"{moved_on - killed_at:.1f} s after the kill")
    progress.stop_producing.set()
    threads[0].join(60)
    deadline = time.monotonic() + 30
    while not progress.acked <= progress.consumed and time.monotonic() < deadline:
        progress.stop_consuming.wait(0.2)  # the members read the last records
    progress.stop_consuming.set()
    for thread in threads[1:]:
        thread.join(30)
    missing = progress.acked - progress.consumed
    say(f"done: {len(progress.acked):,} records acknowledged, {len(progress.consumed):,} "
        f"consumed, {len(missing)} acknowledged and not consumed")
    return 0 if moved_on is not None and not missing else 1
