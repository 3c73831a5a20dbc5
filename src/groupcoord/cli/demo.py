"""`groupcoord demo`: a short end-to-end run a newcomer can watch.

Starts a broker as a subprocess on a free loopback port with its data under `demo-out/`,
creates a topic, produces a keyed workload with confluent-kafka (librdkafka, the client
most production code uses), reads it back with assign() from the beginning, checks that
every record came back once and in order per key, prints a summary, and stops the broker
with SIGTERM. It needs the `[test]` extra (confluent-kafka), which `make demo` installs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TOPIC = "demo-orders"
READY_LINE = "groupcoord listening on"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="groupcoord demo", description=__doc__)
    parser.add_argument("--out-dir", default="demo-out", help="where data and logs go")
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--partitions", type=int, default=6)
    ns = parser.parse_args(argv)
    return run_demo(ns.out_dir, records=ns.records, partitions=ns.partitions)


def run_demo(out_dir: str | Path = "demo-out", records: int = 50_000, partitions: int = 6) -> int:
    """Run the demo; returns a process exit code (0 when everything checked out)."""
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        print("the demo needs confluent-kafka: pip install -e '.[test]'", file=sys.stderr)
        return 2
    out = Path(out_dir).resolve()
    shutil.rmtree(out / "data", ignore_errors=True)  # every run starts from an empty log
    out.mkdir(parents=True, exist_ok=True)
    broker, bootstrap = start_broker(out / "data", out / "broker.log")
    try:
        say(f"broker up at {bootstrap}, data in {out / 'data'}, log in {out / 'broker.log'}")
        create_topic(bootstrap, partitions)
        produced = produce(bootstrap, records)
        consumed = consume(bootstrap, partitions, records)
    finally:
        code = stop_broker(broker)
    ok = check(consumed, records) and code == 0
    summarize(produced, consumed, out / "data", code)
    return 0 if ok else 1


def say(text: str) -> None:
    print(f"[demo] {text}", flush=True)


def start_broker(data_dir: Path, log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`groupcoord serve` on a free port; waits (10 s at most) for its listening line."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    bootstrap = f"127.0.0.1:{port}"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "groupcoord", "serve", "--listen", bootstrap,
             "--data-dir", str(data_dir)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.monotonic() + 10
    while READY_LINE not in log_path.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"broker did not start; see {log_path}:\n{log_path.read_text()}")
        time.sleep(0.02)  # polling the log file for the readiness line
    return proc, bootstrap


def stop_broker(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def create_topic(bootstrap: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(timeout=30)
    say(f"created topic {TOPIC} with {partitions} partitions")


def order(i: int) -> tuple[bytes, bytes]:
    """Record i: an order keyed by customer, so each customer's orders share a partition."""
    customer = f"customer-{i % 500:03d}"
    value = {"order": i, "customer": customer, "amount_cents": (i * 7919) % 100_000}
    return customer.encode(), json.dumps(value).encode()


def produce(bootstrap: str, records: int) -> dict[str, Any]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                         "compression.type": "lz4"})
    failures: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(err)

    started, sent_bytes = time.monotonic(), 0
    for i in range(records):
        key, value = order(i)
        sent_bytes += len(key) + len(value)
        while True:
            try:
                producer.produce(TOPIC, key=key, value=value, on_delivery=on_delivery)
                break
            except BufferError:  # local queue full: serve delivery reports to drain it
                producer.poll(0.05)
        producer.poll(0)
        if (i + 1) % max(1, records // 4) == 0:
            say(f"produced {i + 1}/{records}")
    producer.flush(60)
    seconds = time.monotonic() - started
    if failures:
        say(f"{len(failures)} records failed, first: {failures[0]}")
    return {"records": records - len(failures), "bytes": sent_bytes, "seconds": seconds}


def consume(bootstrap: str, partitions: int, records: int) -> dict[str, Any]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo-reader",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
    seen: list[tuple[Any, Any, int]] = []  # (partition, key, order number)
    started = time.monotonic()
    deadline = started + 60
    while len(seen) < records and time.monotonic() < deadline:
        for msg in consumer.consume(num_messages=1000, timeout=0.5):
            if msg.error() is None:
                seen.append((msg.partition(), msg.key(), json.loads(msg.value() or b"")["order"]))
    seconds = time.monotonic() - started
    consumer.close()
    say(f"consumed {len(seen)}/{records}")
    return {"seen": seen, "seconds": seconds}


def check(consumed: dict[str, Any], records: int) -> bool:
    """Every order exactly once, and each customer's orders in the order they were placed."""
    seen = consumed["seen"]
    orders = [n for _, _, n in seen]
    last: dict[Any, int] = {}
    in_order = True
    for _, key, n in seen:
        in_order &= last.get(key, -1) < n
        last[key] = n
    exactly_once = sorted(orders) == list(range(records))
    say(f"every record exactly once: {exactly_once}; per-key order kept: {in_order}")
    return exactly_once and in_order


def summarize(produced: dict[str, Any], consumed: dict[str, Any], data: Path, code: int) -> None:
    per_partition = Counter(p for p, _, _ in consumed["seen"])
    on_disk = sum(f.stat().st_size for f in data.rglob("*") if f.is_file())
    segments = len(list(data.glob(f"{TOPIC}-*/*.log")))
    rate = produced["records"] / max(produced["seconds"], 1e-9)
    say("summary")
    print(f"  produced   {produced['records']} records, {produced['bytes'] / 1e6:.1f} MB in "
          f"{produced['seconds']:.2f}s ({rate:,.0f} records/s, acks=all, lz4)")
    read_rate = len(consumed["seen"]) / max(consumed["seconds"], 1e-9)
    print(f"  consumed   {len(consumed['seen'])} records in {consumed['seconds']:.2f}s "
          f"({read_rate:,.0f} records/s)")
    print(f"  partitions {dict(sorted(per_partition.items()))}")
    print(f"  on disk    {on_disk / 1e6:.1f} MB in {segments} segment file(s) under {data}")
    print(f"  broker     stopped with SIGTERM, exit code {code}")
