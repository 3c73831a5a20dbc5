"""How promptly a cluster node answers while a producer loads it: three groupcoord nodes on
one real PostgreSQL (started in a temporary directory, as the tests' fixture does),
idempotent producers writing small batches as fast as they can to the partitions node 1
leads (many appends, each a PostgreSQL transaction), and a probe sending ApiVersions to node
1 (a new connection each, every 20 ms) meanwhile.

    python -m bench.cluster_produce_latency [--seconds 30] [--partitions 6] [--producers 4]
                                            [--batch-records 5]

Prints the ApiVersions round trips (median, p99, max; a probe that timed out counts as its
timeout) and the records acknowledged per second, and writes them to
bench/results/cluster_produce_latency.json. To measure another build, point
GROUPCOORD_TEST_BROKER_CMD at its interpreter and source (`env PYTHONPATH=... python -m
groupcoord`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time

from bench.common import RESULTS_DIR, TESTS_DIR
from bench.probe import api_versions

if str(TESTS_DIR) not in sys.path:
    sys.path.append(str(TESTS_DIR))
from confluent_kafka import KafkaError, Message, Producer
from helpers.confluent_io import create_topic
from helpers.fault_run import three_nodes_on_postgres
from helpers.postgres_cluster import spread_leaders

TOPIC = "load"
PROBE_INTERVAL_S = 0.02
PROBE_TIMEOUT_S = 15.0
VALUE = b"v" * 100


class Load:
    """An idempotent producer writing batches of `batch_records` to `partitions` until
    stopped; what it got acked."""

    def __init__(self, bootstrap: str, partitions: list[int], batch_records: int) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                  "acks": "all", "linger.ms": 0,
                                  "batch.num.messages": batch_records,
                                  "queue.buffering.max.messages": 20_000})
        self.partitions = partitions
        self.acked = 0
        self.failed = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err: KafkaError | None, _msg: Message) -> None:
        if err is None:
            self.acked += 1
        else:
            self.failed += 1

    def _run(self) -> None:
        sent = 0
        while not self.stopping.is_set():
            try:
                self.producer.produce(TOPIC, VALUE, partition=self.partitions[
                    sent % len(self.partitions)], on_delivery=self._delivered)
                sent += 1
            except BufferError:
                self.producer.poll(0.05)
                continue
            self.producer.poll(0)
        self.producer.flush(60)


def _probe(host: str, port: int, seconds: float) -> list[float]:
    """ApiVersions round trips (s) for `seconds`, one every PROBE_INTERVAL_S."""
    rtts: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        try:
            api_versions(host, port, timeout=PROBE_TIMEOUT_S)
            rtts.append(time.perf_counter() - started)
        except OSError:
            rtts.append(PROBE_TIMEOUT_S)
        time.sleep(PROBE_INTERVAL_S)
    return rtts


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(seconds: float, partitions: int, producers: int, batch_records: int
            ) -> dict[str, object]:
    with three_nodes_on_postgres("groupcoord-produce-latency-") as cluster:
        node = cluster.nodes[1]
        create_topic(node.bootstrap, TOPIC, partitions)
        leaders = spread_leaders(cluster.nodes, TOPIC, partitions)
        led = sorted(p for p, leader in leaders.items() if leader == 1)
        idle = _probe("127.0.0.1", node.port, 2.0)
        loads = [Load(cluster.bootstrap, led, batch_records) for _ in range(producers)]
        for load in loads:
            load.thread.start()
        time.sleep(2.0)  # the producers connected and writing
        acked_before, started = sum(load.acked for load in loads), time.monotonic()
        rtts = _probe("127.0.0.1", node.port, seconds)
        rate = (sum(load.acked for load in loads) - acked_before) / (
            time.monotonic() - started)
        for load in loads:
            load.stopping.set()
        for load in loads:
            load.thread.join(120)
    ms = [r * 1000 for r in rtts]
    return {"seconds": seconds, "producers": producers, "batch_records": batch_records,
            "partitions_led_by_node_1": led,
            "idle_api_versions_ms_median": round(statistics.median(idle) * 1000, 2),
            "api_versions_probes": len(ms),
            "api_versions_ms": {"median": round(statistics.median(ms), 2),
                                "p99": round(_quantile(ms, 0.99), 2),
                                "max": round(max(ms), 2)},
            "records_acked_per_s": round(rate, 1),
            "records_failed": sum(load.failed for load in loads)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_produce_latency",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0, help="of load measured")
    parser.add_argument("--partitions", type=int, default=6, help="of the loaded topic")
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--batch-records", type=int, default=5, help="records per batch")
    parser.add_argument("--label", default="", help="stored with the figures")
    ns = parser.parse_args(argv)
    figures = {"label": ns.label,
               **measure(ns.seconds, ns.partitions, ns.producers, ns.batch_records)}
    print(json.dumps(figures, indent=2))
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / "cluster_produce_latency.json").write_text(json.dumps(figures, indent=2)
                                                              + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
