"""What a `/metrics` scrape costs the broker it runs on.

``python -m bench.bench_metrics [--groups 1000] [--partitions 4] [--scrapes 10]`` starts
``groupcoord serve --metrics-listen`` (a subprocess), produces 1000 records to each of
``--partitions`` partitions, commits an offset on every partition for ``--groups`` groups
(each at its own position, so each needs its own timestamp read), then scrapes ``/metrics``
``--scrapes`` times, one second apart, while a second thread sends ApiVersions to the broker
in a loop. It prints the scrape times (end to end, and the broker's own collection time,
`groupcoord_metrics_scrape_duration_seconds`), the size of the answer, and the ApiVersions
round trips during the scrapes against those of an idle broker: how long requests wait
behind a scrape. The load average is printed with the results (a shared machine).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from bench.common import free_port, median, percentile
from bench.probe import api_versions, wait_ready

LOOPBACK = "127.0.0.1"


def _probe(port: int, stop: threading.Event, out: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        api_versions(LOOPBACK, port)
        out.append(time.perf_counter() - started)


def _probe_for(port: int, seconds: float) -> list[float]:
    stop, out = threading.Event(), []
    thread = threading.Thread(target=_probe, args=(port, stop, out))
    thread.start()
    time.sleep(seconds)
    stop.set()
    thread.join()
    return out


def _workload(bootstrap: str, groups: int, partitions: int) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("bench", partitions, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(1000 * partitions):
        producer.produce("bench", value=b"x" * 100, partition=i % partitions)
    producer.flush(60)
    for g in range(groups):
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g{g:05d}"})
        consumer.commit(offsets=[TopicPartition("bench", p, (g * 7 + p) % 1000)
                                 for p in range(partitions)], asynchronous=False)
        consumer.close()


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--scrapes", type=int, default=10)
    args = parser.parse_args(argv)
    kafka_port, metrics_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        log = (Path(data_dir) / "broker.log").open("wb")
        broker = subprocess.Popen(
            [sys.executable, "-m", "groupcoord", "serve", "--listen", f"{LOOPBACK}:{kafka_port}",
             "--data-dir", str(Path(data_dir) / "data"), "--fsync", "never",
             "--group-initial-rebalance-delay-ms", "0",
             "--metrics-listen", f"{LOOPBACK}:{metrics_port}",
             "--metrics-max-groups", str(args.groups)],
            stdout=log, stderr=log, env=dict(os.environ))
        try:
            wait_ready(LOOPBACK, kafka_port, time.perf_counter() + 60)
            _workload(f"{LOOPBACK}:{kafka_port}", args.groups, args.partitions)
            idle = _probe_for(kafka_port, 3.0)
            stop, during = threading.Event(), []
            prober = threading.Thread(target=_probe, args=(kafka_port, stop, during))
            prober.start()
            walls, collect, size = [], [], 0
            for _ in range(args.scrapes):
                started = time.perf_counter()
                with urllib.request.urlopen(f"http://{LOOPBACK}:{metrics_port}/metrics") as r:
                    body = r.read()
                walls.append(time.perf_counter() - started)
                size = len(body)
                tail = body[body.rindex(b"groupcoord_metrics_scrape_duration_seconds "):]
                collect.append(float(tail.split()[1]))
                time.sleep(1.0)
            stop.set()
            prober.join()
        finally:
            broker.terminate()
            broker.wait(30)
            log.close()
    print(f"groups {args.groups} x partitions {args.partitions}: {size} bytes per scrape, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"first scrape: {_ms(walls[0])} ms end to end, {_ms(collect[0])} ms collecting")
    print(f"later scrapes (median): {_ms(median(walls[1:]))} ms end to end, "
          f"{_ms(median(collect[1:]))} ms collecting")
    for name, values in (("idle", idle), ("during scrapes", during)):
        print(f"ApiVersions round trip {name}: median {_ms(median(values))} ms, p99 "
              f"{_ms(percentile(values, 99))} ms, max {_ms(max(values))} ms "
              f"({len(values)} requests)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
